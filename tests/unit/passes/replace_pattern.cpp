// Tests for typex/passes/replace_pattern.hpp: relu(matmul(a, b) + c) replaced by a user-defined
// fused op (with its own Eigen kernel) and checked numerically; names, metadata; what a match must
// satisfy (readers outside it, wildcards, overlaps, any-arguments, a filter); errors.
#include "../graph_runner.hpp"
#include "../support.hpp"

#include <typex/backend/eigen.hpp>
#include <typex/ir/describe.hpp>
#include <typex/ir/verifier.hpp>
#include <typex/passes/replace_pattern.hpp>

#include <memory>
#include <span>
#include <string>
#include <vector>

using namespace typex;
using ir::node_id;
using ir::sym_expr;
using ir::value_ref;

namespace pattern_test {
// relu(input @ weight + bias) in one op: input [n, k], weight [k, m], bias [m].
struct fused_linear_relu_op {
  static constexpr std::string_view target = "my.fused_linear_relu.default";
  static constexpr std::string_view schema = "my::fused_linear_relu(Tensor input, Tensor weight, Tensor bias) -> Tensor";
  template <class R>
  static void infer(R& r) {
    const ir::tensor_meta& x = r.input("input");
    const ir::tensor_meta& w = r.input("weight");
    if (x.rank() != 2 || w.rank() != 2) r.fail("takes matrices");
    r.result(x.scalar_type, {x.shape[0], w.shape[1]});
  }
};
}  // namespace pattern_test

template <>
struct typex::eigen::kernel<pattern_test::fused_linear_relu_op> {  // (f32, one number at a time)
  static any_tensor run(const kernel_args& a) {
    const any_tensor& x = a.tensor("input");
    const any_tensor& w = a.tensor("weight");
    const any_tensor& b = a.tensor("bias");
    const index_t n = x.extents()[0], k = x.extents()[1], m = w.extents()[1];
    any_tensor out(dtype::f32, {n, m});
    for (index_t i = 0; i < n; ++i)
      for (index_t j = 0; j < m; ++j) {
        float s = 0;
        for (index_t p = 0; p < k; ++p) s += x.data<float>()[i * k + p] * w.data<float>()[p * m + j];
        s += b.data<float>()[j];
        out.data<float>()[i * m + j] = s > 0 ? s : 0.0f;
      }
    return out;
  }
};

namespace {
using pattern_test::fused_linear_relu_op;

ir::tensor_meta f32_meta(std::vector<sym_expr> shape) { return {dtype::f32, std::move(shape)}; }

// The pattern relu(matmul(a, b) + c): placeholders are wildcards, metadata not compared.
ir::graph linear_relu_pattern() {
  ir::graph p;
  const node_id a = p.add_placeholder("a", {});
  const node_id b = p.add_placeholder("b", {});
  const node_id c = p.add_placeholder("c", {});
  const node_id mm = p.add_call({.target = op_id_of<matmul_op>, .args = {value_ref{a}, value_ref{b}}, .vals = {{}}});
  const node_id add = p.add_call({.target = op_id_of<add_op>, .args = {value_ref{mm}, value_ref{c}}, .vals = {{}}});
  const node_id r = p.add_call({.target = op_id_of<relu_op>, .args = {value_ref{add}}, .vals = {{}}});
  p.set_output({value_ref{r}});
  return p;
}

// x [s0, 3] -> relu(x @ w1 + b1) [s0, 5] -> relu(. @ w2 + b2) [s0, 2] -> neg
struct two_layers {
  ir::graph g;
  node_id relu1 = 0, relu2 = 0;
};
// (also_return_add1: the output returns the first layer's add too)
two_layers two_layer_graph(bool also_return_add1 = false) {
  two_layers t;
  ir::graph& g = t.g;
  const sym_expr s0 = sym_expr::symbol("s0");
  const node_id x = g.add_placeholder("x", f32_meta({s0, 3}));
  const node_id w1 = g.add_placeholder("w1", f32_meta({3, 5}));
  const node_id b1 = g.add_placeholder("b1", f32_meta({5}));
  const node_id w2 = g.add_placeholder("w2", f32_meta({5, 2}));
  const node_id b2 = g.add_placeholder("b2", f32_meta({2}));
  node_id add1 = 0;
  const auto layer = [&](node_id in, node_id w, node_id b, sym_expr width, const std::string& path, int line) {
    const std::vector<ir::module_frame> stack{{path, "Linear"}};
    const std::string trace = "model.cpp:" + std::to_string(line) + " in forward";
    const node_id mm = g.add_call({.target = op_id_of<matmul_op>, .args = {value_ref{in}, value_ref{w}}, .vals = {f32_meta({s0, width})},
                                   .nn_module_stack = stack, .stack_trace = trace});
    const node_id add = g.add_call({.target = op_id_of<add_op>, .args = {value_ref{mm}, value_ref{b}}, .vals = {f32_meta({s0, width})},
                                    .nn_module_stack = stack, .stack_trace = trace});
    if (add1 == 0) add1 = add;
    return g.add_call({.target = op_id_of<relu_op>, .args = {value_ref{add}}, .vals = {f32_meta({s0, width})},
                       .nn_module_stack = stack, .stack_trace = trace});
  };
  t.relu1 = layer(x, w1, b1, sym_expr(index_t{5}), "fc1", 10);
  t.relu2 = layer(t.relu1, w2, b2, sym_expr(index_t{2}), "fc2", 11);
  const node_id n = g.add_call({.target = op_id_of<neg_op>, .args = {value_ref{t.relu2}}, .vals = {f32_meta({s0, 2})}});
  if (also_return_add1) g.set_output({value_ref{n}, value_ref{t.relu1}, value_ref{add1}});
  else g.set_output({value_ref{n}, value_ref{t.relu1}});
  return t;
}

using typex_test::run_graph;

any_tensor seeded(std::vector<index_t> extents, int seed) {
  any_tensor t(dtype::f32, extents);
  for (index_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = std::sin(0.37f * static_cast<float>(i + 1) * static_cast<float>(seed));
  return t;
}

std::vector<ir::value_ref> fused(passes::graph_builder& b, std::span<const value_ref> in) {
  const ir::tensor_meta& x = b.meta(in[0]);
  const ir::tensor_meta& w = b.meta(in[1]);
  return {b.emit(op_id_of<fused_linear_relu_op>, {in[0], in[1], in[2]}, f32_meta({x.shape[0], w.shape[1]}))};
}

ir::graph neg_chain(int n, ir::tensor_meta m) {
  ir::graph g;
  value_ref cur{g.add_placeholder("x", m)};
  for (int i = 0; i < n; ++i) cur = value_ref{g.add_call({.target = op_id_of<neg_op>, .args = {cur}, .vals = {m}})};
  g.set_output({cur});
  return g;
}

ir::graph neg_neg_pattern() {
  ir::graph p;
  const node_id a = p.add_placeholder("a", {});
  const node_id n1 = p.add_call({.target = op_id_of<neg_op>, .args = {value_ref{a}}, .vals = {{}}});
  const node_id n2 = p.add_call({.target = op_id_of<neg_op>, .args = {value_ref{n1}}, .vals = {{}}});
  p.set_output({value_ref{n2}});
  return p;
}
}  // namespace

TEST_CASE("replace_pattern: relu(matmul(a, b) + c) becomes a user's fused op, which computes the same values") {
  eigen::register_kernel<fused_linear_relu_op>();
  two_layers t = two_layer_graph();
  ir::verify(t.g);
  const ir::graph before = t.g;
  ir::graph& g = t.g;

  CHECK(passes::find_pattern(g, linear_relu_pattern()).size() == 2);
  CHECK(passes::replace_pattern(g, linear_relu_pattern(), fused) == 2);
  ir::verify(g);
  // placeholders, the two fused calls (named as the relus they replace, with their provenance), neg
  REQUIRE(g.size() == 9);
  for (const node_id i : {node_id{5}, node_id{6}}) {
    CHECK(g[i].target == op_id_of<fused_linear_relu_op>);
  }
  CHECK(g[5].name == "relu");
  CHECK(g[6].name == "relu_1");
  CHECK(g[5].nn_module_stack == std::vector<ir::module_frame>{{"fc1", "Linear"}});
  CHECK(g[5].stack_trace == "model.cpp:10 in forward");
  CHECK(g[6].stack_trace == "model.cpp:11 in forward");
  CHECK(g[6].args.front() == ir::argument(value_ref{5}));
  CHECK(g[7].args.front() == ir::argument(value_ref{6}));
  CHECK(g.output().args == std::vector<ir::argument>{value_ref{7}, value_ref{5}});
  CHECK(passes::replace_pattern(g, linear_relu_pattern(), fused) == 0);

  symbol_table sy;
  sy.bind("s0", 4, "x");
  const std::vector<any_tensor> in{seeded({4, 3}, 1), seeded({3, 5}, 2), seeded({5}, 3), seeded({5, 2}, 4), seeded({2}, 5)};
  const auto want = run_graph(before, in, sy);
  const auto got = run_graph(g, in, sy);
  REQUIRE(want.size() == got.size());
  for (std::size_t k = 0; k < want.size(); ++k) {
    REQUIRE(want[k].extents() == got[k].extents());
    for (index_t i = 0; i < want[k].numel(); ++i) CHECK(got[k].data<float>()[i] == doctest::Approx(want[k].data<float>()[i]).epsilon(1e-5));
  }
}

TEST_CASE("replace_pattern: a match whose inner value is read outside it is not taken") {
  // the first layer's add is also returned: that layer cannot fuse; the second still does
  two_layers t = two_layer_graph(true);
  ir::graph& h = t.g;
  REQUIRE(h[6].target == op_id_of<add_op>);
  const auto m = passes::find_pattern(h, linear_relu_pattern());
  REQUIRE(m.size() == 1);
  CHECK(m[0].anchor == t.relu2);
  CHECK(m[0].node("matmul").name == "matmul_1");
  CHECK(m[0].inputs == std::vector<value_ref>{value_ref{t.relu1}, value_ref{3}, value_ref{4}});
  CHECK(passes::replace_pattern(h, linear_relu_pattern(), fused) == 1);
  ir::verify(h);
}

TEST_CASE("replace_pattern: wildcards bind one value each, matches do not overlap, a replacement may be an input") {
  SUBCASE("a wildcard used twice matches one value twice") {
    ir::graph p;
    const node_id a = p.add_placeholder("a", {});
    p.set_output({value_ref{p.add_call({.target = op_id_of<add_op>, .args = {value_ref{a}, value_ref{a}}, .vals = {{}}})}});
    ir::graph g;
    const node_id x = g.add_placeholder("x", f32_meta({2}));
    const node_id y = g.add_placeholder("y", f32_meta({2}));
    const node_id xx = g.add_call({.target = op_id_of<add_op>, .args = {value_ref{x}, value_ref{x}}, .vals = {f32_meta({2})}});
    const node_id xy = g.add_call({.target = op_id_of<add_op>, .args = {value_ref{x}, value_ref{y}}, .vals = {f32_meta({2})}});
    g.set_output({value_ref{xx}, value_ref{xy}});
    const auto m = passes::find_pattern(g, p);
    REQUIRE(m.size() == 1);
    CHECK(m[0].anchor == xx);
    // x + x -> x * 2
    CHECK(passes::replace_pattern(g, p, [](passes::graph_builder& b, std::span<const value_ref> in) {
            return std::vector<value_ref>{b.mul(in[0], 2.0)};
          }) == 1);
    ir::verify(g);
    CHECK(g[2].target == op_id_of<mul_op>);
    CHECK(g[2].name == "add");
  }
  SUBCASE("neg(neg(a)) on a chain of four negs: two matches, first come; a replacement that is the input itself") {
    ir::graph g = neg_chain(5, f32_meta({3}));
    CHECK(passes::find_pattern(g, neg_neg_pattern()).size() == 2);
    CHECK(passes::replace_pattern(g, neg_neg_pattern(), [](passes::graph_builder&, std::span<const value_ref> in) {
            return std::vector<value_ref>{in[0]};
          }) == 2);
    ir::verify(g);
    REQUIRE(g.size() == 3);
    CHECK(g[1].name == "neg_4");
    CHECK(g[1].args.front() == ir::argument(value_ref{0}));
  }
  SUBCASE("a 10^4-node chain: 5000 matches in one pass") {
    ir::graph g = neg_chain(10000, f32_meta({3}));
    CHECK(passes::replace_pattern(g, neg_neg_pattern(), [](passes::graph_builder&, std::span<const value_ref> in) {
            return std::vector<value_ref>{in[0]};
          }) == 5000);
    CHECK(g.size() == 2);
    CHECK(g.output().args.front() == ir::argument(value_ref{0}));
  }
}

TEST_CASE("replace_pattern: arguments that are not tensors match exactly unless marked any, and a filter decides last") {
  ir::graph p;
  const node_id a = p.add_placeholder("a", {});
  const node_id scale = p.add_call({.target = op_id_of<mul_op>, .args = {value_ref{a}, 2.0}, .vals = {{}}, .name_hint = "scale"});
  p.set_output({value_ref{scale}});
  ir::graph g;
  const node_id x = g.add_placeholder("x", f32_meta({2}));
  const node_id m2 = g.add_call({.target = op_id_of<mul_op>, .args = {value_ref{x}, 2.0}, .vals = {f32_meta({2})}});
  const node_id m3 = g.add_call({.target = op_id_of<mul_op>, .args = {value_ref{m2}, 3.0}, .vals = {f32_meta({2})}});
  const node_id mt = g.add_call({.target = op_id_of<mul_op>, .args = {value_ref{m3}, value_ref{x}}, .vals = {f32_meta({2})}});
  g.set_output({value_ref{mt}});
  CHECK(passes::find_pattern(g, p).size() == 1);
  const passes::replace_options any{.any_arguments = {{"scale", 1}}};
  const auto all = passes::find_pattern(g, p, any);
  REQUIRE(all.size() == 2);  // (a tensor argument is not "any": mul(m3, x) does not match)
  CHECK(all[1].node("scale").args[1] == ir::argument(3.0));
  passes::replace_options only_three = any;
  only_three.filter = [](const passes::pattern_match& m) { return m.node("scale").args[1] == ir::argument(3.0); };
  const auto filtered = passes::find_pattern(g, p, only_three);
  REQUIRE(filtered.size() == 1);
  CHECK(filtered[0].anchor == m3);
  // a callback that reads the match: mul(x, k) -> div(x, 1 / k)
  CHECK(passes::replace_pattern(
            g, p,
            [](passes::graph_builder& b, std::span<const value_ref> in, const passes::pattern_match& m) {
              return std::vector<value_ref>{b.div(in[0], 1.0 / std::get<double>(m.node("scale").args[1]))};
            },
            any) == 2);
  ir::verify(g);
  CHECK(g[1].target == op_id_of<div_op>);
  CHECK(g[1].args[1] == ir::argument(0.5));
  CHECK(g[2].target == op_id_of<div_op>);
  CHECK(g[3].target == op_id_of<mul_op>);
}

TEST_CASE("replace_pattern: malformed patterns and replacements are argument errors") {
  ir::graph g = neg_chain(2, f32_meta({3}));
  const auto identity = [](passes::graph_builder&, std::span<const value_ref> in) { return std::vector<value_ref>{in[0]}; };
  ir::graph open;
  (void)open.add_placeholder("a", {});
  CHECK_THROWS_WITH_AS(passes::replace_pattern(g, open, identity), doctest::Contains("the pattern has no output node"), argument_error);
  ir::graph dead;
  const node_id a = dead.add_placeholder("a", {});
  const node_id side = dead.add_call({.target = op_id_of<exp_op>, .args = {value_ref{a}}, .vals = {{}}});
  (void)side;
  const node_id n = dead.add_call({.target = op_id_of<neg_op>, .args = {value_ref{a}}, .vals = {{}}});
  dead.set_output({value_ref{n}});
  CHECK_THROWS_WITH_AS(passes::replace_pattern(g, dead, identity), doctest::Contains("pattern node 'exp'"), argument_error);
  CHECK_THROWS_WITH_AS(passes::find_pattern(g, neg_neg_pattern(), {.any_arguments = {{"nothing", 0}}}),
                       doctest::Contains("names no call of the pattern"), argument_error);
  // a replacement of another shape than the value it replaces
  CHECK_THROWS_WITH_AS(passes::replace_pattern(g, neg_neg_pattern(),
                                               [](passes::graph_builder& b, std::span<const value_ref> in) {
                                                 return std::vector<value_ref>{b.sum_all(in[0])};
                                               }),
                       doctest::Contains("the replacement of 'neg_1' is f32[], the value it replaces f32[3]"), argument_error);
  CHECK_THROWS_WITH_AS(passes::replace_pattern(g, neg_neg_pattern(),
                                               [](passes::graph_builder&, std::span<const value_ref>) { return std::vector<value_ref>{}; }),
                       doctest::Contains("returned 0 values for a pattern with 1 outputs"), argument_error);
}

TEST_CASE("replace_pattern as a pipeline pass") {
  eigen::register_kernel<fused_linear_relu_op>();
  two_layers t = two_layer_graph();
  passes::pipeline p({.verify = passes::verify_mode::always});
  p.add(passes::replace_pattern_pass("fuse_linear_relu", linear_relu_pattern(),
                                     [](passes::graph_builder& b, std::span<const value_ref> in, const passes::pattern_match&) {
                                       return fused(b, in);
                                     }));
  const passes::pipeline_report r = p.run(t.g);
  REQUIRE(r.passes.size() == 1);
  CHECK(r.passes[0].name == "fuse_linear_relu");
  CHECK(r.passes[0].changed);
  CHECK(r.passes[0].nodes_before == 13);
  CHECK(r.passes[0].nodes_after == 9);
  const bool described = ir::describe(op_id_of<fused_linear_relu_op>).infer != nullptr;
  CHECK(described);
}
