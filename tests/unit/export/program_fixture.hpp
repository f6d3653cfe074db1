// A hand-built exported program shared by the export tests: linear + buffer subtraction, batch s0.
#pragma once

#include "../support.hpp"

#include <typex/ops/all.hpp>
#include <typex/export/exported_program.hpp>

namespace export_test {
using namespace typex;
using namespace typex::ir;

struct parts {
  ir::graph g;
  graph_signature sig;
  named_tensors state_dict;
  named_tensors constants;
  range_constraints ranges;
  std::vector<module_call_entry> calls;
};

inline parts program_parts() {
  parts p;
  const sym_expr s0 = sym_expr::symbol("s0");
  const node_id w = p.g.add_placeholder("p_fc1_weight", {dtype::f32, {4, 3}});
  const node_id b = p.g.add_placeholder("p_fc1_bias", {dtype::f32, {4}});
  const node_id m = p.g.add_placeholder("b_bn_running_mean", {dtype::f32, {4}});
  const node_id k = p.g.add_placeholder("c_scale", {dtype::f32, {}});
  const node_id x = p.g.add_placeholder("x", {dtype::f32, {s0, 3}});
  const node_id l = p.g.add_call({.target = typex::op_id_of<typex::linear_op>,
                                  .args = {value_ref{x}, value_ref{w}, value_ref{b}},
                                  .vals = {{dtype::f32, {s0, 4}}},
                                  .nn_module_stack = {{"fc1", "typex::nn::linear"}},
                                  .stack_trace = "model.cpp:30 in forward"});
  const node_id d = p.g.add_call({.target = typex::op_id_of<typex::sub_op>, .args = {value_ref{l}, value_ref{m}}, .vals = {{dtype::f32, {s0, 4}}}});
  const node_id y = p.g.add_call({.target = typex::op_id_of<typex::mul_op>, .args = {value_ref{d}, value_ref{k}}, .vals = {{dtype::f32, {s0, 4}}}});
  p.g.set_output({value_ref{y}});
  p.sig = graph_signature({{input_kind::parameter, "p_fc1_weight", "fc1.weight"},
                           {input_kind::parameter, "p_fc1_bias", "fc1.bias"},
                           {input_kind::buffer, "b_bn_running_mean", "bn.running_mean", true},
                           {input_kind::constant_tensor, "c_scale", "scale"},
                           {input_kind::user_input, "x", ""}},
                          {{output_kind::user_output, "mul", ""}});
  p.state_dict.insert("fc1.weight", any_tensor(dtype::f32, {4, 3}));
  p.state_dict.insert("fc1.bias", any_tensor(dtype::f32, {4}));
  p.state_dict.insert("bn.running_mean", any_tensor(dtype::f32, {4}));
  p.constants.insert("scale", any_tensor(dtype::f32, {}));
  p.ranges.add("s0", {1, 1024});
  p.calls = {{"", module_call_signature{{"x"}, {"mul"}, spec_of(std::make_tuple(0.0f)), tree_spec::leaf()}},
             {"fc1", module_call_signature{{"x"}, {"linear"}, spec_of(std::make_tuple(0.0f)), tree_spec::leaf()}}};
  return p;
}

inline exported_program make_program(parts p) {
  return exported_program(std::move(p.g), std::move(p.sig), std::move(p.state_dict), std::move(p.constants),
                          std::move(p.ranges), std::move(p.calls));
}
}  // namespace export_test
