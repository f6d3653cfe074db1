// Tests for typex/ir/graph.hpp.
#include "mlp_graph.hpp"

using namespace ir_test;

TEST_CASE("graph: nodes in order, unique names, users, metadata") {
  const graph g = mlp_graph();
  REQUIRE(g.size() == 8);
  CHECK(g.placeholders().size() == 4);
  CHECK(g[4].name == "linear");
  CHECK(g[6].name == "linear_1");  // torch.fx's naming
  CHECK(g[6].nn_module_stack.front().path == "fc2");
  CHECK(g.meta(value_ref{6}).to_string() == "f32[s0, 10]");
  const auto users = g.users();
  CHECK(users[4] == std::vector<node_id>{5});
  CHECK(users[3] == std::vector<node_id>{4});
  CHECK(users[6] == std::vector<node_id>{7});
  CHECK(g.output().args.size() == 1);
}

TEST_CASE("graph: construction refuses what would break the order") {
  graph g;
  const node_id x = g.add_placeholder("x", {dtype::f32, {3}});
  CHECK_THROWS_AS(g.add_call({.target = typex::op_id_of<typex::relu_op>, .args = {value_ref{5}}, .vals = {{dtype::f32, {3}}}}),
                  graph_error);
  CHECK_THROWS_AS(g.add_call({.target = typex::op_id_of<typex::relu_op>, .args = {value_ref{x, 1}}, .vals = {{dtype::f32, {3}}}}),
                  graph_error);
  const node_id r = g.add_call({.target = typex::op_id_of<typex::relu_op>, .args = {value_ref{x}}, .vals = {{dtype::f32, {3}}}});
  g.set_output({value_ref{r}});
  CHECK_THROWS_AS(g.add_placeholder("y", {dtype::f32, {3}}), graph_error);
  CHECK_THROWS_AS(g.set_output({value_ref{r}}), graph_error);
  CHECK_THROWS_AS(g.add_call({.target = typex::op_id_of<typex::relu_op>, .args = {value_ref{r}}, .vals = {{dtype::f32, {3}}}}),
                  graph_error);
}

TEST_CASE("graph: names are identifiers and never collide") {
  graph g;
  CHECK(g[g.add_placeholder("layers.0.weight", {dtype::f32, {1}})].name == "layers_0_weight");
  CHECK(g[g.add_placeholder("0x", {dtype::f32, {1}})].name == "_0x");
  CHECK(g[g.add_placeholder("x", {dtype::f32, {1}})].name == "x");
  CHECK(g[g.add_placeholder("x", {dtype::f32, {1}})].name == "x_1");
  CHECK(g[g.add_placeholder("output", {dtype::f32, {1}})].name == "output_1");
}

TEST_CASE("graph: a placeholder found late is moved first by reorder") {
  graph g;
  const node_id x = g.add_placeholder("x", {dtype::f32, {3}});
  const node_id n = g.add_call({.target = typex::op_id_of<typex::neg_op>, .args = {value_ref{x}}, .vals = {{dtype::f32, {3}}}});
  const node_id c = g.add_placeholder("c_table", {dtype::f32, {3}});  // a constant met while tracing
  const node_id a = g.add_call({.target = typex::op_id_of<typex::add_op>, .args = {value_ref{n}, value_ref{c}}, .vals = {{dtype::f32, {3}}}});
  CHECK_THROWS_AS(g.reorder({a, n, c, x}), graph_error);  // would read before producing
  CHECK_THROWS_AS(g.reorder({c, x, n}), graph_error);     // not a permutation
  g.reorder({c, x, n, a});
  g.set_output({value_ref{3}});
  CHECK(g[0].name == "c_table");
  CHECK(std::get<value_ref>(g[3].args[1]).node == 0);
  CHECK(std::get<value_ref>(g[3].args[0]).node == 2);
}
