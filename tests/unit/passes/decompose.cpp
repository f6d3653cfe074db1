// Decompositions (passes/decompose.hpp) and run_decompositions (export/decompositions.hpp):
//   - the registry-wide law: every op is core or has a decomposition, and each decomposition run
//     on the Eigen backend matches PyTorch on the op's parity cases (tests/data/parity/ops.txt)
//     within the stated bound: |got - want| <= 2 atol + 1e-5 + (2 rtol + 1e-5) |want|, the case's
//     own tolerance doubled plus 1e-5 (a decomposition rounds differently than a fused kernel);
//   - derivatives: the decomposed call differentiated in f64 equals the op's own derivative;
//   - the reference models (MLP, CNN, transformer block) lowered to the core set verify as core
//     programs and compute what they computed before; signature, metadata and names kept;
//   - custom tables: an op kept, a user's decomposition of another, a user op decomposed, and a
//     decomposition whose result does not fit the op's rule refused.
#include "../parity_cases.hpp"
#include "../backend_axis.hpp"
#include "../graph_runner.hpp"
#include "../support.hpp"
#include "../export/round_trip.hpp"

#include <typex/backend/eigen.hpp>
#include <typex/export/decompositions.hpp>
#include <typex/export/joint.hpp>
#include <typex/ir/verifier.hpp>
#include <typex/passes/decompose.hpp>

#include <cmath>
#include <map>
#include <set>
#include <sstream>

using namespace typex;

namespace {

using parity::element;

// "" when got is within the bound of want.
std::string compare(const any_tensor& got, const any_tensor& want, double atol, double rtol) {
  if (got.scalar_type() != want.scalar_type() || got.extents() != want.extents())
    return "got " + got.to_string() + ", expected " + want.to_string();
  for (index_t i = 0; i < want.numel(); ++i) {
    const double g = element(got, i), w = element(want, i);
    const bool same = (std::isnan(g) && std::isnan(w)) || g == w || std::abs(g - w) <= 2 * atol + 1e-5 + (2 * rtol + 1e-5) * std::abs(w);
    if (!same) {
      std::ostringstream s;
      s.precision(17);
      s << "element " << i << ": got " << g << ", expected " << w;
      return s.str();
    }
  }
  return "";
}

using typex_test::case_program;
using typex_test::make_program;
using typex_test::to_f64;
using typex_test::run_graph;

}  // namespace

TEST_CASE("decompose: every op is core or has a decomposition") {
  const passes::decomposition_table core = passes::decomposition_table::core();
  std::size_t core_ops = 0, decomposed = 0;
  for_each_op(builtin_ops{}, [&](auto type) {
    using Op = typename decltype(type)::type;
    const std::string name(op_id_of<Op>.name());
    if (is_core_op(op_id_of<Op>)) {
      ++core_ops;
      CHECK_MESSAGE(!core.decomposes(op_id_of<Op>), name << " is core, yet the default table decomposes it");
    } else {
      ++decomposed;
      CHECK_MESSAGE(passes::decomposable<Op>, name << " is neither core nor decomposed");
      CHECK_MESSAGE(core.decomposes(op_id_of<Op>), name << " is not in the default table");
    }
  });
  CHECK(core_ops == typex::core_ops::size);
  CHECK(decomposed >= 20);
  MESSAGE("core ops: " << core_ops << ", decomposed: " << decomposed);
}

TEST_CASE("decompose: each decomposition matches PyTorch on its op's parity cases, and verifies as core") {
  const passes::decomposition_table core = passes::decomposition_table::core();
  std::map<std::string, int> checked;
  for (const parity::parity_case& c : parity::read_cases()) {
    const op_id op = find_op(c.target);
    if (!core.decomposes(op)) continue;
    INFO(c.name << " (" << c.target << ")");
    std::string problem;
    try {
      const case_program p = make_program(c, false);
      const ir::graph d = passes::decompose(p.g, core);
      ir::verify(d, {.in_dialect = &ir::core_dialect});
      // the new nodes keep the decomposed node's provenance
      for (const ir::node& n : d.nodes()) {
        if (n.op != ir::node_op::call_function) continue;
        CHECK(n.nn_module_stack == std::vector<ir::module_frame>{{"block", "Block"}});
        CHECK(n.stack_trace == "case.cpp:1 in forward");
      }
      problem = compare(run_graph(d, p.inputs).at(0), c.expected, c.atol, c.rtol);
    } catch (const std::exception& e) {
      problem = std::string("threw: ") + e.what();
    }
    CHECK_MESSAGE(problem.empty(), c.name << ": " << problem);
    ++checked[c.target];
  }
  for (op_id id : core.ops()) CHECK_MESSAGE(checked[std::string(id.name())] > 0, id.name() << ": no parity case checked its decomposition");
}

TEST_CASE("decompose: a decomposed call's derivative in f64 is the op's own") {
  const passes::decomposition_table core = passes::decomposition_table::core();
  int compared = 0;
  for (const parity::parity_case& c : parity::read_cases()) {
    const op_id op = find_op(c.target);
    if (!core.decomposes(op) || passes::derivative_kind_of(op) != passes::derivative_kind::defined) continue;
    // (training-mode batch norm with running statistics updates them in place, which a program
    // refuses: nn::BatchNorm2d records the updates as buffer mutations)
    if (c.target == "aten.batch_norm.default" && std::get<bool>(c.args[5]) && c.tensors[3]) continue;
    INFO(c.name << " (" << c.target << ")");
    case_program p;
    try {
      p = make_program(c, true);
    } catch (const std::exception&) {
      continue;  // (a case whose dtypes f64 does not keep)
    }
    const ir::tensor_meta out = p.g.meta(std::get<ir::value_ref>(p.g.output().args[0]));
    if (!is_floating_point(out.scalar_type)) continue;
    // loss = sum(op(...) * r), r fixed
    ir::graph g = p.g;
    std::vector<ir::node_id> wrt;
    for (ir::node_id ph : g.placeholders())
      if (is_floating_point(g[ph].vals[0].scalar_type)) wrt.push_back(ph);
    if (wrt.empty()) continue;
    ir::graph lossy;
    {
      // rebuild with an extra placeholder r and the loss
      std::vector<any_tensor> inputs = p.inputs;
      for (ir::node_id i = 0; i + 1 < p.g.size(); ++i) {
        const ir::node& f = p.g[i];
        if (f.op == ir::node_op::placeholder) lossy.add_placeholder(f.name, f.vals[0]);
      }
      any_tensor r(out.scalar_type, [&] { std::vector<index_t> e; for (auto& s : out.shape) e.push_back(*s.value()); return e; }());
      for (index_t k = 0; k < r.numel(); ++k) r.data<double>()[k] = std::sin(0.3 * static_cast<double>(k) + 0.1);
      const ir::node_id rph = lossy.add_placeholder("r", out);
      const ir::node& call = p.g[static_cast<ir::node_id>(p.g.size() - 2)];
      const ir::node_id y = lossy.add_call({.target = call.target, .args = call.args, .vals = call.vals});
      passes::graph_builder b(lossy);
      const ir::value_ref loss = b.sum_all(b.mul(ir::value_ref{y}, ir::value_ref{rph}));
      lossy.set_output({loss});
      inputs.push_back(r);
      std::string problem;
      try {
        const ir::graph joint = passes::differentiate(lossy, {.loss = 0, .wrt = wrt});
        const ir::graph joint_d = passes::differentiate(passes::decompose(lossy, core), {.loss = 0, .wrt = wrt});
        const auto a = run_graph(joint, inputs);
        const auto d = run_graph(joint_d, inputs);
        REQUIRE(a.size() == d.size());
        for (std::size_t k = 0; k < a.size() && problem.empty(); ++k) {
          problem = compare(d[k], a[k], 1e-9, 1e-9);
          if (!problem.empty()) problem = "output " + std::to_string(k) + ": " + problem;
        }
      } catch (const unsupported_error& e) {
        // (what the op's own derivative refuses, as PyTorch: class weights' gradient; both refuse)
        CHECK_THROWS_AS(passes::differentiate(passes::decompose(lossy, core), {.loss = 0, .wrt = wrt}), unsupported_error);
        continue;
      } catch (const std::exception& e) {
        problem = std::string("threw: ") + e.what();
      }
      CHECK_MESSAGE(problem.empty(), c.name << ": " << problem);
      ++compared;
    }
  }
  CHECK(compared >= 20);
}

namespace decompose_models {
using batch = sym<"batch", 1, 1024>;
using mlp = nn::Sequential<nn::Linear<16, 32>, nn::GELU, nn::Linear<32, 32>, nn::SiLU, nn::Linear<32, 4>>;
struct cnn {
  BOOST_HANA_DEFINE_STRUCT(cnn, (nn::Conv2d<1, 4, 3>, conv1), (nn::BatchNorm2d<4>, bn),
                           (nn::MaxPool2d<pool2d_options{.kernel = {2, 2}}>, pool), (nn::Flatten<>, flatten),
                           (nn::Linear<4 * 3 * 3, 10>, fc));
  template <class X>
  auto operator()(const X& x) const {
    return log_softmax<1>(fc(flatten(pool(relu(bn(conv1(x)))))));
  }
};
using encoder = nn::TransformerEncoderLayer<16, 2, 32, nn::activation::gelu, false, true>;
struct cnn_loss {
  BOOST_HANA_DEFINE_STRUCT(cnn_loss, (cnn, net));
  template <class X, class Y>
  auto operator()(const X& x, const Y& y) const { return nll_loss(net(x), y); }
};

// the program lowered to the core set: a core program, its outputs what the program gave
template <class Input>
void check_lowered(const exported_program& ep, const std::vector<any_tensor>& inputs) {
  const exported_program core = run_decompositions(ep);
  CHECK(core.dialect() == ir::core_dialect);
  CHECK(ep.dialect() == ir::export_dialect);
  CHECK_NOTHROW(ir::verify(core.graph(), {.in_dialect = &ir::core_dialect}));
  for (const ir::node& n : core.graph().nodes())
    if (n.op == ir::node_op::call_function) CHECK_MESSAGE(is_core_op(n.target), n.target.name());
  // everything but the graph is the program's
  CHECK(core.signature().input_specs() == ep.signature().input_specs());
  CHECK(core.signature().output_specs() == ep.signature().output_specs());
  CHECK(core.ranges().to_string() == ep.ranges().to_string());
  CHECK(core.module_call_graph() == ep.module_call_graph());
  CHECK(core.state_dict().size() == ep.state_dict().size());
  const auto want = ep.module()(inputs);
  const auto got = core.module()(inputs);
  REQUIRE(got.size() == want.size());
  for (std::size_t k = 0; k < got.size(); ++k) CHECK_MESSAGE(compare(got[k], want[k], 1e-6, 1e-5).empty(), compare(got[k], want[k], 1e-6, 1e-5));
  typex_test::check_round_trip(core, inputs);
}
}  // namespace decompose_models

TEST_CASE("run_decompositions: the MLP, CNN and transformer block lowered to the core set compute what they did") {
  using namespace decompose_models;
  {
    mlp m;
    init_module(m, 5);
    const auto ep = export_program(m, input<"x">(tensor_spec<f32, shape<batch, fix<16>>>(shape<batch, fix<16>>(batch(4), {}))));
    const auto x = typex_test::random_tensor<tensor<f32, batch, fix<16>>>({6, 16}, 1);
    check_lowered<void>(ep, {x.erase()});
    const exported_program core = run_decompositions(ep);
    typex_test::check_golden("decomposed_mlp.txt", core.to_string());
    // the nodes a decomposition wrote carry the layer's module stack and source line
    bool saw = false;
    for (const ir::node& n : core.graph().nodes()) {
      if (n.op != ir::node_op::call_function || n.target != op_id_of<sigmoid_op>) continue;
      saw = true;
      REQUIRE(!n.nn_module_stack.empty());
      CHECK(n.nn_module_stack.back().path == "3");
    }
    CHECK(saw);
  }
  {
    cnn m;
    init_module(m, 3);
    const auto ep = export_program(m, input<"x">(tensor_spec<f32, shape<batch, fix<1>, fix<8>, fix<8>>>(shape<batch, fix<1>, fix<8>, fix<8>>(batch(2), {}, {}, {}))));
    const auto x = typex_test::random_tensor<tensor<f32, batch, fix<1>, fix<8>, fix<8>>>({3, 1, 8, 8}, 2);
    check_lowered<void>(ep, {x.erase()});
  }
  {
    using seq = sym<"seq", 1, 128>;
    encoder m;
    init_module(m, 11);
    using in_t = shape<batch, seq, fix<16>>;
    const auto ep = export_program(m, input<"src">(tensor_spec<f32, in_t>(in_t(batch(2), seq(5), {}))));
    const auto x = typex_test::random_tensor<tensor<f32, batch, seq, fix<16>>>({3, 7, 16}, 4);
    check_lowered<void>(ep, {x.erase()});
  }
}

TEST_CASE("run_decompositions: a joint training program lowered to the core set gives the same loss and gradients") {
  using namespace decompose_models;
  cnn_loss m;
  init_module(m, 9);
  m.net.bn.training = true;
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, shape<fix<4>, fix<1>, fix<8>, fix<8>>>()),
                                 input<"y">(tensor_spec<i64, shape<fix<4>>>()));
  const exported_program joint = make_joint(ep);
  const exported_program core = run_decompositions(joint);
  CHECK(core.dialect() == ir::core_dialect);
  CHECK(core.signature().output_specs() == joint.signature().output_specs());
  const auto x = typex_test::random_tensor<tensor<f32, fix<4>, fix<1>, fix<8>, fix<8>>>({4, 1, 8, 8}, 3).erase();
  any_tensor y(dtype::i64, {4});
  for (index_t i = 0; i < 4; ++i) y.data<std::int64_t>()[i] = (3 * i + 1) % 10;
  const auto want = program_module<eigen_backend>(joint)({x, y});
  const auto got = program_module<eigen_backend>(core)({x, y});
  REQUIRE(got.size() == want.size());
  for (std::size_t k = 0; k < got.size(); ++k) CHECK_MESSAGE(compare(got[k], want[k], 1e-6, 1e-5).empty(), "output " << k << ": " << compare(got[k], want[k], 1e-6, 1e-5));
}

namespace decompose_models {
// a user op: scale(x, k) = x * k, with a decomposition of its own
struct scale_op {
  static constexpr std::string_view target = "my.scale.default";
  static constexpr std::string_view schema = "my::scale(Tensor self, float k) -> Tensor";
  template <class R> static void infer(R& r) { r.result(r.input("self")); }
  template <class C> static void decompose(C& c) { c.produce(c.mul(c.input("self"), c.args().real("k"))); }
};
}  // namespace decompose_models

TEST_CASE("run_decompositions: a custom table keeps an op, decomposes another the user's way, and a user op") {
  using namespace decompose_models;
  register_op<scale_op>();
  passes::register_decomposition<scale_op>();
  ir::graph g;
  const auto x = g.add_placeholder("x", {dtype::f32, {ir::sym_expr(index_t{3}), ir::sym_expr(index_t{8})}});
  const auto w = g.add_placeholder("w", {dtype::f32, {ir::sym_expr(index_t{4}), ir::sym_expr(index_t{8})}});
  passes::graph_builder b(g);
  const auto h = b.emit(op_id_of<linear_op>, {ir::value_ref{x}, ir::value_ref{w}, ir::none_t{}});
  const auto s = b.emit(op_id_of<silu_op>, {h});
  const auto k = b.emit(op_id_of<scale_op>, {s, 0.5});
  g.set_output({k});
  auto table = passes::decomposition_table::core()
                   .keep(op_id_of<linear_op>)
                   .set(op_id_of<silu_op>, [](passes::decompose_context& c) {  // silu(x) = x / (1 + exp(-x))
                     const auto x = c.input("self");
                     c.produce(c.div(x, c.add(c.exp(c.neg(x)), 1.0)));
                   });
  const ir::graph d = passes::decompose(g, table);
  std::multiset<std::string> ops;
  for (const ir::node& n : d.nodes())
    if (n.op == ir::node_op::call_function) ops.insert(std::string(n.target.name()));
  CHECK(ops == std::multiset<std::string>{"aten.linear.default", "aten.neg.default", "aten.exp.default", "aten.add.Tensor",
                                          "aten.div.Tensor", "aten.mul.Tensor"});
  CHECK(d[static_cast<ir::node_id>(d.size() - 2)].name == g[k.node].name);  // (the result keeps the node's name)
  CHECK_NOTHROW(ir::verify(d));
  CHECK_THROWS_AS(ir::verify(d, {.in_dialect = &ir::core_dialect}), ir::graph_error);  // (linear was kept)
  // numerics: the same as the undecomposed graph (the user op runs through its decomposition only)
  const auto xs = typex_test::random_tensor<tensor<f32, fix<3>, fix<8>>>({3, 8}, 1).erase();
  const auto ws = typex_test::random_tensor<tensor<f32, fix<4>, fix<8>>>({4, 8}, 2).erase();
  const auto out = run_graph(d, {xs, ws});
  const auto ref = run_graph(passes::decompose(g, passes::decomposition_table().add(op_id_of<scale_op>)), {xs, ws});
  CHECK(compare(out[0], ref[0], 1e-7, 1e-6).empty());
  // add() of an op without a decomposition of its own is refused, naming it
  CHECK_THROWS_WITH_AS(passes::decomposition_table().add(op_id_of<relu_op>), doctest::Contains("aten.relu.default has no decomposition of its own"),
                       argument_error);
}

TEST_CASE("run_decompositions: a decomposition that does not give the op's dtype and shape is an error naming both") {
  ir::graph g;
  const auto x = g.add_placeholder("x", {dtype::f32, {ir::sym_expr(index_t{3}), ir::sym_expr(index_t{4})}});
  passes::graph_builder b(g);
  const auto y = b.emit(op_id_of<silu_op>, {ir::value_ref{x}});
  g.set_output({y});
  auto wrong_shape = passes::decomposition_table().set(op_id_of<silu_op>, [](passes::decompose_context& c) {
    c.produce(c.sum(c.input("self"), {1}));
  });
  CHECK_THROWS_WITH_AS(passes::decompose(g, wrong_shape),
                       "typex::passes::decompose: the decomposition of aten.silu.default (node 'silu') gives f32[3] where the op's rule gives f32[3, 4]",
                       ir::graph_error);
  auto wrong_dtype = passes::decomposition_table().set(op_id_of<silu_op>, [](passes::decompose_context& c) {
    c.produce(c.gt(c.input("self"), 0.0));
  });
  CHECK_THROWS_WITH_AS(passes::decompose(g, wrong_dtype), doctest::Contains("gives b8[3, 4] where the op's rule gives f32[3, 4]"), ir::graph_error);
  auto none = passes::decomposition_table().set(op_id_of<silu_op>, [](passes::decompose_context&) {});
  CHECK_THROWS_WITH_AS(passes::decompose(g, none), doctest::Contains("gives 0 results, the op has 1"), ir::graph_error);
  auto cycle = passes::decomposition_table().set(op_id_of<silu_op>, [](passes::decompose_context& c) {
    c.produce(c.emit(op_id_of<silu_op>, {c.input("self")}));
  });
  CHECK_THROWS_WITH_AS(passes::decompose(g, cycle), doctest::Contains("aten.silu.default writes that op again"), ir::graph_error);
}

TEST_CASE("decompose: attention's math path covers the causal mask and boolean and additive masks") {
  const auto seeded = [](std::vector<index_t> e, int seed) {
    any_tensor t(dtype::f32, std::move(e));
    for (index_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = std::sin(0.37f * static_cast<float>(i) + static_cast<float>(seed));
    return t;
  };
  const auto meta_of = [](const any_tensor& t) {
    return ir::tensor_meta{t.scalar_type(), std::vector<ir::sym_expr>(t.extents().begin(), t.extents().end())};
  };
  struct variant {
    const char* what;
    bool gqa, causal;
    int mask;  // 0 none, 1 boolean, 2 additive
  };
  for (const variant v : {variant{"no mask", false, false, 0}, variant{"causal", false, true, 0},
                          variant{"boolean mask", false, false, 1}, variant{"additive mask", false, false, 2}}) {
    INFO(v.what);
    std::vector<any_tensor> in{seeded({2, 4, 5, 8}, 1), seeded({2, v.gqa ? 2 : 4, 5, 8}, 2), seeded({2, v.gqa ? 2 : 4, 5, 8}, 3)};
    ir::graph g;
    std::vector<ir::argument> args;
    for (const any_tensor& t : in) args.emplace_back(ir::value_ref{g.add_placeholder("in", meta_of(t))});
    if (v.mask == 1) {
      any_tensor m(dtype::b8, {5, 5});
      for (index_t i = 0; i < 25; ++i) m.data<bool>()[i] = (i % 3) != 1;
      in.push_back(m);
    } else if (v.mask == 2) {
      in.push_back(seeded({5, 5}, 4));
    }
    if (v.mask != 0) args.emplace_back(ir::value_ref{g.add_placeholder("mask", meta_of(in.back()))});
    else args.emplace_back(ir::none_t{});
    args.insert(args.end(), {0.0, v.causal, ir::none_t{}, v.gqa});
    passes::graph_builder b(g);
    g.set_output({b.emit(op_id_of<scaled_dot_product_attention_op>, std::move(args))});
    const ir::graph d = passes::decompose(g, passes::decomposition_table::core());
    CHECK_NOTHROW(ir::verify(d, {.in_dialect = &ir::core_dialect}));
    const auto want = run_graph(g, in).at(0);
    const auto got = run_graph(d, in).at(0);
    CHECK_MESSAGE(compare(got, want, 1e-6, 1e-5).empty(), compare(got, want, 1e-6, 1e-5));
  }
}

TEST_CASE("describe: attention refuses enable_gqa: typex records grouped-query attention with repeated heads") {
  ir::graph g;
  const auto q = g.add_placeholder("q", {dtype::f32, {ir::sym_expr(index_t{1}), ir::sym_expr(index_t{4}), ir::sym_expr(index_t{3}), ir::sym_expr(index_t{8})}});
  const auto k = g.add_placeholder("k", {dtype::f32, {ir::sym_expr(index_t{1}), ir::sym_expr(index_t{2}), ir::sym_expr(index_t{3}), ir::sym_expr(index_t{8})}});
  CHECK_THROWS_WITH_AS(ir::infer_meta(g, op_id_of<scaled_dot_product_attention_op>,
                                      std::vector<ir::argument>{ir::value_ref{q}, ir::value_ref{k}, ir::value_ref{k}, ir::none_t{}, 0.0, false, ir::none_t{}, true}),
                       doctest::Contains("typex::scaled_dot_product_attention(typex::enable_gqa, q, k, v)"), shape_error);
}

TEST_CASE("decompose: var with a correction at or above the count divides by max(0, N - correction), as the kernel and torch") {
  for (const double correction : {1.0, 2.0, 3.0}) {
    INFO("correction " << correction);
    ir::graph g;
    const auto x = g.add_placeholder("x", {dtype::f32, {ir::sym_expr(index_t{2})}});
    passes::graph_builder b(g);
    g.set_output({b.emit(op_id_of<aten::var_correction>, {ir::value_ref{x}, ir::none_t{}, correction, false})});
    any_tensor in(dtype::f32, {2});
    in.data<float>()[0] = 1.0f;
    in.data<float>()[1] = 3.0f;
    const auto want = run_graph(g, {in}).at(0);  // (2 / max(0, 2 - c): 2, inf, inf)
    const auto got = run_graph(passes::decompose(g, passes::decomposition_table::core()), {in}).at(0);
    CHECK_MESSAGE(compare(got, want, 0, 1e-6).empty(), compare(got, want, 0, 1e-6));
    CHECK(std::isinf(got.data<float>()[0]) == (correction >= 2.0));
  }
}

namespace decompose_models {
struct scale_by_op {  // (a target whose short name is not an identifier)
  static constexpr std::string_view target = "my.scale-by.default";
  static constexpr std::string_view schema = "my::scale-by(Tensor self, float k) -> Tensor";
  template <class R> static void infer(R& r) { r.result(r.input("self")); }
};
}  // namespace decompose_models

TEST_CASE("decompose: a decomposition that writes an op whose name is not an identifier names its node as the graph would") {
  using namespace decompose_models;
  register_op<scale_by_op>();
  ir::graph g;
  const auto x = g.add_placeholder("x", {dtype::f32, {ir::sym_expr(index_t{3})}});
  passes::graph_builder b(g);
  g.set_output({b.emit(op_id_of<silu_op>, {ir::value_ref{x}})});
  auto table = passes::decomposition_table().set(op_id_of<silu_op>, [](passes::decompose_context& c) {
    c.produce(c.mul(c.emit(op_id_of<scale_by_op>, {c.input("self"), 2.0}), 0.5));
  });
  const ir::graph d = passes::decompose(g, table);
  REQUIRE(d.size() == 4);
  CHECK(d[1].name == "scale_by");
  CHECK(d[2].name == "silu");
}
