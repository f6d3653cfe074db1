// The model zoo's harness: a model ported from PyTorch (tools/zoo_reference.py defines each one
// in PyTorch and writes tests/data/zoo/<name>.safetensors: its state dict, inputs, outputs and
// gradients) is checked the way a user ports one:
//   - its weights load strictly from PyTorch's state dict by FQN (every key, nothing else);
//   - eagerly, it gives PyTorch's outputs on two inputs of different batch (and sequence) sizes;
//   - exported once with a symbolic batch (and sequence), the program gives them too, on both;
//   - the program survives typex::save / typex::load bit for bit;
//   - a joint program of loss = sum(model(x) * r) gives PyTorch's gradient for every parameter.
#pragma once

#include "../support.hpp"
#include "../export/round_trip.hpp"

#include "zoo_models.hpp"

#include <typex/backend/eigen.hpp>
#include <typex/export/joint.hpp>
#include <typex/tensor/safetensors.hpp>

#include <algorithm>
#include <cmath>
#include <string>

namespace zoo {

// sum(model(x) * r): the loss whose gradients the reference holds (FQNs under `m.`).
template <class M>
struct loss_of {
  BOOST_HANA_DEFINE_STRUCT(loss_of, (M, m));
  template <class X, class R>
  auto operator()(const X& x, const R& r) const {
    return sum(mul(m(x), r));
  }
};

struct reference {
  named_tensors state, refs;
};

inline reference read_reference(const std::string& name) {
  const named_tensors all = load_safetensors(std::string(TYPEX_TEST_SOURCE_DIR) + "/data/zoo/" + name + ".safetensors");
  reference r;
  for (const auto& [k, t] : all) {
    if (k.rfind("ref.", 0) == 0) r.refs.insert(k.substr(4), t);
    else r.state.insert(k, t);
  }
  return r;
}

// |a - b| <= tol * max(1, max |b|), elementwise; the worst difference in the message.
inline void check_close(const any_tensor& a, const any_tensor& b, double tol, const std::string& what) {
  REQUIRE_MESSAGE(a.extents() == b.extents(), what << ": " << a.to_string() << " vs " << b.to_string());
  double scale = 1, worst = 0;
  for (index_t i = 0; i < b.numel(); ++i) scale = std::max(scale, double(std::abs(b.data<float>()[i])));
  for (index_t i = 0; i < b.numel(); ++i) worst = std::max(worst, double(std::abs(a.data<float>()[i] - b.data<float>()[i])));
  CHECK_MESSAGE(worst <= tol * scale, what << ": worst difference " << worst << " (scale " << scale << ")");
}

// X: the input's tensor type (symbolic batch, and seq where there is one).
template <class X, class M>
void check_model(M& m, const std::string& name, double tol = 2e-5) {
  const reference ref = read_reference(name);
  INFO("zoo model " << name);
  load_state_dict(m, ref.state);  // strict: every key of PyTorch's, nothing else
  eval(m);
  const X x = X::bind(ref.refs.at("input"), "ref.input");
  const X xb = X::bind(ref.refs.at("input_b"), "ref.input_b");
  check_close(m(x).erase(), ref.refs.at("output"), tol, "eager");
  check_close(m(xb).erase(), ref.refs.at("output_b"), tol, "eager, second input");

  const auto ep = export_program(m, input<"x">(x.spec()));
  CHECK(ep.constants().size() == 0);  // nothing of the module's state frozen
  auto mod = ep.module();
  check_close(mod(x).erase(), ref.refs.at("output"), tol, "exported");
  check_close(mod(xb).erase(), ref.refs.at("output_b"), tol, "exported, second input");
  typex_test::check_round_trip(ep, {x.erase()});

  using out_t = std::remove_cvref_t<decltype(m(x))>;
  const out_t r = out_t::bind(ref.refs.at("r"), "ref.r");
  loss_of<M> l{m};
  const exported_program joint = make_joint(export_program(l, input<"x">(x.spec()), input<"r">(r.spec())));
  const joint_outputs out = read_joint_outputs(joint, program_module<eigen_backend>(joint)({x.erase(), r.erase()}));
  int compared = 0;
  for (const auto& [k, g] : ref.refs) {
    if (k.rfind("grad.", 0) != 0) continue;
    const std::string fqn = "m." + k.substr(5);
    const any_tensor* mine = out.gradients.find(fqn);
    REQUIRE_MESSAGE(mine != nullptr, "no gradient for " << fqn);
    check_close(*mine, g, 10 * tol, "gradient of " + fqn);
    ++compared;
  }
  CHECK(compared == static_cast<int>(out.gradients.size()));
}
}  // namespace zoo
