// typex/passes/detail/partition_impl.hpp — the definitions of passes/partition.hpp (compiled once in
// typex::runtime, or inline in header-only builds). Included by partition.hpp only.
#pragma once

#include <typex/ir/control_flow.hpp>
#include <typex/ops/all.hpp>
#include <typex/passes/dce.hpp>
#include <typex/passes/partition.hpp>

#include <algorithm>
#include <limits>
#include <queue>
#include <unordered_set>

namespace typex::passes::detail {

// Maximum flow (Dinic's algorithm) on a small graph of int64 capacities; then the source side of
// a minimum cut.
class min_cut {
 public:
  static constexpr std::int64_t inf = std::numeric_limits<std::int64_t>::max() / 4;

  explicit min_cut(std::size_t n) : adj_(n), level_(n), next_(n) {}
  void add_edge(std::size_t a, std::size_t b, std::int64_t cap) {
    adj_[a].push_back(edges_.size());
    edges_.push_back({b, cap});
    adj_[b].push_back(edges_.size());
    edges_.push_back({a, 0});
  }
  std::int64_t run(std::size_t s, std::size_t t) {
    std::int64_t flow = 0;
    while (bfs(s, t)) {
      std::fill(next_.begin(), next_.end(), 0);
      while (const std::int64_t f = dfs(s, t, inf)) flow += f;
    }
    return flow;
  }
  // after run(): the nodes reachable from s in the residual graph
  std::vector<bool> source_side(std::size_t s) const {
    std::vector<bool> seen(adj_.size(), false);
    std::vector<std::size_t> stack{s};
    seen[s] = true;
    while (!stack.empty()) {
      const std::size_t v = stack.back();
      stack.pop_back();
      for (std::size_t e : adj_[v])
        if (edges_[e].cap > 0 && !seen[edges_[e].to]) {
          seen[edges_[e].to] = true;
          stack.push_back(edges_[e].to);
        }
    }
    return seen;
  }

 private:
  struct edge {
    std::size_t to;
    std::int64_t cap;
  };
  bool bfs(std::size_t s, std::size_t t) {
    std::fill(level_.begin(), level_.end(), -1);
    std::queue<std::size_t> q;
    level_[s] = 0;
    q.push(s);
    while (!q.empty()) {
      const std::size_t v = q.front();
      q.pop();
      for (std::size_t e : adj_[v])
        if (edges_[e].cap > 0 && level_[edges_[e].to] < 0) {
          level_[edges_[e].to] = level_[v] + 1;
          q.push(edges_[e].to);
        }
    }
    return level_[t] >= 0;
  }
  std::int64_t dfs(std::size_t v, std::size_t t, std::int64_t pushed) {  // (iterative depth: the graphs are DAG-like and shallow)
    if (v == t) return pushed;
    for (std::size_t& i = next_[v]; i < adj_[v].size(); ++i) {
      const std::size_t e = adj_[v][i];
      const std::size_t to = edges_[e].to;
      if (edges_[e].cap <= 0 || level_[to] != level_[v] + 1) continue;
      if (const std::int64_t f = dfs(to, t, std::min(pushed, edges_[e].cap))) {
        edges_[e].cap -= f;
        edges_[e ^ 1].cap += f;
        return f;
      }
    }
    return 0;
  }
  std::vector<std::vector<std::size_t>> adj_;
  std::vector<edge> edges_;
  std::vector<int> level_;
  std::vector<std::size_t> next_;
};

template <class... Ops>
void add_ids(op_list<Ops...>, std::unordered_set<op_id>& s) {
  (s.insert(op_id_of<Ops>), ...);
}

inline const std::unordered_set<op_id>& recomputable_ops() {
  static const std::unordered_set<op_id> s = [] {
    std::unordered_set<op_id> r;
    add_ids(unary_ops{}, r);
    add_ids(binary_ops{}, r);
    add_ids(shape_ops{}, r);
    add_ids(factory_ops{}, r);
    add_ids(concat_ops{}, r);
    add_ids(op_list<where_op, masked_fill_op, aten::tril, aten::triu, copy_op>{}, r);
    return r;
  }();
  return s;
}

// Copies node `f` of `from` into `to`, its value references renamed by `map` (from's value ->
// to's node); the same name.
inline ir::node_id copy_node(const ir::node& f, ir::graph& to, const std::vector<ir::node_id>& map) {
  auto rename = [&](ir::argument a) {
    if (auto* r = std::get_if<ir::value_ref>(&a)) r->node = map[r->node];
    else if (auto* rs = std::get_if<std::vector<ir::value_ref>>(&a))
      for (auto& x : *rs) x.node = map[x.node];
    return a;
  };
  std::vector<ir::argument> args;
  for (const auto& a : f.args) args.push_back(rename(a));
  std::vector<std::pair<std::string, ir::argument>> kwargs;
  for (const auto& [k, v] : f.kwargs) kwargs.emplace_back(k, rename(v));
  return to.add_call({.target = f.target, .args = std::move(args), .kwargs = std::move(kwargs), .vals = f.vals, .name_hint = f.name,
                      .nn_module_stack = f.nn_module_stack, .stack_trace = f.stack_trace});
}

// The nodes (all but the output) that outputs [first, last) of the joint graph depend on, after
// checking the graph has an output node and that many outputs.
inline std::vector<bool> ancestors_of_outputs(const ir::graph& joint, std::size_t first, std::size_t last) {
  static constexpr std::string_view who = "typex::passes::partition_joint";
  if (!joint.has_output()) typex::detail::raise_message<ir::graph_error>(std::string(who) + ": the graph has no output node");
  const ir::node& out = joint.output();
  if (last > out.args.size())
    typex::detail::raise_message<argument_error>(std::string(who) + ": more forward outputs than the graph has outputs");
  const std::size_t n = joint.size() - 1;
  std::vector<bool> needed(n, false);
  for (std::size_t k = first; k < last; ++k) ir::graph::for_each_ref(out.args[k], [&](ir::value_ref r) { needed[r.node] = true; });
  for (std::size_t i = n; i-- > 0;)
    if (needed[i]) ir::graph::for_each_ref(joint[static_cast<ir::node_id>(i)], [&](ir::value_ref r) { needed[r.node] = true; });
  return needed;
}

}  // namespace typex::passes::detail

TYPEX_API auto typex::passes::banned_from_recomputation(op_id op) -> bool { return !detail::recomputable_ops().contains(op); }

TYPEX_API auto typex::passes::bytes_of(const ir::tensor_meta& m, const symbol_table& sizes) -> std::int64_t {
  std::int64_t n = static_cast<std::int64_t>(itemsize(m.scalar_type));
  for (const ir::sym_expr& e : m.shape) n *= e.evaluate(sizes).value_or(1);
  return n;
}

TYPEX_API auto typex::passes::partition_joint(const ir::graph& joint, std::size_t forward_outputs, std::size_t first_backward,
                                              const partition_options& options) -> partition {
  static constexpr std::string_view who = "typex::passes::partition_joint";
  for (const ir::node& nd : joint.nodes()) {
    if (!ir::is_control_flow(nd)) continue;
    // (a saved value is a node's one result here; a control-flow call has several)
    typex::detail::raise<unsupported_error>([&](auto& w) {
      w.put(who); w.put(": the joint program has control flow ("); w.put(nd.target.name()); w.put(", node '"); w.put(nd.name);
      w.put("'), whose several results the partitioner does not save yet; run the joint program whole (joint.module(), "
            "make_joint's program), which computes the same gradients");
    });
  }
  // 1. which nodes are needed, by the forward's outputs or by any output
  const std::vector<bool> fwd_needed = detail::ancestors_of_outputs(joint, 0, forward_outputs);
  const ir::node& out = joint.output();
  const std::vector<bool> needed = detail::ancestors_of_outputs(joint, 0, out.args.size());
  const std::size_t n = joint.size() - 1;
  const auto users = joint.users();
  // tangent: the seed (the backward's first node) and what depends on it; the backward's other
  // nodes (a derivative's constants, its recomputed forward values) read the forward only
  if (first_backward >= n) typex::detail::raise_message<argument_error>(std::string(who) + ": the backward's first node is past the graph");
  std::vector<bool> tangent(n, false);
  tangent[first_backward] = true;
  for (std::size_t i = first_backward + 1; i < n; ++i)
    ir::graph::for_each_ref(joint[static_cast<ir::node_id>(i)], [&](ir::value_ref r) { tangent[i] = tangent[i] || tangent[r.node]; });
  // a node that needs no tangent but is only read by the backward is forward-computable
  std::vector<bool> forward_side(n, false);
  for (std::size_t i = 0; i < n; ++i) forward_side[i] = needed[i] && !tangent[i];
  // forward values the backward reads
  std::vector<bool> read_by_backward(n, false);
  for (std::size_t i = 0; i < n; ++i)
    if (tangent[i]) ir::graph::for_each_ref(joint[static_cast<ir::node_id>(i)], [&](ir::value_ref r) {
        if (forward_side[r.node]) read_by_backward[r.node] = true;
      });
  for (std::size_t k = forward_outputs; k < out.args.size(); ++k)  // (a gradient that is a forward value)
    ir::graph::for_each_ref(out.args[k], [&](ir::value_ref r) {
      if (forward_side[r.node]) read_by_backward[r.node] = true;
    });

  // 2. what the forward computes (in_forward) and what it saves
  std::vector<bool> in_forward(n, false), saved(n, false), recompute(n, false);
  if (!options.recompute) {
    for (std::size_t i = 0; i < n; ++i) {
      in_forward[i] = forward_side[i];
      saved[i] = read_by_backward[i];
    }
  } else {
    // node i: in = 2 i + 2, out = 2 i + 3; source 0, sink 1
    detail::min_cut g(2 * n + 2);
    const auto in_of = [](std::size_t i) { return 2 * i + 2; };
    const auto out_of = [](std::size_t i) { return 2 * i + 3; };
    for (std::size_t i = 0; i < n; ++i) {
      if (!forward_side[i]) continue;
      const ir::node& nd = joint[static_cast<ir::node_id>(i)];
      const bool input = nd.op == ir::node_op::placeholder;
      std::int64_t weight = 0;
      for (const auto& m : nd.vals) weight += bytes_of(m, options.sizes);
      if (input) g.add_edge(0, in_of(i), detail::min_cut::inf);
      if (!input && (fwd_needed[i] || banned_from_recomputation(nd.target))) g.add_edge(0, in_of(i), detail::min_cut::inf);
      g.add_edge(in_of(i), out_of(i), input ? 0 : weight);
      for (ir::node_id u : users[i])
        if (u < n && forward_side[u]) g.add_edge(out_of(i), in_of(u), detail::min_cut::inf);
      // what the forward computes, it computes from values it computes: a node on the source side
      // keeps the nodes it reads there (their values cannot come from the backward)
      ir::graph::for_each_ref(nd, [&](ir::value_ref r) {
        if (forward_side[r.node] && joint[r.node].op != ir::node_op::placeholder) g.add_edge(in_of(i), in_of(r.node), detail::min_cut::inf);
      });
      if (read_by_backward[i]) g.add_edge(out_of(i), 1, detail::min_cut::inf);
    }
    (void)g.run(0, 1);
    const std::vector<bool> s = g.source_side(0);
    for (std::size_t i = 0; i < n; ++i) {
      if (!forward_side[i]) continue;
      const bool input = joint[static_cast<ir::node_id>(i)].op == ir::node_op::placeholder;
      in_forward[i] = s[in_of(i)] || input;
      saved[i] = !input && s[in_of(i)] && !s[out_of(i)];
      recompute[i] = !s[in_of(i)] && !input;
    }
    // an input read by a recomputed node or by the backward is handed over (it costs nothing; the
    // cut left it on the sink side for free)
    for (std::size_t i = 0; i < n; ++i) {
      if (!(recompute[i] || tangent[i])) continue;
      ir::graph::for_each_ref(joint[static_cast<ir::node_id>(i)], [&](ir::value_ref r) {
        if (forward_side[r.node] && !recompute[r.node]) saved[r.node] = true;
      });
    }
  }

  partition p;
  p.forward_outputs = forward_outputs;
  // 3. the forward graph: its placeholders, the nodes it computes, its outputs then the saved values
  std::vector<ir::node_id> fmap(n, 0), bmap(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    const ir::node& nd = joint[static_cast<ir::node_id>(i)];
    if (nd.op == ir::node_op::placeholder) fmap[i] = p.forward.add_placeholder(nd.name, nd.vals.front());
    else if (in_forward[i]) fmap[i] = detail::copy_node(nd, p.forward, fmap);
  }
  std::vector<ir::value_ref> fouts;
  for (std::size_t k = 0; k < forward_outputs; ++k) {
    ir::value_ref r = std::get<ir::value_ref>(out.args[k]);
    fouts.push_back({fmap[r.node], r.index});
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (!saved[i]) continue;
    const ir::node& nd = joint[static_cast<ir::node_id>(i)];
    fouts.push_back({fmap[i], 0});
    p.saved.push_back(nd.name);
    for (const auto& m : nd.vals) (nd.op == ir::node_op::placeholder ? p.saved_input_bytes : p.saved_bytes) += bytes_of(m, options.sizes);
  }
  p.forward.set_output(std::move(fouts));
  p.forward.copy_subgraphs_from(joint);
  eliminate_dead_code(p.forward);  // (what neither the outputs nor the saved values need)
  // 4. the backward graph: the saved values as placeholders, the recomputed nodes, the backward's
  for (std::size_t i = 0; i < n; ++i)
    if (saved[i]) bmap[i] = p.backward.add_placeholder(joint[static_cast<ir::node_id>(i)].name, joint[static_cast<ir::node_id>(i)].vals.front());
  for (std::size_t i = 0; i < n; ++i) {
    if (!(recompute[i] || tangent[i]) || saved[i]) continue;
    bmap[i] = detail::copy_node(joint[static_cast<ir::node_id>(i)], p.backward, bmap);
    if (recompute[i]) ++p.recomputed;
  }
  std::vector<ir::value_ref> bouts;
  for (std::size_t k = forward_outputs; k < out.args.size(); ++k) {
    const ir::value_ref r = std::get<ir::value_ref>(out.args[k]);
    bouts.push_back({bmap[r.node], r.index});
  }
  p.backward.set_output(std::move(bouts));
  p.backward.copy_subgraphs_from(joint);
  p.forward.drop_unused_subgraphs();
  p.backward.drop_unused_subgraphs();
  return p;
}

TYPEX_API auto typex::passes::backward_start(const ir::graph& joint, std::size_t forward_outputs) -> std::size_t {
  static constexpr std::string_view who = "typex::passes::partition_joint";
  const std::vector<bool> fwd_needed = detail::ancestors_of_outputs(joint, 0, forward_outputs);
  const std::size_t n = joint.size() - 1;
  for (std::size_t i = 0; i < n; ++i) {
    const ir::node& node = joint[static_cast<ir::node_id>(i)];
    if (node.op == ir::node_op::call_function && !ir::is_assertion(node) && !fwd_needed[i]) return i;
  }
  typex::detail::raise_message<argument_error>(std::string(who) + ": the graph has no backward (every node computes a forward output)");
}

TYPEX_API auto typex::passes::partition_joint(const ir::graph& joint, std::size_t forward_outputs, const partition_options& options)
    -> partition {
  return partition_joint(joint, forward_outputs, backward_start(joint, forward_outputs), options);
}
