// Train and eval modes of export (typex::train / typex::eval, as torch's module.train()): dropout
// and batch norm record what the mode does; a training-mode dropout draws the same mask eagerly, in
// the exported program and in the joint program from the same random state (typex::manual_seed);
// the joint's gradients through dropout agree with finite differences of the eager model under that
// state; partitioning keeps the drawn masks for the backward; a random op the trace cannot follow
// is refused.
#include "../support.hpp"
#include "round_trip.hpp"

#include <typex/backend/eigen.hpp>
#include <typex/export/joint.hpp>
#include <typex/passes/partition.hpp>

#include <boost/hana/adapt_struct.hpp>

#include <cmath>
#include <string>
#include <thread>
#include <vector>

using namespace typex;

namespace train_models {
struct drop_mlp {
  nn::Linear<8, 16, true, f64> fc1;
  nn::Dropout drop;
  nn::Linear<16, 3, true, f64> fc2;
  template <class X, class Y>
  auto operator()(const X& x, const Y& y) const {
    return cross_entropy(fc2(drop(relu(fc1(x)))), y);
  }
};
struct bn_drop {
  nn::Conv2d<1, 2, 3> conv;
  nn::BatchNorm2d<2> bn;
  nn::Dropout drop;
  template <class X>
  auto operator()(const X& x) const {
    return drop(bn(conv(x)));
  }
};
using block_t = nn::TransformerEncoderLayer<8, 2, 16, nn::activation::gelu, false, true>;
struct block_loss {
  block_t block;
  template <class X, class T>
  auto operator()(const X& x, const T& t) const {
    return mse_loss(block(x), t);
  }
};
struct untraced_dropout {  // dropout of a tensor made in the forward from literals: would run while tracing
  parameter<f32, fix<4>> a;
  template <class X>
  auto operator()(const X& x) const {
    tensor<f32, fix<4>> ones;
    ones.fill(1.0f);
    return add(add(x, a), dropout(ones, 0.5, true));
  }
};
struct state_dropout {  // dropout of a parameter alone: recorded, reading the parameter's placeholder
  parameter<f32, fix<4>> a;
  template <class X>
  auto operator()(const X& x) const {
    return add(x, dropout(a, 0.5, true));
  }
};
struct traced_dropout {
  parameter<f32, fix<4>> a;
  template <class X>
  auto operator()(const X& x) const {
    return add(x, dropout(as_traced(a, x), 0.5, true));
  }
};
}  // namespace train_models
BOOST_HANA_ADAPT_STRUCT(train_models::drop_mlp, fc1, drop, fc2);
BOOST_HANA_ADAPT_STRUCT(train_models::bn_drop, conv, bn, drop);
BOOST_HANA_ADAPT_STRUCT(train_models::block_loss, block);
BOOST_HANA_ADAPT_STRUCT(train_models::untraced_dropout, a);
BOOST_HANA_ADAPT_STRUCT(train_models::traced_dropout, a);
BOOST_HANA_ADAPT_STRUCT(train_models::state_dropout, a);

namespace {
using mlp_x = tensor<f64, fix<5>, fix<8>>;
using mlp_y = tensor<i64, fix<5>>;

mlp_x mlp_input() {
  mlp_x x;
  for (index_t i = 0; i < x.numel(); ++i) x.data()[i] = std::sin(0.7 * static_cast<double>(i)) * 1.5;
  return x;
}
mlp_y mlp_target() {
  mlp_y y;
  for (index_t i = 0; i < y.numel(); ++i) y.data()[i] = i % 3;
  return y;
}
template <class M>
auto export_mlp(const M& m) {
  return export_program(m, input<"x">(tensor_spec<f64, shape<fix<5>, fix<8>>>()), input<"y">(tensor_spec<i64, shape<fix<5>>>()));
}
std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}
}  // namespace

TEST_CASE("train mode: typex::train and typex::eval set every submodule's mode, as torch's module.train()") {
  train_models::bn_drop m;
  CHECK(!m.bn.training);
  CHECK(!m.drop.training);
  CHECK(&train(m) == &m);
  CHECK(m.bn.training);
  CHECK(m.drop.training);
  eval(m);
  CHECK(!m.bn.training);
  CHECK(!m.drop.training);
  train_models::block_loss b;
  train(b);
  CHECK(b.block.self_attn.training);
  CHECK(b.block.dropout.training);
  CHECK(b.block.dropout1.training);
  CHECK(b.block.dropout2.training);
  // torch's TransformerEncoderLayer dropout = 0.1, in its four places
  CHECK(b.block.dropout.p == 0.1);
  CHECK(b.block.self_attn.dropout == 0.1);
  train(b, false);
  CHECK(!b.block.dropout2.training);
}

TEST_CASE("train mode: an exported training-mode dropout draws the eager model's masks from the same state") {
  train_models::drop_mlp m;
  init_module(m, 3);
  m.drop.p = 0.3;
  const auto x = mlp_input();
  const auto y = mlp_target();
  // eval mode: dropout records nothing
  const auto ep_eval = export_mlp(m);
  CHECK(ep_eval.to_string().find("dropout") == std::string::npos);
  // training mode: torch.export's aten.dropout.default(x, p, True)
  const auto ep = export_mlp(train(m));
  const std::string printed = ep.to_string();
  CHECK(count(printed, "torch.ops.aten.dropout.default(") == 1);
  CHECK(printed.find(", 0.3, True)") != std::string::npos);

  manual_seed(5);
  const double e1 = m(x, y).data()[0];
  const double e2 = m(x, y).data()[0];
  const rng_state after_eager = get_rng_state();
  CHECK(after_eager == rng_state{5, 2});
  CHECK(e1 != e2);  // (two draws, two masks)
  auto run = program_module<eigen_backend>(ep);
  manual_seed(5);
  const double p1 = run({x.erase(), y.erase()})[0].data<double>()[0];
  const double p2 = run({x.erase(), y.erase()})[0].data<double>()[0];
  CHECK(get_rng_state() == after_eager);
  CHECK(p1 == doctest::Approx(e1).epsilon(1e-12));
  CHECK(p2 == doctest::Approx(e2).epsilon(1e-12));
  // eval mode again: the eager model and the eval program agree, and draw nothing
  eval(m);
  const rng_state before = get_rng_state();
  const double ev = m(x, y).data()[0];
  CHECK(program_module<eigen_backend>(ep_eval)({x.erase(), y.erase()})[0].data<double>()[0] == doctest::Approx(ev).epsilon(1e-12));
  CHECK(get_rng_state() == before);

  // threads: copies of the module draw from their own thread's stream
  double t1 = 0, t2 = 0;
  auto on_thread = [&](double& out) {
    auto copy = run;
    manual_seed(5);
    out = copy({x.erase(), y.erase()})[0].data<double>()[0];
  };
  std::thread a(on_thread, std::ref(t1)), b(on_thread, std::ref(t2));
  a.join();
  b.join();
  CHECK(t1 == p1);
  CHECK(t2 == p1);
  typex_test::check_round_trip(ep, {x.erase(), y.erase()});
}

TEST_CASE("train mode: the joint program multiplies by the mask its forward drew, and its gradients are the eager model's") {
  train_models::drop_mlp m;
  init_module(m, 4);
  m.drop.p = 0.4;
  train(m);
  const auto x = mlp_input();
  const auto y = mlp_target();
  const auto ep = export_mlp(m);
  const exported_program joint = make_joint(ep);
  const std::string printed = joint.to_string();
  CHECK(count(printed, "torch.ops.typex.dropout_mask.default(relu, 0.4)") == 1);
  CHECK(printed.find("aten.dropout") == std::string::npos);

  manual_seed(17);
  const rng_state s = get_rng_state();
  const joint_outputs r = read_joint_outputs(joint, program_module<eigen_backend>(joint)({x.erase(), y.erase()}));
  CHECK(get_rng_state().offset == s.offset + 1);
  set_rng_state(s);
  const double eager = m(x, y).data()[0];
  CHECK(r.loss.data<double>()[0] == doctest::Approx(eager).epsilon(1e-12));

  // central differences of the eager model under the same draw, for every parameter element
  const double h = 1e-6;
  int checked = 0, zero = 0;
  for (const auto& [fqn, t] : named_parameters(m)) {
    const any_tensor& g = r.gradients.at(fqn);
    REQUIRE(g.extents() == t.extents());
    for (index_t i = 0; i < t.numel(); ++i) {
      double& w = t.data<double>()[i];
      const double w0 = w;
      w = w0 + h;
      set_rng_state(s);
      const double up = m(x, y).data()[0];
      w = w0 - h;
      set_rng_state(s);
      const double down = m(x, y).data()[0];
      w = w0;
      const double fd = (up - down) / (2 * h);
      CHECK_MESSAGE(std::abs(g.data<double>()[i] - fd) <= 1e-7 + 1e-6 * std::abs(fd), fqn << "[" << i << "]: " << g.data<double>()[i] << " vs " << fd);
      ++checked;
      zero += g.data<double>()[i] == 0.0;
    }
  }
  CHECK(checked == 16 * 8 + 16 + 3 * 16 + 3);
  CHECK(zero > 0);  // (a dropped hidden unit's weights get no gradient)

  // partitioned, the forward keeps the masks it drew (never recomputed) for the backward
  for (const bool recompute : {false, true}) {
    const passes::partition p = passes::partition_joint(joint.graph(), 1, {.recompute = recompute});
    CHECK(passes::backward_start(joint.graph(), 1) == ep.graph().size());  // (the forward, one node longer)
    CHECK(count(ir::print_readable(p.forward), "typex.dropout_mask.default") == 1);
    CHECK(ir::print_readable(p.backward).find("typex.dropout_mask") == std::string::npos);
    bool saved = false;
    for (const std::string& v : p.saved) saved = saved || v.starts_with("dropout_mask");
    CHECK(saved);
  }
  typex_test::check_round_trip(joint, {x.erase(), y.erase()});  // (typex.dropout_mask, the joint's own op)
}

TEST_CASE("train mode: a transformer encoder block in training mode: program and joint draw the eager block's masks") {
  train_models::block_loss m;
  init_module(m, 6);
  train(m);
  tensor<f32, fix<2>, fix<5>, fix<8>> x, t;
  for (index_t i = 0; i < x.numel(); ++i) {
    x.data()[i] = static_cast<float>(std::cos(0.3 * static_cast<double>(i)));
    t.data()[i] = static_cast<float>(std::sin(0.2 * static_cast<double>(i)));
  }
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, shape<fix<2>, fix<5>, fix<8>>>()),
                                 input<"t">(tensor_spec<f32, shape<fix<2>, fix<5>, fix<8>>>()));
  CHECK(count(ep.to_string(), "torch.ops.aten.dropout.default(") == 4);  // attention weights, dropout1, dropout, dropout2
  manual_seed(8);
  const float eager = m(x, t).data()[0];
  manual_seed(8);
  const float program = program_module<eigen_backend>(ep)({x.erase(), t.erase()})[0].data<float>()[0];
  CHECK(program == doctest::Approx(eager).epsilon(1e-5));
  const exported_program joint = make_joint(ep);
  CHECK(count(joint.to_string(), "torch.ops.typex.dropout_mask.default(") == 4);
  manual_seed(8);
  const joint_outputs r = read_joint_outputs(joint, program_module<eigen_backend>(joint)({x.erase(), t.erase()}));
  CHECK(r.loss.data<float>()[0] == doctest::Approx(eager).epsilon(1e-5));
  CHECK(r.gradients.size() == 12);
  // a different draw, a different loss
  const float next = m(x, t).data()[0];
  CHECK(next != eager);
}

TEST_CASE("train mode: a random op on tensors the trace does not follow is refused, not frozen, and one on module state is recorded") {
  train_models::untraced_dropout u;
  init_module(u, 1);
  CHECK_THROWS_WITH_AS((void)export_program(u, input<"x">(tensor_spec<f32, shape<fix<4>>>())),
                       doctest::Contains("aten.dropout.default at train_mode.cpp"), unsupported_error);
  CHECK_THROWS_WITH_AS((void)export_program(u, input<"x">(tensor_spec<f32, shape<fix<4>>>())),
                       doctest::Contains("draws random numbers from tensors that are not traced"), unsupported_error);
  // a parameter's dropout, with or without as_traced: recorded (a new mask each call)
  const auto masks = [](auto& t) {
    init_module(t, 1);
    t.a.fill(1.0f);
    const auto ep = export_program(t, input<"x">(tensor_spec<f32, shape<fix<4>>>()));
    CHECK(ep.to_string().find("torch.ops.aten.dropout.default(p_a, 0.5, True)") != std::string::npos);
    tensor<f32, fix<4>> zero;
    zero.fill(0.0f);
    auto run = program_module<eigen_backend>(ep);
    std::vector<float> seen;
    for (int k = 0; k < 8; ++k) {
      const any_tensor out = run({zero.erase()})[0];
      seen.insert(seen.end(), out.data<float>(), out.data<float>() + 4);
    }
    return seen;
  };
  train_models::state_dropout st;
  const std::vector<float> state_seen = masks(st);
  CHECK(std::count(state_seen.begin(), state_seen.end(), 0.0f) > 4);
  CHECK(std::count(state_seen.begin(), state_seen.end(), 2.0f) > 4);
  train_models::traced_dropout t;
  const std::vector<float> seen = masks(t);
  CHECK(std::count(seen.begin(), seen.end(), 0.0f) > 4);  // a new mask each call (32 draws of p = 0.5)
  CHECK(std::count(seen.begin(), seen.end(), 2.0f) > 4);
}
