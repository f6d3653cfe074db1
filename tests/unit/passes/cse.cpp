// Tests for typex/passes/cse.hpp and typex/passes/argument_hash.hpp: what merges (identical
// deterministic calls, chains of them, symbolic arguments), what never does (random draws,
// side effects, unknown ops, constants that differ in their bits), names and metadata, the output.
#include "../support.hpp"

#include <typex/ir/verifier.hpp>
#include <typex/passes/argument_hash.hpp>
#include <typex/passes/cse.hpp>
#include <typex/passes/pass.hpp>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

using namespace typex;
using ir::node_id;
using ir::sym_expr;
using ir::value_ref;

namespace {
ir::tensor_meta f32_meta(std::vector<sym_expr> shape) { return {dtype::f32, std::move(shape)}; }

std::vector<std::string> names_of(const ir::graph& g) {
  std::vector<std::string> out;
  for (const ir::node& n : g.nodes()) out.push_back(n.name);
  return out;
}

// A user op that no register_op made known: nothing says it is deterministic.
struct unknown_op {
  static constexpr std::string_view target = "cse_test.unknown.default";
};
}  // namespace

TEST_CASE("cse merges two identical adds, and what reads the second reads the first, the output included") {
  ir::graph g;
  const sym_expr s0 = sym_expr::symbol("s0");
  const node_id x = g.add_placeholder("x", f32_meta({s0, 4}));
  const node_id y = g.add_placeholder("y", f32_meta({s0, 4}));
  const node_id a1 = g.add_call({.target = op_id_of<add_op>, .args = {value_ref{x}, value_ref{y}}, .vals = {f32_meta({s0, 4})},
                                 .nn_module_stack = {{"block", "Block"}}, .stack_trace = "model.cpp:3 in forward"});
  const node_id a2 = g.add_call({.target = op_id_of<add_op>, .args = {value_ref{x}, value_ref{y}}, .vals = {f32_meta({s0, 4})},
                                 .nn_module_stack = {{"other", "Other"}}, .stack_trace = "model.cpp:4 in forward"});
  // readers of both: a chain of duplicates merges along its whole length
  const node_id n1 = g.add_call({.target = op_id_of<neg_op>, .args = {value_ref{a1}}, .vals = {f32_meta({s0, 4})}});
  const node_id n2 = g.add_call({.target = op_id_of<neg_op>, .args = {value_ref{a2}}, .vals = {f32_meta({s0, 4})}});
  const node_id m = g.add_call({.target = op_id_of<mul_op>, .args = {value_ref{n1}, value_ref{n2}}, .vals = {f32_meta({s0, 4})}});
  g.set_output({value_ref{m}, value_ref{a2}});
  CHECK(passes::eliminate_common_subexpressions(g) == 2);
  ir::verify(g);
  CHECK(names_of(g) == std::vector<std::string>{"x", "y", "add", "neg", "mul", "output"});
  // the survivor keeps its name and metadata
  CHECK(g[2].nn_module_stack == std::vector<ir::module_frame>{{"block", "Block"}});
  CHECK(g[2].stack_trace == "model.cpp:3 in forward");
  CHECK(g[4].args == std::vector<ir::argument>{value_ref{3}, value_ref{3}});
  CHECK(g.output().args == std::vector<ir::argument>{value_ref{4}, value_ref{2}});
  CHECK(passes::eliminate_common_subexpressions(g) == 0);
}

TEST_CASE("cse never merges random draws, side effects or unknown ops") {
  ir::graph g;
  const node_id x = g.add_placeholder("x", f32_meta({3}));
  const node_id m1 = g.add_call({.target = op_id_of<dropout_mask_op>, .args = {value_ref{x}, 0.5}, .vals = {f32_meta({3})}});
  const node_id m2 = g.add_call({.target = op_id_of<dropout_mask_op>, .args = {value_ref{x}, 0.5}, .vals = {f32_meta({3})}});
  const node_id d1 = g.add_call({.target = op_id_of<dropout_op>, .args = {value_ref{x}, 0.5, true}, .vals = {f32_meta({3})}});
  const node_id d2 = g.add_call({.target = op_id_of<dropout_op>, .args = {value_ref{x}, 0.5, true}, .vals = {f32_meta({3})}});
  const node_id u1 = g.add_call({.target = op_id_of<unknown_op>, .args = {value_ref{x}}, .vals = {f32_meta({3})}});
  const node_id u2 = g.add_call({.target = op_id_of<unknown_op>, .args = {value_ref{x}}, .vals = {f32_meta({3})}});
  const sym_expr n = sym_expr(index_t{3});
  (void)g.add_call({.target = op_id_of<ir::assert_shape_op>, .args = {n, std::string("=="), n, std::string("three")}});
  (void)g.add_call({.target = op_id_of<ir::assert_shape_op>, .args = {n, std::string("=="), n, std::string("three")}});
  g.set_output({value_ref{m1}, value_ref{m2}, value_ref{d1}, value_ref{d2}, value_ref{u1}, value_ref{u2}});
  CHECK_FALSE(passes::is_mergeable(op_id_of<dropout_mask_op>));
  CHECK_FALSE(passes::is_mergeable(op_id_of<dropout_op>));
  CHECK_FALSE(passes::is_mergeable(op_id_of<ir::assert_shape_op>));
  CHECK_FALSE(passes::is_mergeable(op_id_of<unknown_op>));
  CHECK(passes::is_mergeable(op_id_of<add_op>));
  const std::size_t before = g.size();
  CHECK(passes::eliminate_common_subexpressions(g) == 0);
  CHECK(g.size() == before);
}

TEST_CASE("cse compares constants exactly: 0.0 and -0.0 stay apart, equal numbers and symbolic sizes merge") {
  ir::graph g;
  const sym_expr s0 = sym_expr::symbol("s0");
  const node_id x = g.add_placeholder("x", f32_meta({s0, 4}));
  const node_id z1 = g.add_call({.target = op_id_of<mul_op>, .args = {value_ref{x}, 0.0}, .vals = {f32_meta({s0, 4})}});
  const node_id z2 = g.add_call({.target = op_id_of<mul_op>, .args = {value_ref{x}, -0.0}, .vals = {f32_meta({s0, 4})}});
  const node_id t1 = g.add_call({.target = op_id_of<mul_op>, .args = {value_ref{x}, 2.0}, .vals = {f32_meta({s0, 4})}});
  const node_id t2 = g.add_call({.target = op_id_of<mul_op>, .args = {value_ref{x}, 2.0}, .vals = {f32_meta({s0, 4})}});
  // (a different kind of number is a different argument: 2 is not 2.0)
  const node_id t3 = g.add_call({.target = op_id_of<mul_op>, .args = {value_ref{x}, std::int64_t{2}}, .vals = {f32_meta({s0, 4})}});
  const std::vector<sym_expr> sizes{s0 * sym_expr(index_t{4})};
  const node_id v1 = g.add_call({.target = op_id_of<aten::view>, .args = {value_ref{x}, sizes}, .vals = {f32_meta(sizes)}});
  const std::vector<sym_expr> again{sym_expr::symbol("s0") * sym_expr(index_t{4})};  // (built anew: equal by structure)
  const node_id v2 = g.add_call({.target = op_id_of<aten::view>, .args = {value_ref{x}, again}, .vals = {f32_meta(again)}});
  g.set_output({value_ref{z1}, value_ref{z2}, value_ref{t1}, value_ref{t2}, value_ref{t3}, value_ref{v1}, value_ref{v2}});
  CHECK(passes::eliminate_common_subexpressions(g) == 2);
  ir::verify(g);
  const auto& outs = g.output().args;
  CHECK(outs[0] != outs[1]);
  CHECK(outs[2] == outs[3]);
  CHECK(outs[2] != outs[4]);
  CHECK(outs[5] == outs[6]);
}

TEST_CASE("cse with keep_output_names: a returned duplicate stays for the output, its other readers read the survivor") {
  ir::graph g;
  const node_id x = g.add_placeholder("x", f32_meta({3}));
  const node_id e1 = g.add_call({.target = op_id_of<exp_op>, .args = {value_ref{x}}, .vals = {f32_meta({3})}});
  const node_id e2 = g.add_call({.target = op_id_of<exp_op>, .args = {value_ref{x}}, .vals = {f32_meta({3})}});
  const node_id s = g.add_call({.target = op_id_of<add_op>, .args = {value_ref{e1}, value_ref{e2}}, .vals = {f32_meta({3})}});
  g.set_output({value_ref{s}, value_ref{e2}});
  passes::pipeline p({.verify = passes::verify_mode::always});
  p.add(passes::cse_pass({.keep_output_names = true}));
  CHECK(p.passes().front().preserves.output_names);
  CHECK(p.run(g).changed());
  CHECK(names_of(g) == std::vector<std::string>{"x", "exp", "exp_1", "add", "output"});
  CHECK(g[3].args == std::vector<ir::argument>{value_ref{1}, value_ref{1}});
  CHECK(g.output().args[1] == ir::argument(value_ref{2}));
  // nothing left to do: a second run changes nothing
  CHECK(passes::eliminate_common_subexpressions(g, {.keep_output_names = true}) == 0);
  // without the option, the returned duplicate merges too
  CHECK(passes::eliminate_common_subexpressions(g) == 1);
  CHECK(g.output().args[1] == ir::argument(value_ref{1}));
}

TEST_CASE("cse on a 10^4-node chain of duplicated steps merges every duplicate in one sweep") {
  ir::graph g;
  const node_id x = g.add_placeholder("x", f32_meta({8}));
  value_ref cur{x};
  for (int i = 0; i < 5000; ++i) {
    const node_id a = g.add_call({.target = op_id_of<add_op>, .args = {cur, 1.0}, .vals = {f32_meta({8})}});
    const node_id b = g.add_call({.target = op_id_of<add_op>, .args = {cur, 1.0}, .vals = {f32_meta({8})}});
    cur = value_ref{g.add_call({.target = op_id_of<mul_op>, .args = {value_ref{a}, value_ref{b}}, .vals = {f32_meta({8})}})};
  }
  g.set_output({cur});
  REQUIRE(g.size() == 15002);
  CHECK(passes::eliminate_common_subexpressions(g) == 5000);
  CHECK(g.size() == 10002);
  ir::verify(g);
}

TEST_CASE("argument hashing: exact equality, and hashes that agree with it") {
  using passes::hash_argument;
  using passes::same_argument;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  CHECK_FALSE(same_argument(0.0, -0.0));
  CHECK(same_argument(nan, nan));
  CHECK_FALSE(same_argument(std::int64_t{1}, 1.0));
  CHECK_FALSE(same_argument(true, std::int64_t{1}));
  const ir::argument e1 = sym_expr::symbol("s0") + sym_expr(index_t{1});
  const ir::argument e2 = sym_expr::symbol("s0") + sym_expr(index_t{1});
  CHECK(same_argument(e1, e2));
  CHECK(hash_argument(e1) == hash_argument(e2));
  CHECK(hash_argument(std::vector<sym_expr>{sym_expr::symbol("a"), sym_expr(index_t{3})}) ==
        hash_argument(std::vector<sym_expr>{sym_expr::symbol("a"), sym_expr(index_t{3})}));
  CHECK(hash_argument(value_ref{3, 1}) == hash_argument(value_ref{3, 1}));
  CHECK(hash_argument(value_ref{3, 1}) != hash_argument(value_ref{3, 0}));
  CHECK(hash_argument(std::string("tanh")) == hash_argument(std::string("tanh")));
  CHECK(hash_argument(0.0) != hash_argument(-0.0));
  CHECK(passes::hash_sym_expr(sym_expr::symbol("s0")) != passes::hash_sym_expr(sym_expr::symbol("s1")));
}
