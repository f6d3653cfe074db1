// typex/export/unflatten_plan.hpp — where each module call's part of a flat program is: the
// untyped, backend-free half of unflatten (export/unflatten.hpp runs it on a backend).
//
// A program's nodes carry their module stack with the call each frame belongs to (`fc`, `fc@1`:
// recorded at trace time, one entry per call, kept by every pass). A call's own nodes are those
// whose innermost frame is that call; the nodes of deeper frames are its children's calls. So each
// call becomes a list of steps in graph order: segments (runs of its own nodes, each an exported
// program of its own: the parameters and constants it reads lifted, the values it reads from
// elsewhere as inputs, the buffers it reads or writes as inputs it writes back) and child calls.
// Values cross a boundary by name, explicitly: a root buffer read in every layer is the root's
// state that each layer's segment takes; an output of one layer read by the root later is an
// output of that layer's call.
#pragma once

#include <typex/export/export_program.hpp>
#include <typex/export/exported_program.hpp>
#include <typex/ir/control_flow.hpp>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace typex::detail {

struct unflatten_step {
  // A segment: a program of the call's own nodes. Its user inputs are `reads` (values by name, in
  // the call's value slots), then `state` (the buffers it reads or writes, by FQN: the tree's
  // current tensors, written in place by the program's USER_INPUT_MUTATION outputs). Its user
  // outputs are the values `produces` names.
  std::shared_ptr<const exported_program> program;
  std::vector<std::size_t> reads;
  std::vector<std::string> state;
  std::vector<std::size_t> produces;
  // A call of a child: the call's index in the plan, its argument slots (the child's tensor inputs
  // in order) and the slots its outputs go to.
  std::size_t callee = 0;
  std::vector<std::size_t> args;
  std::vector<std::size_t> results;

  bool is_call() const noexcept { return program == nullptr; }
};

struct unflatten_call {
  std::string id;      // the module call graph's entry: "fc", "fc@1"; "" for the root
  std::string module;  // the module's FQN: "fc"
  std::string type;    // its C++ type (the nn_module_stack's)
  module_call_signature signature;
  bool preserved = false;
  std::vector<unflatten_step> steps;
  std::vector<std::string> slot_names;    // the call's values (graph names), by slot
  std::vector<ir::tensor_meta> slot_meta;
  std::vector<std::size_t> inputs;        // the slots of the signature's tensor inputs, in order
  // For each of `inputs`: the FQN of the tree's tensor it is (a parameter or buffer handed to the
  // module as an argument, whose nodes read the tree's tensor), or "".
  std::vector<std::string> input_state;
  std::vector<std::size_t> captured_inputs;  // then the slots of `captured` (its parent passes them)
  std::vector<std::pair<std::size_t, std::string>> state_slots;  // slots holding the tree's tensors (FQN)
  std::vector<std::size_t> outputs;       // the slots of its outputs, in order
  // The whole call as one program (its children's nodes included, returning the call's outputs):
  // what runs while nothing inside the call is swapped. Absent where the call is one segment.
  std::optional<unflatten_step> whole;
  // Values the call reads that are neither its inputs nor state (a tensor captured from the
  // enclosing code): it runs inside its parent, not alone.
  std::vector<std::string> captured;
};

struct unflatten_module {
  std::string fqn, type;
  std::vector<std::size_t> calls;     // its calls in order (indices into the plan's calls)
  std::vector<std::size_t> children;  // direct submodules (indices into the plan's modules)
};

struct unflatten_plan {
  std::vector<unflatten_call> calls;      // [0]: the root
  std::vector<unflatten_module> modules;  // [0]: the root ""
  std::vector<std::string> mutable_state;  // the buffers some call writes (the tree holds them)
  std::shared_ptr<const exported_program> source;

  const unflatten_module* find_module(std::string_view fqn) const {
    for (const unflatten_module& m : modules)
      if (m.fqn == fqn) return &m;
    return nullptr;
  }
};

// Splits `ep` by its module calls (each step's program verified as it is made).
TYPEX_API unflatten_plan plan_unflatten(const exported_program& ep);

// The parent path of an FQN ("layers.3.attn" -> "layers.3"; "fc" -> "").
inline std::string_view parent_fqn(std::string_view fqn) {
  const auto dot = fqn.rfind('.');
  return dot == std::string_view::npos ? std::string_view{} : fqn.substr(0, dot);
}
// Whether `fqn` is `module` or inside it.
inline bool inside_module(std::string_view fqn, std::string_view module) {
  if (module.empty()) return true;
  return fqn == module || (fqn.size() > module.size() && fqn.starts_with(module) && fqn[module.size()] == '.');
}

}  // namespace typex::detail

// ---- definitions: compiled once in typex::runtime, or inline here in header-only builds
// (config.hpp: TYPEX_SEPARATE_COMPILATION) ----
#if TYPEX_HEADER_DEFINITIONS
#include <typex/ir/printer.hpp>

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace typex::detail {
namespace unflatten_impl {

inline std::uint64_t key(ir::value_ref v) noexcept { return std::uint64_t{v.node} << 32 | v.index; }

// Copies call `id` of graph `from` into `into`, its arguments through `local` (from's values ->
// into's), with the module stack `stack`; maps its values in `local`.
inline void copy_call(ir::graph& into, const ir::graph& from, ir::node_id id, std::unordered_map<std::uint64_t, ir::value_ref>& local,
                      std::vector<ir::module_frame> stack) {
  auto map_arg = [&](const ir::argument& a) {
    ir::argument out = a;
    if (auto* r = std::get_if<ir::value_ref>(&out)) *r = local.at(key(*r));
    else if (auto* rs = std::get_if<std::vector<ir::value_ref>>(&out))
      for (ir::value_ref& x : *rs) x = local.at(key(x));
    return out;
  };
  const ir::node& n = from[id];
  std::vector<ir::argument> args;
  for (const ir::argument& a : n.args) args.push_back(map_arg(a));
  if (ir::is_control_flow(n))  // (its subgraphs, brought along: renamed where `into` has the name for another body)
    for (ir::argument& a : args)
      if (auto* s = std::get_if<std::string>(&a)) *s = into.import_subgraph(from, *s);
  std::vector<std::pair<std::string, ir::argument>> kwargs;
  for (const auto& [k, a] : n.kwargs) kwargs.emplace_back(k, map_arg(a));
  const ir::node_id copy = into.add_call({.target = n.target, .args = std::move(args), .kwargs = std::move(kwargs), .vals = n.vals,
                                          .name_hint = n.name, .nn_module_stack = std::move(stack), .stack_trace = n.stack_trace});
  for (std::uint32_t k = 0; k < n.vals.size(); ++k) local[key(ir::value_ref{id, k})] = ir::value_ref{copy, k};
}

struct builder {
  const exported_program& ep;
  const ir::graph& g;
  unflatten_plan plan;
  std::unordered_map<std::string, ir::value_ref> value_of;      // value name -> value
  std::unordered_map<std::uint64_t, std::string> name_of;       // value -> name
  std::unordered_map<std::string, const input_spec*> spec_of;   // placeholder name -> its input spec
  struct write {
    std::string buffer;
    ir::value_ref value;
  };
  std::vector<write> writes;  // every buffer write, in graph order
  std::vector<std::vector<ir::node_id>> users;
  std::unordered_set<std::uint64_t> flat_outputs;

  explicit builder(const exported_program& p) : ep(p), g(p.graph()) {
    for (ir::node_id i = 0; i < g.size(); ++i) {
      const ir::node& n = g[i];
      for (std::uint32_t k = 0; k < n.vals.size(); ++k) {
        const ir::value_ref v{i, k};
        std::string s = detail::value_name(g, v);
        value_of.emplace(s, v);
        name_of.emplace(key(v), std::move(s));
      }
    }
    const auto placeholders = g.placeholders();
    for (std::size_t i = 0; i < placeholders.size(); ++i) spec_of.emplace(g[placeholders[i]].name, &ep.signature().input_specs()[i]);
    users = g.users();
    if (g.has_output())
      for (const ir::argument& a : g.output().args) ir::graph::for_each_ref(a, [&](ir::value_ref r) { flat_outputs.insert(key(r)); });
    // the write log (the entries'), then the final writes the signature names (programs from
    // before the log was kept)
    for (const module_call_entry& e : ep.module_call_graph())
      for (const buffer_write& w : e.writes)
        if (const auto it = value_of.find(w.value); it != value_of.end()) writes.push_back({w.buffer, it->second});
    for (const output_spec& o : ep.signature().output_specs()) {
      if (o.kind == output_kind::user_input_mutation) {
        detail::raise<unsupported_error>([&](auto& w) {
          w.put("typex::unflatten: the program writes its input '"); w.put(o.target);
          w.put("' (USER_INPUT_MUTATION); an unflattened tree runs programs whose writes are to buffers: export a model "
                "that keeps that state in a typex::buffer");
        });
      }
      if (o.kind != output_kind::buffer_mutation && o.kind != output_kind::user_output) {
        detail::raise<unsupported_error>([&](auto& w) {
          w.put("typex::unflatten: the program's output '"); w.put(o.arg);
          w.put("' is a training output (a joint program): unflatten an inference program (the one export_program gives, "
                "or its decompositions)");
        });
      }
      if (o.kind != output_kind::buffer_mutation) continue;
      const ir::value_ref v = value_of.at(o.arg);
      const bool logged = std::any_of(writes.begin(), writes.end(), [&](const write& w) { return w.buffer == o.target && w.value == v; });
      if (!logged) writes.push_back({o.target, v});
    }
    std::stable_sort(writes.begin(), writes.end(), [](const write& a, const write& b) { return a.value.node < b.value.node; });
    for (const write& w : writes)
      if (std::find(plan.mutable_state.begin(), plan.mutable_state.end(), w.buffer) == plan.mutable_state.end())
        plan.mutable_state.push_back(w.buffer);
  }

  bool is_mutable(std::string_view fqn) const {
    return std::find(plan.mutable_state.begin(), plan.mutable_state.end(), fqn) != plan.mutable_state.end();
  }
  // The buffer whose current value `v` is just before node `at` runs, if any.
  std::optional<std::string> current_state(ir::value_ref v, ir::node_id at) const {
    if (g[v.node].op == ir::node_op::placeholder) {
      const input_spec* s = spec_of.at(g[v.node].name);
      if (s->kind != input_kind::buffer || !is_mutable(s->target)) return std::nullopt;
      for (const write& w : writes)  // (written before `at`: v is no longer its value)
        if (w.buffer == s->target && w.value.node < at) return std::nullopt;
      return s->target;
    }
    for (std::size_t i = 0; i < writes.size(); ++i) {
      if (writes[i].value != v) continue;
      bool later = false;  // (another write of it before `at`)
      for (std::size_t j = 0; j < writes.size(); ++j)
        if (j != i && writes[j].buffer == writes[i].buffer && writes[j].value.node > v.node && writes[j].value.node < at) later = true;
      if (!later && v.node < at) return writes[i].buffer;
    }
    return std::nullopt;
  }

  // Which call the node's frame at `depth` is (the root's own nodes have none).
  static const std::string* frame_call(const ir::node& n, std::size_t depth) {
    return depth < n.nn_module_stack.size() ? &n.nn_module_stack[depth].call_id() : nullptr;
  }

  std::size_t call_index(std::string_view id) const {
    for (std::size_t i = 0; i < plan.calls.size(); ++i)
      if (plan.calls[i].id == id) return i;
    return static_cast<std::size_t>(-1);
  }

  // Builds call `ci` (at stack depth `depth`: the root is 0) from its nodes.
  void build_call(std::size_t ci, std::size_t depth, const std::vector<ir::node_id>& nodes);
};

inline void builder::build_call(std::size_t ci, std::size_t depth, const std::vector<ir::node_id>& nodes) {
  // slots: a call's values by name
  std::unordered_map<std::uint64_t, std::size_t> slot;
  auto slot_of = [&](ir::value_ref v) {
    const auto it = slot.find(key(v));
    if (it != slot.end()) return it->second;
    unflatten_call& c = plan.calls[ci];
    const std::size_t s = c.slot_names.size();
    c.slot_names.push_back(name_of.at(key(v)));
    c.slot_meta.push_back(g.meta(v));
    slot.emplace(key(v), s);
    return s;
  };
  std::unordered_set<std::uint64_t> available;  // values a step may read by slot
  {
    unflatten_call& c = plan.calls[ci];
    const ir::node_id call_first = nodes.empty() ? static_cast<ir::node_id>(g.size()) : nodes.front();
    for (const std::string& in : c.signature.inputs) {
      const auto it = value_of.find(in);
      if (it == value_of.end()) continue;  // (a number leaf, specialized into the program; or a tensor nothing read)
      const std::size_t s = slot_of(it->second);
      plan.calls[ci].inputs.push_back(s);
      std::string state;
      const ir::node& src = g[it->second.node];
      if (src.op == ir::node_op::placeholder && spec_of.at(src.name)->kind != input_kind::user_input) state = spec_of.at(src.name)->target;
      else if (const auto b = current_state(it->second, call_first)) state = *b;
      plan.calls[ci].input_state.push_back(std::move(state));
      available.insert(key(it->second));
    }
  }
  // units in graph order: own nodes, and the first node of each child call
  std::vector<bool> in_call(g.size(), false);
  for (const ir::node_id n : nodes) in_call[n] = true;
  struct unit {
    bool own;
    std::vector<ir::node_id> nodes;
    std::string child;
  };
  std::vector<unit> units;
  std::unordered_map<std::string, std::size_t> child_unit;
  for (const ir::node_id n : nodes) {
    const std::string* child = frame_call(g[n], depth);
    if (child == nullptr) {
      if (units.empty() || !units.back().own) units.push_back({true, {}, {}});
      units.back().nodes.push_back(n);
      continue;
    }
    if (const auto it = child_unit.find(*child); it != child_unit.end()) {
      units[it->second].nodes.push_back(n);
      continue;
    }
    child_unit.emplace(*child, units.size());
    units.push_back({false, {n}, *child});
  }
  // what is read after a unit (by later units or as the call's outputs)
  auto needed_outside = [&](const std::vector<bool>& inside, ir::value_ref v) {
    for (const ir::node_id u : users[v.node])
      if (!inside[u]) return true;
    return false;
  };
  // A program of the nodes `seg`: a run of the call's own nodes, or (whole) all its nodes, its
  // children's included, returning what the call returns.
  auto make_segment = [&](const std::vector<ir::node_id>& seg, bool whole) -> unflatten_step {
    std::vector<bool> inside(g.size(), false);
    for (const ir::node_id n : seg) inside[n] = true;
    const ir::node_id first = seg.front();
      unflatten_step st;
      ir::graph sg;
      std::vector<input_spec> ins;
      std::vector<output_spec> outs;
      named_tensors state, constants;
      std::unordered_map<std::uint64_t, ir::value_ref> local;  // flat value -> segment value
      std::vector<std::pair<ir::value_ref, std::size_t>> env_reads;    // (flat value, slot)
      std::vector<std::pair<ir::value_ref, std::string>> state_reads;  // (flat value, buffer)
      std::vector<std::pair<std::string, std::string>> lifted;          // (placeholder, fqn)
      std::vector<ir::value_ref> lifted_values;
      // the values read from outside, classified
      for (const ir::node_id n : seg)
        ir::graph::for_each_ref(g[n], [&](ir::value_ref r) {
          if (inside[r.node] || local.contains(key(r))) return;
          local.emplace(key(r), ir::value_ref{0});  // (placeholder made below)
          if (const auto b = current_state(r, first)) {
            state_reads.emplace_back(r, *b);
            return;
          }
          const ir::node& src = g[r.node];
          if (src.op == ir::node_op::placeholder) {
            const input_spec* s = spec_of.at(src.name);
            if (s->kind == input_kind::buffer && is_mutable(s->target)) {
              detail::raise<unsupported_error>([&](auto& w) {
                w.put("typex::unflatten: node '"); w.put(g[first].name); w.put("' reads the value buffer '"); w.put(s->target);
                w.put("' had before a write earlier in the call; an unflattened tree keeps one current value per buffer");
              });
            }
            if (s->kind != input_kind::user_input) {
              lifted_values.push_back(r);
              return;
            }
          }
          const std::size_t s = slot_of(r);
          if (!available.contains(key(r))) {
            // read from outside this call: passed by its parent (explicitly), and the reason it
            // cannot run alone
            plan.calls[ci].captured.push_back(name_of.at(key(r)));
            plan.calls[ci].captured_inputs.push_back(s);
            available.insert(key(r));
          }
          env_reads.emplace_back(r, s);
        });
      // placeholders: lifted state (parameters, buffers, constants), then the values, then the
      // buffers the tree holds
      for (const input_kind k : {input_kind::parameter, input_kind::buffer, input_kind::constant_tensor})
        for (const ir::value_ref r : lifted_values) {
          const ir::node& src = g[r.node];
          const input_spec* s = spec_of.at(src.name);
          if (s->kind != k) continue;
          const ir::node_id ph = sg.add_placeholder(src.name, src.vals.front());
          local[key(r)] = ir::value_ref{ph};
          ins.push_back({s->kind, sg[ph].name, s->target, s->persistent});
          const bool in_state = s->kind == input_kind::parameter || (s->kind == input_kind::buffer && s->persistent);
          if (in_state) {
            if (!state.contains(s->target)) state.insert(s->target, ep.state_dict().at(s->target));
          } else if (!constants.contains(s->target)) {
            constants.insert(s->target, ep.constants().at(s->target));
          }
        }
      for (const auto& [r, s] : env_reads) {
        const ir::node_id ph = sg.add_placeholder(name_of.at(key(r)), g.meta(r));
        local[key(r)] = ir::value_ref{ph};
        ins.push_back({input_kind::user_input, sg[ph].name, "", true});
        st.reads.push_back(s);
      }
      // the buffers: read ones, then ones only written
      std::vector<std::pair<std::string, ir::node_id>> buffer_ph;
      auto buffer_placeholder = [&](const std::string& fqn, const ir::tensor_meta& m) {
        for (const auto& [f, ph] : buffer_ph)
          if (f == fqn) return ph;
        std::string hint = "state_";
        hint += fqn;
        const ir::node_id ph = sg.add_placeholder(hint, m);
        ins.push_back({input_kind::user_input, sg[ph].name, "", true});
        st.state.push_back(fqn);
        buffer_ph.emplace_back(fqn, ph);
        return ph;
      };
      for (const auto& [r, b] : state_reads) local[key(r)] = ir::value_ref{buffer_placeholder(b, g.meta(r))};
      std::vector<std::pair<std::string, ir::value_ref>> last_write;  // (buffer, flat value) written here, last of each
      for (const write& w : writes)
        if (inside[w.value.node]) {
          bool found = false;
          for (auto& [b, v] : last_write)
            if (b == w.buffer) { v = w.value; found = true; }
          if (!found) last_write.emplace_back(w.buffer, w.value);
        }
      for (const auto& [b, v] : last_write) buffer_placeholder(b, g.meta(v));
      // the nodes
      for (const ir::node_id n : seg) copy_call(sg, g, n, local, g[n].nn_module_stack);
      // outputs: the buffers written (USER_INPUT_MUTATION of their placeholders), then the values
      // read after this segment
      std::vector<ir::value_ref> out_values;
      for (const auto& [b, v] : last_write) {
        const ir::value_ref lv = local.at(key(v));
        out_values.push_back(lv);
        std::string arg = sg[lv.node].name;
        if (sg[lv.node].vals.size() > 1) arg = detail::with_number(arg + "[", lv.index) + "]";
        ir::node_id ph = 0;
        for (const auto& [f, p] : buffer_ph)
          if (f == b) ph = p;
        outs.push_back({output_kind::user_input_mutation, std::move(arg), sg[ph].name});
      }
      const unflatten_call& self = plan.calls[ci];
      for (const ir::node_id n : seg)
        for (std::uint32_t k = 0; k < g[n].vals.size(); ++k) {
          const ir::value_ref v{n, k};
          bool needed = !whole && (needed_outside(inside, v) || (depth == 0 && flat_outputs.contains(key(v))));
          if (!needed)
            for (const std::string& o : self.signature.outputs) needed = needed || o == name_of.at(key(v));
          if (!needed) continue;
          const ir::value_ref lv = local.at(key(v));
          out_values.push_back(lv);
          std::string arg = sg[lv.node].name;
          if (sg[lv.node].vals.size() > 1) arg = detail::with_number(arg + "[", lv.index) + "]";
          outs.push_back({output_kind::user_output, std::move(arg), ""});
          st.produces.push_back(slot_of(v));
          available.insert(key(v));
        }
      sg.set_output(std::move(out_values));
      module_call_signature root;
      for (const input_spec& i : ins)
        if (i.kind == input_kind::user_input) root.inputs.push_back(i.arg);
      for (const output_spec& o : outs)
        if (o.kind == output_kind::user_output) root.outputs.push_back(o.arg);
      root.in_spec = flat_spec(root.inputs.size(), true);
      root.out_spec = flat_spec(root.outputs.size(), true);
      exported_program p(std::move(sg), graph_signature(std::move(ins), std::move(outs)), std::move(state), std::move(constants), ep.ranges(),
                         {module_call_entry{"", std::move(root)}});
      p.set_trusted_shapes(ep.trusted_shapes());
      if (ep.dialect() != ir::export_dialect) p.set_dialect(ep.dialect());

      st.program = std::make_shared<const exported_program>(std::move(p));
      return st;
  };
  const std::string& call_id = plan.calls[ci].id;
  for (const unit& u : units) {
    std::vector<bool> inside(g.size(), false);
    for (const ir::node_id n : u.nodes) inside[n] = true;
    const ir::node_id first = u.nodes.front();
    if (!u.own) {
      const std::size_t child = call_index(u.child);
      if (child == static_cast<std::size_t>(-1)) {
        detail::raise<ir::graph_error>([&](auto& w) {
          w.put("typex::unflatten: node '"); w.put(g[first].name); w.put("' belongs to the call '"); w.put(u.child);
          w.put("', which the program's module call graph does not list");
        });
      }
      build_call(child, depth + 1, u.nodes);
      unflatten_step st;
      st.callee = child;
      const unflatten_call& c = plan.calls[child];
      std::vector<std::size_t> child_args = c.inputs;
      child_args.insert(child_args.end(), c.captured_inputs.begin(), c.captured_inputs.end());
      for (const std::size_t s : child_args) {
        const ir::value_ref v = value_of.at(plan.calls[child].slot_names[s]);
        const ir::node& src = g[v.node];
        if (src.op == ir::node_op::placeholder && spec_of.at(src.name)->kind != input_kind::user_input) {
          // (a parameter or buffer handed to the submodule: the tree's tensor)
          const std::size_t here = slot_of(v);
          plan.calls[ci].state_slots.emplace_back(here, spec_of.at(src.name)->target);
          available.insert(key(v));
        } else if (const auto b = current_state(v, first); b && !available.contains(key(v))) {
          // (a buffer's value written by an earlier call, handed on: the tree's tensor now)
          const std::size_t here = slot_of(v);
          plan.calls[ci].state_slots.emplace_back(here, *b);
          available.insert(key(v));
        }
        if (!available.contains(key(v)) && std::find(c.captured_inputs.begin(), c.captured_inputs.end(), s) != c.captured_inputs.end()) {
          // (captured from further out: this call passes it on)
          plan.calls[ci].captured.push_back(c.slot_names[s]);
          const std::size_t here = slot_of(v);
          plan.calls[ci].captured_inputs.push_back(here);
          available.insert(key(v));
        }
        if (!available.contains(key(v))) {
          detail::raise<ir::graph_error>([&](auto& w) {
            w.put("typex::unflatten: the call '"); w.put(c.id); w.put("' reads '"); w.put(c.slot_names[s]);
            w.put("' before the call '"); w.put(call_id.empty() ? "(root)" : call_id); w.put("' has computed it (its nodes are out of order)");
          });
        }
        st.args.push_back(slot_of(v));
      }
      for (const std::size_t s : c.outputs) {
        const ir::value_ref v = value_of.at(c.slot_names[s]);
        st.results.push_back(slot_of(v));
        available.insert(key(v));
      }
      // values the child computed and others read, which its signature does not return: a
      // signature read off the graph returns them all; one the module stated may not
      for (const ir::node_id n : u.nodes)
        for (std::uint32_t k = 0; k < g[n].vals.size(); ++k) {
          const ir::value_ref v{n, k};
          if (available.contains(key(v)) || !needed_outside(inside, v)) continue;
          if (std::any_of(writes.begin(), writes.end(), [&](const write& w) { return w.value == v; })) continue;  // (a buffer's value: read as state)
          detail::raise<ir::graph_error>([&](auto& w) {
            w.put("typex::unflatten: '"); w.put(name_of.at(key(v))); w.put("', computed inside the call '"); w.put(c.id);
            w.put("', is read outside it, but the call's signature does not return it (outputs: ");
            for (std::size_t i = 0; i < c.signature.outputs.size(); ++i) { if (i) w.put(", "); w.put(c.signature.outputs[i]); }
            w.put("); return it from the module (scope.returns(...)) so that the boundary is explicit");
          });
        }
      plan.calls[ci].steps.push_back(std::move(st));
      continue;
    }
    plan.calls[ci].steps.push_back(make_segment(u.nodes, false));
  }
  // the call's outputs
  unflatten_call& c = plan.calls[ci];
  for (const std::string& o : c.signature.outputs) {
    const auto it = value_of.find(o);
    if (it == value_of.end()) {
      detail::raise<signature_error>([&](auto& w) {
        w.put("typex::unflatten: the call '"); w.put(c.id.empty() ? "(root)" : c.id); w.put("' returns '"); w.put(o);
        w.put("', which is no longer in the program (nothing read it, and dead code elimination removed it); export with "
              "preserve_module_call_signature = {\""); w.put(c.module); w.put("\"} to keep it");
      });
    }
    if (!available.contains(key(it->second))) {
      detail::raise<ir::graph_error>([&](auto& w) {
        w.put("typex::unflatten: the call '"); w.put(c.id.empty() ? "(root)" : c.id); w.put("' returns '"); w.put(o);
        w.put("', which none of its steps computes");
      });
    }
    c.outputs.push_back(slot.at(key(it->second)));
  }
  const bool one_segment = c.steps.size() == 1 && !c.steps.front().is_call();
  if (!nodes.empty() && !c.steps.empty() && !one_segment) {
    try {
      plan.calls[ci].whole = make_segment(nodes, true);
    } catch (const typex::error&) {
      // (a whole program its inputs cannot bind, where its pieces can: the call runs step by step)
    }
  }
}

}  // namespace unflatten_impl

TYPEX_API auto plan_unflatten(const exported_program& ep) -> unflatten_plan {
  unflatten_impl::builder b(ep);
  const ir::graph& g = ep.graph();
  const auto& entries = ep.module_call_graph();
  if (entries.empty() || !entries.front().fqn.empty() || !entries.front().signature)
    detail::raise_message<ir::graph_error>("typex::unflatten: the program has no root entry in its module call graph");
  // the calls, and the module each is a call of, with its type (from the nodes' frames)
  std::unordered_map<std::string, std::string> type_of;
  for (const ir::node& n : g.nodes())
    for (const ir::module_frame& f : n.nn_module_stack) type_of.emplace(f.path, f.type);
  for (const module_call_entry& e : entries) {
    unflatten_call c;
    c.id = e.fqn;
    const auto at = e.fqn.find('@');
    c.module = at == std::string::npos ? e.fqn : e.fqn.substr(0, at);
    if (const auto it = type_of.find(c.module); it != type_of.end()) c.type = it->second;
    if (e.signature) c.signature = *e.signature;
    c.preserved = e.preserved;
    b.plan.calls.push_back(std::move(c));
  }
  b.plan.calls.front().type = "";
  // the modules: each FQN with calls, and its ancestors
  auto module_index = [&](const std::string& fqn, auto& self) -> std::size_t {
    for (std::size_t i = 0; i < b.plan.modules.size(); ++i)
      if (b.plan.modules[i].fqn == fqn) return i;
    std::size_t parent = 0;
    if (!fqn.empty()) parent = self(std::string(parent_fqn(fqn)), self);
    b.plan.modules.push_back({fqn, {}, {}, {}});
    const std::size_t i = b.plan.modules.size() - 1;
    if (!fqn.empty()) b.plan.modules[parent].children.push_back(i);
    return i;
  };
  module_index("", module_index);
  for (std::size_t i = 0; i < b.plan.calls.size(); ++i) {
    const std::size_t m = module_index(b.plan.calls[i].module, module_index);
    b.plan.modules[m].calls.push_back(i);
    if (b.plan.modules[m].type.empty()) b.plan.modules[m].type = b.plan.calls[i].type;
  }
  std::vector<ir::node_id> nodes;
  for (ir::node_id i = 0; i < g.size(); ++i)
    if (g[i].op == ir::node_op::call_function) nodes.push_back(i);
  b.build_call(0, 0, nodes);
  // calls with no nodes of their own (an identity: eval-mode dropout) are no step of their parent;
  // alone they return their inputs (when that is what their signature says)
  for (std::size_t i = 1; i < b.plan.calls.size(); ++i) {
    unflatten_call& c = b.plan.calls[i];
    if (!c.slot_names.empty() || !c.steps.empty()) continue;
    const bool identity = std::all_of(c.signature.outputs.begin(), c.signature.outputs.end(), [&](const std::string& o) {
      return std::find(c.signature.inputs.begin(), c.signature.inputs.end(), o) != c.signature.inputs.end() && b.value_of.contains(o);
    });
    if (identity) b.build_call(i, 0, {});
  }
  b.plan.source = std::make_shared<const exported_program>(ep);
  return std::move(b.plan);
}

}  // namespace typex::detail
#endif  // TYPEX_HEADER_DEFINITIONS
