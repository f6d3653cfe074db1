// typex/plan/planner.hpp — planning a graph for a backend: symbol binding, constant folding, view
// elision, fusion by the op types' rules, lifetimes and the arena.
//
//   planner p(graph, inputs, constants, {.fuse = true});
//   p.plan(input_tensors, symbols, my_target);   // my_target: a plan::target, the backend's side
//
// For each node in graph order, given the extents the inputs bind:
//  - its extents are evaluated (a size the inputs do not determine is an unsupported_error);
//  - a node whose arguments are all constant (lifted parameters, buffers, constants, or folded) is
//    computed now by the backend (target::evaluate) and never again: a folded value that no symbol
//    changes is kept for later plans (stable(): GEMM packings of it may be kept too);
//  - a view (rule::view) shares its input's memory; a permute read only by strided readers that the
//    backend runs through strides becomes a strided value (layout::strided) with no step;
//  - every other node starts a step: with the activation that is its only reader as its epilogue
//    (rule::epilogue_host), the max_pool2d after that as its pool (rule::pool_host), or the pointwise
//    ops that only continue its value as its chain (rule::pointwise_head); the backend lowers the
//    step (target::lower) and may decline (then the node runs alone: target::lower_kernel);
//  - every step's result gets an arena buffer, live until its last reader; offsets are assigned
//    when every step is lowered (arena_plan).
// The planner owns the values and the arena; the target's steps refer to them by location.
#pragma once

#include <typex/core/error.hpp>
#include <typex/core/symbol_table.hpp>
#include <typex/ir/call.hpp>
#include <typex/ir/describe.hpp>
#include <typex/ir/graph.hpp>
#include <typex/ops/all.hpp>
#include <typex/plan/plan.hpp>
#include <typex/plan/rules.hpp>
#include <typex/tensor/host_tensor.hpp>

#include <algorithm>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace typex::plan {

inline constexpr ir::node_id no_node = static_cast<ir::node_id>(-1);

struct options {
  bool fuse = true;  // epilogues, pools, chains, absorbed permutes (false: one step per node)
};

// One step of a plan: the node a kernel computes and the nodes it does in the same pass.
struct step_plan {
  ir::node_id node = no_node;
  ir::node_id epilogue = no_node;  // an activation applied to the result in cache (node: epilogue_host)
  ir::node_id pool = no_node;      // a max_pool2d of the (activated) result, per image (node: pool_host)
  std::vector<ir::node_id> chain;  // pointwise ops continuing node's value, in order (node: pointwise_head)
  std::vector<ir::node_id> also;   // later nodes the kernel writes too, each into its own buffer (planner::also_compute)
};

class planner;

// The backend's side of planning.
class target {
 public:
  virtual ~target() = default;
  // `node` computed from constant arguments at planning time (the backend's eager kernel).
  virtual any_tensor evaluate(const ir::node& node, std::span<const any_tensor* const> args,
                              std::span<const any_tensor* const> list, const symbol_table& symbols) = 0;
  // Whether `node` is an activation the backend applies in an epilogue or a chain, or as its own
  // vectorised step.
  virtual bool is_activation(const ir::node& node, const symbol_table& symbols) = 0;
  // Whether the backend fuses an epilogue into a step of this dtype (a GEMM's: f32, f64).
  virtual bool fuses(dtype dt) const = 0;
  // Whether the backend runs `reader` (a rule::strided_reader node) reading its operands through
  // strides.
  virtual bool reads_strided(const ir::graph& g, const ir::node& reader) = 0;
  // The longest chain a step may take.
  virtual std::size_t max_chain() const = 0;
  // Lowers step s (its result's buffer already planned at the result's size). The target may drop
  // s.pool (set it to no_node) where it cannot do that pool, and resize the buffer (planner::resize)
  // where the step writes less (a pooled result). Returns false where it has no step for s's node:
  // then the node runs alone (lower_kernel), its epilogue, pool and chain as steps of their own.
  virtual bool lower(planner& p, step_plan& s) = 0;
  // Lowers node n as a step of its own running the backend's general kernel.
  virtual void lower_kernel(planner& p, ir::node_id n) = 0;
};

// Whether a call takes a draw of the thread's random stream (core/random.hpp): such a call is never
// folded into a constant, even of constant inputs, and runs once per program call. The op's own
// description says so (ir/describe.hpp: `random`, and `draws(args)` for an op that draws only for
// some arguments), a user's op included.
inline bool takes_draw(const ir::node& node) { return ir::draws_randomness(node.target, node.args); }

// The output permutation of a transpose / permute call on a value of rank `rank`: the output's dim
// d reads the input's dim perm[d].
inline std::vector<std::size_t> permutation(const ir::call_args& a, std::size_t rank) {
  std::vector<std::size_t> perm(rank);
  for (std::size_t d = 0; d < rank; ++d) perm[d] = d;
  if (a.op() == op_id_of<aten::transpose_int>) {
    if (rank != 0) std::swap(perm[ir::wrap_dim(a.target(), a.integer("dim0"), rank)], perm[ir::wrap_dim(a.target(), a.integer("dim1"), rank)]);
  } else {
    const auto p = a.ints("dims");
    if (p.size() != rank) a.fail_text("dims", "does not list every dim");
    for (std::size_t d = 0; d < rank; ++d) perm[d] = ir::wrap_dim(a.target(), p[d], rank);
  }
  return perm;
}

inline std::vector<index_t> contiguous_strides(const std::vector<index_t>& e) {
  std::vector<index_t> s(e.size(), 1);
  for (std::size_t d = e.size(); d-- > 1;) s[d - 1] = s[d] * e[d];
  return s;
}

class planner {
 public:
  // inputs: the placeholders each call feeds, in the executor's input order; constants: the
  // placeholders bound to tensors for the planner's life (lifted parameters, buffers, constants).
  planner(const ir::graph& g, std::vector<ir::node_id> inputs, std::vector<std::pair<ir::node_id, any_tensor>> constants,
          options o)
      : g_(&g), inputs_(std::move(inputs)), constants_(std::move(constants)), options_(o) {}

  // Plans the graph for `inputs` (symbols: what they bind), lowering its steps to `t`.
  void plan(std::span<const any_tensor> inputs, const symbol_table& symbols, target& t);

  // (for targets, while lowering)
  const ir::graph& graph() const noexcept { return *g_; }
  const options& opts() const noexcept { return options_; }
  const symbol_table& symbols() const noexcept { return symbols_; }
  std::span<const any_tensor> planning_inputs() const noexcept { return planning_inputs_; }
  const value& at(ir::node_id n) const noexcept { return values_[n]; }
  // The value argument k of `node` names (nullptr: None, absent, or not a tensor).
  const value* arg(const ir::node& node, std::size_t k) const noexcept {
    if (k >= node.args.size()) return nullptr;
    const auto* r = std::get_if<ir::value_ref>(&node.args[k]);
    return r ? &values_[r->node] : nullptr;
  }
  // A scratch buffer of `bytes` for the step of node n.
  location scratch(std::size_t bytes, ir::node_id n) { return {location::where::arena, arena_.add(bytes, n), nullptr}; }
  // For a target's lower(s) that returns true: node `later`, after s.node and not yet reached, is
  // written by this step's kernel too (a second result: a product's bias gradient), into a buffer of
  // its own allocated now; its arguments are read at s.node, and the planner skips it when it gets
  // there. claimable(s, later) first says whether it still can be (a kernel step of its own so far,
  // not folded, chained, fused, absorbed, nor claimed; its arguments computed before the step, or,
  // with `of_result`, s.node's result among them: a kernel that computes `later` from its own result,
  // which it then need not write, as a product whose epilogue applies the reader's op).
  bool claimable(const step_plan& s, ir::node_id later, bool of_result = false) const;
  const value& also_compute(step_plan& s, ir::node_id later);
  // The nodes that read node n's value, and whether it is an output of the graph.
  const std::vector<ir::node_id>& users(ir::node_id n) const noexcept { return users_[n]; }
  bool is_output(ir::node_id n) const noexcept { return is_output_[n]; }
  // Sets the bytes of the result buffer of node n's step (a step that writes less than its result).
  void resize(ir::node_id n, std::size_t bytes) noexcept { arena_.resize(values_[n].at.index, bytes); }
  // Whether `data` lives as long as the planner (a lifted tensor, or a folded value no symbol changes).
  bool stable(const void* data) const noexcept {
    for (const void* s : stable_)
      if (s == data) return true;
    return false;
  }

  // (the plan)
  const std::vector<value>& values() const noexcept { return values_; }
  const arena_plan& arena() const noexcept { return arena_; }
  const std::vector<ir::node_id>& outputs() const noexcept { return outs_; }
  const report& summary() const noexcept { return report_; }
  // The steps in order, as lowered (each a step_plan whose node ran through lower or lower_kernel).
  const std::vector<step_plan>& steps() const noexcept { return steps_; }

 private:
  static bool shape_free(const ir::node& node);
  bool absorbable(ir::node_id n, const std::vector<bool>& absorbed, const std::vector<bool>& is_output, target& t) const;
  std::vector<ir::node_id> chain_after(ir::node_id head, target& t) const;
  ir::node_id pool_after(ir::node_id last) const;
  void evaluate_meta(ir::node_id n);  // values_[n]'s dtype and extents, from the node's meta and symbols_

  const ir::graph* g_;
  std::vector<ir::node_id> inputs_;
  std::vector<std::pair<ir::node_id, any_tensor>> constants_;
  options options_;
  // (planning)
  symbol_table symbols_;
  std::span<const any_tensor> planning_inputs_;
  std::vector<std::vector<ir::node_id>> users_;
  std::vector<bool> is_output_;
  std::vector<bool> absorbed_;             // permutes read in place through strides
  std::vector<ir::node_id> chained_to_;    // per node: the chain head whose pass computes it
  std::vector<bool> fused_into_;           // an activation or pool done by its producer's step
  std::vector<bool> claimed_;              // written by an earlier step (also_compute)
  // (kept across plans)
  std::vector<std::optional<any_tensor>> folded_cache_;  // per node: a folded value no symbol changes
  // (the plan)
  std::vector<const void*> stable_;
  std::vector<value> values_;
  arena_plan arena_;
  std::vector<ir::node_id> outs_;
  std::vector<step_plan> steps_;
  report report_;
};

// Whether a node's result is the same for every binding of the symbols: a static result and no
// symbolic argument (a folded slice of a table by seq is not).
inline bool planner::shape_free(const ir::node& node) {
  for (const auto& e : node.vals.front().shape)
    if (!e.is_constant()) return false;
  for (const auto& a : node.args) {
    if (const auto* e = std::get_if<ir::sym_expr>(&a); e && !e->is_constant()) return false;
    if (const auto* es = std::get_if<std::vector<ir::sym_expr>>(&a))
      for (const auto& e : *es)
        if (!e.is_constant()) return false;
  }
  return true;
}

// A permute whose every reader reads it through strides (or is itself absorbed).
inline bool planner::absorbable(ir::node_id n, const std::vector<bool>& absorbed, const std::vector<bool>& is_output,
                                target& t) const {
  const ir::graph& g = *g_;
  const ir::node& node = g[n];
  if (node.op != ir::node_op::call_function || !has(rules_of(node.target), rule::permute) || is_output[n] || users_[n].empty())
    return false;
  for (ir::node_id u : users_[n])
    if (!absorbed[u] && !(has(rules_of(g[u].target), rule::strided_reader) && t.reads_strided(g, g[u]))) return false;
  return true;
}

// The ops after pointwise head `head` that only continue its value: its one reader, then that
// one's, ...: an elementwise binary op with a number or a tensor computed before head, or an
// activation the target applies; same extents and dtype; not a program output before the last.
inline std::vector<ir::node_id> planner::chain_after(ir::node_id head, target& t) const {
  std::vector<ir::node_id> chain;
  if (!options_.fuse) return chain;
  const ir::graph& g = *g_;
  const value& hv = values_[head];
  const auto is_ref_to = [](const ir::argument& a, ir::node_id id) {
    const auto* r = std::get_if<ir::value_ref>(&a);
    return r != nullptr && r->node == id;
  };
  ir::node_id cur = head;
  while (chain.size() < t.max_chain() && !is_output_[cur] && users_[cur].size() == 1) {
    const ir::node_id u = users_[cur].front();
    const ir::node& un = g[u];
    const ir::tensor_meta& m = un.vals.front();
    if (un.op != ir::node_op::call_function || un.vals.size() != 1 || m.scalar_type != hv.dt || m.rank() != hv.extents.size())
      break;
    bool same = true;
    for (std::size_t d = 0; d < m.rank() && same; ++d) {
      const auto e = m.shape[d].evaluate(symbols_);
      same = e && *e == hv.extents[d];
    }
    if (!same) break;
    if (t.is_activation(un, symbols_)) {
      if (un.args.empty() || !is_ref_to(un.args[0], cur)) break;
    } else if (has(rules_of(un.target), rule::pointwise_head)) {
      if (un.args.size() < 2) break;
      const bool first = is_ref_to(un.args[0], cur), second = is_ref_to(un.args[1], cur);
      if (first == second) break;  // (x op x, or not a reader: not a chain)
      const ir::argument& o = un.args[first ? 1 : 0];
      if (const auto* r = std::get_if<ir::value_ref>(&o)) {
        if (r->node >= head) break;  // not computed yet when the chain runs
        const value& other = values_[r->node];
        if (other.strided() || other.dt != hv.dt || other.at.kind == location::where::none) break;
        if (other.extents.size() > hv.extents.size()) break;
        const std::size_t shift = hv.extents.size() - other.extents.size();
        bool broadcasts = true;
        for (std::size_t d = 0; d < other.extents.size(); ++d)
          broadcasts = broadcasts && (other.extents[d] == 1 || other.extents[d] == hv.extents[d + shift]);
        if (!broadcasts) break;
      } else if (!std::holds_alternative<double>(o) && !std::holds_alternative<std::int64_t>(o)) {
        break;
      }
    } else {
      break;
    }
    chain.push_back(u);
    cur = u;
  }
  return chain;
}

// The max_pool2d that is the only reader of `last` (a pool_host's result, or its epilogue's).
inline ir::node_id planner::pool_after(ir::node_id last) const {
  if (is_output_[last] || users_[last].size() != 1) return no_node;
  const ir::node_id p = users_[last].front();
  return has(rules_of((*g_)[p].target), rule::pool) ? p : no_node;
}

inline void planner::plan(std::span<const any_tensor> inputs, const symbol_table& symbols, target& t) {
  const ir::graph& g = *g_;
  symbols_ = symbols;
  planning_inputs_ = inputs;
  values_.assign(g.size(), value{});
  arena_.clear();
  steps_.clear();
  report_ = report{};
  stable_.clear();
  for (const auto& [id, c] : constants_) {
    stable_.push_back(c.raw_data());
    values_[id].dt = c.scalar_type();
    values_[id].extents = c.extents();
    values_[id].folded = c;
  }
  for (std::size_t i = 0; i < inputs_.size(); ++i) {
    value& v = values_[inputs_[i]];
    v.dt = inputs[i].scalar_type();
    v.extents = inputs[i].extents();
    v.at = {location::where::input, i, nullptr};
  }
  for (auto& v : values_)
    if (v.folded) v.at = {location::where::constant, 0, &*v.folded};
  users_ = g.users();
  is_output_.assign(g.size(), false);
  outs_.clear();
  for (const auto& a : g.output().args) {
    const auto n = std::get<ir::value_ref>(a).node;
    is_output_[n] = true;
    outs_.push_back(n);
  }
  // permutes that only strided readers (possibly through more of them) read: not copied
  absorbed_.assign(g.size(), false);
  std::vector<bool>& absorbed = absorbed_;
  if (options_.fuse)
    for (std::size_t n = g.size(); n-- > 0;) absorbed[n] = absorbable(n, absorbed, is_output_, t);
  chained_to_.assign(g.size(), no_node);
  fused_into_.assign(g.size(), false);
  claimed_.assign(g.size(), false);
  std::vector<ir::node_id>& chained_to = chained_to_;
  std::vector<bool>& fused_into = fused_into_;
  const auto tensor_of = [&](const ir::argument& a) -> const value* {
    const auto* r = std::get_if<ir::value_ref>(&a);
    return r ? &values_[r->node] : nullptr;
  };

  for (ir::node_id n = 0; n < g.size(); ++n) {
    const ir::node& node = g[n];
    if (node.op != ir::node_op::call_function || ir::is_assertion(node)) continue;  // (assertions: checked on binding)
    if (claimed_[n]) continue;  // (an earlier step writes it: also_compute)
    value& v = values_[n];
    evaluate_meta(n);
    if (chained_to[n] != no_node) {  // computed in the pass of the chain's first op
      v.at = values_[chained_to[n]].at;
      continue;
    }
    std::vector<const any_tensor*> tensors(node.args.size(), nullptr), list;  // (list: a tensor-list argument's)
    bool all_constant = true;
    for (std::size_t k = 0; k < node.args.size(); ++k) {
      if (const value* a = tensor_of(node.args[k])) {
        all_constant = all_constant && a->folded.has_value();
        if (a->folded) tensors[k] = &*a->folded;
      } else if (const auto* refs = std::get_if<std::vector<ir::value_ref>>(&node.args[k])) {
        for (const ir::value_ref& r : *refs) {
          const value& e = values_[r.node];
          all_constant = all_constant && e.folded.has_value();
          list.push_back(e.folded ? &*e.folded : nullptr);
        }
      }
    }
    const ir::call_args call(node.target, node.args, tensors, &symbols_, list);
    // (without running statistics, training mode updates nothing: it normalizes with the batch's)
    if (node.target == op_id_of<batch_norm_op> && call.has("training") && call.flag("training") &&
        (call.has("running_mean") || call.has("running_var"))) {
      typex::detail::raise<unsupported_error>([&](auto& w) {
        w.put("typex: node '"); w.put(node.name);
        w.put("' is training-mode batch_norm, which updates its running statistics in place, behind the program's back; "
              "use nn::BatchNorm2d (whose traced training mode writes them as buffer mutations) or export in eval mode");
      });
    }
    const bool random = takes_draw(node);  // (never folded: a new draw per call)
    // 1. constant folding (a folded value that no symbol can change is kept for later plans)
    if (all_constant && !random) {
      if (folded_cache_.size() != g.size()) folded_cache_.assign(g.size(), std::nullopt);
      if (folded_cache_[n]) {
        v.folded = *folded_cache_[n];
      } else {
        v.folded = t.evaluate(node, tensors, list, symbols_);
        // (as a kernel step's result: a folded value must be what the program records, or every
        // step reading it would index it by the wrong extents)
        if (v.folded->scalar_type() != v.dt || v.folded->extents() != v.extents) {
          typex::detail::raise<ir::graph_error>([&](auto& w) {
            w.put("typex: node '"); w.put(node.name); w.put("' ("); w.put(node.target.name()); w.put("), folded, produced ");
            w.put(v.folded->to_string()); w.put(" where the program records ");
            w.put(name(v.dt)); typex::detail::put_extents(w, v.extents);
          });
        }
        if (shape_free(node)) folded_cache_[n] = *v.folded;
      }
      if (folded_cache_[n]) stable_.push_back(v.folded->raw_data());
      v.at = {location::where::constant, 0, &*v.folded};
      ++report_.folded;
      continue;
    }
    const value* x0 = node.args.empty() ? nullptr : tensor_of(node.args[0]);
    const rule r = rules_of(node.target);
    // 2. views share their input's memory
    if (has(r, rule::view) && x0 != nullptr && !x0->strided()) {
      v.at = x0->at;
      ++report_.views;
      continue;
    }
    if (fused_into[n]) {  // the producer's step did it
      v.at = x0->at;
      continue;
    }
    if (absorbed[n]) {  // a strided view of its input
      const std::vector<index_t> base = x0->strided() ? x0->strides : contiguous_strides(x0->extents);
      const std::vector<std::size_t> perm = permutation(call, x0->extents.size());
      v.form = layout::strided;
      v.at = x0->at;
      v.strides.resize(perm.size());
      for (std::size_t d = 0; d < perm.size(); ++d) v.strides[d] = base[perm[d]];
      ++report_.views;
      continue;
    }
    // reads (extend lifetimes), then the result's buffer
    ir::graph::for_each_ref(node, [&](ir::value_ref ref) { arena_.read(values_[ref.node].at, n); });
    step_plan s;
    s.node = n;
    // 3. an activation that is the only reader of an epilogue host's result
    if (options_.fuse && has(r, rule::epilogue_host) && !is_output_[n] && users_[n].size() == 1 && t.fuses(v.dt)) {
      const ir::node& u = g[users_[n].front()];
      if (u.op == ir::node_op::call_function && u.vals.front().scalar_type == v.dt && t.is_activation(u, symbols_))
        s.epilogue = users_[n].front();
    }
    // 4. a max_pool2d that is the only reader of a pool host's (activated) result
    const ir::node_id last = s.epilogue != no_node ? s.epilogue : n;
    if (options_.fuse && has(r, rule::pool_host) && t.fuses(v.dt) && !is_output_[n]) s.pool = pool_after(last);
    v.at = {location::where::arena, arena_.add(v.bytes(), n), nullptr};
    // 5. a pointwise chain after a pointwise head
    if (has(r, rule::pointwise_head)) s.chain = chain_after(n, t);
    if (t.lower(*this, s)) {
      if (s.epilogue != no_node) {
        fused_into[s.epilogue] = true;
        ++report_.fused;
      }
      if (s.pool != no_node) {
        fused_into[s.pool] = true;
        ++report_.fused;
      }
      ir::node_id prev = n;
      for (ir::node_id u : s.chain) {  // the chain's other operands are read when the step runs
        ir::graph::for_each_ref(g[u], [&](ir::value_ref ref) {
          if (ref.node != prev) arena_.read(values_[ref.node].at, n);
        });
        chained_to[u] = n;
        ++report_.chained;
        prev = u;
      }
    } else {
      if (!s.also.empty()) {  // (a claimed node would never be computed)
        typex::detail::raise<ir::graph_error>([&](auto& w) {
          w.put("typex: the backend claimed a later node for node '"); w.put(node.name);
          w.put("''s step (also_compute) and then declined to lower it");
        });
      }
      arena_.resize(v.at.index, v.bytes());
      s = step_plan{};
      s.node = n;
      t.lower_kernel(*this, n);
      report_.allocating_ops.emplace_back(node.target.name());
    }
    steps_.push_back(std::move(s));
  }
  for (ir::node_id o : outs_) arena_.read(values_[o].at, g.size());
  arena_.assign_offsets();
  report_.steps = steps_.size();
  report_.arena_bytes = arena_.peak();
  report_.unplanned_bytes = arena_.total();
}

inline void planner::evaluate_meta(ir::node_id n) {
  const ir::node& node = (*g_)[n];
  value& v = values_[n];
  const ir::tensor_meta& meta = node.vals.front();
  v.dt = meta.scalar_type;
  v.extents.clear();
  for (const auto& e : meta.shape) {
    const auto x = e.evaluate(symbols_);
    if (!x) {
      typex::detail::raise<unsupported_error>([&](auto& w) {
        w.put("typex: node '"); w.put(node.name); w.put("' has a size ("); w.put(e.to_string());
        w.put(") that the inputs do not determine");
      });
    }
    v.extents.push_back(*x);
  }
}

inline bool planner::claimable(const step_plan& s, ir::node_id later, bool of_result) const {
  const ir::graph& g = *g_;
  if (later <= s.node || later >= g.size() || claimed_[later] || chained_to_[later] != no_node || fused_into_[later] || absorbed_[later])
    return false;
  // (nor what this step fuses already, nor a random draw: a node of its own, drawn per call)
  if (later == s.epilogue || later == s.pool || std::find(s.chain.begin(), s.chain.end(), later) != s.chain.end()) return false;
  const ir::node& node = g[later];
  if (node.op != ir::node_op::call_function || ir::is_assertion(node) || has(rules_of(node.target), rule::view) || takes_draw(node))
    return false;
  // (its arguments computed before the step; not all of them constants: such a node is folded)
  bool ready = true, constant = true;
  ir::graph::for_each_ref(node, [&](ir::value_ref r) {
    ready = ready && (r.node < s.node || (of_result && r.node == s.node));
    constant = constant && ready && values_[r.node].folded.has_value();
  });
  return ready && !constant;
}

inline const value& planner::also_compute(step_plan& s, ir::node_id later) {
  evaluate_meta(later);
  value& v = values_[later];
  ir::graph::for_each_ref((*g_)[later], [&](ir::value_ref ref) { arena_.read(values_[ref.node].at, s.node); });
  v.at = {location::where::arena, arena_.add(v.bytes(), s.node), nullptr};
  claimed_[later] = true;
  s.also.push_back(later);
  ++report_.fused;
  return v;
}

}  // namespace typex::plan
