// typex/passes/pass.hpp — a pass is a plain function over an ir::graph that says what it keeps;
// a pipeline runs passes in order, checks the graph after each, and reports what each did.
//
//   passes::pipeline p;
//   p.add(passes::fold_pass()).add(passes::cse_pass()).add(passes::dce_pass());
//   const passes::pipeline_report r = p.run(graph);
//   std::cout << r.to_string();          // per pass: changed, nodes before/after, time
//
// Your own pass is written the same way: a name, a function that rewrites the graph and returns
// whether it changed anything, and what it keeps:
//
//   p.add({.name = "drop_asserts",
//          .run = [](ir::graph& g) {
//            std::vector<bool> keep(g.size(), true);
//            for (ir::node_id i = 0; i < g.size(); ++i) keep[i] = !ir::is_assertion(g[i]);
//            const bool changed = std::find(keep.begin(), keep.end(), false) != keep.end();
//            if (changed) g.retain(keep);
//            return changed;
//          },
//          .preserves = {.signature = true, .output_names = true, .metadata = true}});
//
// ir::graph is append-only and topologically ordered: a pass that only drops nodes uses
// g.retain(keep); one that changes arguments builds a new graph (copying nodes with a table of
// what each old value became, as passes/cse.hpp does) and assigns it to g. A pass keeps the
// graph's invariants (ir/verifier.hpp): placeholders first, one output last, unique names,
// arguments that read earlier values and fit the op's schema, metadata on every call.
//
// Checking: after each pass the pipeline runs ir::verify on the graph, and checks what the pass
// says it preserves (the placeholders and the output's metadata for `signature`, the names of the
// values the output returns for `output_names`), when the unit that calls run() is compiled
// without NDEBUG (pipeline_options::verify = verify_mode::debug, the default), or always
// (verify_mode::always). A violation is an ir::graph_error that names the pass:
//   "typex::passes::pipeline: pass 'my_pass' broke the graph: typex::ir::verify: node 'relu': ..."
// and the graph is left as that pass left it.
#pragma once

#include <typex/core/error.hpp>
#include <typex/ir/graph.hpp>
#include <typex/passes/dce.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <exception>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace typex::passes {

// What a pass promises to leave as it found it.
struct pass_preserves {
  // the placeholders (names, order, metadata) and the output's arity and metadata: the program's
  // signature (a pass that adds an input or an output says false)
  bool signature = true;
  // the names of the values the output returns (an exported program's output specs name them);
  // false for a pass that may make the output read another node's value (CSE, no-op removal)
  bool output_names = true;
  // every node it keeps keeps its nn_module_stack and stack_trace, and every node it adds takes
  // those of the node it replaces (not checked: a promise to the passes and tools after it)
  bool metadata = true;
};

// A pass: `run` rewrites the graph and returns whether it changed anything.
struct pass {
  std::string name = {};
  std::function<bool(ir::graph&)> run = {};
  pass_preserves preserves = {};
};

// What one pass did in a pipeline run.
struct pass_record {
  std::string name = {};
  bool changed = false;
  std::size_t nodes_before = 0;
  std::size_t nodes_after = 0;
  std::chrono::nanoseconds time{0};
  std::size_t round = 0;  // (0 for the first sweep over the passes; see pipeline_options::rounds)
};

struct pipeline_report {
  std::vector<pass_record> passes;  // in the order they ran

  // whether any pass changed the graph
  bool changed() const noexcept {
    for (const pass_record& r : passes)
      if (r.changed) return true;
    return false;
  }
  std::chrono::nanoseconds total_time() const noexcept {
    std::chrono::nanoseconds t{0};
    for (const pass_record& r : passes) t += r.time;
    return t;
  }
  // One line per pass: "fold      changed  120 -> 96 nodes  0.41 ms".
  TYPEX_API std::string to_string() const;
};

enum class verify_mode : unsigned char {
  debug,   // after each pass in units compiled without NDEBUG
  always,  // after each pass
  never,
};

struct pipeline_options {
  verify_mode verify = verify_mode::debug;
  // sweeps over the passes: the passes run again while a sweep changed the graph, at most this
  // many sweeps in all (1: once)
  std::size_t rounds = 1;
};

class pipeline {
 public:
  pipeline() = default;
  explicit pipeline(pipeline_options options) : options_(options) {}

  // Appends a pass (a pass with an empty name or no function is an argument_error).
  TYPEX_API pipeline& add(pass p);
  pipeline& add(std::string name, std::function<bool(ir::graph&)> run, pass_preserves preserves = {}) {
    return add(pass{std::move(name), std::move(run), preserves});
  }

  const std::vector<pass>& passes() const noexcept { return passes_; }
  const pipeline_options& options() const noexcept { return options_; }

  // Runs the passes in order over g; checks g after each as options().verify says (see above).
  pipeline_report run(ir::graph& g) const {
#ifdef NDEBUG
    return run_checked(g, options_.verify == verify_mode::always);
#else
    return run_checked(g, options_.verify != verify_mode::never);
#endif
  }
  // The same, checking after each pass when `verify` says so.
  TYPEX_API pipeline_report run_checked(ir::graph& g, bool verify) const;

 private:
  std::vector<pass> passes_;
  pipeline_options options_;
};

// Checks g after pass `p` ran on a graph whose signature `before` describes: ir::verify, and what
// p promises to preserve. A graph_error naming the pass otherwise. (What pipeline::run does after
// each pass; for a caller that runs a pass by hand.)
struct graph_signature_snapshot {
  std::vector<std::string> placeholder_names = {};
  std::vector<ir::tensor_meta> placeholder_meta = {};
  std::vector<std::string> output_names = {};  // the names of the nodes whose values the output returns
  std::vector<ir::tensor_meta> output_meta = {};
};
TYPEX_API graph_signature_snapshot snapshot_signature(const ir::graph& g);
TYPEX_API void check_after_pass(const pass& p, const graph_signature_snapshot& before, const ir::graph& g);

// passes::eliminate_dead_code (passes/dce.hpp) as a pipeline pass ("dce"): keeps the signature, the
// output's values and every kept node's metadata. (Here, not in dce.hpp: the umbrella header
// includes dce.hpp, and a unit that only exports should not compile the pipeline.)
TYPEX_API pass dce_pass();

}  // namespace typex::passes

// ---- definitions: compiled once in typex::runtime, or inline here in header-only builds
// (config.hpp: TYPEX_SEPARATE_COMPILATION) ----
#if TYPEX_HEADER_DEFINITIONS
#include <typex/ir/verifier.hpp>

#include <cstdio>

TYPEX_API auto typex::passes::pipeline_report::to_string() const -> std::string {
  std::size_t width = 4;
  for (const pass_record& r : passes) width = std::max(width, r.name.size());
  std::string s;
  for (const pass_record& r : passes) {
    s += r.name;
    s.append(width - r.name.size() + 2, ' ');
    s += r.changed ? "changed    " : "unchanged  ";
    s += std::to_string(r.nodes_before);
    s += " -> ";
    s += std::to_string(r.nodes_after);
    s += " nodes  ";
    char ms[32];
    std::snprintf(ms, sizeof ms, "%.3f ms", static_cast<double>(r.time.count()) / 1e6);
    s += ms;
    if (r.round > 0) {
      s += "  (round ";
      s += std::to_string(r.round + 1);
      s += ')';
    }
    s += '\n';
  }
  return s;
}

TYPEX_API auto typex::passes::pipeline::add(pass p) -> pipeline& {
  if (p.name.empty()) typex::detail::raise_message<argument_error>("typex::passes::pipeline::add: a pass needs a name (messages name it)");
  if (!p.run) {
    typex::detail::raise<argument_error>([&](auto& w) {
      w.put("typex::passes::pipeline::add: pass '"); w.put(p.name); w.put("' has no function to run");
    });
  }
  passes_.push_back(std::move(p));
  return *this;
}

TYPEX_API auto typex::passes::snapshot_signature(const ir::graph& g) -> graph_signature_snapshot {
  graph_signature_snapshot s;
  for (const ir::node& n : g.nodes()) {
    if (n.op != ir::node_op::placeholder) continue;
    s.placeholder_names.push_back(n.name);
    s.placeholder_meta.push_back(n.vals.empty() ? ir::tensor_meta{} : n.vals.front());
  }
  if (g.has_output()) {
    for (const ir::argument& a : g.output().args) {
      const auto* r = std::get_if<ir::value_ref>(&a);
      if (r == nullptr || r->node >= g.size()) continue;  // (the verifier reports these)
      s.output_names.push_back(g[r->node].name);
      s.output_meta.push_back(r->index < g[r->node].vals.size() ? g[r->node].vals[r->index] : ir::tensor_meta{});
    }
  }
  return s;
}

TYPEX_API void typex::passes::check_after_pass(const pass& p, const graph_signature_snapshot& before, const ir::graph& g) {
  auto broke = [&](std::string_view what) {
    typex::detail::raise<ir::graph_error>([&](auto& w) {
      w.put("typex::passes::pipeline: pass '"); w.put(p.name); w.put("' broke the graph: "); w.put(what);
    });
  };
  try {
    ir::verify(g);
  } catch (const ir::graph_error& e) {
    broke(e.what());
  } catch (const std::exception& e) {  // (a call whose arguments the op's rule refuses, ...)
    broke(e.what());
  }
  if (!p.preserves.signature && !p.preserves.output_names) return;
  const graph_signature_snapshot after = snapshot_signature(g);
  if (p.preserves.signature) {
    if (after.placeholder_names != before.placeholder_names)
      broke("it changed the placeholders (names or order), and says it preserves the signature");
    if (after.placeholder_meta != before.placeholder_meta)
      broke("it changed a placeholder's metadata, and says it preserves the signature");
    if (after.output_meta != before.output_meta)
      broke("it changed the output's arity or metadata, and says it preserves the signature");
  }
  if (p.preserves.output_names && after.output_names != before.output_names) {
    std::string what = "the output returned (";
    for (std::size_t i = 0; i < before.output_names.size(); ++i) what += (i ? ", " : "") + before.output_names[i];
    what += ") and returns (";
    for (std::size_t i = 0; i < after.output_names.size(); ++i) what += (i ? ", " : "") + after.output_names[i];
    what += "), and the pass says it preserves the output's names";
    broke(what);
  }
}

TYPEX_API auto typex::passes::pipeline::run_checked(ir::graph& g, bool verify) const -> pipeline_report {
  pipeline_report report;
  const std::size_t rounds = options_.rounds == 0 ? 1 : options_.rounds;
  for (std::size_t round = 0; round < rounds; ++round) {
    bool any = false;
    for (const pass& p : passes_) {
      graph_signature_snapshot before;
      if (verify) before = snapshot_signature(g);
      pass_record r;
      r.name = p.name;
      r.round = round;
      r.nodes_before = g.size();
      const auto start = std::chrono::steady_clock::now();
      r.changed = p.run(g);
      r.time = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start);
      r.nodes_after = g.size();
      report.passes.push_back(std::move(r));
      if (verify) check_after_pass(p, before, g);
      any = any || report.passes.back().changed;
    }
    if (!any) break;
  }
  return report;
}
TYPEX_API auto typex::passes::dce_pass() -> pass {
  return pass{.name = "dce",
              .run = [](ir::graph& g) { return eliminate_dead_code(g) > 0; },
              .preserves = {.signature = true, .output_names = true, .metadata = true}};
}
#endif  // TYPEX_HEADER_DEFINITIONS
