// Tests for typex/passes/fold.hpp: no-op views and copies removed, splat constants folded into
// one aten.full — checked bit for bit against the Eigen backend running the graph before and after
// — symbolic arguments made ints; names, metadata and the output.
#include "../graph_runner.hpp"
#include "../support.hpp"

#include <typex/backend/eigen.hpp>
#include <typex/ir/verifier.hpp>
#include <typex/passes/dce.hpp>
#include <typex/passes/fold.hpp>
#include <typex/passes/pass.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

using namespace typex;
using ir::node_id;
using ir::sym_expr;
using ir::value_ref;

namespace {
ir::tensor_meta meta(dtype d, std::vector<sym_expr> shape) { return {d, std::move(shape)}; }
ir::tensor_meta f32_meta(std::vector<sym_expr> shape) { return {dtype::f32, std::move(shape)}; }

using typex_test::run_graph;

// Whether two tensors hold the same dtype, extents and bits (f32, f64 or i64).
bool same_bits(const any_tensor& a, const any_tensor& b) {
  if (a.scalar_type() != b.scalar_type() || a.extents() != b.extents()) return false;
  for (index_t i = 0; i < a.numel(); ++i) {
    if (a.scalar_type() == dtype::f64) {
      if (std::bit_cast<std::uint64_t>(a.data<double>()[i]) != std::bit_cast<std::uint64_t>(b.data<double>()[i])) return false;
    } else if (a.scalar_type() == dtype::i64) {
      if (a.data<std::int64_t>()[i] != b.data<std::int64_t>()[i]) return false;
    } else if (std::bit_cast<std::uint32_t>(a.data<float>()[i]) != std::bit_cast<std::uint32_t>(b.data<float>()[i])) {
      return false;
    }
  }
  return true;
}

any_tensor filled(std::vector<index_t> extents, float start) {
  any_tensor t(dtype::f32, extents);
  for (index_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = start + 0.25f * static_cast<float>(i);
  return t;
}

std::size_t count_target(const ir::graph& g, op_id op) {
  std::size_t n = 0;
  for (const ir::node& nd : g.nodes()) n += nd.op == ir::node_op::call_function && nd.target == op ? 1 : 0;
  return n;
}
}  // namespace

TEST_CASE("fold removes no-op views and copies, and their readers, the output included, read the input") {
  ir::graph g;
  const sym_expr s0 = sym_expr::symbol("s0");
  const std::vector<sym_expr> shape{s0, 3};
  const node_id x = g.add_placeholder("x", f32_meta(shape));
  const node_id sc = g.add_placeholder("scalar", f32_meta({}));
  const node_id v = g.add_call({.target = op_id_of<aten::view>, .args = {value_ref{x}, shape}, .vals = {f32_meta(shape)}});
  const node_id r = g.add_call({.target = op_id_of<aten::reshape>, .args = {value_ref{v}, shape}, .vals = {f32_meta(shape)}});
  const node_id e = g.add_call({.target = op_id_of<aten::expand>, .args = {value_ref{r}, shape}, .vals = {f32_meta(shape)}});
  const node_id p = g.add_call({.target = op_id_of<aten::permute>, .args = {value_ref{e}, std::vector<std::int64_t>{0, -1}},
                                .vals = {f32_meta(shape)}});
  const node_id t = g.add_call({.target = op_id_of<aten::transpose_int>, .args = {value_ref{p}, std::int64_t{1}, std::int64_t{-1}},
                                .vals = {f32_meta(shape)}});
  const node_id c = g.add_call({.target = op_id_of<aten::_to_copy>, .args = {value_ref{t}, dtype::f32}, .vals = {f32_meta(shape)}});
  const node_id s1 = g.add_call({.target = op_id_of<aten::slice_Tensor>,
                                 .args = {value_ref{c}, std::int64_t{0}, std::int64_t{0}, std::numeric_limits<std::int64_t>::max(), std::int64_t{1}},
                                 .vals = {f32_meta(shape)}});
  const node_id s2 = g.add_call({.target = op_id_of<aten::slice_Tensor>, .args = {value_ref{s1}, std::int64_t{1}, std::int64_t{0}, std::int64_t{3}},
                                 .vals = {f32_meta(shape)}});
  const node_id s3 = g.add_call({.target = op_id_of<aten::slice_Tensor>, .args = {value_ref{s2}, std::int64_t{0}, ir::none_t{}, s0},
                                 .vals = {f32_meta(shape)}});
  const node_id f = g.add_call({.target = op_id_of<aten::flatten_using_ints>, .args = {value_ref{s3}, std::int64_t{1}, std::int64_t{1}},
                                .vals = {f32_meta(shape)}});
  const node_id y = g.add_call({.target = op_id_of<relu_op>, .args = {value_ref{f}}, .vals = {f32_meta(shape)},
                                .nn_module_stack = {{"act", "ReLU"}}, .stack_trace = "model.cpp:5 in forward"});
  // not no-ops: a real reshape, a real permute, a conversion, a partial slice, flatten of a scalar
  const node_id rr = g.add_call({.target = op_id_of<aten::reshape>, .args = {value_ref{y}, std::vector<sym_expr>{s0 * sym_expr(index_t{3})}},
                                 .vals = {f32_meta({s0 * sym_expr(index_t{3})})}});
  const node_id pp = g.add_call({.target = op_id_of<aten::permute>, .args = {value_ref{y}, std::vector<std::int64_t>{1, 0}},
                                 .vals = {f32_meta({3, s0})}});
  const node_id cc = g.add_call({.target = op_id_of<aten::_to_copy>, .args = {value_ref{y}, dtype::f64}, .vals = {meta(dtype::f64, shape)}});
  const node_id ss = g.add_call({.target = op_id_of<aten::slice_Tensor>, .args = {value_ref{y}, std::int64_t{1}, std::int64_t{0}, std::int64_t{2}},
                                 .vals = {f32_meta({s0, 2})}});
  const node_id fs = g.add_call({.target = op_id_of<aten::flatten_using_ints>, .args = {value_ref{sc}, std::int64_t{0}, std::int64_t{-1}},
                                 .vals = {f32_meta({1})}});
  g.set_output({value_ref{f}, value_ref{rr}, value_ref{pp}, value_ref{cc}, value_ref{ss}, value_ref{fs}});
  ir::verify(g);
  ir::graph before = g;

  const passes::fold_stats st = passes::remove_noop_views(g);
  CHECK(st.noops_removed == 10);
  CHECK(st.splats_folded == 0);
  ir::verify(g);
  // the relu reads x; the output's first value is x itself
  const ir::node& relu = g[2];
  REQUIRE(relu.name == "relu");
  CHECK(relu.args.front() == ir::argument(value_ref{x}));
  CHECK(relu.nn_module_stack == std::vector<ir::module_frame>{{"act", "ReLU"}});
  CHECK(relu.stack_trace == "model.cpp:5 in forward");
  CHECK(g.output().args.front() == ir::argument(value_ref{x}));
  CHECK(g.size() == before.size() - 10);
  CHECK(passes::remove_noop_views(g).total() == 0);

  // the same values before and after
  symbol_table sy;
  sy.bind("s0", 2, "x");
  const std::vector<any_tensor> in{filled({2, 3}, -0.5f), filled({}, 1.0f)};
  const auto want = run_graph(before, in, sy);
  const auto got = run_graph(g, in, sy);
  REQUIRE(want.size() == got.size());
  for (std::size_t k = 0; k < want.size(); ++k) CHECK(same_bits(want[k], got[k]));
}

TEST_CASE("fold with keep_output_names keeps a no-op the output returns") {
  ir::graph g;
  const node_id x = g.add_placeholder("x", f32_meta({4}));
  const node_id v = g.add_call({.target = op_id_of<aten::view>, .args = {value_ref{x}, std::vector<std::int64_t>{4}}, .vals = {f32_meta({4})}});
  const node_id w = g.add_call({.target = op_id_of<aten::view>, .args = {value_ref{v}, std::vector<std::int64_t>{4}}, .vals = {f32_meta({4})}});
  const node_id n = g.add_call({.target = op_id_of<neg_op>, .args = {value_ref{w}}, .vals = {f32_meta({4})}});
  g.set_output({value_ref{n}, value_ref{w}});
  passes::pipeline p({.verify = passes::verify_mode::always});
  p.add(passes::fold_pass({.keep_output_names = true}));
  CHECK(p.run(g).changed());
  // view (read by view_1 only) went; view_1 stays for the output, which still names it
  CHECK(g.size() == 4);
  CHECK(g[1].name == "view_1");
  CHECK(g[1].args.front() == ir::argument(value_ref{x}));
  CHECK(g[2].args.front() == ir::argument(value_ref{1}));
  CHECK(g.output().args[1] == ir::argument(value_ref{1}));
}

TEST_CASE("fold makes pointwise calls on splats one aten.full, bit for bit what the kernels compute") {
  for (const dtype d : {dtype::f32, dtype::f64}) {
    CAPTURE(name(d));
    ir::graph g;
    const sym_expr s0 = sym_expr::symbol("s0");
    const std::vector<sym_expr> shape{s0, 3};
    const node_id x = g.add_placeholder("x", meta(d, shape));
    const node_id a = g.add_call({.target = op_id_of<aten::full>, .args = {shape, 0.7, d}, .vals = {meta(d, shape)}});
    const node_id b = g.add_call({.target = op_id_of<aten::ones_like>, .args = {value_ref{x}}, .vals = {meta(d, shape)}});
    const node_id c = g.add_call({.target = op_id_of<aten::full>, .args = {std::vector<std::int64_t>{3}, std::int64_t{3}, d},
                                  .vals = {meta(d, {3})}});
    // binary ops (c broadcasts), unary ops, pow with a number, numbers as operands
    std::vector<value_ref> outs;
    const auto add = [&](op_id op, std::vector<ir::argument> args, std::vector<sym_expr> s) {
      const node_id id = g.add_call({.target = op, .args = std::move(args), .vals = {meta(d, std::move(s))},
                                     .nn_module_stack = {{"m", "M"}}, .stack_trace = "splats.cpp:1"});
      outs.push_back(value_ref{id});
      return value_ref{id};
    };
    const value_ref sum = add(op_id_of<add_op>, {value_ref{a}, value_ref{b}}, shape);
    add(op_id_of<sub_op>, {value_ref{a}, value_ref{c}, std::int64_t{1}}, shape);
    add(op_id_of<mul_op>, {value_ref{a}, 0.3}, shape);
    add(op_id_of<div_op>, {value_ref{b}, value_ref{c}}, shape);
    add(op_id_of<maximum_op>, {value_ref{a}, value_ref{b}}, shape);
    add(op_id_of<minimum_op>, {value_ref{c}, value_ref{a}}, shape);
    add(op_id_of<pow_op>, {value_ref{a}, value_ref{c}}, shape);
    add(op_id_of<pow_scalar_op>, {value_ref{a}, 1.5}, shape);
    for (const op_id op : {op_id_of<neg_op>, op_id_of<abs_op>, op_id_of<exp_op>, op_id_of<log_op>, op_id_of<sqrt_op>, op_id_of<rsqrt_op>,
                           op_id_of<log1p_op>, op_id_of<sin_op>, op_id_of<cos_op>, op_id_of<erf_op>, op_id_of<reciprocal_op>})
      add(op, {sum}, shape);
    // a reshape of a splat is a splat (here of the full x's shape), and so its add
    const node_id rs = g.add_call({.target = op_id_of<aten::reshape>, .args = {value_ref{c}, std::vector<std::int64_t>{1, 3}},
                                   .vals = {meta(d, {1, 3})}});
    const value_ref of_reshape = add(op_id_of<add_op>, {value_ref{rs}, sum}, shape);
    // not folded: an activation (vectorised on the Eigen backend), add with alpha 2, a tensor that is not a splat
    add(op_id_of<relu_op>, {sum}, shape);
    add(op_id_of<add_op>, {value_ref{a}, value_ref{b}, 2.0}, shape);
    add(op_id_of<mul_op>, {value_ref{a}, value_ref{x}}, shape);
    g.set_output(outs);
    ir::verify(g);
    const ir::graph before = g;

    const passes::fold_stats st = passes::fold(g);
    CHECK(st.splats_folded == 20);
    ir::verify(g);
    // each folded call is a full with its name, metadata and provenance
    const ir::node& folded = g[of_reshape.node];  // (one node for one: the ids stay)
    CHECK(folded.target == op_id_of<aten::full>);
    CHECK(folded.stack_trace == "splats.cpp:1");
    CHECK(folded.nn_module_stack == std::vector<ir::module_frame>{{"m", "M"}});
    CHECK(folded.vals == std::vector<ir::tensor_meta>{meta(d, shape)});
    CHECK(g[4].name == "add");
    CHECK(g[4].target == op_id_of<aten::full>);
    CHECK(g[4].args[0] == ir::argument(shape));  // (symbolic sizes)
    // the splats that only folded calls read go with DCE: the reshape and the full it read (a and b
    // stay: the calls not folded read them)
    CHECK(passes::eliminate_dead_code(g) == 2);
    ir::verify(g);

    symbol_table sy;
    sy.bind("s0", 2, "x");
    any_tensor xin(d, {2, 3});
    for (index_t i = 0; i < xin.numel(); ++i) {
      if (d == dtype::f64) xin.data<double>()[i] = 0.1 * static_cast<double>(i);
      else xin.data<float>()[i] = 0.1f * static_cast<float>(i);
    }
    const auto want = run_graph(before, {xin}, sy);
    const auto got = run_graph(g, {xin}, sy);
    REQUIRE(want.size() == got.size());
    for (std::size_t k = 0; k < want.size(); ++k) {
      CAPTURE(k);
      CHECK(same_bits(want[k], got[k]));
    }
  }
}

TEST_CASE("fold: a conversion of a splat is a splat, integer splats and unbound sizes are left alone") {
  ir::graph g;
  const node_id x = g.add_placeholder("x", f32_meta({2}));
  const node_id a = g.add_call({.target = op_id_of<aten::full>, .args = {std::vector<std::int64_t>{2}, 0.1, dtype::f32},
                                .vals = {f32_meta({2})}});
  const node_id a64 = g.add_call({.target = op_id_of<aten::_to_copy>, .args = {value_ref{a}, dtype::f64}, .vals = {meta(dtype::f64, {2})}});
  const node_id m = g.add_call({.target = op_id_of<mul_op>, .args = {value_ref{a64}, 3.0}, .vals = {meta(dtype::f64, {2})}});
  const node_id i = g.add_call({.target = op_id_of<aten::full>, .args = {std::vector<std::int64_t>{2}, std::int64_t{3}, dtype::i64},
                                .vals = {meta(dtype::i64, {2})}});
  const node_id ii = g.add_call({.target = op_id_of<add_op>, .args = {value_ref{i}, value_ref{i}}, .vals = {meta(dtype::i64, {2})}});
  // sizes naming a symbol no input binds
  const sym_expr u0 = sym_expr::symbol("u0");
  const node_id ua = g.add_call({.target = op_id_of<aten::zeros>, .args = {std::vector<sym_expr>{u0}, dtype::f32}, .vals = {f32_meta({u0})}});
  const node_id ub = g.add_call({.target = op_id_of<exp_op>, .args = {value_ref{ua}}, .vals = {f32_meta({u0})}});
  const node_id y = g.add_call({.target = op_id_of<add_op>, .args = {value_ref{x}, value_ref{a}}, .vals = {f32_meta({2})}});
  g.set_output({value_ref{m}, value_ref{ii}, value_ref{ub}, value_ref{y}});
  const ir::graph before = g;
  CHECK(passes::fold_splat_constants(g).splats_folded == 1);
  ir::verify(g);
  const ir::node& folded = g[m];
  CHECK(folded.target == op_id_of<aten::full>);
  CHECK(folded.args[1] == ir::argument(static_cast<double>(static_cast<float>(0.1)) * 3.0));
  CHECK(folded.args[2] == ir::argument(dtype::f64));
  CHECK(g[ii].target == op_id_of<add_op>);
  CHECK(g[ub].target == op_id_of<exp_op>);
  symbol_table sy;
  sy.bind("u0", 2, "test");
  const auto want = run_graph(before, {filled({2}, 1.0f)}, sy);
  const auto got = run_graph(g, {filled({2}, 1.0f)}, sy);
  REQUIRE(want.size() == got.size());
  for (std::size_t k = 0; k < want.size(); ++k) CHECK(same_bits(want[k], got[k]));
}

TEST_CASE("fold makes constant symbolic arguments plain ints, and leaves assertions their SymInts") {
  ir::graph g;
  const sym_expr s0 = sym_expr::symbol("s0");
  const node_id x = g.add_placeholder("x", f32_meta({s0, 8}));
  const node_id z = g.add_placeholder("z", f32_meta({2, 4}));
  const sym_expr four = (s0 + sym_expr(index_t{4})) - s0;  // (sums cancel as they are built: a constant)
  const sym_expr eight = sym_expr::apply(dim_op::mul, sym_expr(index_t{2}), sym_expr(index_t{4}));
  const node_id sl = g.add_call({.target = op_id_of<aten::slice_Tensor>,
                                 .args = {value_ref{x}, std::int64_t{1}, sym_expr(index_t{0}), four, std::int64_t{1}},
                                 .vals = {f32_meta({s0, 4})}});
  const node_id v = g.add_call({.target = op_id_of<aten::view>,
                                .args = {value_ref{sl}, std::vector<sym_expr>{s0, sym_expr(index_t{2}), sym_expr(index_t{2})}},
                                .vals = {f32_meta({s0, 2, 2})}});
  const node_id vz = g.add_call({.target = op_id_of<aten::view>, .args = {value_ref{z}, std::vector<sym_expr>{eight}}, .vals = {f32_meta({8})}});
  const node_id check = g.add_call({.target = op_id_of<ir::assert_shape_op>,
                                    .args = {sym_expr(index_t{8}), std::string("=="), eight, std::string("eight")}, .name_hint = "check"});
  g.set_output({value_ref{v}, value_ref{vz}});
  ir::verify(g);
  const ir::graph before = g;
  const passes::fold_stats st = passes::fold_symbolic_arguments(g);
  CHECK(st.symbolic_arguments == 3);  // (slice's start and end, view_1's sizes; view's keep s0)
  ir::verify(g);
  CHECK(g[sl].args[2] == ir::argument(std::int64_t{0}));
  CHECK(g[sl].args[3] == ir::argument(std::int64_t{4}));
  CHECK(std::holds_alternative<std::vector<sym_expr>>(g[v].args[1]));
  CHECK(g[vz].args[1] == ir::argument(std::vector<std::int64_t>{8}));
  CHECK(std::holds_alternative<sym_expr>(g[check].args[2]));
  CHECK(passes::simplify((s0 + sym_expr(index_t{4})) - s0) == sym_expr(index_t{4}));
  CHECK(passes::simplify(s0 * sym_expr(index_t{2})) == s0 * sym_expr(index_t{2}));
  CHECK(passes::fold_symbolic_arguments(g).total() == 0);
  symbol_table sy;
  sy.bind("s0", 3, "x");
  const std::vector<any_tensor> in{filled({3, 8}, 0.0f), filled({2, 4}, 2.0f)};
  const auto want = run_graph(before, in, sy);
  const auto got = run_graph(g, in, sy);
  REQUIRE(want.size() == got.size());
  for (std::size_t k = 0; k < want.size(); ++k) CHECK(same_bits(want[k], got[k]));
}

TEST_CASE("fold on 10^4-node chains: no-op views and splat arithmetic in one sweep") {
  SUBCASE("a chain of no-op views") {
    ir::graph g;
    const node_id x = g.add_placeholder("x", f32_meta({4, 2}));
    value_ref cur{x};
    for (int i = 0; i < 10000; ++i)
      cur = value_ref{g.add_call({.target = op_id_of<aten::view>, .args = {cur, std::vector<std::int64_t>{4, 2}}, .vals = {f32_meta({4, 2})}})};
    g.set_output({cur});
    CHECK(passes::remove_noop_views(g).noops_removed == 10000);
    CHECK(g.size() == 2);
    CHECK(g.output().args.front() == ir::argument(value_ref{x}));
  }
  SUBCASE("a chain of splat arithmetic") {
    ir::graph g;
    (void)g.add_placeholder("x", f32_meta({4}));
    value_ref cur{g.add_call({.target = op_id_of<aten::zeros>, .args = {std::vector<std::int64_t>{4}, dtype::f32}, .vals = {f32_meta({4})}})};
    for (int i = 0; i < 10000; ++i)
      cur = value_ref{g.add_call({.target = op_id_of<add_op>, .args = {cur, 0.1}, .vals = {f32_meta({4})}})};
    g.set_output({cur});
    CHECK(passes::fold(g).splats_folded == 10000);
    CHECK(passes::eliminate_dead_code(g) == 10000);
    REQUIRE(g.size() == 3);
    float want = 0;
    for (int i = 0; i < 10000; ++i) want = want + static_cast<float>(0.1);
    CHECK(g[1].target == op_id_of<aten::full>);
    CHECK(g[1].args[1] == ir::argument(static_cast<double>(want)));
    CHECK(count_target(g, op_id_of<add_op>) == 0);
  }
}
