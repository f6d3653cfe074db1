// Tests for typex/passes/dce.hpp.
#include "../ir/mlp_graph.hpp"

#include <typex/ir/printer.hpp>
#include <typex/ir/verifier.hpp>
#include <typex/passes/dce.hpp>

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
