// typex/backend/kit/control_flow.hpp — running programs with higher-order calls (cond, while_loop,
// map, scan: ir/control_flow.hpp) on any backend.
//
// The program is cut at its higher-order calls. Each run of other nodes between them (a segment)
// becomes a program of its own, compiled by the backend like any program (planned: fused steps, one
// arena); each subgraph too (recursively: a subgraph with control flow of its own is cut the same
// way). Subgraphs are planned once per set of input extents, like any program, and the engine
// drives them:
//   - cond runs the branch its predicate picks;
//   - while_loop runs the condition, then the body, until the condition is false (past a declared
//     max_iterations: a state_error); the carried values live in two sets of buffers that trade
//     places each iteration;
//   - map and scan copy each slice of xs into a buffer of the body's input shape, run the body and
//     copy its per-slice results into the stacked outputs.
// Nothing is allocated per iteration: the body's outputs, the slices and the stacked results are
// reused from one iteration (and, at the same extents, from one call) to the next; values go from
// part to part as borrowed views (any_tensor::borrow), so that no part's output buffer gains a
// second owner and every planned part reuses its buffers. A subgraph's
// run-time assertions (the shape facts its ops needed, kept in it by tracing) are checked each time
// it runs, before it runs. The driver reads predicates and copies slices on the host: a program
// with control flow runs on host backends (Eigen); one given device tensors (the CUDA backend's)
// is an unsupported_error naming the input. The compile callback is used by the constructor only.
#pragma once

#include <typex/backend/kit/engine.hpp>
#include <typex/core/requirement.hpp>
#include <typex/ir/control_flow.hpp>

#include <algorithm>
#include <functional>
#include <memory>
#include <span>
#include <vector>

namespace typex::kit {

class control_flow_engine final : public engine {
 public:
  using compiler = std::function<std::shared_ptr<engine>(program_binding)>;
  // compile: the backend's compile_program for one part (segments and subgraphs).
  TYPEX_API control_flow_engine(program_binding binding, compiler compile);
  TYPEX_API ~control_flow_engine() override;

  TYPEX_API void run(std::span<const any_tensor> inputs, const symbol_table& symbols, std::vector<any_tensor>& outputs) override;
  // The last call had these inputs' extents (and ran to the end): every part is planned for what
  // it will get, and the subgraphs' assertions held for the symbols they bind.
  TYPEX_API bool planned_for(std::span<const any_tensor> inputs) const noexcept override;
  TYPEX_API plan::report report() const override;

  struct state;  // (the parts and their buffers)

 private:
  std::unique_ptr<state> s_;
};

}  // namespace typex::kit

// ---- definitions: compiled once in typex::runtime, or inline here in header-only builds
// (config.hpp: TYPEX_SEPARATE_COMPILATION) ----
#if TYPEX_HEADER_DEFINITIONS
#include <cstring>
#include <string>

namespace typex::kit {

struct control_flow_engine::state {
  // A value of the program: where it is during a call.
  using env_t = std::vector<std::vector<any_tensor>>;

  struct part {  // a compiled program (segment or subgraph) with its reused buffers
    std::shared_ptr<engine> e;
    std::vector<any_tensor> in, out;
    std::vector<const ir::node*> assertions;  // (a subgraph's)
    std::string where;
  };
  struct segment {
    part p;
    std::vector<ir::value_ref> reads;     // the program's values fed as the segment's inputs, in order
    std::vector<ir::value_ref> writes;    // the program's values its outputs are, in order
  };
  struct hop {
    ir::node_id node;
    ir::control_call call;
    std::vector<part> parts;              // cond: true, false; while_loop: cond, body; map / scan: body
    std::vector<any_tensor> carry, slices, stacked;
  };
  struct step {
    bool is_hop;
    std::size_t index;
  };

  program_binding binding;
  std::vector<segment> segments;
  std::vector<hop> hops;
  std::vector<step> steps;
  env_t env;
  std::vector<std::vector<index_t>> last;  // the input extents of the last call that ran to the end
  symbol_table last_symbols;               // and the symbols they bound
  bool has_last = false;

  any_tensor& at(ir::value_ref v) { return env[v.node][v.index]; }
};

namespace detail {
inline std::string control_where(const ir::node& n, std::string_view sub) {
  std::string s(sub);
  s += " of node '";
  s += n.name;
  s += '\'';
  return s;
}

// (a subgraph's placeholders, in order, and its assertions)
inline program_binding subgraph_binding(const std::shared_ptr<const ir::graph>& g, const program_binding& outer) {
  program_binding b;
  b.graph = g;
  b.inputs = g->placeholders();
  b.user_inputs = b.inputs.size();
  b.data_dependent = outer.data_dependent;
  b.check = outer.check;
  b.check_shapes = outer.check_shapes;
  return b;
}

inline void check_part_assertions(const control_flow_engine::state::part& p, const symbol_table& symbols) {
  for (const ir::node* n : p.assertions) {
    const auto& lhs = std::get<ir::sym_expr>(n->args[0]);
    const auto& rhs = std::get<ir::sym_expr>(n->args[2]);
    relation rel{};
    (void)parse_relation(std::get<std::string>(n->args[1]), rel);
    const auto a = lhs.evaluate(symbols), b = rhs.evaluate(symbols);
    if (a && b && holds(rel, *a, *b)) continue;
    typex::detail::raise<constraint_violation>([&](auto& w) {
      w.put("typex: "); w.put(std::get<std::string>(n->args[3])); w.put(" needs "); w.put(lhs.to_string()); w.put(' ');
      w.put(typex::to_string(rel)); w.put(' '); w.put(rhs.to_string());
      if (a && b) {
        w.put(", but "); w.put_int(*a); w.put(' '); w.put(to_negated_string(rel)); w.put(' '); w.put_int(*b);
      } else {
        w.put(", which the inputs do not determine");
      }
      w.put(" (a fact of "); w.put(p.where); w.put(", checked when it runs)");
    });
  }
}

// The symbols an expression names.
inline void symbols_in(const ir::sym_expr& e, std::vector<std::string>& out) {
  if (e.is_symbol()) {
    if (std::find(out.begin(), out.end(), e.name()) == out.end()) out.emplace_back(e.name());
  } else if (!e.is_constant()) {
    symbols_in(e.lhs(), out);
    symbols_in(e.rhs(), out);
  }
}
// The symbols the nodes `ids` of g name (their values' shapes and their symbolic arguments).
inline std::vector<std::string> symbols_named(const ir::graph& g, const std::vector<ir::node_id>& ids) {
  std::vector<std::string> out;
  for (ir::node_id i : ids) {
    const ir::node& n = g[i];
    for (const ir::tensor_meta& m : n.vals)
      for (const ir::sym_expr& e : m.shape) symbols_in(e, out);
    const auto arg = [&](const ir::argument& a) {
      if (const auto* e = std::get_if<ir::sym_expr>(&a)) symbols_in(*e, out);
      else if (const auto* es = std::get_if<std::vector<ir::sym_expr>>(&a))
        for (const ir::sym_expr& x : *es) symbols_in(x, out);
    };
    for (const ir::argument& a : n.args) arg(a);
    for (const auto& kv : n.kwargs) arg(kv.second);
  }
  return out;
}
// The symbols a part names that its inputs' shapes do not determine: a part planned for its
// inputs' extents would keep a stale size for them.
inline std::vector<std::string> free_symbols(const ir::graph& g) {
  std::vector<ir::node_id> calls, inputs;
  for (ir::node_id i = 0; i < g.size(); ++i) {
    if (g[i].op == ir::node_op::placeholder) inputs.push_back(i);
    else if (g[i].op == ir::node_op::call_function && !ir::is_assertion(g[i])) calls.push_back(i);  // (assertions: checked, not planned)
  }
  const std::vector<std::string> bound = symbols_named(g, inputs);
  std::vector<std::string> out;
  for (std::string& s : symbols_named(g, calls))
    if (std::find(bound.begin(), bound.end(), s) == bound.end()) out.push_back(std::move(s));
  return out;
}

// The symbols the calls `run` of g name that the values they read (from outside the run) do not.
inline std::vector<std::string> free_symbols_of_run(const ir::graph& g, const std::vector<ir::node_id>& run, const std::vector<bool>& in_run) {
  std::vector<std::string> bound;
  for (ir::node_id n : run)
    ir::graph::for_each_ref(g[n], [&](ir::value_ref r) {
      if (in_run[r.node]) return;
      for (const ir::sym_expr& e : g.meta(r).shape) symbols_in(e, bound);
    });
  std::vector<std::string> out;
  for (std::string& s : symbols_named(g, run))
    if (std::find(bound.begin(), bound.end(), s) == bound.end()) out.push_back(std::move(s));
  return out;
}
[[noreturn]] inline void sizes_not_determined(const ir::node& n, std::string_view sym) {
  typex::detail::raise<unsupported_error>([&](auto& w) {
    w.put("typex: node '"); w.put(n.name); w.put("' ("); w.put(n.target.name()); w.put(") of a program with control flow uses the size '");
    w.put(sym); w.put("', which none of the values it reads has (and no input of the program); the parts of such a program are "
                      "planned from their inputs' extents: pass a tensor with that dim in");
  });
}

// dst := src's elements (dst made to src's dtype and extents, reusing its storage when they fit and
// no one else holds it: a tensor the caller kept from the last call, or an input given as an output).
inline void copy_into(any_tensor& dst, const any_tensor& src) {
  if (dst.scalar_type() != src.scalar_type() || dst.extents() != src.extents() || dst.get_storage().use_count() > 1)
    dst = any_tensor(src.scalar_type(), src.extents());
  if (src.nbytes() != 0) std::memcpy(dst.raw_data(), src.raw_data(), src.nbytes());
}
// t made to dtype dt and extents (lead, rest...) / (rest without its dim 0), if it is not: allocates
// only then (a call with the extents of the last one allocates nothing).
inline void ensure_stacked(any_tensor& t, dtype dt, index_t lead, const std::vector<index_t>& rest) {
  const auto& e = t.extents();
  bool same = t.scalar_type() == dt && e.size() == rest.size() + 1 && !e.empty() && e[0] == lead;
  for (std::size_t d = 0; same && d < rest.size(); ++d) same = e[d + 1] == rest[d];
  if (same) return;
  std::vector<index_t> x{lead};
  x.insert(x.end(), rest.begin(), rest.end());
  t = any_tensor(dt, std::move(x));
}
inline void ensure_slice(any_tensor& t, dtype dt, const std::vector<index_t>& whole) {
  const auto& e = t.extents();
  bool same = t.scalar_type() == dt && e.size() + 1 == whole.size();
  for (std::size_t d = 0; same && d < e.size(); ++d) same = e[d] == whole[d + 1];
  if (!same) t = any_tensor(dt, std::vector<index_t>(whole.begin() + 1, whole.end()));
}
}  // namespace detail

TYPEX_API control_flow_engine::control_flow_engine(program_binding binding, compiler compile) : s_(std::make_unique<state>()) {
  state& s = *s_;
  s.binding = std::move(binding);
  const ir::graph& g = *s.binding.graph;
  s.env.resize(g.size());
  for (ir::node_id i = 0; i < g.size(); ++i) s.env[i].resize(g[i].vals.size());
  std::vector<bool> is_constant(g.size(), false);
  for (const auto& [id, t] : s.binding.constants) is_constant[id] = true;

  const auto users = g.users();
  std::vector<ir::node_id> run;  // the current segment's nodes
  const auto close_segment = [&] {
    if (run.empty()) return;
    state::segment seg;
    ir::graph sg;
    std::vector<ir::node_id> remap(g.size(), static_cast<ir::node_id>(-1));
    std::vector<std::pair<ir::node_id, any_tensor>> constants;
    std::vector<bool> in_run(g.size(), false);
    for (ir::node_id n : run) in_run[n] = true;
    // its inputs: the values it reads from elsewhere (constants stay constants)
    std::vector<std::vector<ir::node_id>> ph(g.size());
    const auto input_of = [&](ir::value_ref r) -> ir::value_ref {
      if (in_run[r.node]) return {remap[r.node], r.index};
      auto& slots = ph[r.node];
      if (slots.size() <= r.index) slots.resize(r.index + 1, static_cast<ir::node_id>(-1));
      if (slots[r.index] == static_cast<ir::node_id>(-1)) {
        std::string name = g[r.node].name;
        if (g[r.node].vals.size() > 1) name += "_" + std::to_string(r.index);
        slots[r.index] = sg.add_placeholder(name, g.meta(r));
        if (is_constant[r.node]) {
          for (const auto& [id, t] : s.binding.constants)
            if (id == r.node) constants.emplace_back(slots[r.index], t);
        } else {
          seg.reads.push_back(r);
        }
      }
      return {slots[r.index], 0};
    };
    // (placeholders first: every input is found before the calls go in)
    for (ir::node_id n : run)
      ir::graph::for_each_ref(g[n], [&](ir::value_ref r) {
        if (!in_run[r.node]) (void)input_of(r);
      });
    // a size the run names that none of its inputs has (reshape to another input's dim): the
    // program's input that has it comes in too, unread, so that the segment is planned again when
    // it changes
    for (const std::string& sym : detail::free_symbols_of_run(g, run, in_run)) {
      bool found = false;
      for (ir::node_id p = 0; p < g.size() && !found; ++p) {
        if (g[p].op != ir::node_op::placeholder) continue;
        for (const ir::sym_expr& e : g[p].vals.front().shape) found = found || e.mentions(sym);
        if (found) (void)input_of({p, 0});
      }
      if (!found) detail::sizes_not_determined(g[run.front()], sym);
    }
    const ir::node_id base = static_cast<ir::node_id>(sg.size());
    for (std::size_t k = 0; k < run.size(); ++k) remap[run[k]] = base + static_cast<ir::node_id>(k);
    for (ir::node_id n : run) {
      ir::node c = g[n];
      const auto fix = [&](ir::argument& a) {
        if (auto* r = std::get_if<ir::value_ref>(&a)) *r = input_of(*r);
        else if (auto* rs = std::get_if<std::vector<ir::value_ref>>(&a))
          for (ir::value_ref& x : *rs) x = input_of(x);
      };
      for (ir::argument& a : c.args) fix(a);
      for (auto& kv : c.kwargs) fix(kv.second);
      sg.add_call({.target = c.target, .args = std::move(c.args), .kwargs = std::move(c.kwargs), .vals = c.vals, .name_hint = c.name,
                   .nn_module_stack = c.nn_module_stack, .stack_trace = c.stack_trace});
    }
    // its outputs: the values of the run read by a later step or by the output node
    std::vector<ir::value_ref> outs;
    for (ir::node_id n : run)
      for (std::uint32_t k = 0; k < g[n].vals.size(); ++k) {
        bool later = false;
        for (ir::node_id u : users[n]) later = later || !in_run[u];
        if (!later) continue;
        seg.writes.push_back({n, k});
        outs.push_back({remap[n], k});
      }
    sg.set_output(std::move(outs));
    program_binding b;
    b.graph = std::make_shared<const ir::graph>(std::move(sg));
    b.inputs = b.graph->placeholders();
    std::vector<ir::node_id> feeds;  // (every placeholder is fed by a call or bound as a constant)
    for (ir::node_id p : b.inputs) {
      bool constant = false;
      for (const auto& [id, t] : constants) constant = constant || id == p;
      if (!constant) feeds.push_back(p);
    }
    b.inputs = std::move(feeds);
    b.user_inputs = b.inputs.size();
    b.constants = std::move(constants);
    b.data_dependent = s.binding.data_dependent;
    b.check = s.binding.check;
    b.check_shapes = s.binding.check_shapes;
    seg.p.e = compile(std::move(b));
    seg.p.in.resize(seg.reads.size());
    seg.p.where = "a segment";
    s.steps.push_back({false, s.segments.size()});
    s.segments.push_back(std::move(seg));
    run.clear();
  };
  for (ir::node_id i = 0; i < g.size(); ++i) {
    const ir::node& n = g[i];
    if (n.op != ir::node_op::call_function || ir::is_assertion(n)) continue;
    if (!ir::is_control_flow(n)) {
      run.push_back(i);
      continue;
    }
    close_segment();
    state::hop h;
    h.node = i;
    h.call = ir::read_control_call(n);
    for (const std::string& name : h.call.graphs) {
      std::shared_ptr<const ir::graph> sub;
      for (const auto& sg : g.subgraphs())
        if (sg.name == name) sub = sg.body;
      state::part p;
      if (const auto free = detail::free_symbols(*sub); !free.empty()) {
        typex::detail::raise<unsupported_error>([&](auto& w) {
          w.put("typex: the subgraph '"); w.put(name); w.put("' of node '"); w.put(n.name); w.put("' uses the size '"); w.put(free.front());
          w.put("', which none of its inputs has; it is planned from its inputs' extents, so pass a tensor with that dim in (an "
                "operand, or a value it reads)");
        });
      }
      p.e = compile(detail::subgraph_binding(sub, s.binding));
      p.in.resize(sub->placeholders().size());
      for (const ir::node& m : sub->nodes())
        if (ir::is_assertion(m)) p.assertions.push_back(&m);
      p.where = detail::control_where(n, name);
      h.parts.push_back(std::move(p));
    }
    h.carry.resize(h.call.carried.size());
    h.slices.resize(h.call.xs.size());
    h.stacked.resize(n.vals.size());
    s.steps.push_back({true, s.hops.size()});
    s.hops.push_back(std::move(h));
  }
  close_segment();
}

TYPEX_API control_flow_engine::~control_flow_engine() = default;

TYPEX_API bool control_flow_engine::planned_for(std::span<const any_tensor> inputs) const noexcept {
  const state& s = *s_;
  if (!s.has_last || inputs.size() != s.last.size()) return false;
  for (std::size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].extents() != s.last[i]) return false;
  return true;
}

TYPEX_API void control_flow_engine::run(std::span<const any_tensor> inputs, const symbol_table& symbols, std::vector<any_tensor>& outputs) {
  state& s = *s_;
  const ir::graph& g = *s.binding.graph;
  // (the same extents as the last call: the assertions held for them, and the symbols may not be bound)
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].device().is_host()) continue;
    typex::detail::raise<unsupported_error>([&](auto& w) {
      w.put("typex: input "); w.put_int(static_cast<long long>(i)); w.put(" of a program with control flow is on ");
      w.put(inputs[i].device().to_string());
      w.put("; the control-flow driver reads predicates and copies slices on the host, so such a program runs on host "
            "backends (Eigen) today: the CUDA backend runs programs without cond / while_loop / map / scan");
    });
  }
  const bool again = planned_for(inputs);
  s.has_last = false;
  if (!again) s.last_symbols = symbols;
  const symbol_table& syms = s.last_symbols;  // (the same extents bind the same symbols)
  for (std::size_t i = 0; i < s.binding.inputs.size(); ++i) s.env[s.binding.inputs[i]][0].borrow(inputs[i]);
  for (const auto& [id, t] : s.binding.constants) s.env[id][0].borrow(t);
  const auto bool_of = [](const any_tensor& t) { return *reinterpret_cast<const bool*>(t.raw_data()); };
  for (const state::step& st : s.steps) {
    if (!st.is_hop) {
      state::segment& seg = s.segments[st.index];
      for (std::size_t k = 0; k < seg.reads.size(); ++k) seg.p.in[k].borrow(s.at(seg.reads[k]));
      seg.p.e->run(seg.p.in, syms, seg.p.out);
      for (std::size_t k = 0; k < seg.writes.size(); ++k) s.at(seg.writes[k]).borrow(seg.p.out[k]);
      continue;
    }
    state::hop& h = s.hops[st.index];
    const ir::node& n = g[h.node];
    const ir::control_call& c = h.call;
    const std::size_t nc = c.carried.size(), nx = c.xs.size();
    switch (c.kind) {
      case ir::control_kind::cond: {
        state::part& p = h.parts[bool_of(s.at(*c.pred)) ? 0 : 1];
        for (std::size_t k = 0; k < nc; ++k) p.in[k].borrow(s.at(c.carried[k]));
        detail::check_part_assertions(p, syms);
        p.e->run(p.in, syms, p.out);
        for (std::size_t k = 0; k < p.out.size(); ++k) s.env[h.node][k].borrow(p.out[k]);
        break;
      }
      case ir::control_kind::while_loop: {
        state::part& cp = h.parts[0];
        state::part& bp = h.parts[1];
        for (std::size_t k = 0; k < nc; ++k) {
          cp.in[k].borrow(s.at(c.carried[k]));
          bp.in[k].borrow(s.at(c.carried[k]));
        }
        for (std::size_t k = 0; k < c.additional.size(); ++k) {
          cp.in[nc + k].borrow(s.at(c.additional[k]));
          bp.in[nc + k].borrow(s.at(c.additional[k]));
        }
        detail::check_part_assertions(cp, syms);
        detail::check_part_assertions(bp, syms);
        for (std::int64_t it = 0;; ++it) {
          cp.e->run(cp.in, syms, cp.out);
          if (!bool_of(cp.out.front())) break;
          if (c.max_iterations >= 0 && it >= c.max_iterations) {
            typex::detail::raise<state_error>([&](auto& w) {
              w.put("typex: the while_loop '"); w.put(n.name); w.put("' ran past its declared bound, max_iterations = ");
              w.put_int(c.max_iterations);
            });
          }
          bp.e->run(bp.in, syms, bp.out);
          for (std::size_t k = 0; k < nc; ++k) {  // (the new carried values; the old buffers take the next results)
            std::swap(h.carry[k], bp.out[k]);
            cp.in[k].borrow(h.carry[k]);
            bp.in[k].borrow(h.carry[k]);
          }
        }
        for (std::size_t k = 0; k < nc; ++k) s.env[h.node][k].borrow(bp.in[k]);
        break;
      }
      case ir::control_kind::map:
      case ir::control_kind::scan: {
        state::part& bp = h.parts[0];
        const index_t len = s.at(c.xs.front()).extents().front();
        for (std::size_t k = 0; k < nx; ++k) {
          const any_tensor& x = s.at(c.xs[k]);
          if (x.extents().empty() || x.extents().front() != len) {
            typex::detail::raise<shape_error>([&](auto& w) {
              w.put("typex: the xs of '"); w.put(n.name); w.put("' do not share their leading dim");
            });
          }
          detail::ensure_slice(h.slices[k], x.scalar_type(), x.extents());
          bp.in[nc + k].borrow(h.slices[k]);
        }
        for (std::size_t k = 0; k < nc; ++k) bp.in[k].borrow(s.at(c.carried[k]));
        for (std::size_t k = 0; k < c.additional.size(); ++k) bp.in[nc + nx + k].borrow(s.at(c.additional[k]));
        detail::check_part_assertions(bp, syms);
        if (len == 0) {
          typex::detail::raise<shape_error>([&](auto& w) {
            w.put("typex: '"); w.put(n.name); w.put("' iterates over a leading dim of 0; it needs at least one slice");
          });
        }
        for (index_t step = 0; step < len; ++step) {
          const index_t i = c.reverse ? len - 1 - step : step;
          for (std::size_t k = 0; k < nx; ++k) {
            const any_tensor& x = s.at(c.xs[k]);
            const std::size_t bytes = h.slices[k].nbytes();
            if (bytes != 0) std::memcpy(h.slices[k].raw_data(), x.raw_data() + static_cast<std::size_t>(i) * bytes, bytes);
          }
          bp.e->run(bp.in, syms, bp.out);
          for (std::size_t k = nc; k < bp.out.size(); ++k) {  // (the per-slice results, stacked)
            const any_tensor& y = bp.out[k];
            if (step == 0) detail::ensure_stacked(h.stacked[k], y.scalar_type(), len, y.extents());
            const std::size_t bytes = y.nbytes();
            if (bytes != 0) std::memcpy(h.stacked[k].raw_data() + static_cast<std::size_t>(i) * bytes, y.raw_data(), bytes);
          }
          for (std::size_t k = 0; k < nc; ++k) {
            std::swap(h.carry[k], bp.out[k]);
            bp.in[k].borrow(h.carry[k]);
          }
        }
        for (std::size_t k = 0; k < nc; ++k) s.env[h.node][k].borrow(bp.in[k]);
        for (std::size_t k = nc; k < n.vals.size(); ++k) s.env[h.node][k].borrow(h.stacked[k]);
        break;
      }
      case ir::control_kind::none: break;
    }
  }
  // the outputs: copies (never the inputs', the constants' or the parts' own buffers)
  const auto& outs = g.output().args;
  outputs.resize(outs.size());
  for (std::size_t i = 0; i < outs.size(); ++i) detail::copy_into(outputs[i], s.at(std::get<ir::value_ref>(outs[i])));
  s.last.resize(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) s.last[i] = inputs[i].extents();  // (no allocation once sized)
  s.has_last = true;
}

TYPEX_API std::shared_ptr<engine> make_control_flow_engine(program_binding binding,
                                                           std::function<std::shared_ptr<engine>(program_binding)> compile) {
  return std::make_shared<control_flow_engine>(std::move(binding), std::move(compile));
}

TYPEX_API plan::report control_flow_engine::report() const {
  plan::report r;
  const auto add = [&](const plan::report& p) {
    r.steps += p.steps;
    r.folded += p.folded;
    r.fused += p.fused;
    r.chained += p.chained;
    r.views += p.views;
    r.winograd += p.winograd;
    r.arena_bytes += p.arena_bytes;
    r.unplanned_bytes += p.unplanned_bytes;
    r.allocating_ops.insert(r.allocating_ops.end(), p.allocating_ops.begin(), p.allocating_ops.end());
  };
  for (const state::segment& seg : s_->segments) add(seg.p.e->report());
  for (const state::hop& h : s_->hops)
    for (const state::part& p : h.parts) add(p.e->report());
  return r;
}

}  // namespace typex::kit
#endif  // TYPEX_HEADER_DEFINITIONS
