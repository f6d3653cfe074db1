// typex/passes/partition.hpp — a joint forward/backward graph split into a forward graph and a
// backward graph (aot_autograd's partitioners).
//
//   passes::partition p = passes::partition_joint(joint, n_forward_outputs, {.recompute = true, .sizes = s});
//
// The joint graph (passes::differentiate's) returns the forward's outputs, then the gradients. The
// nodes that depend on the gradient flowing back (the backward) go to the backward graph; the
// others are the forward's. What the backward reads of the forward is *saved*: the forward graph
// returns it after its own outputs, and the backward graph takes it as its inputs.
//
//   - default: every forward value the backward reads is saved (aot_autograd's default_partition);
//   - recompute = true: the backward recomputes cheap values (pointwise ops, views, shape ops)
//     from saved ones instead, chosen by a minimum cut over the bytes saved, as aot_autograd's
//     min_cut_rematerialization_partition: each forward value is an edge whose capacity is its size;
//     expensive ops (matrix products, convolutions, reductions, attention, random ops) are never
//     recomputed; the graph's inputs (parameters, user inputs) cost nothing to keep, as the caller
//     holds them through a training step anyway. A minimum cut is the cheapest set of values that
//     separates what the forward must compute from what the backward needs.
//
// Sizes are the values' bytes with the symbols bound by `sizes` (a symbol left unbound counts as
// 1). Both graphs are functional programs of their own: they print, verify and run.
#pragma once

#include <typex/core/symbol_table.hpp>
#include <typex/ir/graph.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace typex::passes {

struct partition_options {
  bool recompute = false;  // choose what to save by a minimum cut (recomputing cheap values)
  symbol_table sizes = {};  // symbol values for the sizes (the batch the memory is planned for)
};

struct partition {
  // inputs: the joint graph's; outputs: its first `forward_outputs` outputs, then the saved values
  ir::graph forward;
  // inputs: the saved values (with their names in the forward graph); outputs: the joint graph's
  // remaining outputs (the gradients)
  ir::graph backward;
  std::size_t forward_outputs = 0;
  std::vector<std::string> saved;       // the saved values' names, in the order of both graphs
  std::int64_t saved_bytes = 0;         // of the saved values that the forward computes (activations)
  std::int64_t saved_input_bytes = 0;   // of the joint graph's inputs the backward reads (no extra memory)
  std::size_t recomputed = 0;           // forward nodes the backward computes again
};

// The nodes' ops that recompute = true never recomputes (expensive, or random).
TYPEX_API bool banned_from_recomputation(op_id op);

// joint: forward nodes, then from node `first_backward` (the gradient seed) the backward's; its
// first `forward_outputs` outputs are the forward's.
TYPEX_API partition partition_joint(const ir::graph& joint, std::size_t forward_outputs, std::size_t first_backward,
                                    const partition_options& options = {});
// The same, with the backward's first node found: the first call that is not a shape assertion and
// that no forward output depends on (differentiate's gradient seed; what precedes it is the
// forward, every node of which an exported graph keeps only for its outputs).
TYPEX_API partition partition_joint(const ir::graph& joint, std::size_t forward_outputs, const partition_options& options = {});
TYPEX_API std::size_t backward_start(const ir::graph& joint, std::size_t forward_outputs);

// Bytes of a value's metadata with `sizes`' symbols (unbound: 1).
TYPEX_API std::int64_t bytes_of(const ir::tensor_meta& m, const symbol_table& sizes);

}  // namespace typex::passes

// ---- definitions: compiled once in typex::runtime, or inline here in header-only builds
// (config.hpp: TYPEX_SEPARATE_COMPILATION) ----
#if TYPEX_HEADER_DEFINITIONS
#include <typex/passes/detail/partition_impl.hpp>
#endif  // TYPEX_HEADER_DEFINITIONS
