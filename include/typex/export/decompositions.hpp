// typex/export/decompositions.hpp — run_decompositions: an exported program lowered by a
// decomposition table (torch.export's ExportedProgram.run_decompositions).
//
//   typex::exported_program core = typex::run_decompositions(ep);   // everything to the core set
//   auto table = typex::passes::decomposition_table::core().keep(typex::op_id_of<typex::linear_op>);
//   typex::exported_program kept = typex::run_decompositions(ep, table);
//
// The result is a new program: its graph is passes::decompose's (local rewrites of the nodes the
// table names; nothing is traced again), and everything else is the source's: the signature (a
// value a decomposition renamed is followed), the state dict and constants, the range
// constraints, the module call graph, the example inputs, whether its shapes are trusted, and every
// node's metadata. Its dialect is ir::core_dialect when every call is a core op, else the
// source's. Works on joint (training) programs as on inference ones.
#pragma once

#include <typex/export/exported_program.hpp>
#include <typex/passes/cse.hpp>
#include <typex/passes/dce.hpp>
#include <typex/passes/decompose.hpp>

namespace typex {

TYPEX_API exported_program run_decompositions(const exported_program& ep,
                                              const passes::decomposition_table& table = passes::decomposition_table::core());

// run_decompositions, then the calls that compute one value merged (passes/cse.hpp, the output's
// names kept) and what nothing reads dropped (passes/dce.hpp): for a backend that decomposes calls
// whose decompositions share work (attention's backward ops: each recomputes the scores), which
// then runs once. The source itself when the table decomposes nothing in it.
TYPEX_API exported_program run_decompositions_merged(const exported_program& ep, const passes::decomposition_table& table);

}  // namespace typex

// ---- definitions: compiled once in typex::runtime, or inline here in header-only builds
// (config.hpp: TYPEX_SEPARATE_COMPILATION) ----
#if TYPEX_HEADER_DEFINITIONS
TYPEX_API auto typex::run_decompositions(const exported_program& ep, const passes::decomposition_table& table) -> exported_program {
  std::vector<std::string> names;
  ir::graph g = passes::decompose(ep.graph(), table, &names);
  std::unordered_map<std::string, std::string> renamed;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string& before = ep.graph()[static_cast<ir::node_id>(i)].name;
    if (names[i] != before) renamed.emplace(before, names[i]);
  }
  const auto follow = [&](const std::string& name) {
    const auto it = renamed.find(name);
    return it == renamed.end() ? name : it->second;
  };
  std::vector<output_spec> outs = ep.signature().output_specs();
  for (output_spec& o : outs) o.arg = follow(o.arg);
  std::vector<module_call_entry> calls = ep.module_call_graph();
  for (module_call_entry& e : calls) {
    if (!e.signature) continue;
    for (std::string& n : e.signature->inputs) n = follow(n);
    for (std::string& n : e.signature->outputs) n = follow(n);
  }
  for (module_call_entry& e : calls)
    for (buffer_write& w : e.writes) w.value = follow(w.value);
  bool core = true;
  for (const ir::node& n : g.nodes())
    if (n.op == ir::node_op::call_function && !ir::core_dialect.allows(n.target)) core = false;
  exported_program out(std::move(g), graph_signature(ep.signature().input_specs(), std::move(outs)), ep.state_dict(), ep.constants(),
                       ep.ranges(), std::move(calls), ep.example_inputs());
  out.set_trusted_shapes(ep.trusted_shapes());
  if (core) out.set_dialect(ir::core_dialect);
  else if (ep.dialect() != ir::export_dialect) out.set_dialect(ep.dialect());
  return out;
}

TYPEX_API auto typex::run_decompositions_merged(const exported_program& ep, const passes::decomposition_table& table) -> exported_program {
  bool any = false;
  for (const ir::node& n : ep.graph().nodes()) any = any || (n.op == ir::node_op::call_function && table.decomposes(n.target));
  if (!any) return ep;
  exported_program d = run_decompositions(ep, table);
  ir::graph g = d.graph();
  const std::size_t merged = passes::eliminate_common_subexpressions(g, {.keep_output_names = true});
  // (and what nothing reads now: attention's statistics, where every gradient took the math path)
  if (merged + passes::eliminate_dead_code(g) == 0) return d;
  exported_program out(std::move(g), d.signature(), d.state_dict(), d.constants(), d.ranges(), d.module_call_graph(), d.example_inputs());
  out.set_trusted_shapes(d.trusted_shapes());
  out.set_dialect(d.dialect());
  return out;
}
#endif  // TYPEX_HEADER_DEFINITIONS
