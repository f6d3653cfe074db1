// Tests for typex/passes/dce.hpp.
#include "../ir/mlp_graph.hpp"

#include <typex/ir/printer.hpp>
#include <typex/ir/verifier.hpp>
#include <typex/passes/dce.hpp>
#include <typex/passes/pass.hpp>

#include <string>
#include <vector>

using namespace ir_test;

TEST_CASE("dead calls are removed, references renumbered, placeholders kept") {
  graph g = mlp_graph(true);
  REQUIRE(g.size() == 9);
  CHECK(passes::eliminate_dead_code(g) == 1);
  CHECK(g.size() == 8);
  verify(g);
  CHECK(print_readable(g) == print_readable(mlp_graph()));
  CHECK(passes::eliminate_dead_code(g) == 0);
}

TEST_CASE("a chain of dead calls goes in one pass, unused inputs stay") {
  graph g;
  const node_id x = g.add_placeholder("x", {dtype::f32, {3}});
  const node_id unused = g.add_placeholder("unused", {dtype::f32, {3}});
  const node_id a = g.add_call({.target = typex::op_id_of<typex::neg_op>, .args = {value_ref{x}}, .vals = {{dtype::f32, {3}}}});
  const node_id b = g.add_call({.target = typex::op_id_of<typex::exp_op>, .args = {value_ref{a}}, .vals = {{dtype::f32, {3}}}});
  (void)g.add_call({.target = typex::op_id_of<typex::log_op>, .args = {value_ref{b}}, .vals = {{dtype::f32, {3}}}});
  g.set_output({value_ref{x}});
  CHECK(passes::eliminate_dead_code(g) == 3);
  CHECK(g.size() == 3);
  CHECK(g[unused].name == "unused");
  verify(g);
}

// ---- what DCE keeps although nothing reads it

namespace {
ir::tensor_meta f32_meta(std::vector<sym_expr> shape) { return {dtype::f32, std::move(shape)}; }
}  // namespace

TEST_CASE("dce keeps assertions, random draws and ops with side effects, and drops a dead eval-mode dropout") {
  graph g;
  const sym_expr s0 = sym_expr::symbol("s0");
  const node_id x = g.add_placeholder("x", f32_meta({s0, 4}));
  (void)g.add_call({.target = op_id_of<assert_shape_op>,
                    .args = {s0, std::string(to_string(relation::divisible)), sym_expr(index_t{2}), std::string("the batch pairs up")},
                    .name_hint = "assert_batch"});
  const node_id train = g.add_call({.target = op_id_of<dropout_op>, .args = {value_ref{x}, 0.5, true}, .vals = {f32_meta({s0, 4})},
                                    .name_hint = "train_dropout"});
  const node_id mask = g.add_call({.target = op_id_of<dropout_mask_op>, .args = {value_ref{x}, 0.25}, .vals = {f32_meta({s0, 4})},
                                   .nn_module_stack = {{"drop", "typex::nn::dropout"}}, .stack_trace = "model.cpp:9 in forward"});
  (void)g.add_call({.target = op_id_of<dropout_op>, .args = {value_ref{x}, 0.5, false}, .vals = {f32_meta({s0, 4})},
                    .name_hint = "eval_dropout"});
  (void)g.add_call({.target = op_id_of<neg_op>, .args = {value_ref{x}}, .vals = {f32_meta({s0, 4})}});
  g.set_output({value_ref{x}});
  verify(g);
  CHECK(passes::has_side_effects(g[train]));
  CHECK(passes::has_side_effects(g[mask]));
  CHECK_FALSE(passes::has_side_effects(g[4]));  // (the eval-mode dropout: no draw)
  CHECK(passes::eliminate_dead_code(g) == 2);
  verify(g);
  std::vector<std::string> names;
  for (const node& n : g.nodes()) names.push_back(n.name);
  CHECK(names == std::vector<std::string>{"x", "assert_batch", "train_dropout", "dropout_mask", "output"});
  // the kept nodes keep their metadata
  CHECK(g[3].nn_module_stack == std::vector<module_frame>{{"drop", "typex::nn::dropout"}});
  CHECK(g[3].stack_trace == "model.cpp:9 in forward");
  CHECK(passes::eliminate_dead_code(g) == 0);
}

TEST_CASE("dce: a dead tail of a 10^4-node chain goes in one sweep, the live head stays with its metadata") {
  graph g;
  const node_id x = g.add_placeholder("x", f32_meta({8}));
  value_ref cur{x};
  value_ref keep{x};
  for (int i = 0; i < 10000; ++i) {
    cur = value_ref{g.add_call({.target = op_id_of<neg_op>, .args = {cur}, .vals = {f32_meta({8})},
                                .nn_module_stack = {{"layers." + std::to_string(i), "Neg"}}, .stack_trace = "chain.cpp:1"})};
    if (i == 4999) keep = cur;
  }
  g.set_output({keep});
  CHECK(passes::eliminate_dead_code(g) == 5000);
  CHECK(g.size() == 5002);
  verify(g);
  CHECK(g[5000].nn_module_stack.front().path == "layers.4999");
  CHECK(g.output().args.front() == argument(value_ref{5000}));
}

TEST_CASE("dce as a pipeline pass keeps the signature, checked after it runs") {
  graph g = mlp_graph(true);
  passes::pipeline p({.verify = passes::verify_mode::always});
  p.add(passes::dce_pass());
  const passes::pipeline_report r = p.run(g);
  REQUIRE(r.passes.size() == 1);
  CHECK(r.passes[0].name == "dce");
  CHECK(r.passes[0].changed);
  CHECK(r.passes[0].nodes_before == 9);
  CHECK(r.passes[0].nodes_after == 8);
}
