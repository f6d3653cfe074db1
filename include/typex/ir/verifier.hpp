// typex/ir/verifier.hpp — the graph's invariants, checked; a violation throws ir::graph_error.
//
// Placeholders first, then calls, then exactly one output node, last; names unique identifiers;
// every argument reads an earlier node's existing value; every placeholder and call has the
// metadata of its values; no in-place op (an ATen name whose op ends in '_': exported graphs are
// functional); the output returns values only.
#pragma once

#include <typex/core/requirement.hpp>
#include <typex/ir/graph.hpp>

#include <string>
#include <unordered_set>

namespace typex::ir {

namespace detail {
// "aten.add_.Tensor" and "aten.relu_.default" are in-place; "aten.add.Tensor" is not.
inline bool is_inplace_target(std::string_view target) {
  if (target.starts_with("aten.")) target.remove_prefix(5);
  const std::string_view op = target.substr(0, target.find('.'));
  return op.size() > 1 && op.back() == '_' && op.substr(0, 2) != "__";
}
}  // namespace detail

inline void verify(const graph& g) {
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
      if (detail::is_inplace_target(n.target.name())) fail("an in-place op; exported graphs are functional", &n);
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

}  // namespace typex::ir
