// Tests for typex/ir/printer.hpp.
#include "mlp_graph.hpp"

#include <typex/ops/all.hpp>
#include <typex/ir/printer.hpp>

using namespace ir_test;

namespace typex {
struct split_tensor_op {  // (an op with several outputs, not in typex's op set)
  static constexpr std::string_view target = "aten.split.Tensor";
};
}  // namespace typex

TEST_CASE("the printed graph reads like torch.export's print_readable") {
  CHECK(print_readable(mlp_graph()) ==
        "class GraphModule(torch.nn.Module):\n"
        "    def forward(self, p_fc1_weight: \"f32[512, 784]\", p_fc1_bias: \"f32[512]\", p_fc2_weight: \"f32[10, 512]\", "
        "x: \"f32[s0, 784]\"):\n"
        "         # File: mlp.cpp:21 in forward\n"
        "        linear: \"f32[s0, 512]\" = torch.ops.aten.linear.default(x, p_fc1_weight, p_fc1_bias);  "
        "x = p_fc1_weight = p_fc1_bias = None\n"
        "        relu: \"f32[s0, 512]\" = torch.ops.aten.relu.default(linear);  linear = None\n"
        "        linear_1: \"f32[s0, 10]\" = torch.ops.aten.linear.default(relu, p_fc2_weight, None);  "
        "relu = p_fc2_weight = None\n"
        "        return (linear_1,)\n");
}

TEST_CASE("arguments print as Python literals") {
  graph g;
  const node_id x = g.add_placeholder("x", {dtype::f32, {2, 3}});
  const node_id y = g.add_placeholder("y", {dtype::f32, {2, 3}});
  const node_id c = g.add_call({.target = typex::op_id_of<typex::aten::cat>,
                                .args = {std::vector<value_ref>{{x}, {y}}, std::int64_t{-1}},
                                .vals = {{dtype::f32, {2, 6}}}});
  const node_id a = g.add_call({.target = typex::op_id_of<typex::add_op>,
                                .args = {value_ref{c}, 1e-05},
                                .kwargs = {{"alpha", 1.0}},
                                .vals = {{dtype::f32, {2, 6}}}});
  const node_id t = g.add_call({.target = typex::op_id_of<typex::aten::_to_copy>,
                                .args = {value_ref{a}},
                                .kwargs = {{"dtype", dtype::bf16}},
                                .vals = {{dtype::bf16, {2, 6}}}});
  const node_id s = g.add_call({.target = typex::op_id_of<typex::split_tensor_op>,
                                .args = {value_ref{t}, std::int64_t{3}, std::int64_t{1}},
                                .vals = {{dtype::bf16, {2, 3}}, {dtype::bf16, {2, 3}}}});
  g.set_output({value_ref{s, 0}, value_ref{s, 1}});
  const std::string out = print_readable(g);
  CHECK(out.find("cat: \"f32[2, 6]\" = torch.ops.aten.cat.default([x, y], -1);  x = y = None") != std::string::npos);
  CHECK(out.find("torch.ops.aten.add.Tensor(cat, 1e-05, alpha = 1.0)") != std::string::npos);
  CHECK(out.find("torch.ops.aten._to_copy.default(add, dtype = torch.bfloat16)") != std::string::npos);
  CHECK(out.find("        split = torch.ops.aten.split.Tensor(_to_copy, 3, 1);") != std::string::npos);
  CHECK(out.find("        return (split[0], split[1])\n") != std::string::npos);
}
