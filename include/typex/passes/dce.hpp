// typex/passes/dce.hpp — dead code elimination: calls whose values nothing reads are removed.
//
// Exported graphs are functional, so a call with no reader has no effect — except a call that
// does something besides computing its values, which is kept whether read or not:
//   - a run-time assertion (typex._assert_shape: it checks the inputs), and any op that declares
//     `side_effects = true` (ir::describe(op).traits.side_effects, from the op type);
//   - an op that writes an argument (traits.writes_state: `Tensor(a!)` in its schema);
//   - a call that takes a draw of the random stream (ir::draws_randomness: a training-mode dropout,
//     typex.dropout_mask): removing it would shift every later draw, so the program's other masks
//     would change. A random op's call that takes no draw is an ordinary call: a dropout in eval
//     mode (or with p == 0) is the identity, and goes when nothing reads it.
// An op the registry does not know and no register_op<Op>() described is taken as functional (as
// torch.fx's DCE takes an unknown function): register an op with side effects to keep its calls.
// Placeholders stay: they are the program's signature, used or not (torch.export keeps unused
// inputs too). One backward sweep: linear in the graph's size.
#pragma once

#include <typex/ir/graph.hpp>

#include <cstddef>
#include <vector>

namespace typex::passes {

// Whether call `n` must stay although nothing reads it (see above).
TYPEX_API bool has_side_effects(const ir::node& n);

// Returns the number of nodes removed.
TYPEX_API std::size_t eliminate_dead_code(ir::graph& g);


}  // namespace typex::passes

// ---- definitions: compiled once in typex::runtime, or inline here in header-only builds
// (config.hpp: TYPEX_SEPARATE_COMPILATION) ----
#if TYPEX_HEADER_DEFINITIONS
#include <typex/ir/describe.hpp>

TYPEX_API auto typex::passes::has_side_effects(const ir::node& n) -> bool {
  if (n.op != ir::node_op::call_function) return false;
  if (ir::is_assertion(n)) return true;
  const ir::op_description* d = ir::find_description(n.target);
  if (d == nullptr) return false;
  const ir::op_traits& t = d->traits;
  if (t.writes_state) return true;
  if (t.random) return ir::draws_randomness(n.target, n.args);  // (side_effects says random too: the draw decides)
  return t.side_effects;
}

TYPEX_API auto typex::passes::eliminate_dead_code(ir::graph& g) -> std::size_t {
  const std::size_t n = g.size();
  std::vector<bool> live(n, false);
  for (std::size_t k = n; k-- > 0;) {
    const ir::node& nd = g[static_cast<ir::node_id>(k)];
    if (nd.op != ir::node_op::call_function || has_side_effects(nd)) live[k] = true;
    if (!live[k]) continue;
    ir::graph::for_each_ref(nd, [&](ir::value_ref r) { live[r.node] = true; });
  }
  std::size_t removed = 0;
  for (bool l : live) removed += l ? 0 : 1;
  if (removed) {
    g.retain(live);
    g.drop_unused_subgraphs();  // (the branches and bodies of removed control flow)
  }
  return removed;
}

#endif  // TYPEX_HEADER_DEFINITIONS
