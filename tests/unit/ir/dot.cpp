// Tests for typex/ir/dot.hpp and typex/export/dot.hpp: a graph, and an exported program, as a
// Graphviz DOT picture (nodes, edges, module clusters, escaping, collapsed repeated layers).
#include "../export/program_fixture.hpp"
#include "mlp_graph.hpp"

#include <typex/export/dot.hpp>
#include <typex/ir/dot.hpp>

#include <chrono>

using namespace ir_test;

namespace {
struct split_op {  // (an op with several outputs, not in typex's op set)
  static constexpr std::string_view target = "aten.split.Tensor";
};

bool has(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

std::size_t occurrences(const std::string& s, std::string_view part) {
  std::size_t k = 0;
  for (std::size_t at = s.find(part); at != std::string::npos; at = s.find(part, at + part.size())) ++k;
  return k;
}

// The DOT id of the node named `name`: "n<id>".
std::string id_of(const graph& g, std::string_view name) {
  for (node_id i = 0; i < g.size(); ++i)
    if (g[i].name == name) {
      std::string id = "n";  // (not "n" + std::to_string(i): g++ 12 -O2 warns falsely about it, -Wrestrict)
      id += std::to_string(i);
      return id;
    }
  FAIL("no node " << name);
  return {};
}

std::string edge(const graph& g, std::string_view from, std::string_view to) {
  return "  " + id_of(g, from) + " -> " + id_of(g, to) + ";\n";
}

bool drawn(const std::string& dot, const graph& g, std::string_view name) { return has(dot, "  " + id_of(g, name) + " [label="); }

// layers.0 .. layers.{n-1}, each a demo::Block: sub.0 and sub.1 (a Linear each, the second reading
// the first), then a ReLU in the block. odd_one_out: one more Block, layers.n, with another op
// sequence (sub.0, then neg).
graph stacked_layers(int n, bool odd_one_out) {
  graph g;
  const sym_expr s0 = sym_expr::symbol("s0");
  const tensor_meta m{dtype::f32, {s0, 8}};
  const int blocks = n + (odd_one_out ? 1 : 0);
  std::vector<node_id> w;
  for (int k = 0; k < blocks; ++k)
    for (int j = 0; j < 2; ++j)
      w.push_back(g.add_placeholder("p_layers_" + std::to_string(k) + "_sub_" + std::to_string(j) + "_weight", {dtype::f32, {8, 8}}));
  node_id x = g.add_placeholder("x", m);
  for (int k = 0; k < blocks; ++k) {
    const std::string path = "layers." + std::to_string(k);
    const module_frame block{path, "demo::Block<8>"};
    const int subs = k < n ? 2 : 1;
    for (int j = 0; j < subs; ++j) {
      x = g.add_call({.target = typex::op_id_of<typex::linear_op>,
                      .args = {value_ref{x}, value_ref{w[static_cast<std::size_t>(2 * k + j)]}, none_t{}},
                      .vals = {m},
                      .nn_module_stack = {block, {path + ".sub." + std::to_string(j), "typex::nn::Linear<8, 8, true, typex::f32>"}}});
    }
    const op_id last = k < n ? typex::op_id_of<typex::relu_op> : typex::op_id_of<typex::neg_op>;
    x = g.add_call({.target = last, .args = {value_ref{x}}, .vals = {m}, .nn_module_stack = {block}});
  }
  g.set_output({value_ref{x}});
  return g;
}
}  // namespace

TEST_CASE("dot: placeholders, calls and the output with dtype and shape, an edge per value read, a cluster per module") {
  const graph g = mlp_graph();
  const std::string dot = to_dot(g);
  CHECK(dot.starts_with("digraph \"typex\" {\n  graph [rankdir=TB,"));
  CHECK(dot.ends_with("}\n"));
  CHECK(has(dot, "  n3 [label=\"x\\nf32[s0, 784]\", shape=ellipse, fillcolor=\"#dbeafe\"];\n"));
  CHECK(has(dot, "  n0 [label=\"p_fc1_weight\\nf32[512, 784]\", shape=ellipse"));
  CHECK(has(dot, "    n4 [label=\"linear\\nf32[s0, 512]\\nlinear\", tooltip=\"aten.linear.default\\nmlp.cpp:21 in forward\"];\n"));
  CHECK(has(dot, "  n5 [label=\"relu\\nf32[s0, 512]\\nrelu\", tooltip=\"aten.relu.default\"];\n"));  // (no module: at the top)
  CHECK(has(dot, "  n7 [label=\"output\", shape=octagon"));
  // the modules: fc1 and fc2, labelled with path and type (the full type as the tooltip)
  CHECK(has(dot, "  subgraph cluster_1 {\n    label=\"fc1 (linear)\";\n    tooltip=\"typex::nn::linear\";\n"));
  CHECK(has(dot, "    label=\"fc2 (linear)\";\n"));
  CHECK(occurrences(dot, "subgraph cluster_") == 2);
  // every value read: linear(x, w1, b1), relu(linear), linear_1(relu, w2), output(linear_1)
  CHECK(occurrences(dot, " -> ") == 7);
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"x", "linear"}, {"p_fc1_weight", "linear"}, {"p_fc1_bias", "linear"}, {"linear", "relu"},
           {"relu", "linear_1"}, {"p_fc2_weight", "linear_1"}, {"linear_1", "output"}})
    CHECK(has(dot, edge(g, from, to)));

  // options: the full target, the stack trace, the direction, the name
  const std::string full = to_dot(g, {.show_stack_trace = true, .full_target = true, .rankdir = "LR", .name = "mlp"});
  CHECK(full.starts_with("digraph \"mlp\" {\n  graph [rankdir=LR,"));
  CHECK(has(full, "n4 [label=\"aten.linear.default\\nf32[s0, 512]\\nlinear\\nmlp.cpp:21 in forward\""));
  CHECK_THROWS_AS(to_dot(g, {.rankdir = "sideways"}), typex::argument_error);
}

TEST_CASE("dot: nested modules are nested clusters, a multi-output producer's edges name the output") {
  graph g;
  const node_id x = g.add_placeholder("x", {dtype::f32, {2, 6}});
  const module_frame layers{"layers", "typex::nn::ModuleList"};
  const module_frame block{"layers.0", "typex::nn::Block"};
  const module_frame attn{"layers.0.attn", "typex::nn::Attention<6, 2>"};
  const node_id s = g.add_call({.target = typex::op_id_of<split_op>,
                                .args = {value_ref{x}, std::int64_t{3}, std::int64_t{1}},
                                .vals = {{dtype::f32, {2, 3}}, {dtype::f32, {2, 3}}},
                                .nn_module_stack = {layers, block, attn}});
  const node_id a = g.add_call({.target = typex::op_id_of<typex::add_op>,
                                .args = {value_ref{s, 0}, value_ref{s, 1}},
                                .vals = {{dtype::f32, {2, 3}}},
                                .nn_module_stack = {layers, block}});
  const node_id r = g.add_call({.target = typex::op_id_of<typex::relu_op>, .args = {value_ref{a}}, .vals = {{dtype::f32, {2, 3}}},
                                .nn_module_stack = {layers}});
  g.set_output({value_ref{r}, value_ref{s, 1}});
  const std::string dot = to_dot(g);
  // layers > layers.0 > layers.0.attn, each inside the one before
  const std::string nested =
      "  subgraph cluster_1 {\n    label=\"layers (ModuleList)\";\n"
      "    tooltip=\"typex::nn::ModuleList\";\n"
      "    style=\"rounded,filled\"; fillcolor=\"#f8fafc\"; color=\"#94a3b8\";\n"
      "    n3 [label=\"relu\\nf32[2, 3]\\nrelu\", tooltip=\"aten.relu.default\"];\n"
      "    subgraph cluster_2 {\n      label=\"layers.0 (Block)\";\n"
      "      tooltip=\"typex::nn::Block\";\n"
      "      style=\"rounded,filled\"; fillcolor=\"#eef2f7\"; color=\"#94a3b8\";\n"
      "      n2 [label=\"add\\nf32[2, 3]\\nadd\", tooltip=\"aten.add.Tensor\"];\n"
      "      subgraph cluster_3 {\n        label=\"layers.0.attn (Attention)\";\n"
      "        tooltip=\"typex::nn::Attention<6, 2>\";\n"
      "        style=\"rounded,filled\"; fillcolor=\"#f8fafc\"; color=\"#94a3b8\";\n"
      "        n1 [label=\"split\\n[0] f32[2, 3]\\n[1] f32[2, 3]\\nsplit\", tooltip=\"aten.split.Tensor\"];\n"
      "      }\n    }\n  }\n";
  CHECK(has(dot, nested));
  // each output of the split read: labelled with its index; the output node reads both values
  CHECK(has(dot, "  n1 -> n2 [label=\"[0]\"];\n"));
  CHECK(has(dot, "  n1 -> n2 [label=\"[1]\"];\n"));
  CHECK(has(dot, "  n3 -> n4;\n"));
  CHECK(has(dot, "  n1 -> n4 [label=\"[1]\"];\n"));
  CHECK(has(dot, "  n0 -> n1;\n"));
}

TEST_CASE("dot: labels are escaped for DOT: quotes, backslashes, line breaks, invalid UTF-8, long lines cut") {
  std::string s;
  ir::detail::dot_escape(s, "a\"b\\c\nd\te\rf\x01g <{|}> \xc3\xa9 \xff \xc3 \xed\xa0\x80 end");
  CHECK(s == "a\\\"b\\\\c\\nd ef?g <{|}> \xc3\xa9 ? ? ??? end");
  CHECK(ir::detail::short_type_name("typex::nn::TransformerEncoderLayer<32, 4, 64, typex::nn::activation::gelu>") ==
        "TransformerEncoderLayer");
  CHECK(ir::detail::short_type_name("outer<std::pair<int, int>>::inner<a::b>") == "inner");
  CHECK(ir::detail::short_type_name("(anonymous namespace)::block") == "block");
  CHECK(ir::detail::short_type_name("Plain") == "Plain");
  CHECK(ir::detail::short_type_name("") == "");

  graph g;
  const node_id x = g.add_placeholder("x", {dtype::f32, {3}});
  const node_id a = g.add_call({.target = typex::op_id_of<typex::relu_op>,
                                .args = {value_ref{x}},
                                .vals = {{dtype::f32, {3}}},
                                .nn_module_stack = {{"b \"q\" \\ e", "ns::Thing<{a}, \"b\">"}},
                                .stack_trace = "f(\"x\") at C:\\src\\m.cpp:3 \xff"});
  const node_id b = g.add_call({.target = typex::op_id_of<typex::neg_op>,
                                .args = {value_ref{a}},
                                .vals = {{dtype::f32, {3}}},
                                .nn_module_stack = {{"encoder.layers.0.self_attention_block", "Attn"}}});
  const node_id c = g.add_call({.target = typex::op_id_of<typex::neg_op>,
                                .args = {value_ref{b}},
                                .vals = {{dtype::f32, {3}}},
                                .nn_module_stack = {{"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", ""}}});
  g.set_output({value_ref{c}});
  const std::string dot = to_dot(g, {.show_stack_trace = true, .max_label_width = 20, .name = "my \"net\""});
  CHECK(dot.starts_with("digraph \"my \\\"net\\\"\" {\n"));
  CHECK(has(dot, R"x(label="b \"q\" \\ e (Thing)";)x"));
  CHECK(has(dot, R"x(tooltip="ns::Thing<{a}, \"b\">";)x"));
  CHECK(has(dot, R"x(label="relu\nf32[3]\nrelu\nf(\"x\") at C:\\src\\...")x"));  // (cut at 20 bytes)
  CHECK(has(dot, R"x(tooltip="aten.relu.default\nf(\"x\") at C:\\src\\m.cpp:3 ?")x"));  // (tooltips are not cut)
  CHECK(has(dot, R"x(label="encoder.layers.0....";)x"));
  CHECK(to_dot(g, {.max_label_width = 6}).find("label=\"\xc3\xa9...\";") != std::string::npos);  // (not inside a character)
  CHECK(has(to_dot(g, {.max_label_width = 0}), R"x(label="encoder.layers.0.self_attention_block (Attn)";)x"));
  // (without show_stack_trace the trace is only in the tooltip)
  CHECK(!has(to_dot(g), R"x(relu\nf(\"x\"))x"));
}

TEST_CASE("dot: collapse_repeated draws a run of identical layers once, with the edges into and out of it") {
  const graph g = stacked_layers(4, true);
  const std::string full = to_dot(g);
  CHECK(occurrences(full, "subgraph cluster_") == 5 + 9);  // (5 blocks; 9 linears)
  CHECK(occurrences(full, " -> ") == 9 * 2 + 4 + 1 + 1);
  CHECK(has(full, "\n  subgraph cluster_1 {\n    label=\"layers.0 (Block)\";\n"));
  CHECK(has(full, "\n    subgraph cluster_2 {\n      label=\"layers.0.sub.0 (Linear)\";\n"));
  CHECK(!has(full, " .. "));
  for (const node& n : g.nodes()) CHECK(drawn(full, g, n.name));

  const std::string dot = to_dot(g, {.collapse_repeated = true});
  CHECK(occurrences(dot, "label=\"layers.0 .. layers.3 (x4, Block)\";") == 1);
  CHECK(has(dot, "style=\"rounded,filled,bold\"; fillcolor=\"#fef9c3\""));
  // (inside the run's first member, its own run: sub.0 and sub.1 are the same linear)
  CHECK(occurrences(dot, "label=\"layers.0.sub.0 .. layers.0.sub.1 (x2, Linear)\";") == 1);
  // the block with another op sequence is drawn as it is
  CHECK(has(dot, "label=\"layers.4 (Block)\";"));
  CHECK(has(dot, "label=\"layers.4.sub.0 (Linear)\";"));
  CHECK(!has(dot, "label=\"layers.1"));
  CHECK(occurrences(dot, "subgraph cluster_") == 4);
  // drawn: the first member's nodes, the placeholders they read, the odd block, the output
  for (const char* name : {"x", "p_layers_0_sub_0_weight", "linear", "relu", "p_layers_4_sub_0_weight", "linear_8", "neg", "output"})
    CHECK(drawn(dot, g, name));
  // not drawn: the hidden members' nodes, and the parameters only they read
  for (const char* name : {"linear_1", "linear_2", "relu_1", "relu_3", "p_layers_0_sub_1_weight", "p_layers_2_sub_0_weight"})
    CHECK(!drawn(dot, g, name));
  // the edges into the run (x), inside the first member (sub.1's result -> its relu, drawn from sub.0),
  // out of the run (layers.3's relu -> layers.4, drawn from layers.0's); none from a member to the next
  CHECK(has(dot, edge(g, "x", "linear")));
  CHECK(has(dot, edge(g, "p_layers_0_sub_0_weight", "linear")));
  CHECK(has(dot, edge(g, "linear", "relu")));
  CHECK(has(dot, edge(g, "relu", "linear_8")));
  CHECK(has(dot, edge(g, "p_layers_4_sub_0_weight", "linear_8")));
  CHECK(has(dot, edge(g, "linear_8", "neg")));
  CHECK(has(dot, edge(g, "neg", "output")));
  CHECK(occurrences(dot, " -> ") == 7);
  CHECK(!has(dot, edge(g, "relu", "linear")));
}

TEST_CASE("dot: collapse_repeated keeps apart modules of one type that differ or have something between them") {
  graph g;
  const node_id x = g.add_placeholder("x", {dtype::f32, {4}});
  const auto block = [&](std::string path, node_id in, std::vector<sym_expr> shape) {
    return g.add_call({.target = typex::op_id_of<typex::relu_op>, .args = {value_ref{in}}, .vals = {{dtype::f32, std::move(shape)}},
                       .nn_module_stack = {{std::move(path), "B"}}});
  };
  const node_id a = block("blocks.0", x, {4});
  const node_id between = g.add_call({.target = typex::op_id_of<typex::neg_op>, .args = {value_ref{a}}, .vals = {{dtype::f32, {4}}}});
  const node_id b = block("blocks.1", between, {4});
  const node_id c = block("blocks.2", b, {5});  // (another shape: not the same layer)
  const node_id d = block("blocks.3", c, {5});
  g.set_output({value_ref{d}});
  const std::string dot = to_dot(g, {.collapse_repeated = true});
  CHECK(has(dot, "label=\"blocks.0 (B)\";"));
  CHECK(has(dot, "label=\"blocks.1 (B)\";"));
  CHECK(has(dot, "label=\"blocks.2 .. blocks.3 (x2, B)\";"));
  CHECK(occurrences(dot, "subgraph cluster_") == 3);
}

TEST_CASE("dot: an exported program coloured by its graph signature") {
  const exported_program p = export_test::make_program(export_test::program_parts());
  const std::string dot = typex::to_dot(p);
  CHECK(has(dot, "n0 [label=\"p_fc1_weight\\nf32[4, 3]\\nPARAMETER fc1.weight\", shape=ellipse, fillcolor=\"#bbf7d0\"];"));
  CHECK(has(dot, "n2 [label=\"b_bn_running_mean\\nf32[4]\\nBUFFER bn.running_mean\", shape=ellipse, fillcolor=\"#fed7aa\"];"));
  CHECK(has(dot, "n3 [label=\"c_scale\\nf32[]\\nCONSTANT_TENSOR scale\", shape=ellipse, fillcolor=\"#e5e7eb\"];"));
  CHECK(has(dot, "n4 [label=\"x\\nf32[s0, 3]\\nUSER_INPUT\", shape=ellipse, fillcolor=\"#bfdbfe\"];"));
  CHECK(has(dot, "n7 -> n8 [label=\"USER_OUTPUT\", color=\"#1d4ed8\", fontcolor=\"#1d4ed8\"];"));
  CHECK(has(dot, "subgraph cluster_legend {"));
  CHECK(has(dot, "[label=\"PARAMETER\", shape=box, fillcolor=\"#bbf7d0\"];"));
  CHECK(has(dot, "[label=\"USER_OUTPUT\", shape=box, style=\"rounded,bold\", penwidth=2, color=\"#1d4ed8\", fontcolor=\"#1d4ed8\"];"));
  CHECK(!has(dot, "label=\"LOSS_OUTPUT\""));  // (the legend keys only the kinds the program has)
  // a buffer mutation and a non-persistent buffer
  const ir::graph& g = p.graph();
  const graph_signature sig({{input_kind::buffer, "b_bn_running_mean", "bn.running_mean", false}},
                            {{output_kind::buffer_mutation, "mul", "bn.running_mean"}});
  const ir::dot_decorations d = signature_decorations(g, sig);
  CHECK(d.node_note[2] == "BUFFER bn.running_mean (non-persistent)");
  CHECK(d.node_note[0].empty());
  CHECK(d.output_label == std::vector<std::string>{"BUFFER_MUTATION bn.running_mean"});
  CHECK(has(ir::to_dot(g, {}, d), "[label=\"BUFFER_MUTATION bn.running_mean\", color=\"#c2410c\""));
}

TEST_CASE("dot: every node of an exported transformer stack is drawn, collapsed, its layers are drawn once") {
  using batch = sym<"batch", 1, 64>;
  using seq = sym<"seq", 1, 128>;
  using layer = nn::TransformerEncoderLayer<8, 2, 16, nn::activation::gelu, false, true>;
  nn::TransformerEncoder<layer, 3> m;
  init_module(m, 3);
  using in_t = shape<batch, seq, fix<8>>;
  const auto ep = export_program(m, input<"src">(tensor_spec<f32, in_t>(in_t(batch(2), seq(5), {}))));
  const exported_program& p = ep;
  const ir::graph& g = p.graph();
  const std::string full = typex::to_dot(p);
  std::size_t reads = 0;
  for (node_id i = 0; i < g.size(); ++i) {
    CHECK(has(full, "  n" + std::to_string(i) + " [label=\""));
    CHECK(has(full, g[i].name));
    graph::for_each_ref(g[i], [&](value_ref) { ++reads; });
  }
  CHECK(occurrences(full, " -> ") == reads);
  CHECK(has(full, "label=\"layers.2 (TransformerEncoderLayer)\";"));
  CHECK(has(full, "label=\"layers.0.self_attn (MultiheadAttention)\";"));
  CHECK(has(full, "PARAMETER layers.1.linear1.weight"));

  const std::string folded = typex::to_dot(p, {.collapse_repeated = true});
  CHECK(occurrences(folded, "label=\"layers.0 .. layers.2 (x3, TransformerEncoderLayer)\";") == 1);
  CHECK(has(folded, "PARAMETER layers.0.linear1.weight"));
  CHECK(!has(folded, "PARAMETER layers.1."));
  CHECK(!has(folded, "PARAMETER layers.2."));
  CHECK(has(folded, "USER_INPUT"));
  CHECK(has(folded, "label=\"output\""));
  CHECK(has(folded, "label=\"USER_OUTPUT\""));
  CHECK(folded.size() * 2 < full.size());
}

TEST_CASE("dot: a graph of 10^5 nodes is drawn in linear time, collapsed or not") {
  graph g;
  const tensor_meta m{dtype::f32, {sym_expr::symbol("s0"), 64}};
  node_id x = g.add_placeholder("x", m);
  constexpr int layers = 1000, per_layer = 100;
  for (int k = 0; k < layers; ++k) {
    const std::vector<module_frame> stack{{"layers", "typex::nn::ModuleList"}, {std::string("layers.").append(std::to_string(k)), "demo::Block"}};
    for (int j = 0; j < per_layer; ++j) {
      x = g.add_call({.target = j % 2 ? typex::op_id_of<typex::relu_op> : typex::op_id_of<typex::neg_op>,
                      .args = {value_ref{x}},
                      .vals = {m},
                      .name_hint = std::string("v").append(std::to_string(k * per_layer + j)),  // (unique: no name search)
                      .nn_module_stack = stack});
    }
  }
  g.set_output({value_ref{x}});
  REQUIRE(g.size() == layers * per_layer + 2);
  const auto t0 = std::chrono::steady_clock::now();
  const std::string full = to_dot(g);
  const auto t1 = std::chrono::steady_clock::now();
  const std::string folded = to_dot(g, {.collapse_repeated = true});
  const auto t2 = std::chrono::steady_clock::now();
  CHECK(occurrences(full, " -> ") == g.size() - 1);
  CHECK(has(folded, "label=\"layers.0 .. layers.999 (x1000, Block)\";"));
  CHECK(occurrences(folded, " -> ") == per_layer + 1);  // (x in, 99 inside, out to the output)
  // (a quadratic step would take minutes here; the bound leaves room for sanitizers and -O0)
  CHECK(std::chrono::duration<double>(t1 - t0).count() < 10.0);
  CHECK(std::chrono::duration<double>(t2 - t1).count() < 10.0);
}
