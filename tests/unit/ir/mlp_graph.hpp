// A hand-built graph shared by the IR tests: a two-layer MLP with a symbolic batch, one dead node.
#pragma once

#include "../support.hpp"

#include <typex/ops/all.hpp>

namespace ir_test {
using namespace typex;
using namespace typex::ir;

inline graph mlp_graph(bool with_dead_node = false) {
  graph g;
  const sym_expr s0 = sym_expr::symbol("s0");
  const node_id w1 = g.add_placeholder("p_fc1_weight", {dtype::f32, {512, 784}});
  const node_id b1 = g.add_placeholder("p_fc1_bias", {dtype::f32, {512}});
  const node_id w2 = g.add_placeholder("p_fc2_weight", {dtype::f32, {10, 512}});
  const node_id x = g.add_placeholder("x", {dtype::f32, {s0, 784}});
  const node_id l1 = g.add_call({.target = typex::op_id_of<typex::linear_op>,
                                 .args = {value_ref{x}, value_ref{w1}, value_ref{b1}},
                                 .vals = {{dtype::f32, {s0, 512}}},
                                 .nn_module_stack = {{"fc1", "typex::nn::linear"}},
                                 .stack_trace = "mlp.cpp:21 in forward"});
  if (with_dead_node)
    (void)g.add_call({.target = typex::op_id_of<typex::mul_op>, .args = {value_ref{l1}, 2.0}, .vals = {{dtype::f32, {s0, 512}}}});
  const node_id r = g.add_call({.target = typex::op_id_of<typex::relu_op>, .args = {value_ref{l1}}, .vals = {{dtype::f32, {s0, 512}}}});
  const node_id l2 = g.add_call({.target = typex::op_id_of<typex::linear_op>,
                                 .args = {value_ref{r}, value_ref{w2}, none_t{}},
                                 .vals = {{dtype::f32, {s0, 10}}},
                                 .nn_module_stack = {{"fc2", "typex::nn::linear"}}});
  g.set_output({value_ref{l2}});
  return g;
}
}  // namespace ir_test
