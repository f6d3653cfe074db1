// typex/passes/dce.hpp — dead code elimination: calls whose values nothing reads are removed.
//
// Exported graphs are functional, so a call with no reader has no effect, except a run-time
// assertion (it checks the inputs). Placeholders stay: they are the program's signature, used or
// not (torch.export keeps unused inputs too).
#pragma once

#include <typex/ir/graph.hpp>

#include <vector>

namespace typex::passes {

// Returns the number of nodes removed.
TYPEX_API std::size_t eliminate_dead_code(ir::graph& g);

}  // namespace typex::passes

// ---- definitions: compiled once in typex::runtime, or inline here in header-only builds
// (config.hpp: TYPEX_SEPARATE_COMPILATION) ----
#if TYPEX_HEADER_DEFINITIONS
TYPEX_API auto typex::passes::eliminate_dead_code(ir::graph& g) -> std::size_t {
  const std::size_t n = g.size();
  std::vector<bool> live(n, false);
  for (std::size_t k = n; k-- > 0;) {
    const ir::node& nd = g[static_cast<ir::node_id>(k)];
    if (nd.op != ir::node_op::call_function || ir::is_assertion(nd)) live[k] = true;
    if (!live[k]) continue;
    ir::graph::for_each_ref(nd, [&](ir::value_ref r) { live[r.node] = true; });
  }
  std::size_t removed = 0;
  for (bool l : live) removed += l ? 0 : 1;
  if (removed) g.retain(live);
  return removed;
}
#endif  // TYPEX_HEADER_DEFINITIONS
