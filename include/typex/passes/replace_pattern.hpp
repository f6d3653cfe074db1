// typex/passes/replace_pattern.hpp — subgraph rewriting: every match of a pattern graph replaced by
// what a callback builds (torch.fx's subgraph_rewriter.replace_pattern).
//
//   // the pattern: relu(matmul(a, b) + c), its placeholders wildcards
//   ir::graph pat;
//   const auto a = pat.add_placeholder("a", {}), b = pat.add_placeholder("b", {}), c = pat.add_placeholder("c", {});
//   const auto mm = pat.add_call({.target = op_id_of<matmul_op>, .args = {value_ref{a}, value_ref{b}}, .vals = {{}}});
//   const auto add = pat.add_call({.target = op_id_of<add_op>, .args = {value_ref{mm}, value_ref{c}}, .vals = {{}}});
//   const auto r = pat.add_call({.target = op_id_of<relu_op>, .args = {value_ref{add}}, .vals = {{}}});
//   pat.set_output({value_ref{r}});
//
//   passes::replace_pattern(g, pat, [](passes::graph_builder& b, std::span<const ir::value_ref> in) {
//     ir::tensor_meta m = ...;  // the fused result's dtype and shape
//     return std::vector<ir::value_ref>{b.emit(op_id_of<fused_linear_relu_op>, {in[0], in[1], in[2]}, m)};
//   });
//
// Matching. The pattern is an ir::graph: its placeholders are wildcards (they match any value; the
// metadata they carry is not compared), its calls match calls of the same op whose arguments match
// — tensors recursively, lists of tensors element by element, everything else exactly
// (passes::same_argument) unless the pattern marks that argument as any (replace_options::
// any_arguments: by the pattern node's name and the argument's position) — and its output names
// the values a match produces. A placeholder used twice matches one value twice. (A pattern's calls
// carry one metadata entry per result of their op, `.vals = {{}}` for most: ir::graph needs it to
// read their values; what the entries say is not compared.) The search starts
// at the pattern's last call (the anchor: every other call of the pattern must lead to it, every
// placeholder be read), tried at every graph node of its op in graph order, and walks the
// arguments back: O(pattern size) per node tried, O(graph size x pattern size) in all.
// A match is taken when
//   - no node of it belongs to a match taken before (matches do not overlap: first come, in
//     graph order of their anchors);
//   - its values leave it only through the pattern's outputs: a matched node that is not an output
//     has no reader outside the match, and an output's readers outside the match come after the
//     anchor (where the replacement is written);
//   - no wildcard matched a value of the match itself;
//   - replace_options::filter, if given, accepts it.
//
// Replacing. For each match the callback is handed a graph_builder (passes/autodiff.hpp: emit(op,
// args, meta) and typex's ops) on a graph of its own whose placeholders are the matched inputs, in
// the pattern's placeholder order, and returns one value per pattern output (new values, or inputs
// themselves), each with the metadata of the value it replaces (an argument_error otherwise). The
// nodes it made are written where the anchor was, with the anchor's nn_module_stack and stack_trace
// (where they carry none of their own); a new node that gives a pattern output takes the name of
// the node it replaces (the anchor's, for a one-output pattern), the others fresh names. Readers
// of the pattern's outputs, the output node included, read the replacement values; the matched
// nodes are dropped.
#pragma once

#include <typex/ir/graph.hpp>
#include <typex/passes/autodiff.hpp>
#include <typex/passes/pass.hpp>

#include <concepts>
#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace typex::passes {

// An argument of a pattern node: the node's name and the argument's position.
struct pattern_argument {
  std::string node = {};
  std::size_t position = 0;
};

// One match of a pattern in a graph.
struct pattern_match {
  const ir::graph* graph = nullptr;    // the graph searched (as it was when matched)
  std::vector<std::string> pattern_names = {};  // per pattern node, its name (a copy: the pattern may be a temporary)
  std::vector<ir::node_id> nodes = {};   // per pattern node: the graph node its call matched (npos for the others)
  std::vector<ir::value_ref> inputs = {};  // per pattern placeholder, in order: the value it matched
  ir::node_id anchor = 0;              // the graph node the pattern's last call matched

  static constexpr ir::node_id npos = static_cast<ir::node_id>(-1);
  // The graph node that the pattern's call named `pattern_node` matched (an argument_error for a
  // name the pattern's calls do not have).
  TYPEX_API const ir::node& node(std::string_view pattern_node) const;
};

struct replace_options {
  // pattern arguments that match any argument that is not a tensor (a dim, a flag, a number)
  std::vector<pattern_argument> any_arguments = {};
  // accepts or refuses a match (after the structural checks); empty: every match is taken
  std::function<bool(const pattern_match&)> filter = {};
};

// Builds the replacement of one match: `inputs` are the matched values as values of b's graph (in
// the pattern's placeholder order); returns one value of b's graph per pattern output.
using replacement_fn =
    std::function<std::vector<ir::value_ref>(graph_builder& b, std::span<const ir::value_ref> inputs, const pattern_match& m)>;

// The matches replace_pattern takes, in graph order of their anchors (the graph unchanged).
TYPEX_API std::vector<pattern_match> find_pattern(const ir::graph& g, const ir::graph& pattern, const replace_options& options = {});
// (a match reads the graph it was found in: not one that dies at the end of the call)
std::vector<pattern_match> find_pattern(ir::graph&& g, const ir::graph& pattern, const replace_options& options = {}) = delete;

// Replaces every match; returns the number of matches replaced.
TYPEX_API std::size_t replace_pattern(ir::graph& g, const ir::graph& pattern, const replacement_fn& replacement,
                                      const replace_options& options = {});

// The same with a callback that does not need the match: f(b, inputs).
template <class F>
  requires(std::is_invocable_r_v<std::vector<ir::value_ref>, F&, graph_builder&, std::span<const ir::value_ref>> &&
           !std::is_invocable_v<F&, graph_builder&, std::span<const ir::value_ref>, const pattern_match&>)
std::size_t replace_pattern(ir::graph& g, const ir::graph& pattern, F f, const replace_options& options = {}) {
  return replace_pattern(
      g, pattern,
      replacement_fn([f = std::move(f)](graph_builder& b, std::span<const ir::value_ref> in, const pattern_match&) mutable {
        return f(b, in);
      }),
      options);
}

// replace_pattern as a pipeline pass named `name`: keeps the signature and metadata (the output's
// names where the replacement gives new nodes: not promised).
TYPEX_API pass replace_pattern_pass(std::string name, ir::graph pattern, replacement_fn replacement, replace_options options = {});

}  // namespace typex::passes

// ---- definitions: compiled once in typex::runtime, or inline here in header-only builds
// (config.hpp: TYPEX_SEPARATE_COMPILATION) ----
#if TYPEX_HEADER_DEFINITIONS
#include <typex/passes/detail/replace_pattern_impl.hpp>
#endif  // TYPEX_HEADER_DEFINITIONS
