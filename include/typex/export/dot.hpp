// typex/export/dot.hpp — an exported program as a Graphviz DOT picture, coloured by its graph
// signature (ir/dot.hpp draws the graph).
//
//   std::ofstream("program.dot") << typex::to_dot(program, {.collapse_repeated = true});
//   // dot -Tsvg program.dot -o program.svg
//
// Placeholders are filled by what they are (parameters green, buffers orange, constants grey, user
// inputs blue) with a line naming it ("PARAMETER fc1.weight"); each edge into the output node is
// coloured and labelled by its output spec ("USER_OUTPUT", "BUFFER_MUTATION bn.running_mean"); a
// legend keys the colours the picture uses.
#pragma once

#include <typex/export/exported_program.hpp>
#include <typex/export/graph_signature.hpp>
#include <typex/ir/dot.hpp>

#include <cstddef>
#include <string>
#include <string_view>
#include <unordered_map>

namespace typex {

// The fill colour of a placeholder of kind k.
constexpr std::string_view dot_color(input_kind k) noexcept {
  switch (k) {
    case input_kind::user_input: return "#bfdbfe";
    case input_kind::parameter: return "#bbf7d0";
    case input_kind::buffer: return "#fed7aa";
    case input_kind::constant_tensor: return "#e5e7eb";
  }
  return "#ffffff";
}

// The colour of an edge into the output node for an output of kind k.
constexpr std::string_view dot_color(output_kind k) noexcept {
  switch (k) {
    case output_kind::user_output: return "#1d4ed8";
    case output_kind::loss_output: return "#b91c1c";
    case output_kind::buffer_mutation: return "#c2410c";
    case output_kind::gradient_to_parameter: return "#15803d";
    case output_kind::gradient_to_user_input: return "#7c3aed";
    case output_kind::user_input_mutation: return "#0e7490";
  }
  return "#475569";
}

// What the signature adds to the picture of `g` (its placeholders and output node by name and
// position; a spec naming no node of g adds nothing).
TYPEX_API ir::dot_decorations signature_decorations(const ir::graph& g, const graph_signature& signature);

// The program's graph as a DOT digraph (ir::to_dot), coloured by its graph signature.
TYPEX_API std::string to_dot(const exported_program& program, const ir::dot_options& options = {});

}  // namespace typex

// ---- definitions: compiled once in typex::runtime, or inline here in header-only builds
// (config.hpp: TYPEX_SEPARATE_COMPILATION) ----
#if TYPEX_HEADER_DEFINITIONS
TYPEX_API auto typex::signature_decorations(const ir::graph& g, const graph_signature& signature) -> ir::dot_decorations {
  ir::dot_decorations d;
  d.node_fill.resize(g.size());
  d.node_note.resize(g.size());
  std::unordered_map<std::string_view, ir::node_id> placeholder;
  for (const ir::node_id id : g.placeholders()) placeholder.emplace(g[id].name, id);
  bool inputs_seen[4] = {};
  for (const input_spec& s : signature.input_specs()) {
    const auto it = placeholder.find(s.arg);
    if (it == placeholder.end()) continue;
    d.node_fill[it->second] = dot_color(s.kind);
    std::string& note = d.node_note[it->second];
    note = name(s.kind);
    if (!s.target.empty()) {
      note += ' ';
      note += s.target;
    }
    if (s.kind == input_kind::buffer && !s.persistent) note += " (non-persistent)";
    inputs_seen[static_cast<std::size_t>(s.kind)] = true;
  }
  bool outputs_seen[6] = {};
  if (g.has_output()) {
    const std::size_t outputs = g.output().args.size();
    const auto& specs = signature.output_specs();
    for (std::size_t k = 0; k < outputs && k < specs.size(); ++k) {
      if (d.output_color.size() <= k) {
        d.output_color.resize(k + 1);
        d.output_label.resize(k + 1);
      }
      d.output_color[k] = dot_color(specs[k].kind);
      d.output_label[k] = name(specs[k].kind);
      if (!specs[k].target.empty()) {
        d.output_label[k] += ' ';
        d.output_label[k] += specs[k].target;
      }
      outputs_seen[static_cast<std::size_t>(specs[k].kind)] = true;
    }
  }
  for (const input_kind k : {input_kind::user_input, input_kind::parameter, input_kind::buffer, input_kind::constant_tensor})
    if (inputs_seen[static_cast<std::size_t>(k)]) d.legend.push_back({std::string(dot_color(k)), std::string(name(k)), false});
  for (const output_kind k : {output_kind::user_output, output_kind::loss_output, output_kind::buffer_mutation,
                              output_kind::gradient_to_parameter, output_kind::gradient_to_user_input,
                              output_kind::user_input_mutation})
    if (outputs_seen[static_cast<std::size_t>(k)]) d.legend.push_back({std::string(dot_color(k)), std::string(name(k)), true});
  return d;
}

TYPEX_API auto typex::to_dot(const exported_program& program, const ir::dot_options& options) -> std::string {
  return ir::to_dot(program.graph(), options, signature_decorations(program.graph(), program.signature()));
}
#endif  // TYPEX_HEADER_DEFINITIONS
