// passes::partition_joint: a joint program split into a forward and a backward graph, saving every
// forward value the backward reads (default) or recomputing cheap ones chosen by a minimum cut; the
// two graphs run one after the other give the joint program's outputs; the saved bytes of a
// transformer block and of a 12-layer stack, both ways.
#include "../graph_runner.hpp"
#include "../support.hpp"
#include "../export/round_trip.hpp"

#include <typex/backend/eigen.hpp>
#include <typex/export/joint.hpp>
#include <typex/ir/verifier.hpp>
#include <typex/passes/partition.hpp>
#include <typex/export/partitioned_module.hpp>

#include <boost/hana/adapt_struct.hpp>

#include <array>

using namespace typex;

namespace partition_models {
struct mlp {
  nn::Linear<32, 24> fc1;
  nn::Linear<24, 24> fc2;
  nn::Linear<24, 10> fc3;
  template <class X, class Y>
  auto operator()(const X& x, const Y& y) const {
    return cross_entropy(fc3(gelu(fc2(tanh(fc1(x))))), y);
  }
};
using layer_t = nn::TransformerEncoderLayer<64, 4, 256, nn::activation::gelu, false, true>;
struct block {
  layer_t layer;
  template <class X, class T>
  auto operator()(const X& x, const T& t) const {
    return mse_loss(layer(x), t);
  }
};
struct stack {
  std::array<layer_t, 12> layers;
  template <class X, class T>
  auto operator()(const X& x, const T& t) const {
    auto h = layers[0](x);
    for (std::size_t k = 1; k < layers.size(); ++k) h = layers[k](h);
    return mse_loss(h, t);
  }
};
}  // namespace partition_models
BOOST_HANA_ADAPT_STRUCT(partition_models::mlp, fc1, fc2, fc3);
BOOST_HANA_ADAPT_STRUCT(partition_models::block, layer);
BOOST_HANA_ADAPT_STRUCT(partition_models::stack, layers);

namespace {
using typex_test::run_graph;

// The joint program's placeholders' tensors: its parameters and buffers, then the user inputs.
std::vector<any_tensor> all_inputs(const exported_program& joint, const std::vector<any_tensor>& user) {
  std::vector<any_tensor> in;
  std::size_t k = 0;
  for (const input_spec& s : joint.signature().input_specs())
    in.push_back(s.kind == input_kind::user_input ? user.at(k++) : joint.state_dict().at(s.target));
  return in;
}
}  // namespace

TEST_CASE("partition: the forward then the backward give the joint program's gradients, both ways") {
  partition_models::mlp m;
  init_module(m, 3);
  using batch = sym<"batch", 1, 64>;
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, shape<batch, fix<32>>>()), input<"y">(tensor_spec<i64, shape<batch>>()));
  const exported_program joint = make_joint(ep);
  const std::size_t first_backward = ep.graph().size() - 1;  // (the joint graph: the forward's nodes, then the backward's)
  any_tensor x(dtype::f32, {5, 32}), y(dtype::i64, {5});
  for (index_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i)));
  for (index_t i = 0; i < 5; ++i) y.data<std::int64_t>()[i] = (3 * i) % 10;
  const std::vector<any_tensor> in = all_inputs(joint, {x, y});
  symbol_table sizes;
  sizes.bind("batch", 5, "test");
  const std::vector<any_tensor> want = run_graph(joint.graph(), in, sizes);

  std::int64_t bytes[2] = {};
  for (const bool recompute : {false, true}) {
    CAPTURE(recompute);
    const passes::partition p = passes::partition_joint(joint.graph(), 1, first_backward, {.recompute = recompute, .sizes = sizes});
    CHECK_NOTHROW(ir::verify(p.forward));
    CHECK_NOTHROW(ir::verify(p.backward));
    CHECK(p.forward.output().args.size() == 1 + p.saved.size());
    CHECK(p.backward.placeholders().size() == p.saved.size());
    const std::vector<any_tensor> f = run_graph(p.forward, in, sizes);
    CHECK(f[0].data<float>()[0] == want[0].data<float>()[0]);  // the loss
    const std::vector<any_tensor> saved(f.begin() + 1, f.end());
    const std::vector<any_tensor> g = run_graph(p.backward, saved, sizes);
    REQUIRE(g.size() == want.size() - 1);
    for (std::size_t k = 0; k < g.size(); ++k) {
      REQUIRE(g[k].extents() == want[1 + k].extents());
      for (index_t i = 0; i < g[k].numel(); ++i) CHECK(g[k].data<float>()[i] == want[1 + k].data<float>()[i]);
    }
    bytes[recompute] = p.saved_bytes;
    if (recompute) CHECK(p.recomputed > 0);
  }
  CHECK(bytes[1] < bytes[0]);
}

TEST_CASE("partition: partitioned_module runs the halves as programs, trains, and equals the joint module") {
  partition_models::mlp m;
  init_module(m, 3);
  using batch = sym<"batch", 1, 64>;
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, shape<batch, fix<32>>>()), input<"y">(tensor_spec<i64, shape<batch>>()));
  const exported_program joint = make_joint(ep);
  any_tensor x(dtype::f32, {6, 32}), y(dtype::i64, {6});
  for (index_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>(std::cos(0.21 * static_cast<double>(i)));
  for (index_t i = 0; i < 6; ++i) y.data<std::int64_t>()[i] = (7 * i) % 10;
  symbol_table sizes;
  sizes.bind("batch", 6, "test");
  for (const bool recompute : {false, true}) {
    CAPTURE(recompute);
    auto whole = joint.module();
    partitioned_module<> halves(joint, {.recompute = recompute, .sizes = sizes});
    CHECK(halves.parameters().size() == 6);
    if (recompute) CHECK(halves.split().recomputed > 0);
    optim::sgd a(whole.parameters(), {.lr = 0.1}), b(halves.parameters(), {.lr = 0.1});
    for (int step = 0; step < 3; ++step) {  // (each step sees the other's updates: the same trajectory)
      const std::vector<any_tensor> want = whole({x, y});
      std::vector<any_tensor> saved;
      const std::vector<any_tensor> outs = halves.forward({x, y}, saved);
      REQUIRE(outs.size() == 1);
      CHECK(outs[0].data<float>()[0] == want[0].data<float>()[0]);
      CHECK(saved.size() == halves.split().saved.size());
      const std::vector<any_tensor> grads = halves.backward(saved);
      REQUIRE(grads.size() == 6);
      for (std::size_t k = 0; k < 6; ++k)
        for (index_t i = 0; i < grads[k].numel(); ++i) REQUIRE(grads[k].data<float>()[i] == want[1 + k].data<float>()[i]);
      a.step(read_joint_outputs(joint, want).gradients);
      b.step(halves.gradients(grads));
    }
    CHECK(halves.state_dict().at("fc1.weight").data<float>()[3] == whole.state_dict().at("fc1.weight").data<float>()[3]);
    CHECK(halves.state_dict().at("fc1.weight").data<float>()[3] != joint.state_dict().at("fc1.weight").data<float>()[3]);
    const std::vector<any_tensor> both = halves({x, y});
    CHECK(both.size() == 7);
  }
  CHECK_THROWS_WITH_AS(partitioned_module<>(static_cast<const exported_program&>(ep)), doctest::Contains("has no gradient outputs"), argument_error);
  // the two halves are programs like any other: they save and load (the forward's saved values
  // are the backward's inputs)
  const detail::partitioned_programs halves = detail::partition_programs(joint, {});
  typex_test::check_round_trip(halves.forward, {x, y});
  std::vector<any_tensor> saved = program_module<eigen_backend>(halves.forward)({x, y});
  saved.erase(saved.begin(), saved.begin() + static_cast<std::ptrdiff_t>(saved.size() - halves.backward.user_inputs().size()));
  typex_test::check_round_trip(halves.backward, saved);
}

TEST_CASE("partition: the saved bytes of a transformer block and of a 12-layer stack, both ways") {
  symbol_table sizes;  // (the report's sizes: batch 8, sequence 128, d_model 64)
  sizes.bind("batch", 8, "report");
  sizes.bind("seq", 128, "report");
  using batch = sym<"batch", 1, 64>;
  using seq = sym<"seq", 1, 512>;
  using x_t = tensor_spec<f32, shape<batch, seq, fix<64>>>;
  const auto report = [&](const auto& model, const char* name) {
    const auto ep = export_program(model, input<"x">(x_t()), input<"t">(x_t()));
    const exported_program joint = make_joint(ep);
    const std::size_t first_backward = ep.graph().size() - 1;
    const passes::partition d = passes::partition_joint(joint.graph(), 1, first_backward, {.recompute = false, .sizes = sizes});
    const passes::partition r = passes::partition_joint(joint.graph(), 1, first_backward, {.recompute = true, .sizes = sizes});
    CHECK_NOTHROW(ir::verify(r.forward));
    CHECK_NOTHROW(ir::verify(r.backward));
    MESSAGE(std::string(name) << ": saves " << d.saved.size() << " values, " << d.saved_bytes << " bytes (default); " << r.saved.size()
                 << " values, " << r.saved_bytes << " bytes, " << r.recomputed << " nodes recomputed (min-cut)");
    CHECK(r.saved_bytes < d.saved_bytes);
    return std::pair{d.saved_bytes, r.saved_bytes};
  };
  partition_models::block b;
  init_module(b, 1);
  const auto one = report(b, "transformer block");
  auto s = std::make_unique<partition_models::stack>();
  init_module(*s, 2);
  const auto twelve = report(*s, "12-layer stack");
  CHECK(twelve.first >= 11 * one.first);  // (each layer saves what the block does)
}
