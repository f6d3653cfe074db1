// nn::LSTM and nn::GRU (nn/rnn.hpp, written with typex::scan) against PyTorch's (tools/rnn_reference.py,
// tests/data/rnn/*.safetensors): torch's parameter names, eagerly and exported with a symbolic
// sequence length, forward and gradients (of every parameter and of the input).
#include "../support.hpp"

#include <typex/backend/eigen.hpp>
#include <typex/export/joint.hpp>
#include <typex/nn.hpp>
#include <typex/tensor/safetensors.hpp>

#include <boost/hana/define_struct.hpp>

#include <cmath>
#include <string>

using namespace typex;

namespace rnn_test {
using batch = sym<"batch", 1, 16>;
using seq = sym<"seq", 1, 32>;

named_tensors reference(const std::string& name) {
  return load_safetensors(std::string(TYPEX_TEST_SOURCE_DIR) + "/data/rnn/" + name + ".safetensors");
}
named_tensors weights_of(const named_tensors& ref) {
  named_tensors w;
  for (const auto& [k, v] : ref)
    if (!k.starts_with("ref.")) w.insert(k, v);
  return w;
}
void check_close(const any_tensor& got, const any_tensor& want, double tol, const std::string& what) {
  INFO(what);
  REQUIRE(got.extents() == want.extents());
  std::size_t off = 0;  // (elements farther than tol, NaN included)
  for (index_t i = 0; i < static_cast<index_t>(want.numel()); ++i)
    if (!(std::abs(static_cast<double>(got.data<float>()[i]) - static_cast<double>(want.data<float>()[i])) <= tol)) ++off;
  CHECK(off == 0);
}

// The loss the reference differentiates: (output * r).sum() + (h_n * rh).sum() [+ (c_n * rc).sum()].
template <class R>
struct lstm_loss {
  BOOST_HANA_DEFINE_STRUCT(lstm_loss, (R, rnn));
  template <class X, class A, class B, class C>
  auto operator()(const X& x, const A& r, const B& rh, const C& rc) const {
    const auto [out, state] = rnn(x);
    return add(add(sum(mul(out, r)), sum(mul(state.first, rh))), sum(mul(state.second, rc)));
  }
};
template <class R>
struct gru_loss {
  BOOST_HANA_DEFINE_STRUCT(gru_loss, (R, rnn));
  template <class X, class A, class B>
  auto operator()(const X& x, const A& r, const B& rh) const {
    const auto [out, h] = rnn(x);
    return add(sum(mul(out, r)), sum(mul(h, rh)));
  }
};
}  // namespace rnn_test

namespace rnn_test {
template <class S>
S shape_of(const any_tensor& t) {
  return host_tensor<f32, S>::bind(t).shape();
}

// Forward eagerly and exported (one program, both sequence lengths), and the joint program's
// gradients, against the reference. XS, RS, HS: the shapes of x, of output and of h_n.
template <bool Lstm, class Loss, class XS, class RS, class HS>
void check_model(const std::string& name) {
  const named_tensors ref = reference(name);
  Loss m;
  named_tensors w;
  for (const auto& [k, v] : weights_of(ref)) w.insert("rnn." + k, v);
  REQUIRE(load_state_dict(m, w).empty());
  const any_tensor& x = *ref.find("ref.input");
  const any_tensor& x_b = *ref.find("ref.input_b");

  // eagerly
  const auto xe = host_tensor<f32, XS>::bind(x);
  const auto eager = m.rnn(xe);
  check_close(eager.first.erase(), *ref.find("ref.output"), 1e-5, "eager output");
  if constexpr (Lstm) {
    check_close(eager.second.first.erase(), *ref.find("ref.h_n"), 1e-5, "eager h_n");
    check_close(eager.second.second.erase(), *ref.find("ref.c_n"), 1e-5, "eager c_n");
  } else {
    check_close(eager.second.erase(), *ref.find("ref.h_n"), 1e-5, "eager h_n");
  }

  // exported with a symbolic sequence length (and batch): one program for both inputs
  const auto ep = export_program(m.rnn, input<"x">(tensor_spec<f32, XS>(shape_of<XS>(x))));
  CHECK(ep.to_string().find("torch.ops.higher_order.scan") != std::string::npos);
  auto run = ep.exported_program::module();
  for (const char* which : {"", "_b"}) {
    const std::string suffix = which;
    const auto got = run({*ref.find("ref.input" + suffix)});
    REQUIRE(got.size() == (Lstm ? 3u : 2u));
    check_close(got[0], *ref.find("ref.output" + suffix), 1e-5, "program output" + suffix);
    check_close(got[1], *ref.find("ref.h_n" + suffix), 1e-5, "program h_n" + suffix);
    if constexpr (Lstm) check_close(got[2], *ref.find("ref.c_n" + suffix), 1e-5, "program c_n" + suffix);
  }
  (void)x_b;

  // gradients of every parameter and of the input
  const auto spec_r = input<"r">(tensor_spec<f32, RS>(shape_of<RS>(*ref.find("ref.r"))));
  const auto spec_h = input<"rh">(tensor_spec<f32, HS>(shape_of<HS>(*ref.find("ref.rh"))));
  const auto spec_x = input<"x">(tensor_spec<f32, XS>(shape_of<XS>(x)));
  std::vector<any_tensor> args{x, *ref.find("ref.r"), *ref.find("ref.rh")};
  const exported_program loss = [&] {
    if constexpr (Lstm) {
      args.push_back(*ref.find("ref.rc"));
      return export_program(m, spec_x, spec_r, spec_h, input<"rc">(tensor_spec<f32, HS>(shape_of<HS>(*ref.find("ref.rc")))));
    } else {
      return export_program(m, spec_x, spec_r, spec_h);
    }
  }();
  const exported_program joint = make_joint(loss, {.input_gradients = {"x"}});
  const auto out = program_module<eigen_backend>(joint)(args);
  const joint_outputs g = read_joint_outputs(joint, out);
  std::size_t checked = 0;
  for (const auto& [k, v] : weights_of(ref)) {
    const any_tensor* got = g.gradients.find("rnn." + k);
    REQUIRE(got != nullptr);
    check_close(*got, *ref.find("ref.grad." + k), 1e-4, "gradient of " + k);
    ++checked;
  }
  CHECK(checked == g.gradients.size());
  check_close(*g.input_gradients.find("x"), *ref.find("ref.grad.input"), 1e-4, "gradient of the input");
}
}  // namespace rnn_test

TEST_CASE("nn::LSTM (2 layers, bidirectional, batch_first) matches PyTorch forward and backward, any sequence length") {
  using namespace rnn_test;
  check_model<true, lstm_loss<nn::LSTM<5, 4, 2, true, true>>, shape<batch, seq, fix<5>>, shape<batch, seq, fix<8>>, shape<fix<4>, batch, fix<4>>>("lstm_bi");
}
TEST_CASE("nn::LSTM (1 layer, sequence first) matches PyTorch forward and backward, any sequence length") {
  using namespace rnn_test;
  check_model<true, lstm_loss<nn::LSTM<3, 6>>, shape<seq, batch, fix<3>>, shape<seq, batch, fix<6>>, shape<fix<1>, batch, fix<6>>>("lstm_seq");
}
TEST_CASE("nn::GRU (2 layers, bidirectional, batch_first) matches PyTorch forward and backward, any sequence length") {
  using namespace rnn_test;
  check_model<false, gru_loss<nn::GRU<5, 4, 2, true, true>>, shape<batch, seq, fix<5>>, shape<batch, seq, fix<8>>, shape<fix<4>, batch, fix<4>>>("gru_bi");
}
TEST_CASE("nn::GRU (1 layer, sequence first) matches PyTorch forward and backward, any sequence length") {
  using namespace rnn_test;
  check_model<false, gru_loss<nn::GRU<3, 6>>, shape<seq, batch, fix<3>>, shape<seq, batch, fix<6>>, shape<fix<1>, batch, fix<6>>>("gru_seq");
}

TEST_CASE("nn::LSTM: torch's parameter names, in torch's order, and torch's init bounds") {
  nn::LSTM<5, 4, 2, true, true> m;
  init_module(m, 7);
  const auto names = named_parameters(m);
  REQUIRE(names.size() == 16);
  CHECK(names[0].first == "weight_ih_l0");
  CHECK(names[3].first == "bias_hh_l0");
  CHECK(names[4].first == "weight_ih_l0_reverse");
  CHECK(names[8].first == "weight_ih_l1");
  CHECK(names[8].second.extents() == std::vector<index_t>{16, 8});
  CHECK(names[15].first == "bias_hh_l1_reverse");
  for (const auto& [k, t] : names)
    for (index_t i = 0; i < static_cast<index_t>(t.numel()); ++i) CHECK(std::abs(t.data<float>()[i]) <= 0.5f);  // 1/sqrt(4)
}
