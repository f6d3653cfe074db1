// typex/passes/detail/rewrite.hpp — a graph copied into a new one, node by node, with a table of
// what each old value became: how the passes that change arguments rewrite a graph (ir::graph is
// append-only and topologically ordered, so a pass builds the result instead of editing in place).
//
//   detail::graph_rewriter rw(g);
//   for (ir::node_id i = 0; i < g.size(); ++i) {
//     if (redundant(i)) rw.bind_value({i, 0}, rw.map(input_of(i)));  // its readers read the input
//     else rw.copy(i);                                                // same name, mapped arguments
//   }
//   g = rw.finish();
//
// Names: a copied node keeps its name; a node the pass adds gets a fresh name that no node of the
// old graph has (so that no node copied later has to give up its own), and a node the pass adds in
// place of one it drops may take that one's name (add_named). Linear in the graph's size.
#pragma once

#include <typex/core/error.hpp>
#include <typex/ir/graph.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace typex::passes::detail {

class graph_rewriter {
 public:
  TYPEX_API explicit graph_rewriter(const ir::graph& source);

  const ir::graph& source() const noexcept { return *src_; }
  ir::graph& target() noexcept { return out_; }
  const ir::graph& target() const noexcept { return out_; }

  // What source value r is in the target; a graph_error when nothing was bound to it (a node
  // reads a value the pass dropped).
  TYPEX_API ir::value_ref map(ir::value_ref r) const;
  // An argument with its values mapped.
  TYPEX_API ir::argument map(const ir::argument& a) const;
  TYPEX_API std::vector<ir::argument> map_args(const ir::node& n) const;
  TYPEX_API std::vector<std::pair<std::string, ir::argument>> map_kwargs(const ir::node& n) const;
  // Whether source value r has been bound.
  TYPEX_API bool mapped(ir::value_ref r) const noexcept;

  // Source node i's values are target node t's, one for one.
  TYPEX_API void bind_node(ir::node_id i, ir::node_id t);
  // Source value r is target value v.
  TYPEX_API void bind_value(ir::value_ref r, ir::value_ref v);

  // Copies source node i (placeholder, call or output) with its arguments mapped, its name and
  // metadata kept; binds its values. Returns the target node.
  TYPEX_API ir::node_id copy(ir::node_id i);
  // Copies call i with other arguments (already target values); binds its values.
  TYPEX_API ir::node_id copy_with(ir::node_id i, std::vector<ir::argument> args,
                                  std::vector<std::pair<std::string, ir::argument>> kwargs);
  // Adds a call whose name is fresh: c.name_hint (or its op's name), numbered past every name of
  // the source and the target.
  TYPEX_API ir::node_id add_fresh(ir::call c);
  // Adds a call named `name` exactly (the name of a source node the pass does not copy), or a
  // fresh name after it where the target already has it.
  TYPEX_API ir::node_id add_named(ir::call c, std::string_view name);

  // The rewritten graph (the rewriter is spent).
  ir::graph finish() { return std::move(out_); }

 private:
  static constexpr ir::node_id unbound = static_cast<ir::node_id>(-1);
  std::size_t slot(ir::value_ref r) const;
  std::string fresh_name(std::string_view hint);

  const ir::graph* src_;
  ir::graph out_;
  std::vector<std::uint32_t> first_;      // first_[i]: the slot of source node i's value 0
  std::vector<ir::value_ref> slots_;      // per source value: what it is in the target
  std::unordered_set<std::string_view> reserved_;  // the source's names (views into its nodes)
  std::unordered_map<std::string, int> next_suffix_;  // per base name: the next number to try
};

}  // namespace typex::passes::detail

// ---- definitions: compiled once in typex::runtime, or inline here in header-only builds
// (config.hpp: TYPEX_SEPARATE_COMPILATION) ----
#if TYPEX_HEADER_DEFINITIONS
TYPEX_API typex::passes::detail::graph_rewriter::graph_rewriter(const ir::graph& source) : src_(&source) {
  first_.resize(source.size() + 1);
  std::uint32_t n = 0;
  for (ir::node_id i = 0; i < source.size(); ++i) {
    first_[i] = n;
    n += static_cast<std::uint32_t>(source[i].vals.size());
  }
  first_[source.size()] = n;
  slots_.assign(n, ir::value_ref{unbound, 0});
  reserved_.reserve(source.size());
  for (const ir::node& nd : source.nodes()) reserved_.insert(nd.name);
  out_.copy_subgraphs_from(source);  // (the subgraphs its control flow names: kept, as they are)
}

TYPEX_API auto typex::passes::detail::graph_rewriter::slot(ir::value_ref r) const -> std::size_t {
  if (r.node >= src_->size() || r.index >= (*src_)[r.node].vals.size()) {
    typex::detail::raise<ir::graph_error>([&](auto& w) {
      w.put("typex::passes: the graph reads value "); w.put_int(r.node); w.put('.'); w.put_int(r.index);
      w.put(", which does not exist");
    });
  }
  return first_[r.node] + r.index;
}

TYPEX_API auto typex::passes::detail::graph_rewriter::mapped(ir::value_ref r) const noexcept -> bool {
  return r.node < src_->size() && r.index < (*src_)[r.node].vals.size() && slots_[first_[r.node] + r.index].node != unbound;
}

TYPEX_API auto typex::passes::detail::graph_rewriter::map(ir::value_ref r) const -> ir::value_ref {
  const ir::value_ref v = slots_[slot(r)];
  if (v.node == unbound) {
    typex::detail::raise<ir::graph_error>([&](auto& w) {
      w.put("typex::passes: a kept node reads value '"); w.put((*src_)[r.node].name);
      w.put("', which the pass removed without a replacement");
    });
  }
  return v;
}

TYPEX_API auto typex::passes::detail::graph_rewriter::map(const ir::argument& a) const -> ir::argument {
  if (const auto* r = std::get_if<ir::value_ref>(&a)) return map(*r);
  if (const auto* rs = std::get_if<std::vector<ir::value_ref>>(&a)) {
    std::vector<ir::value_ref> out;
    out.reserve(rs->size());
    for (const ir::value_ref& r : *rs) out.push_back(map(r));
    return out;
  }
  return a;
}

TYPEX_API auto typex::passes::detail::graph_rewriter::map_args(const ir::node& n) const -> std::vector<ir::argument> {
  std::vector<ir::argument> out;
  out.reserve(n.args.size());
  for (const ir::argument& a : n.args) out.push_back(map(a));
  return out;
}

TYPEX_API auto typex::passes::detail::graph_rewriter::map_kwargs(const ir::node& n) const
    -> std::vector<std::pair<std::string, ir::argument>> {
  std::vector<std::pair<std::string, ir::argument>> out;
  out.reserve(n.kwargs.size());
  for (const auto& [k, a] : n.kwargs) out.emplace_back(k, map(a));
  return out;
}

TYPEX_API auto typex::passes::detail::graph_rewriter::bind_node(ir::node_id i, ir::node_id t) -> void {
  const std::size_t n = (*src_)[i].vals.size();
  for (std::uint32_t k = 0; k < n; ++k) slots_[first_[i] + k] = ir::value_ref{t, k};
}

TYPEX_API auto typex::passes::detail::graph_rewriter::bind_value(ir::value_ref r, ir::value_ref v) -> void {
  slots_[slot(r)] = v;
}

TYPEX_API auto typex::passes::detail::graph_rewriter::copy(ir::node_id i) -> ir::node_id {
  const ir::node& f = (*src_)[i];
  ir::node_id t = 0;
  if (f.op == ir::node_op::placeholder) {
    t = f.derived_from.empty() ? out_.add_placeholder(f.name, f.vals.front())
                               : out_.add_derived_placeholder(f.name, f.vals.front(), f.derived_from, f.stack_trace);
  } else if (f.op == ir::node_op::output) {
    std::vector<ir::value_ref> outs;
    outs.reserve(f.args.size());
    for (const ir::argument& a : f.args) outs.push_back(std::get<ir::value_ref>(map(a)));
    return out_.set_output(std::move(outs));
  } else {
    return copy_with(i, map_args(f), map_kwargs(f));
  }
  bind_node(i, t);
  return t;
}

TYPEX_API auto typex::passes::detail::graph_rewriter::copy_with(ir::node_id i, std::vector<ir::argument> args,
                                                               std::vector<std::pair<std::string, ir::argument>> kwargs)
    -> ir::node_id {
  const ir::node& f = (*src_)[i];
  const ir::node_id t = out_.add_call({.target = f.target, .args = std::move(args), .kwargs = std::move(kwargs), .vals = f.vals,
                                       .name_hint = f.name, .nn_module_stack = f.nn_module_stack, .stack_trace = f.stack_trace});
  bind_node(i, t);
  return t;
}

TYPEX_API auto typex::passes::detail::graph_rewriter::fresh_name(std::string_view hint) -> std::string {
  // (as ir::graph names nodes: a Python-like identifier, then base_1, base_2, ...)
  std::string base;
  for (char c : hint) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    base += ok ? c : '_';
  }
  if (base.empty() || (base[0] >= '0' && base[0] <= '9')) base.insert(base.begin(), '_');
  if (!reserved_.contains(base) && out_.unique_name(base) == base) return base;
  int& k = next_suffix_[base];  // (numbers already tried for this base are not tried again: linear)
  for (;;) {
    std::string candidate = base + "_" + std::to_string(++k);
    if (!reserved_.contains(candidate) && out_.unique_name(candidate) == candidate) return candidate;
  }
}

TYPEX_API auto typex::passes::detail::graph_rewriter::add_fresh(ir::call c) -> ir::node_id {
  const std::string hint = c.name_hint.empty() ? std::string(c.target.short_name()) : c.name_hint;
  c.name_hint = fresh_name(hint);
  return out_.add_call(std::move(c));
}

TYPEX_API auto typex::passes::detail::graph_rewriter::add_named(ir::call c, std::string_view name) -> ir::node_id {
  std::string n(name);
  c.name_hint = out_.unique_name(n) == n ? n : fresh_name(n);
  return out_.add_call(std::move(c));
}
#endif  // TYPEX_HEADER_DEFINITIONS
