// typex/ir/verifier.hpp — the graph's invariants, checked; a violation throws ir::graph_error.
//
// Placeholders first, then calls, then exactly one output node, last; names unique identifiers;
// every argument reads an earlier node's existing value; every placeholder and call has the
// metadata of its values; no in-place op (an ATen name whose op ends in '_', or a schema that
// writes an argument: exported graphs are functional); the output returns values only; every
// call's arguments fit its op's schema (ops/schema.hpp: how many, and of which kind each is);
// every call's op is in the program's dialect (ir/dialect.hpp); every higher-order call's subgraphs
// exist, fit the call and verify themselves (ir/control_flow.hpp); and every call's recorded dtype
// and shape are what its op's run-time rule gives (ir/describe.hpp), symbolic dims included. An
// error names the node, the op, and what differs (the rule's metadata and the record's).
#pragma once

#include <typex/core/requirement.hpp>
#include <typex/ir/control_flow.hpp>
#include <typex/ir/dialect.hpp>
#include <typex/ir/graph.hpp>

#include <span>
#include <string>
#include <unordered_set>

namespace typex::ir {

namespace detail {
// "aten.add_.Tensor" and "aten.relu_.default" are in-place; "aten.add.Tensor" is not.
TYPEX_API bool is_inplace_target(std::string_view target);

constexpr std::string_view kind_of(const argument& a) noexcept {
  constexpr std::string_view kinds[] = {"a tensor",   "None",           "a bool",      "an int", "a float",
                                        "a string",   "a list of ints", "a list of tensors", "a symbolic int",
                                        "a dtype",    "a list of symbolic ints"};
  static_assert(std::size(kinds) == std::variant_size_v<argument>);
  return kinds[a.index()];
}
}  // namespace detail

// Whether argument `a` can be passed where `spec` is declared (None only to `?` arguments; a
// number to a Tensor, ATen's wrapped scalar; a single int to a sized int list, as int[2] stride=1).
inline bool accepts(const arg_spec& spec, const argument& a) noexcept {
  if (std::holds_alternative<none_t>(a)) return spec.optional;
  const bool number = std::holds_alternative<std::int64_t>(a) || std::holds_alternative<double>(a) || std::holds_alternative<bool>(a);
  const bool integer = std::holds_alternative<std::int64_t>(a) || std::holds_alternative<sym_expr>(a);
  switch (spec.type) {
    case arg_type::tensor: return std::holds_alternative<value_ref>(a) || number;
    case arg_type::tensor_list: return std::holds_alternative<std::vector<value_ref>>(a);
    case arg_type::scalar: return number || std::holds_alternative<sym_expr>(a);
    case arg_type::integer: return integer;
    case arg_type::real: return std::holds_alternative<double>(a) || std::holds_alternative<std::int64_t>(a);
    case arg_type::boolean: return std::holds_alternative<bool>(a);
    case arg_type::int_list:
      return std::holds_alternative<std::vector<std::int64_t>>(a) || std::holds_alternative<std::vector<sym_expr>>(a) ||
             (spec.list_size > 0 && integer);
    case arg_type::scalar_type: return std::holds_alternative<dtype>(a);
    case arg_type::string: return std::holds_alternative<std::string>(a);
    case arg_type::other: return false;
  }
  return false;
}

// What is wrong with calling `op` with `args`, by its schema; empty when nothing is (or when the op
// declares no schema: a user op may leave its arguments unchecked).
TYPEX_API std::string argument_mismatch(op_id op, std::span<const argument> args);

struct verify_options {
  const dialect* in_dialect = &export_dialect;  // the ops a call may name (nullptr: any)
  bool shapes = true;                           // each call's metadata against its op's rule
};

TYPEX_API void verify(const graph& g, const verify_options& options);
inline void verify(const graph& g) { verify(g, verify_options{}); }

}  // namespace typex::ir

// ---- definitions: compiled once in typex::runtime, or inline here in header-only builds
// (config.hpp: TYPEX_SEPARATE_COMPILATION) ----
#if TYPEX_HEADER_DEFINITIONS
TYPEX_API auto typex::ir::detail::is_inplace_target(std::string_view target) -> bool {
  if (target.starts_with("aten.")) target.remove_prefix(5);
  const std::string_view op = target.substr(0, target.find('.'));
  return op.size() > 1 && op.back() == '_' && op.substr(0, 2) != "__";
}

namespace typex::ir::detail {
// The node's metadata against its op's rule.
// (a data-dependent op's dim 0 is the symbol its call made, or the count a graph built by hand
// recorded: any extent)
inline bool agrees(const tensor_meta& rule, const tensor_meta& record, bool data_dependent) {
  if (!data_dependent) return rule == record;
  if (rule.scalar_type != record.scalar_type || rule.rank() != record.rank()) return false;
  for (std::size_t d = 1; d < rule.rank(); ++d)
    if (!(rule.shape[d] == record.shape[d])) return false;
  return true;
}

template <class Fail>
void check_rule(const graph& g, const node& n, bool data_dependent, Fail& fail) {
  std::vector<tensor_meta> rule;
  try {
    rule = infer_meta(g, n.target, n.args);
  } catch (const typex::error& e) {
    std::string what(n.target.name());
    what += ": its rule refuses the call: ";
    what += e.what();
    fail(what, &n);
  }
  if (rule.size() != n.vals.size()) {
    std::string what(n.target.name());
    what += ": the op's rule gives " + std::to_string(rule.size()) + " results, the node records " + std::to_string(n.vals.size());
    fail(what, &n);
  }
  for (std::size_t k = 0; k < rule.size(); ++k) {
    if (agrees(rule[k], n.vals[k], data_dependent)) continue;
    std::string what(n.target.name());
    what += ": the node records ";
    what += n.vals[k].to_string();
    what += " where the op's rule gives ";
    what += rule[k].to_string();
    if (rule.size() > 1) what += " (result " + std::to_string(k) + ")";
    fail(what, &n);
  }
}
}  // namespace typex::ir::detail

TYPEX_API auto typex::ir::argument_mismatch(op_id op, std::span<const argument> args) -> std::string {
  const op_schema s = op.schema();
  if (s.empty()) return {};
  std::string out;
  auto schema_text = [&] {
    out += " (schema: ";
    out += s.text;
    out += ')';
  };
  if (args.size() > s.args.size() || args.size() < s.required()) {
    out = "takes ";
    if (s.required() == s.args.size()) out += std::to_string(s.args.size());
    else out += std::to_string(s.required()) + " to " + std::to_string(s.args.size());
    out += " arguments, the call gives " + std::to_string(args.size());
    schema_text();
    return out;
  }
  for (std::size_t i = 0; i < args.size(); ++i) {
    const arg_spec& a = s.args[i];
    if (accepts(a, args[i])) continue;
    out = "argument ";
    out += std::to_string(i);
    out += " (";
    out += a.type_text;
    out += ' ';
    out += a.name;
    out += ") is ";
    out += detail::kind_of(args[i]);
    schema_text();
    return out;
  }
  return out;
}

TYPEX_API void typex::ir::verify(const graph& g, const verify_options& options) {
  auto fail = [&](std::string_view what, const node* n) {
    typex::detail::raise<graph_error>([&](auto& w) {
      w.put("typex::ir::verify: ");
      if (n != nullptr) { w.put("node '"); w.put(n->name); w.put("': "); }
      w.put(what);
    });
  };
  if (!g.has_output()) fail("the graph has no output node (the last node must be the output)", nullptr);
  std::unordered_set<std::string_view> names;
  bool calls_started = false;
  for (node_id i = 0; i < g.size(); ++i) {
    const node& n = g[i];
    if (!names.insert(n.name).second) fail("the name is used twice", &n);
    if (n.op == node_op::placeholder) {
      if (calls_started) fail("a placeholder after a call; placeholders must come first", &n);
      if (n.vals.size() != 1) fail("a placeholder must carry exactly one value's metadata", &n);
    } else if (n.op == node_op::call_function) {
      calls_started = true;
      if (is_assertion(n)) {
        if (!n.vals.empty()) fail("a run-time assertion produces no value", &n);
        relation r{};
        if (n.args.size() != 4 || !std::holds_alternative<sym_expr>(n.args[0]) || !std::holds_alternative<std::string>(n.args[1]) ||
            !parse_relation(std::get<std::string>(n.args[1]), r) || !std::holds_alternative<sym_expr>(n.args[2]) ||
            !std::holds_alternative<std::string>(n.args[3]))
          fail("a run-time assertion takes (lhs: SymInt, relation, rhs: SymInt, message)", &n);
      } else if (n.vals.empty()) {
        fail("a call without metadata for its values", &n);
      }
      const op_description* d = find_description(n.target);
      if (detail::is_inplace_target(n.target.name()) || (d != nullptr && d->traits.writes_state))
        fail("an in-place op; exported graphs are functional", &n);
      if (options.in_dialect != nullptr && !options.in_dialect->allows(n.target)) {
        std::string what(n.target.name());
        what += " is not an op of the program's dialect '";
        what += options.in_dialect->name();
        what += *options.in_dialect == core_dialect ? "' (passes::run_decompositions lowers a program to the core set)" : "'";
        fail(what, &n);
      }
      if (const std::string why = argument_mismatch(n.target, n.args); !why.empty()) {
        std::string what(n.target.name());
        what += ": ";
        what += why;
        fail(what, &n);
      }
      bool refs_ok = true;
      graph::for_each_ref(n, [&](value_ref r) { refs_ok = refs_ok && r.node < i && r.index < g[r.node].vals.size(); });
      if (refs_ok && is_control_flow(n)) {  // (its subgraphs: each a whole graph, in the program's dialect)
        verify_control_flow(g, n, [&](const graph& sub) {
          try {
            verify(sub, options);
          } catch (const graph_error& e) {
            std::string what(n.target.name());
            what += ": ";
            what += e.what();
            fail(what, &n);
          }
        });
      }
      if (options.shapes && refs_ok && d != nullptr && d->infer != nullptr) detail::check_rule(g, n, d->traits.data_dependent, fail);
    } else {
      if (i + 1 != g.size()) fail("the output node must be the last node", &n);
      for (const argument& a : n.args)
        if (!std::holds_alternative<value_ref>(a)) fail("the output returns something that is not a value", &n);
    }
    graph::for_each_ref(n, [&](value_ref r) {
      if (r.node >= i) fail("reads a value of a later node (the graph must be topologically ordered)", &n);
      if (r.index >= g[r.node].vals.size()) fail("reads an output its producer does not have", &n);
      if (g[r.node].op == node_op::output) fail("reads the output node", &n);
    });
  }
}
#endif  // TYPEX_HEADER_DEFINITIONS
