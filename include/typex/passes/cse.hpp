// typex/passes/cse.hpp — common subexpression elimination: calls that compute the same value merge.
//
//   const std::size_t merged = passes::eliminate_common_subexpressions(g);
//
// Two calls merge when they call the same op with the same arguments — the same values (after
// earlier merges: a chain of duplicates merges along its whole length in one pass), the same
// constants exactly (passes/argument_hash.hpp: 0.0 and -0.0 differ), the same keyword arguments —
// and give the same metadata. The first one survives, with its name, metadata, nn_module_stack
// and stack_trace; every reader of a later one, the output included, reads the survivor.
//
// Never merged: calls of ops with side effects (ir::describe(op).traits.side_effects: assertions,
// ops that write an argument) and of random ops (traits.random: two identical
// typex.dropout_mask draws are two different masks — even a random op's call that takes no draw
// is left alone, as torch's CSE leaves every nondeterministic op), and calls of an op nothing
// describes (a user op that no register_op<Op>() made known: nothing says it is deterministic).
//
// One sweep with a hash table keyed by (op, arguments): linear in the graph's size (expected).
#pragma once

#include <typex/ir/graph.hpp>
#include <typex/passes/pass.hpp>

#include <cstddef>

namespace typex::passes {

struct cse_options {
  // a duplicate that the output returns stays, so that the output keeps returning the values it
  // named (an exported program's output specs name them); its readers still read the survivor
  bool keep_output_names = false;
};

// Whether calls of `op` may merge (see above).
TYPEX_API bool is_mergeable(op_id op);

// Returns the number of calls merged into an earlier one (and removed).
TYPEX_API std::size_t eliminate_common_subexpressions(ir::graph& g, cse_options options = {});

// eliminate_common_subexpressions as a pipeline pass ("cse"): keeps the signature and the
// survivors' metadata; the output's names only with keep_output_names.
TYPEX_API pass cse_pass(cse_options options = {});

}  // namespace typex::passes

// ---- definitions: compiled once in typex::runtime, or inline here in header-only builds
// (config.hpp: TYPEX_SEPARATE_COMPILATION) ----
#if TYPEX_HEADER_DEFINITIONS
#include <typex/ir/describe.hpp>
#include <typex/passes/argument_hash.hpp>
#include <typex/passes/detail/rewrite.hpp>

#include <unordered_map>

TYPEX_API auto typex::passes::is_mergeable(op_id op) -> bool {
  const ir::op_description* d = ir::find_description(op);
  return d != nullptr && !d->traits.side_effects && !d->traits.random && !d->traits.writes_state;
}

TYPEX_API auto typex::passes::eliminate_common_subexpressions(ir::graph& g, cse_options options) -> std::size_t {
  // returned[i]: the output reads node i; read_inside[i]: some other node does
  std::vector<bool> returned(g.size(), false), read_inside(g.size(), false);
  if (options.keep_output_names) {
    for (const ir::node& n : g.nodes())
      ir::graph::for_each_ref(n, [&](ir::value_ref r) { (n.op == ir::node_op::output ? returned : read_inside)[r.node] = true; });
  }
  // (mergeable per op, asked once per op: the description look-up takes a lock for user ops)
  std::unordered_map<op_id, bool> mergeable;
  const auto may_merge = [&](op_id op) {
    const auto [it, fresh] = mergeable.try_emplace(op, false);
    if (fresh) it->second = is_mergeable(op);
    return it->second;
  };
  const auto hash_call = [](const ir::node& n, const std::vector<ir::argument>& args,
                            const std::vector<std::pair<std::string, ir::argument>>& kwargs) {
    std::size_t h = std::hash<op_id>{}(n.target);
    for (const ir::argument& a : args) h = detail::hash_mix(h, hash_argument(a));
    for (const auto& [k, a] : kwargs) h = detail::hash_mix(detail::hash_mix(h, std::hash<std::string>{}(k)), hash_argument(a));
    return h;
  };
  const auto same_args = [](const std::vector<ir::argument>& a, const std::vector<ir::argument>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (!same_argument(a[i], b[i])) return false;
    return true;
  };
  const auto same_kwargs = [](const std::vector<std::pair<std::string, ir::argument>>& a,
                              const std::vector<std::pair<std::string, ir::argument>>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (a[i].first != b[i].first || !same_argument(a[i].second, b[i].second)) return false;
    return true;
  };

  detail::graph_rewriter rw(g);
  std::unordered_multimap<std::size_t, ir::node_id> seen;  // hash -> surviving calls (target ids)
  seen.reserve(g.size());
  // (keep_output_names: a returned duplicate, kept for the output alone: source id -> its copy)
  constexpr ir::node_id none = static_cast<ir::node_id>(-1);
  std::vector<ir::node_id> kept_for_output(options.keep_output_names ? g.size() : 0, none);
  std::size_t merged = 0;
  for (ir::node_id i = 0; i < g.size(); ++i) {
    const ir::node& n = g[i];
    if (n.op == ir::node_op::output) {
      std::vector<ir::value_ref> outs;
      for (const ir::argument& a : n.args) {
        const ir::value_ref r = std::get<ir::value_ref>(a);
        const bool kept = r.node < kept_for_output.size() && kept_for_output[r.node] != none;
        outs.push_back(kept ? ir::value_ref{kept_for_output[r.node], r.index} : rw.map(r));
      }
      rw.target().set_output(std::move(outs));
      continue;
    }
    if (n.op != ir::node_op::call_function || n.vals.empty() || ir::is_assertion(n) || !may_merge(n.target)) {
      rw.copy(i);
      continue;
    }
    std::vector<ir::argument> args = rw.map_args(n);
    std::vector<std::pair<std::string, ir::argument>> kwargs = rw.map_kwargs(n);
    const std::size_t h = hash_call(n, args, kwargs);
    const ir::graph& out = rw.target();
    ir::node_id survivor = none;
    for (auto [it, end] = seen.equal_range(h); it != end; ++it) {
      const ir::node& s = out[it->second];
      if (s.target == n.target && s.vals == n.vals && same_args(s.args, args) && same_kwargs(s.kwargs, kwargs)) {
        survivor = it->second;
        break;
      }
    }
    if (survivor == none) {
      seen.emplace(h, rw.copy_with(i, std::move(args), std::move(kwargs)));
      continue;
    }
    if (returned[i]) {
      // the output keeps reading it, every other reader reads the survivor: a change only where
      // there are other readers (so that a second run finds nothing to do)
      kept_for_output[i] = rw.copy_with(i, std::move(args), std::move(kwargs));
      if (read_inside[i]) ++merged;
    } else {
      ++merged;
    }
    rw.bind_node(i, survivor);
  }
  if (merged == 0) return 0;
  g = rw.finish();
  return merged;
}

TYPEX_API auto typex::passes::cse_pass(cse_options options) -> pass {
  return pass{.name = "cse",
              .run = [options](ir::graph& g) { return eliminate_common_subexpressions(g, options) > 0; },
              .preserves = {.signature = true, .output_names = options.keep_output_names, .metadata = true}};
}
#endif  // TYPEX_HEADER_DEFINITIONS
