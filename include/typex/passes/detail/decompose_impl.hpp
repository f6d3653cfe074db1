// typex/passes/detail/decompose_impl.hpp — the definitions of passes/decompose.hpp (compiled once
// in typex::runtime, or inline in header-only builds). Included by decompose.hpp only.
#pragma once

#include <typex/passes/decompose.hpp>

#include <algorithm>
#include <mutex>
#include <string>
#include <unordered_set>

namespace typex::passes::detail {

template <class... Ops>
std::unordered_map<op_id, decompose_fn> make_decomposition_table(op_list<Ops...>) {
  std::unordered_map<op_id, decompose_fn> t;
  auto one = [&]<class Op>(std::type_identity<Op>) {
    if constexpr (decomposable<Op>) t.emplace(op_id_of<Op>, [](decompose_context& c) { Op::decompose(c); });
  };
  (one(std::type_identity<Ops>{}), ...);
  return t;
}

inline const std::unordered_map<op_id, decompose_fn>& builtin_decompositions() {
  static const auto t = make_decomposition_table(builtin_ops{});
  return t;
}

struct user_decomposition_table {
  std::mutex mutex;
  std::unordered_map<op_id, decompose_fn> entries;
};
inline user_decomposition_table& user_decompositions() {
  static user_decomposition_table t;
  return t;
}

// The pass's state: the graph being built, and how the source graph's values map into it.
class decomposer {
 public:
  decomposer(const ir::graph& src, const decomposition_table& table) : src_(src), table_(table) {
    originals_.reserve(src.size());
    for (const ir::node& n : src.nodes()) originals_.insert(n.name);
  }

  ir::graph run(std::vector<std::string>* names) {
    remap_.resize(src_.size());
    for (ir::node_id i = 0; i < src_.size(); ++i) {
      const ir::node& f = src_[i];
      if (f.op == ir::node_op::placeholder) {
        const ir::node_id p = f.derived_from.empty() ? out_.add_placeholder(f.name, f.vals.front())
                                                     : out_.add_derived_placeholder(f.name, f.vals.front(), f.derived_from, f.stack_trace);
        remap_[i] = {value_ref{p, 0}};
      } else if (f.op == ir::node_op::output) {
        std::vector<value_ref> outs;
        for (const ir::argument& a : f.args) outs.push_back(std::get<value_ref>(moved(a, remap_)));
        out_.set_output(std::move(outs));
        remap_[i] = {};
      } else {
        ir::node n = f;  // (its arguments read the new graph)
        for (ir::argument& a : n.args) a = moved(a, remap_);
        for (auto& kv : n.kwargs) kv.second = moved(kv.second, remap_);
        remap_[i] = lower(n, f.name, 0);
      }
    }
    if (names != nullptr) {
      names->assign(src_.size(), std::string());
      for (std::size_t i = 0; i < src_.size(); ++i)
        (*names)[i] = remap_[i].empty() ? src_[static_cast<ir::node_id>(i)].name : out_[remap_[i].front().node].name;
    }
    return std::move(out_);
  }

 private:
  using value_map = std::vector<std::vector<value_ref>>;

  static ir::argument moved(ir::argument a, const value_map& m) {
    if (auto* r = std::get_if<value_ref>(&a)) *r = m.at(r->node).at(r->index);
    else if (auto* rs = std::get_if<std::vector<value_ref>>(&a))
      for (value_ref& x : *rs) x = m.at(x.node).at(x.index);
    return a;
  }

  // A name no node of the source graph has and the new graph does not use yet.
  std::string fresh(std::string_view hint) {
    std::string base;  // (an identifier, as ir::graph names nodes: "mylib.scale-by" -> "mylib_scale_by")
    for (const char ch : hint) base += ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_') ? ch : '_';
    if (base.empty() || (base[0] >= '0' && base[0] <= '9')) base.insert(base.begin(), '_');
    int& k = counters_[base];
    for (;;) {
      std::string cand = k == 0 ? base : base + "_" + std::to_string(k);
      ++k;
      if (!originals_.contains(cand) && out_.unique_name(cand) == cand) return cand;
    }
  }

  // Adds node n (arguments already reading the new graph), decomposing it when the table says so;
  // returns its values in the new graph. `name`: the name its first result keeps (the source
  // node's), or empty for a node a decomposition made.
  std::vector<value_ref> lower(const ir::node& n, const std::string& name, int depth) {
    const decompose_fn* fn = table_.find(n.target);
    if (fn == nullptr) {
      const ir::node_id id = out_.add_call({.target = n.target, .args = n.args, .kwargs = n.kwargs, .vals = n.vals,
                                            .name_hint = name.empty() ? fresh(n.target.short_name()) : name,
                                            .nn_module_stack = n.nn_module_stack, .stack_trace = n.stack_trace});
      std::vector<value_ref> r;
      for (std::uint32_t k = 0; k < n.vals.size(); ++k) r.push_back(value_ref{id, k});
      return r;
    }
    if (std::find(active_.begin(), active_.end(), n.target) != active_.end()) {
      typex::detail::raise<ir::graph_error>([&](auto& w) {
        w.put("typex::passes::decompose: the decomposition of "); w.put(n.target.name());
        w.put(" writes that op again (directly or through another decomposition): it never reaches an op the table keeps");
      });
    }
    if (!n.kwargs.empty()) {
      typex::detail::raise<ir::graph_error>([&](auto& w) {
        w.put("typex::passes::decompose: node '"); w.put(name.empty() ? n.name : name); w.put("' ("); w.put(n.target.name());
        w.put(") passes keyword arguments, which decompositions do not read (typex records arguments by position)");
      });
    }
    if (depth > 32) {
      typex::detail::raise<ir::graph_error>([&](auto& w) {
        w.put("typex::passes::decompose: the decompositions of "); w.put(n.target.name());
        w.put(" never reach an op the table keeps (a decomposition writes the op it decomposes?)");
      });
    }
    // the decomposition, written into a graph of its own whose placeholders are n's inputs
    ir::graph t;
    std::vector<value_ref> inputs;  // t's placeholder k stands for inputs[k] of the new graph
    ir::node local = n;
    const auto to_local = [&](value_ref r) {
      for (std::size_t k = 0; k < inputs.size(); ++k)
        if (inputs[k] == r) return value_ref{static_cast<ir::node_id>(k), 0};
      inputs.push_back(r);
      return value_ref{t.add_placeholder("in", out_.meta(r)), 0};
    };
    for (ir::argument& a : local.args) {
      if (auto* r = std::get_if<value_ref>(&a)) *r = to_local(*r);
      else if (auto* rs = std::get_if<std::vector<value_ref>>(&a))
        for (value_ref& x : *rs) x = to_local(x);
    }
    const ir::call_args args(local.target, local.args, {});
    decompose_context c(t);
    c.set_origin(n.nn_module_stack, n.stack_trace);
    c.bind(local, args);
    active_.push_back(n.target);
    try {
      (*fn)(c);
    } catch (...) {
      active_.pop_back();
      throw;
    }
    const std::vector<value_ref>& produced = c.produced();
    if (produced.size() != n.vals.size()) {
      typex::detail::raise<ir::graph_error>([&](auto& w) {
        w.put("typex::passes::decompose: the decomposition of "); w.put(n.target.name()); w.put(" (node '"); w.put(name.empty() ? n.name : name);
        w.put("') gives "); w.put_int(static_cast<long long>(produced.size())); w.put(" results, the op has ");
        w.put_int(static_cast<long long>(n.vals.size()));
      });
    }
    for (std::size_t k = 0; k < produced.size(); ++k) {
      const ir::tensor_meta& got = t.meta(produced[k]);
      if (!(got == n.vals[k])) {
        typex::detail::raise<ir::graph_error>([&](auto& w) {
          w.put("typex::passes::decompose: the decomposition of "); w.put(n.target.name()); w.put(" (node '");
          w.put(name.empty() ? n.name : name); w.put("') gives "); w.put(got.to_string()); w.put(" where the op's rule gives ");
          w.put(n.vals[k].to_string());
        });
      }
    }
    // its nodes into the new graph, each decomposed in turn where the table says so
    value_map tmap(t.size());
    for (std::size_t k = 0; k < inputs.size(); ++k) tmap[k] = {inputs[k]};
    const ir::node_id first = static_cast<ir::node_id>(out_.size());
    for (ir::node_id j = static_cast<ir::node_id>(inputs.size()); j < t.size(); ++j) {
      ir::node m = t[j];
      for (ir::argument& a : m.args) a = moved(a, tmap);
      for (auto& kv : m.kwargs) kv.second = moved(kv.second, tmap);
      tmap[j] = lower(m, {}, depth + 1);
    }
    active_.pop_back();
    std::vector<value_ref> results;
    for (const value_ref& p : produced) results.push_back(tmap.at(p.node).at(p.index));
    // the result keeps the source node's name (the signature, the printed program name it)
    if (!name.empty() && !results.empty() && results.front().node >= first && results.front().index == 0)
      out_.rename(results.front().node, name);
    return results;
  }

  const ir::graph& src_;
  const decomposition_table& table_;
  ir::graph out_;
  value_map remap_;
  std::unordered_set<std::string> originals_;
  std::unordered_map<std::string, int> counters_;
  std::vector<op_id> active_;  // the ops being decomposed, outermost first (a cycle is refused at once)
};

}  // namespace typex::passes::detail

TYPEX_API auto typex::passes::detail::add_user_decomposition(op_id id, decompose_fn fn) -> void {
  auto& u = user_decompositions();
  const std::lock_guard lock(u.mutex);
  u.entries[id] = std::move(fn);
}

TYPEX_API auto typex::passes::decomposition_of(op_id id) -> decompose_fn {
  const auto& t = detail::builtin_decompositions();
  if (const auto it = t.find(id); it != t.end()) return it->second;
  auto& u = detail::user_decompositions();
  const std::lock_guard lock(u.mutex);
  const auto it = u.entries.find(id);
  return it == u.entries.end() ? decompose_fn{} : it->second;
}

TYPEX_API auto typex::passes::decomposition_table::core() -> decomposition_table {
  decomposition_table t;
  for (const auto& [id, fn] : detail::builtin_decompositions())
    if (!is_core_op(id)) t.entries_.emplace(id, fn);
  auto& u = detail::user_decompositions();
  const std::lock_guard lock(u.mutex);
  for (const auto& [id, fn] : u.entries) t.entries_.emplace(id, fn);
  return t;
}

TYPEX_API auto typex::passes::decomposition_table::add(op_id id) -> decomposition_table& {
  decompose_fn fn = decomposition_of(id);
  if (!fn) {
    typex::detail::raise<argument_error>([&](auto& w) {
      w.put("typex::passes::decomposition_table::add: "); w.put(id.name());
      w.put(" has no decomposition of its own (give one with set(op, fn), or define `template <class C> static void decompose(C& c)` "
            "in the op and register it with typex::passes::register_decomposition<Op>())");
    });
  }
  entries_[id] = std::move(fn);
  return *this;
}

TYPEX_API auto typex::passes::decomposition_table::ops() const -> std::vector<op_id> {
  std::vector<op_id> out;
  for (const auto& kv : entries_) out.push_back(kv.first);
  std::sort(out.begin(), out.end(), [](op_id a, op_id b) { return a.name() < b.name(); });
  return out;
}

TYPEX_API auto typex::passes::decompose(const ir::graph& g, const decomposition_table& table, std::vector<std::string>* names)
    -> ir::graph {
  ir::graph out = detail::decomposer(g, table).run(names);
  for (const ir::graph::subgraph& sub : g.subgraphs())  // (control flow: each branch and body lowered the same way)
    out.add_subgraph_named(sub.name, std::make_shared<const ir::graph>(decompose(*sub.body, table, nullptr)));
  return out;
}
