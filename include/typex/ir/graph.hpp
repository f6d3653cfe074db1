// typex/ir/graph.hpp — the functional graph: placeholders, calls, one output (torch.fx's shape).
//
// Plain run-time data: nodes in topological order, each with a unique name, the op it calls (an
// op_id: op_id_of<linear_op>, printed as "aten.linear.default"), arguments (other nodes' values or constants), the metadata of the
// values it produces (dtype and symbolic shape), the nn_module_stack it was recorded under and the
// user's source location. Passes, printing, serialization and backends all work on this data; the
// typed front end only builds it.
#pragma once

#include <typex/core/dtype.hpp>
#include <typex/core/error.hpp>
#include <typex/ir/sym_expr.hpp>
#include <typex/ops/op.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>

namespace typex::ir {

// A graph that breaks its invariants (verifier, malformed construction).
class graph_error : public error {
 public:
  using error::error;
};

// dtype and symbolic shape of one value: prints as f32[s0, 784].
struct tensor_meta {
  dtype scalar_type = dtype::f32;
  std::vector<sym_expr> shape;

  std::size_t rank() const noexcept { return shape.size(); }
  TYPEX_API std::string to_string() const;
  friend bool operator==(const tensor_meta&, const tensor_meta&) = default;
};

using node_id = std::uint32_t;

// An argument that is the value of another node (for multi-output nodes: output `index`).
struct value_ref {
  node_id node;
  std::uint32_t index = 0;
  friend bool operator==(const value_ref&, const value_ref&) = default;
};

struct none_t {
  friend bool operator==(none_t, none_t) = default;
};

// What a call can take: values, None, scalars, int lists (dims, sizes), lists of values (cat),
// symbolic ints and lists of them (a view's sizes), dtypes and strings (approximate="tanh").
using argument = std::variant<value_ref, none_t, bool, std::int64_t, double, std::string, std::vector<std::int64_t>,
                              std::vector<value_ref>, sym_expr, dtype, std::vector<sym_expr>>;

enum class node_op : unsigned char { placeholder, call_function, output };

constexpr std::string_view name(node_op op) noexcept {
  switch (op) {
    case node_op::placeholder: return "placeholder";
    case node_op::call_function: return "call_function";
    case node_op::output: return "output";
  }
  return "?";
}

// One frame of the nn_module_stack: the submodule's path ("layers.0.attn"), its type, and which
// call of it this is: the module call graph's entry ("fc" for the first call, "fc@1" for the
// second; empty in a graph written before calls were told apart, meaning the first).
struct module_frame {
  std::string path;
  std::string type;
  std::string call = {};
  // The module call graph entry this frame belongs to.
  const std::string& call_id() const noexcept { return call.empty() ? path : call; }
  friend bool operator==(const module_frame& a, const module_frame& b) {
    return a.path == b.path && a.type == b.type && a.call_id() == b.call_id();
  }
};

struct node {
  node_op op = node_op::call_function;
  std::string name;    // unique in the graph
  op_id target;        // the op, for calls (op_id_of<linear_op>: "aten.linear.default"); null for the others
  std::vector<argument> args;
  std::vector<std::pair<std::string, argument>> kwargs;
  std::vector<tensor_meta> vals;  // the values this node produces (one for most ops, none for output)
  std::vector<module_frame> nn_module_stack;
  std::string stack_trace;  // where the user's code recorded it: "model.cpp:12 in forward"
  // A constant placeholder that an eager op computed while tracing from these placeholders (the
  // module's tensors: `a + b` of two parameters runs then, and enters the program as its result):
  // their names. make_joint refuses to take such a constant for one when the placeholders train.
  std::vector<std::string> derived_from = {};
};

// A run-time assertion about the program's symbols (torch.export's _assert_scalar nodes): a fact the
// program needs that no range expresses (seq % 4 == 0, s0*s1 == s2), kept when the export asked for
// run-time assertions. Arguments: (lhs: sym_expr, relation: string as typex::to_string(relation)
// writes it, rhs: sym_expr, what needs it: string). It produces no value; backends check it when
// the inputs bind the symbols, before anything runs; passes keep it.
struct assert_shape_op {
  static constexpr std::string_view target = "typex._assert_shape.default";
  static constexpr std::string_view schema = "typex::_assert_shape(SymInt lhs, str relation, SymInt rhs, str message) -> ()";
  static constexpr bool side_effects = true;  // (never removed, never merged: it checks the inputs)
  static constexpr bool differentiable = false;
  template <class R> static void infer(R&) {}  // (no value)
};

// What add_call needs; designated initializers name the parts.
// (Every member has a default initializer: g++ 12's -Wmissing-field-initializers would otherwise
// warn about each part a designated initializer leaves out.)
struct call {
  op_id target = {};
  std::vector<argument> args = {};
  std::vector<std::pair<std::string, argument>> kwargs = {};
  std::vector<tensor_meta> vals = {};
  std::string name_hint = {};  // default: the op's name ("aten.linear.default" -> linear)
  std::vector<module_frame> nn_module_stack = {};
  std::string stack_trace = {};
};

inline bool is_assertion(const node& n) noexcept {
  return n.op == node_op::call_function && n.target == op_id_of<assert_shape_op>;
}

class graph {
 public:
  // A placeholder (an input of the graph). A finished graph has them first, in the order of the
  // program's flat inputs; a tracer that finds an input late (a tensor constant) adds it where it
  // is and calls reorder() at the end.
  TYPEX_API node_id add_placeholder(std::string_view name_hint, tensor_meta meta);
  // A constant placeholder computed while tracing from other placeholders (node::derived_from), by
  // an op at `stack_trace`.
  TYPEX_API node_id add_derived_placeholder(std::string_view name_hint, tensor_meta meta, std::vector<std::string> derived_from,
                                            std::string stack_trace);

  // Appends a call: g.add_call({.target = op_id_of<relu_op>, .args = {value_ref{x}}, .vals = {meta}}).
  // Arguments must read existing values (graphs are built in topological order).
  TYPEX_API node_id add_call(call c);

  // The one output node, returning `outs` (flat: the program's outputs in order).
  TYPEX_API node_id set_output(std::vector<value_ref> outs);

  const std::vector<node>& nodes() const noexcept { return nodes_; }
  const node& operator[](node_id id) const { return nodes_.at(id); }
  std::size_t size() const noexcept { return nodes_.size(); }
  bool has_output() const noexcept { return !nodes_.empty() && nodes_.back().op == node_op::output; }

  TYPEX_API const node& output() const;

  TYPEX_API const tensor_meta& meta(value_ref r) const;

  // The placeholders, in graph order.
  TYPEX_API std::vector<node_id> placeholders() const;

  // users()[i]: the nodes that read node i, in graph order (each once).
  TYPEX_API std::vector<std::vector<node_id>> users() const;

  // Calls f(value_ref) for every value an argument holds (a list holds several).
  template <class F>
  static void for_each_ref(const argument& a, F&& f) {
    if (const auto* r = std::get_if<value_ref>(&a)) f(*r);
    else if (const auto* rs = std::get_if<std::vector<value_ref>>(&a))
      for (const value_ref& x : *rs) f(x);
  }
  // Calls f(value_ref) for every value a node reads (args and kwargs).
  template <class F>
  static void for_each_ref(const node& n, F&& f) {
    for (const argument& a : n.args) for_each_ref(a, f);
    for (const auto& kv : n.kwargs) for_each_ref(kv.second, f);
  }

  // A name not used yet, from a hint, as torch.fx makes them: linear, linear_1, linear_2, ...
  TYPEX_API std::string unique_name(std::string_view hint);

  // Gives node `id` the name `name` (an identifier no other node has: a graph_error otherwise).
  TYPEX_API void rename(node_id id, const std::string& name);

  // Puts the nodes in the order `order` (a permutation of the node ids), renumbering references.
  // The result must still read every value after it is produced.
  TYPEX_API void reorder(const std::vector<node_id>& order);

  // Rebuilds the node list keeping only `keep[i]` nodes, renumbering references. Used by passes.
  TYPEX_API void retain(const std::vector<bool>& keep);

  // -- subgraphs (the branches and bodies of control flow: ir/control_flow.hpp) --------------------
  // A graph owns the subgraphs its higher-order calls name (torch.export's true_graph_0,
  // while_loop_body_graph_0: submodules of the GraphModule). A call names one by a string argument.
  // Subgraphs are immutable once added (shared by copies of the graph: copying is cheap); a pass
  // that transforms one replaces it (set_subgraph).
  struct subgraph {
    std::string name;
    std::shared_ptr<const graph> body;
  };
  // Adds `g` under a name made from `hint` ("true_graph" -> true_graph_0, true_graph_1, ...).
  TYPEX_API std::string add_subgraph(std::string_view hint, graph g);
  // Adds `g` under exactly `name` (an identifier no subgraph has: a graph_error otherwise).
  TYPEX_API void add_subgraph_named(const std::string& name, std::shared_ptr<const graph> g);
  // Replaces the subgraph `name` (which must exist).
  TYPEX_API void set_subgraph(std::string_view name, graph g);
  // The subgraph `name`, or nullptr.
  TYPEX_API const graph* find_subgraph(std::string_view name) const noexcept;
  // The subgraph `name`, or a graph_error naming it.
  TYPEX_API const graph& subgraph_at(std::string_view name) const;
  const std::vector<subgraph>& subgraphs() const noexcept { return subgraphs_; }
  // Drops the subgraphs no call names (after a pass removed calls).
  TYPEX_API void drop_unused_subgraphs();
  // Adds the subgraphs of `other` that this graph has no subgraph of the same name for (a pass that
  // builds a new graph from another's nodes keeps the subgraphs those nodes name). A name this graph
  // has for another body is a graph_error (never the wrong body silently: use import_subgraph).
  TYPEX_API void copy_subgraphs_from(const graph& other);
  // Subgraph `name` of `other` as a subgraph of this graph: the name it has here (the same name, or
  // a fresh one where this graph has that name for another body). A node copied from `other`
  // names the result.
  TYPEX_API std::string import_subgraph(const graph& other, const std::string& name);

 private:
  static node_id checked(const std::vector<node_id>& remap, node_id old) {
    if (remap[old] == static_cast<node_id>(-1))
      detail::raise_message<graph_error>("typex::ir::graph: a kept node reads a removed one");
    return remap[old];
  }

  node_id push(node n) {
    names_.insert(n.name);
    nodes_.push_back(std::move(n));
    return static_cast<node_id>(nodes_.size() - 1);
  }

  void require_open() const {
    if (has_output()) detail::raise_message<graph_error>("typex::ir::graph: the output node is already set");
  }

  TYPEX_API void check_refs(const argument& a, std::string_view who) const;

  bool taken(const std::string& s) const { return s == "output" || names_.contains(s); }

  // A Python-like identifier: [A-Za-z_][A-Za-z0-9_]*.
  TYPEX_API static std::string sanitize(std::string_view hint);

  std::vector<node> nodes_;
  std::vector<subgraph> subgraphs_;
  std::unordered_set<std::string> names_;  // for unique_name: graphs reach thousands of nodes
  // per hint, the first suffix unique_name has not tried yet (so that naming the n-th `linear`
  // costs one look-up, not n)
  std::unordered_map<std::string, int> next_suffix_;
};

}  // namespace typex::ir

// ---- definitions: compiled once in typex::runtime, or inline here in header-only builds
// (config.hpp: TYPEX_SEPARATE_COMPILATION) ----
#if TYPEX_HEADER_DEFINITIONS
TYPEX_API auto typex::ir::graph::add_placeholder(std::string_view name_hint, tensor_meta meta) -> node_id {
  require_open();
  node n;
  n.op = node_op::placeholder;
  n.name = unique_name(name_hint);
  n.vals.push_back(std::move(meta));
  return push(std::move(n));
}

TYPEX_API auto typex::ir::graph::add_derived_placeholder(std::string_view name_hint, tensor_meta meta,
                                                      std::vector<std::string> derived_from, std::string stack_trace) -> node_id {
  const node_id id = add_placeholder(name_hint, std::move(meta));
  nodes_[id].derived_from = std::move(derived_from);
  nodes_[id].stack_trace = std::move(stack_trace);
  return id;
}

TYPEX_API auto typex::ir::graph::add_call(call c) -> node_id {
  require_open();
  if (!c.target) detail::raise_message<graph_error>("typex::ir::graph::add_call: a call needs an op (a null op_id)");
  for (const argument& a : c.args) check_refs(a, c.target.name());
  for (const auto& kv : c.kwargs) check_refs(kv.second, c.target.name());
  node n;
  n.op = node_op::call_function;
  n.name = unique_name(c.name_hint.empty() ? c.target.short_name() : std::string_view(c.name_hint));
  n.target = c.target;
  n.args = std::move(c.args);
  n.kwargs = std::move(c.kwargs);
  n.vals = std::move(c.vals);
  n.nn_module_stack = std::move(c.nn_module_stack);
  n.stack_trace = std::move(c.stack_trace);
  return push(std::move(n));
}

TYPEX_API auto typex::ir::graph::set_output(std::vector<value_ref> outs) -> node_id {
  require_open();
  node n;
  n.op = node_op::output;
  n.name = "output";
  for (const value_ref& r : outs) {
    check_refs(r, "output");
    n.args.emplace_back(r);
  }
  return push(std::move(n));
}

TYPEX_API auto typex::ir::graph::output() const -> const node& {
  if (!has_output()) detail::raise_message<graph_error>("typex::ir::graph: the graph has no output node yet");
  return nodes_.back();
}

TYPEX_API auto typex::ir::graph::meta(value_ref r) const -> const tensor_meta& {
  const node& n = nodes_.at(r.node);
  if (r.index >= n.vals.size()) {
    detail::raise<graph_error>([&](auto& w) {
      w.put("typex::ir::graph: node '"); w.put(n.name); w.put("' has no output "); w.put_int(r.index);
    });
  }
  return n.vals[r.index];
}

TYPEX_API auto typex::ir::graph::placeholders() const -> std::vector<node_id> {
  std::vector<node_id> out;
  for (node_id i = 0; i < nodes_.size(); ++i)
    if (nodes_[i].op == node_op::placeholder) out.push_back(i);
  return out;
}

TYPEX_API auto typex::ir::graph::users() const -> std::vector<std::vector<node_id>> {
  std::vector<std::vector<node_id>> u(nodes_.size());
  for (node_id i = 0; i < nodes_.size(); ++i) {
    for_each_ref(nodes_[i], [&](value_ref r) {
      if (u[r.node].empty() || u[r.node].back() != i) u[r.node].push_back(i);
    });
  }
  return u;
}

TYPEX_API auto typex::ir::graph::unique_name(std::string_view hint) -> std::string {
  std::string base = sanitize(hint);
  if (!taken(base)) return base;
  int& next = next_suffix_[base];
  for (int k = next > 0 ? next : 1;; ++k) {
    std::string candidate = typex::detail::with_number(base + "_", k);
    if (!taken(candidate)) {
      next = k;  // (not k + 1: the name is only proposed; the caller may not take it)
      return candidate;
    }
  }
}

TYPEX_API auto typex::ir::graph::rename(node_id id, const std::string& name) -> void {
  node& n = nodes_.at(id);
  if (n.name == name) return;
  if (taken(name) || sanitize(name) != name) {
    detail::raise<graph_error>([&](auto& w) {
      w.put("typex::ir::graph::rename: '"); w.put(name); w.put("' is not an identifier no other node has");
    });
  }
  names_.erase(n.name);
  n.name = name;
  names_.insert(n.name);
}

TYPEX_API auto typex::ir::graph::reorder(const std::vector<node_id>& order) -> void {
  if (order.size() != nodes_.size())
    detail::raise_message<graph_error>("typex::ir::graph::reorder: the order must list every node once");
  std::vector<node_id> position(nodes_.size(), static_cast<node_id>(-1));
  for (node_id k = 0; k < order.size(); ++k) {
    if (order[k] >= nodes_.size() || position[order[k]] != static_cast<node_id>(-1))
      detail::raise_message<graph_error>("typex::ir::graph::reorder: the order must list every node once");
    position[order[k]] = k;
  }
  // check everything before touching anything: a failed reorder leaves the graph as it was
  for (node_id old = 0; old < nodes_.size(); ++old) {
    for_each_ref(nodes_[old], [&](value_ref r) {
      if (position[r.node] >= position[old])
        detail::raise_message<graph_error>("typex::ir::graph::reorder: a node would read a value produced after it");
    });
  }
  std::vector<node> reordered;
  reordered.reserve(nodes_.size());
  for (node_id old : order) reordered.push_back(std::move(nodes_[old]));
  auto fix = [&](argument& a) {
    if (auto* r = std::get_if<value_ref>(&a)) r->node = position[r->node];
    else if (auto* rs = std::get_if<std::vector<value_ref>>(&a))
      for (value_ref& x : *rs) x.node = position[x.node];
  };
  for (node& n : reordered) {
    for (argument& a : n.args) fix(a);
    for (auto& kv : n.kwargs) fix(kv.second);
  }
  nodes_ = std::move(reordered);
}

TYPEX_API auto typex::ir::graph::retain(const std::vector<bool>& keep) -> void {
  std::vector<node_id> remap(nodes_.size(), static_cast<node_id>(-1));
  std::vector<node> kept;
  for (node_id i = 0; i < nodes_.size(); ++i) {
    if (!keep[i]) continue;
    remap[i] = static_cast<node_id>(kept.size());
    kept.push_back(std::move(nodes_[i]));
  }
  auto fix = [&](argument& a) {
    if (auto* r = std::get_if<value_ref>(&a)) r->node = checked(remap, r->node);
    else if (auto* rs = std::get_if<std::vector<value_ref>>(&a))
      for (value_ref& x : *rs) x.node = checked(remap, x.node);
  };
  for (node& n : kept) {
    for (argument& a : n.args) fix(a);
    for (auto& kv : n.kwargs) fix(kv.second);
  }
  nodes_ = std::move(kept);
  names_.clear();
  for (const node& n : nodes_) names_.insert(n.name);
}

TYPEX_API auto typex::ir::graph::add_subgraph(std::string_view hint, graph g) -> std::string {
  const std::string base = sanitize(hint);
  for (int k = 0;; ++k) {
    std::string candidate = typex::detail::with_number(base + "_", k);
    if (find_subgraph(candidate) == nullptr) {
      subgraphs_.push_back({candidate, std::make_shared<const graph>(std::move(g))});
      return candidate;
    }
  }
}

TYPEX_API auto typex::ir::graph::add_subgraph_named(const std::string& name, std::shared_ptr<const graph> g) -> void {
  if (find_subgraph(name) != nullptr || sanitize(name) != name || g == nullptr) {
    detail::raise<graph_error>([&](auto& w) {
      w.put("typex::ir::graph::add_subgraph: '"); w.put(name); w.put("' is not an identifier no other subgraph has");
    });
  }
  subgraphs_.push_back({name, std::move(g)});
}

TYPEX_API auto typex::ir::graph::set_subgraph(std::string_view name, graph g) -> void {
  for (subgraph& s : subgraphs_)
    if (s.name == name) {
      s.body = std::make_shared<const graph>(std::move(g));
      return;
    }
  (void)subgraph_at(name);  // (raises)
}

TYPEX_API auto typex::ir::graph::find_subgraph(std::string_view name) const noexcept -> const graph* {
  for (const subgraph& s : subgraphs_)
    if (s.name == name) return s.body.get();
  return nullptr;
}

TYPEX_API auto typex::ir::graph::subgraph_at(std::string_view name) const -> const graph& {
  if (const graph* g = find_subgraph(name)) return *g;
  detail::raise<graph_error>([&](auto& w) {
    w.put("typex::ir::graph: no subgraph is called '"); w.put(name); w.put('\'');
  });
}

TYPEX_API auto typex::ir::graph::drop_unused_subgraphs() -> void {
  std::vector<subgraph> kept;
  for (subgraph& s : subgraphs_) {
    bool used = false;
    for (const node& n : nodes_)
      for (const argument& a : n.args)
        if (const auto* str = std::get_if<std::string>(&a); str != nullptr && *str == s.name && n.op == node_op::call_function) used = true;
    if (used) kept.push_back(std::move(s));
  }
  subgraphs_ = std::move(kept);
}

TYPEX_API auto typex::ir::graph::copy_subgraphs_from(const graph& other) -> void {
  for (const subgraph& s : other.subgraphs_) {
    const graph* mine = find_subgraph(s.name);
    if (mine == nullptr) {
      subgraphs_.push_back(s);
    } else if (mine != s.body.get()) {
      detail::raise<graph_error>([&](auto& w) {
        w.put("typex::ir::graph: both graphs have a subgraph called '"); w.put(s.name);
        w.put("' with different bodies (copy the nodes that name it with import_subgraph)");
      });
    }
  }
}

TYPEX_API auto typex::ir::graph::import_subgraph(const graph& other, const std::string& name) -> std::string {
  std::shared_ptr<const graph> body;
  for (const subgraph& s : other.subgraphs_)
    if (s.name == name) body = s.body;
  if (body == nullptr) (void)other.subgraph_at(name);  // (raises, naming it)
  for (const subgraph& s : subgraphs_)
    if (s.body == body) return s.name;  // (already here, under this name)
  if (find_subgraph(name) == nullptr) {
    subgraphs_.push_back({name, body});
    return name;
  }
  for (int k = 1;; ++k) {
    std::string candidate = typex::detail::with_number(name + "_", k);
    if (find_subgraph(candidate) == nullptr) {
      subgraphs_.push_back({candidate, body});
      return candidate;
    }
  }
}

TYPEX_API auto typex::ir::graph::check_refs(const argument& a, std::string_view who) const -> void {
  for_each_ref(a, [&](value_ref r) {
    if (r.node >= nodes_.size() || r.index >= nodes_[r.node].vals.size()) {
      detail::raise<graph_error>([&](auto& w) {
        w.put("typex::ir::graph: "); w.put(who); w.put(" reads value "); w.put_int(r.node); w.put('.');
        w.put_int(r.index); w.put(", which does not exist yet (graphs are built in topological order)");
      });
    }
  });
}

TYPEX_API auto typex::ir::graph::sanitize(std::string_view hint) -> std::string {
  std::string s;
  for (char c : hint) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    s += ok ? c : '_';
  }
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) s.insert(s.begin(), '_');
  return s;
}

TYPEX_API auto typex::ir::tensor_meta::to_string() const -> std::string {
  std::string s(name(scalar_type));
  s += '[';
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += shape[i].to_string();
  }
  s += ']';
  return s;
}
#endif  // TYPEX_HEADER_DEFINITIONS
