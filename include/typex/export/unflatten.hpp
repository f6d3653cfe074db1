// typex/export/unflatten.hpp — the module tree back from an exported program (torch.export.unflatten).
//
//   auto tree = typex::unflatten(program);                 // unflattened_module<TYPEX_DEFAULT_BACKEND>
//   std::vector<typex::any_tensor> y = tree({x});          // the whole model, as the program runs it
//   auto attn = tree.submodule("layers.3.self_attn");      // one submodule, called alone
//   std::vector<typex::any_tensor> a = attn({h});          // its first call's convention; attn.call("...@1", ...)
//   tree.swap("layers.3.self_attn", replacement_program);  // another implementation of the same signature
//
// Each module call runs its own part of the program: runs of its own nodes are programs planned by
// the backend once (export/unflatten_plan.hpp says how the program is split), its submodules'
// calls are calls of theirs. Boundaries come from the calls recorded at trace time (`fc`, `fc@1`:
// a submodule called twice is two calls sharing its parameters, each with its own nodes, so
// different constant arguments stay different). The tree holds the buffers the program writes
// (one tensor per buffer, written in place by the call that writes it: a submodule's running
// statistics are its own, a root buffer read by every layer is the root's); parameters and
// constants are the program's.
//
// Contracts:
//  - a submodule view (submodule()) shares its tree's state: calling it alone updates the same
//    buffers a whole-model call does. A copy of the tree has buffers of its own.
//  - calls may come from several threads; a tree whose calls write buffers serializes them;
//    swap() and restore() wait for the calls running and hold the next ones.
//  - swap() checks the replacement against every call of the module: the same input and output
//    trees, dtypes, ranks and static extents (a symbolic extent takes a symbolic one). Only a call
//    whose signature export preserved (export_options::preserve_module_call_signature) can be
//    swapped: elsewhere the program may have folded the boundary away.
#pragma once

#include <typex/export/program_module.hpp>
#include <typex/export/export_program.hpp>
#include <typex/export/unflatten_plan.hpp>
#include <typex/trace/module.hpp>

#include <boost/hana/accessors.hpp>
#include <boost/hana/for_each.hpp>

#include <cstring>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace typex {

// How a replacement's flat inputs are taken from the call's (torch's FlatArgsAdapter, as data so
// that it is checked at swap time): the replacement's input i is the call's tensor input inputs[i].
// Empty: the same layout, and the same input tree.
struct flat_args_adapter {
  std::vector<std::size_t> inputs;
};

template <class Backend = TYPEX_DEFAULT_BACKEND>
class unflattened_module;

namespace detail {
// The signature of a call as a sentence: "(f32[s0, 64]) -> (f32[s0, 64])".
TYPEX_API std::string describe_call(const unflatten_call& c);
// Whether a value of meta `given` may stand where `expected` is (dtype, rank, static extents).
TYPEX_API bool fits_meta(const ir::tensor_meta& expected, const ir::tensor_meta& given);
// Whether tensor `t` may stand where a value of meta `expected` is (dtype, rank, static extents).
TYPEX_API bool fits_tensor(const ir::tensor_meta& expected, const any_tensor& t);
// Checks `replacement` against every call of module `m` (a signature_error naming the path and both
// signatures otherwise).
TYPEX_API void check_swap(const unflatten_plan& plan, const unflatten_module& m, const exported_program& replacement,
                          const flat_args_adapter& adapter);
// The module `fqn` of the plan, or an argument_error naming it and the modules there are.
TYPEX_API const unflatten_module& module_at(const unflatten_plan& plan, std::string_view fqn);
// Checks a call's inputs at its boundary (count, dtype, rank, static extents): errors name the path.
TYPEX_API void check_call_inputs(const unflatten_call& c, std::span<const any_tensor> inputs);
// Input i of a call that is the tree's tensor (a parameter or buffer handed to the module): the
// call's nodes read the tree's, so the argument must be that tensor (or hold its values).
TYPEX_API void check_state_input(const unflatten_call& c, std::size_t i, const any_tensor& given, const any_tensor& tree);

// A module's replacement, as re-export sees it: its program, its current state (its module's
// buffers included) and its adapter.
struct tree_replacement {
  const exported_program* program = nullptr;
  named_tensors state;
  const flat_args_adapter* adapter = nullptr;
};
// One flat program from the tree: every call's segments and the replacements' programs inlined in
// order, the tree's current buffers as the state dict's, each call an entry of the module call
// graph again (so that the result unflattens again).
TYPEX_API exported_program reexport_tree(const unflatten_plan& plan, const std::vector<std::optional<tree_replacement>>& swaps,
                                         const std::vector<any_tensor>& buffers);

template <class Backend>
struct unflatten_shared {  // (immutable once made, but for the modules made on first use: shared by copies)
  unflatten_plan plan;
  typename Backend::options opts;
  // A program's module, made on first use (each holds its own copy of the weights it reads: a
  // tree run whole never makes its pieces'), once, by whichever thread gets there first.
  struct lazy {
    std::once_flag once;
    std::shared_ptr<const program_module<Backend>> module;
  };
  std::vector<std::vector<std::unique_ptr<lazy>>> steps;  // [call][step]; null for a call step
  std::vector<std::unique_ptr<lazy>> whole;               // [call]; null where the call has none
  std::vector<std::size_t> module_of_call;

  const program_module<Backend>& module(lazy& l, const exported_program& p) const {
    std::call_once(l.once, [&] { l.module = std::make_shared<const program_module<Backend>>(p, opts); });
    return *l.module;
  }
};

template <class Backend>
struct unflatten_state {
  std::shared_ptr<const unflatten_shared<Backend>> shared;
  std::vector<any_tensor> buffers;  // the plan's mutable_state, in order: the tree's own
  struct swapped {
    std::shared_ptr<const exported_program> program;
    program_module<Backend> run;
    flat_args_adapter adapter;
  };
  std::vector<std::optional<swapped>> swaps;  // by module index
  std::vector<char> swapped_inside;          // by call: a swapped module at or under one of its steps

  // After a swap or restore: which calls must run step by step (their whole program would run
  // the module that is swapped out).
  void mark_swaps() {
    const auto& plan = shared->plan;
    swapped_inside.assign(plan.calls.size(), 0);
    std::vector<char> done(plan.calls.size(), 0);
    auto visit = [&](std::size_t ci, auto& self) -> bool {
      if (done[ci]) return swapped_inside[ci] != 0;
      bool any = swaps[shared->module_of_call[ci]].has_value();
      for (const unflatten_step& st : plan.calls[ci].steps)
        if (st.is_call()) any = self(st.callee, self) || any;
      done[ci] = 1;
      swapped_inside[ci] = any ? 1 : 0;
      return any;
    };
    for (std::size_t ci = 0; ci < plan.calls.size(); ++ci) visit(ci, visit);
  }
  // Calls hold it shared (exclusive when they write buffers: one call at a time updates them);
  // swap() and restore() hold it exclusive, so a replacement never changes under a running call.
  std::shared_mutex calls;

  bool serialized() const {
    if (!buffers.empty()) return true;
    for (const auto& s : swaps)
      if (s && !s->program->signature().buffers_to_mutate().empty()) return true;
    return false;
  }

  const any_tensor& tensor(std::string_view fqn) const {
    const auto& m = shared->plan.mutable_state;
    for (std::size_t i = 0; i < m.size(); ++i)
      if (m[i] == fqn) return buffers[i];
    const exported_program& ep = *shared->plan.source;
    if (const any_tensor* t = ep.state_dict().find(fqn)) return *t;
    return ep.constants().at(fqn);
  }

  // What one call of the tree works in: each call's value slots, each segment's outputs (kept
  // between calls, so that the backend writes into the same tensors again when nothing else holds
  // them) and argument lists. One per concurrent call, leased from a pool.
  struct scratch {
    std::vector<std::vector<std::optional<any_tensor>>> env;  // [call][slot]
    std::vector<std::vector<std::vector<any_tensor>>> outs;   // [call][step]
    std::vector<std::vector<any_tensor>> whole;               // [call]
    std::vector<std::vector<any_tensor>> in;                  // [call]
  };
  std::mutex pool_mutex;
  std::vector<std::unique_ptr<scratch>> pool;

  std::unique_ptr<scratch> lease() {
    {
      const std::lock_guard<std::mutex> lock(pool_mutex);
      if (!pool.empty()) {
        std::unique_ptr<scratch> s = std::move(pool.back());
        pool.pop_back();
        return s;
      }
    }
    auto s = std::make_unique<scratch>();
    const auto& calls = shared->plan.calls;
    s->env.resize(calls.size());
    s->outs.resize(calls.size());
    s->in.resize(calls.size());
    s->whole.resize(calls.size());
    for (std::size_t i = 0; i < calls.size(); ++i) {
      s->env[i].resize(calls[i].slot_names.size());
      s->outs[i].resize(calls[i].steps.size());
    }
    return s;
  }
  void give_back(std::unique_ptr<scratch> s) {
    const std::lock_guard<std::mutex> lock(pool_mutex);
    pool.push_back(std::move(s));
  }

  void run_call(std::size_t ci, std::span<const any_tensor> args, std::vector<any_tensor>& out, scratch& sc) {
    const unflatten_shared<Backend>& sh = *shared;
    const unflatten_call& c = sh.plan.calls[ci];
    if (const auto& s = swaps[sh.module_of_call[ci]]) {
      std::vector<any_tensor>& in = sc.in[ci];
      in.clear();
      if (s->adapter.inputs.empty()) in.assign(args.begin(), args.begin() + static_cast<std::ptrdiff_t>(c.inputs.size()));
      else
        for (const std::size_t i : s->adapter.inputs) in.push_back(args[i]);
      s->run.run(in, out);
      in.clear();
      return;
    }
    std::vector<std::optional<any_tensor>>& env = sc.env[ci];
    for (std::size_t i = 0; i < c.inputs.size(); ++i) env[c.inputs[i]] = args[i];
    for (std::size_t i = 0; i < c.captured_inputs.size(); ++i) env[c.captured_inputs[i]] = args[c.inputs.size() + i];
    for (const auto& [slot, fqn] : c.state_slots) env[slot] = tensor(fqn);
    std::vector<any_tensor>& in = sc.in[ci];
    const bool whole = c.whole.has_value() && swapped_inside[ci] == 0;
    if (whole) {  // (nothing inside swapped: the call's nodes as one planned program)
      const unflatten_step& st = *c.whole;
      std::vector<any_tensor>& res = sc.whole[ci];
      in.clear();
      for (const std::size_t a : st.reads) in.push_back(*env[a]);
      for (const std::string& b : st.state) in.push_back(tensor(b));
      sh.module(*sh.whole[ci], *st.program).run(in, res);
      for (std::size_t i = 0; i < st.produces.size(); ++i) env[st.produces[i]] = res[i];
    }
    for (std::size_t k = 0; !whole && k < c.steps.size(); ++k) {
      const unflatten_step& st = c.steps[k];
      std::vector<any_tensor>& res = sc.outs[ci][k];
      in.clear();
      if (st.is_call()) {
        for (const std::size_t a : st.args) in.push_back(*env[a]);
        run_call(st.callee, in, res, sc);
        for (std::size_t i = 0; i < st.results.size() && i < res.size(); ++i) env[st.results[i]] = res[i];
        continue;
      }
      for (const std::size_t a : st.reads) in.push_back(*env[a]);
      for (const std::string& b : st.state) in.push_back(tensor(b));
      sh.module(*sh.steps[ci][k], *st.program).run(in, res);
      for (std::size_t i = 0; i < st.produces.size(); ++i) env[st.produces[i]] = res[i];
    }
    in.clear();
    out.resize(c.outputs.size());
    for (std::size_t i = 0; i < c.outputs.size(); ++i) {
      const any_tensor& v = *env[c.outputs[i]];
      // (an output that is an input or a buffer handed through: a copy, never an alias)
      bool alias = false;
      for (const any_tensor& a : args) alias = alias || (a.raw_data() != nullptr && a.raw_data() == v.raw_data());
      for (const any_tensor& b : buffers) alias = alias || (b.raw_data() != nullptr && b.raw_data() == v.raw_data());
      out[i] = alias ? v.clone() : v;
    }
    for (auto& e : env) e.reset();  // (the segments' outputs held by nothing else: reused next call)
  }
};
}  // namespace detail

// A submodule of an unflattened tree, by FQN: callable alone with its own calling convention (the
// tensor leaves of its call's inputs, in order; its outputs' leaves back). It shares the tree's
// state (see above); it keeps that state alive.
template <class Backend>
class submodule_view {
 public:
  submodule_view(std::shared_ptr<detail::unflatten_state<Backend>> st, std::size_t module) : m_(module), st_(std::move(st)) {}

  const std::string& fqn() const { return info().fqn; }
  // Its C++ type, as the nn_module_stack names it.
  const std::string& type() const { return info().type; }
  // Its calls in the program, in order: "fc", "fc@1", ...
  std::vector<std::string> calls() const {
    std::vector<std::string> out;
    for (const std::size_t c : info().calls) out.push_back(live().shared->plan.calls[c].id);
    return out;
  }
  // Its direct submodules' FQNs.
  std::vector<std::string> children() const {
    std::vector<std::string> out;
    for (const std::size_t c : info().children) out.push_back(live().shared->plan.modules[c].fqn);
    return out;
  }
  // The signature of a call ("fc" or "fc@1"; default: the first): value names and pytree specs.
  const module_call_signature& signature(std::string_view call = {}) const { return call_info(call).signature; }
  // Whether the call's signature was preserved at export (it may be swapped).
  bool preserved(std::string_view call = {}) const { return call_info(call).preserved; }
  // Whether `inputs` fit the call `id` (count, dtypes, ranks, static extents).
  bool fits(std::string_view id, std::span<const any_tensor> inputs) const {
    const detail::unflatten_call& c = call_info(id);
    if (inputs.size() != c.inputs.size()) return false;
    for (std::size_t i = 0; i < inputs.size(); ++i)
      if (!detail::fits_tensor(c.slot_meta[c.inputs[i]], inputs[i])) return false;
    return true;
  }
  // Whether the module is running a replacement (swap()).
  bool swapped() const {
    const std::shared_lock<std::shared_mutex> lock(live().calls);
    return live().swaps[m_].has_value();
  }

  // A submodule of this one ("3.self_attn" under "layers").
  submodule_view submodule(std::string_view relative) const {
    std::string fqn = info().fqn;
    if (!fqn.empty() && !relative.empty()) fqn += '.';
    fqn += relative;
    const detail::unflatten_module& m = detail::module_at(live().shared->plan, fqn);
    return submodule_view(st_, static_cast<std::size_t>(&m - live().shared->plan.modules.data()));
  }

  // Runs the module's first call alone (or `call`: "fc@1") on its tensor inputs.
  std::vector<any_tensor> operator()(const std::vector<any_tensor>& inputs) const { return call({}, inputs); }
  std::vector<any_tensor> call(std::string_view id, const std::vector<any_tensor>& inputs) const {
    const detail::unflatten_call& c = call_info(id);
    if (!c.captured.empty()) {
      detail::raise<signature_error>([&](auto& w) {
        w.put("typex::unflatten: '"); w.put(c.id.empty() ? "(root)" : c.id); w.put("' reads '"); w.put(c.captured.front());
        w.put("', a value computed outside it that its signature "); w.put(detail::describe_call(c));
        w.put(" does not take; it runs only inside its parent. Pass the value to the module as an argument "
              "(module_scope scope(*this, x, that)) and export again");
      });
    }
    detail::check_call_inputs(c, inputs);
    std::vector<any_tensor> out;
    std::shared_lock<std::shared_mutex> shared(live().calls);
    std::unique_lock<std::shared_mutex> exclusive;
    if (live().serialized()) {  // (decided under the shared lock: swaps do not change while it is held)
      shared.unlock();
      exclusive = std::unique_lock<std::shared_mutex>(live().calls);
    }
    for (std::size_t i = 0; i < c.input_state.size() && i < inputs.size(); ++i)
      if (!c.input_state[i].empty()) detail::check_state_input(c, i, inputs[i], live().tensor(c.input_state[i]));
    std::unique_ptr<typename detail::unflatten_state<Backend>::scratch> sc = live().lease();
    live().run_call(static_cast<std::size_t>(&c - live().shared->plan.calls.data()), inputs, out, *sc);
    live().give_back(std::move(sc));
    return out;
  }

  // The parameters and persistent buffers under this module, by their names relative to it (the
  // buffers' current values; a swapped module's: its replacement's).
  named_tensors state_dict() const {
    // (exclusive: no call is writing the buffers, no swap replacing a module while they are read)
    const std::unique_lock<std::shared_mutex> lock(live().calls);
    named_tensors out;
    const std::string& me = info().fqn;
    const auto& plan = live().shared->plan;
    auto relative = [&](const std::string& fqn) { return me.empty() ? fqn : fqn.substr(me.size() + 1); };
    auto swapped_prefix = [&](const std::string& fqn) -> const detail::unflatten_module* {
      for (std::size_t i = 0; i < plan.modules.size(); ++i)
        if (live().swaps[i] && !plan.modules[i].fqn.empty() && detail::inside_module(fqn, plan.modules[i].fqn)) return &plan.modules[i];
      return nullptr;
    };
    for (const auto& [fqn, t] : plan.source->state_dict())
      if (detail::inside_module(fqn, me) && swapped_prefix(fqn) == nullptr) out.insert(relative(fqn), live().tensor(fqn));
    for (std::size_t i = 0; i < plan.modules.size(); ++i) {
      if (!live().swaps[i] || !detail::inside_module(plan.modules[i].fqn, me)) continue;
      for (const auto& [name, t] : live().swaps[i]->run.state_dict()) {
        std::string fqn = plan.modules[i].fqn;
        fqn += '.';
        fqn += name;
        out.insert(relative(fqn), t);
      }
    }
    return out;
  }

  // Replaces this module by `replacement` (a program exported from another implementation) in
  // every call of it, checked first (see the header comment). Later calls of the tree, of this
  // module and of its ancestors run the replacement; its own submodules are no longer called.
  void swap(const exported_program& replacement, const flat_args_adapter& adapter = {}) {
    const auto& plan = live().shared->plan;
    detail::check_swap(plan, info(), replacement, adapter);
    const std::unique_lock<std::shared_mutex> lock(live().calls);
    auto p = std::make_shared<const exported_program>(replacement);
    live().swaps[m_].emplace(typename detail::unflatten_state<Backend>::swapped{p, program_module<Backend>(*p, live().shared->opts), adapter});
    live().mark_swaps();
  }
  // Runs the module's own program again (undoes swap()).
  void restore() {
    const std::unique_lock<std::shared_mutex> lock(live().calls);
    live().swaps[m_].reset();
    live().mark_swaps();
  }

 private:
  const detail::unflatten_module& info() const { return live().shared->plan.modules[m_]; }
  const detail::unflatten_call& call_info(std::string_view id) const {
    const auto& plan = live().shared->plan;
    const detail::unflatten_module& m = info();
    if (id.empty() && !m.calls.empty()) return plan.calls[m.calls.front()];
    for (const std::size_t c : m.calls)
      if (plan.calls[c].id == id) return plan.calls[c];
    detail::raise<argument_error>([&](auto& w) {
      w.put("typex::unflatten: '"); w.put(m.fqn.empty() ? "(root)" : m.fqn);
      if (m.calls.empty()) { w.put("' is never called in the program (only its submodules are)"); return; }
      w.put("' has no call '"); w.put(id); w.put("' (its calls:");
      for (const std::size_t c : m.calls) { w.put(" '"); w.put(plan.calls[c].id); w.put("'"); }
      w.put(")");
    });
  }

  std::size_t m_;

 protected:
  detail::unflatten_state<Backend>& live() const {
    if (st_ == nullptr) detail::raise_message<state_error>("typex::unflatten: the module was moved from; use the tree it was moved to");
    return *st_;
  }
  std::shared_ptr<detail::unflatten_state<Backend>> st_;
};

// The unflattened tree: the root module (a submodule_view of "") that owns the state. A copy has
// buffers and replacements of its own and shares the planned programs.
template <class Backend>
class unflattened_module : public submodule_view<Backend> {
 public:
  explicit unflattened_module(const exported_program& ep, const typename Backend::options& opts = {})
      : submodule_view<Backend>(make(ep, opts), 0) {}
  unflattened_module(const unflattened_module& o) : submodule_view<Backend>(copy_state(o.live()), 0) {}
  unflattened_module(unflattened_module&&) noexcept = default;
  unflattened_module& operator=(const unflattened_module& o) {
    if (this != &o) *this = unflattened_module(o);
    return *this;
  }
  unflattened_module& operator=(unflattened_module&&) noexcept = default;

  // The tree as one exported program again (torch: export of an unflattened module): its calls'
  // nodes and the replacements' programs inlined in order, the buffers' current values in its
  // state dict, the module call graph rebuilt. Without swaps it is the source program up to names.
  exported_program reexport() const {
    state_type& st = this->live();
    const std::unique_lock<std::shared_mutex> lock(st.calls);
    std::vector<std::optional<detail::tree_replacement>> swaps(st.swaps.size());
    for (std::size_t i = 0; i < st.swaps.size(); ++i)
      if (st.swaps[i]) {
        named_tensors own;  // (copies: the program must not change when the tree runs again)
        for (const auto& [fqn, t] : st.swaps[i]->run.state_dict()) own.insert(fqn, t.clone());
        swaps[i] = detail::tree_replacement{st.swaps[i]->program.get(), std::move(own), &st.swaps[i]->adapter};
      }
    std::vector<any_tensor> buffers;
    for (const any_tensor& b : st.buffers) buffers.push_back(b.clone());
    return detail::reexport_tree(st.shared->plan, swaps, buffers);
  }

  // New weights for the whole tree (torch's load_state_dict rules, as program_module's: names,
  // dtypes and extents checked; strict: missing and unexpected names are an error and nothing
  // changes). The names are the tree's (state_dict()): the program's, and a swapped module's
  // replacement's under its path, which its replacement loads too. The tree's programs are made
  // again from the new weights; its buffers take the loaded values. Not concurrent with calls.
  load_result load_state_dict(const named_tensors& sd, bool strict = true) { return load_state_dict(sd, load_options{.strict = strict}); }
  load_result load_state_dict(const named_tensors& sd, const load_options& options) {
    state_type& st = this->live();
    const std::unique_lock<std::shared_mutex> lock(st.calls);
    const detail::unflatten_plan& plan = st.shared->plan;
    // the destination: the program's names, less a swapped module's, plus its replacement's
    exported_program fresh = detail::with_own_tensors(*plan.source);
    std::vector<std::pair<std::string, any_tensor>> dst;
    auto swapped_at = [&](std::string_view fqn) -> std::size_t {
      for (std::size_t i = 0; i < plan.modules.size(); ++i)
        if (st.swaps[i] && !plan.modules[i].fqn.empty() && detail::inside_module(fqn, plan.modules[i].fqn)) return i;
      return plan.modules.size();
    };
    for (const auto& [fqn, t] : fresh.state_dict())
      if (swapped_at(fqn) == plan.modules.size()) dst.emplace_back(fqn, t);
    std::vector<std::pair<std::size_t, named_tensors>> replacement_state;
    for (std::size_t i = 0; i < plan.modules.size(); ++i) {
      if (!st.swaps[i]) continue;
      named_tensors own;
      for (const auto& [name, t] : st.swaps[i]->run.state_dict()) {
        any_tensor c = t.clone();
        own.insert(name, c);
        dst.emplace_back(detail::join_fqn(plan.modules[i].fqn, name), c);
      }
      replacement_state.emplace_back(i, std::move(own));
    }
    load_result r = detail::load_named(dst, sd, options, "typex::unflattened_module::load_state_dict");
    // (checked and copied: now the tree takes them; a make that throws leaves the tree as it was)
    auto next = make(fresh, st.shared->opts);
    for (auto& [i, own] : replacement_state) (void)st.swaps[i]->run.load_state_dict(own, true);
    for (std::size_t k = 0; k < plan.mutable_state.size(); ++k)
      if (const any_tensor* t = fresh.state_dict().find(plan.mutable_state[k]); t != nullptr && swapped_at(plan.mutable_state[k]) == plan.modules.size())
        std::memcpy(st.buffers[k].raw_data(), t->raw_data(), t->nbytes());
    st.shared = next->shared;
    {
      const std::lock_guard<std::mutex> pool(st.pool_mutex);
      st.pool.clear();
    }
    st.mark_swaps();
    return r;
  }

  // Every module of the tree, parents first: "", "layers", "layers.0", ...
  std::vector<std::string> modules() const {
    std::vector<std::string> out;
    for (const auto& m : this->live().shared->plan.modules) out.push_back(m.fqn);
    return out;
  }
  // The plan (its calls, steps and their programs): what a test or a picture reads.
  const detail::unflatten_plan& plan() const { return this->live().shared->plan; }

 private:
  using state_type = detail::unflatten_state<Backend>;

  static std::shared_ptr<state_type> make(const exported_program& ep, const typename Backend::options& opts) {
    auto sh = std::make_shared<detail::unflatten_shared<Backend>>();
    sh->plan = detail::plan_unflatten(ep);
    sh->opts = opts;
    using lazy = typename detail::unflatten_shared<Backend>::lazy;
    for (const auto& c : sh->plan.calls) {
      std::vector<std::unique_ptr<lazy>> steps;
      for (const auto& s : c.steps) steps.push_back(s.is_call() ? nullptr : std::make_unique<lazy>());
      sh->steps.push_back(std::move(steps));
      sh->whole.push_back(c.whole ? std::make_unique<lazy>() : nullptr);
      sh->module_of_call.push_back(static_cast<std::size_t>(&detail::module_at(sh->plan, c.module) - sh->plan.modules.data()));
    }
    // the root's programs now (the backend checks that it runs every node: an unsupported op is an
    // error here, not at a first call); the pieces when something first runs them
    const auto& root = sh->plan.calls.front();
    if (root.whole) (void)sh->module(*sh->whole.front(), *root.whole->program);
    else
      for (std::size_t k = 0; k < root.steps.size(); ++k)
        if (!root.steps[k].is_call()) (void)sh->module(*sh->steps.front()[k], *root.steps[k].program);
    auto st = std::make_shared<state_type>();
    for (const std::string& b : sh->plan.mutable_state) {
      const any_tensor* t = ep.state_dict().find(b);
      st->buffers.push_back((t != nullptr ? *t : ep.constants().at(b)).clone());
    }
    st->swaps.resize(sh->plan.modules.size());
    st->shared = std::move(sh);
    st->mark_swaps();
    return st;
  }
  static std::shared_ptr<state_type> copy_state(state_type& o) {
    auto st = std::make_shared<state_type>();
    const std::unique_lock<std::shared_mutex> lock(o.calls);
    st->shared = o.shared;
    for (const any_tensor& b : o.buffers) st->buffers.push_back(b.clone());
    st->swaps = o.swaps;  // (program_module copies: buffers of their own)
    st->swapped_inside = o.swapped_inside;
    return st;
  }
};

// ---- the typed tree: submodules reached through the model's own members --------------------------
//
//   auto tree = typex::unflatten(program, model);               // typed_unflattened<Model>
//   auto attn = tree.at(&Model::layers)[3].at(&Layer::self_attn); // typed_submodule<MultiheadAttention<...>>
//   auto y = tree.at(&Model::fc)(x);                            // the module's own input types; its eager result type
//
// The tree keeps a copy of the model for its layout (members are found by address, as export
// finds them), never for its values: the program's weights are what runs. A call takes what the
// module's own call operator takes: another type is the module's own compile error (or, for a call
// it cannot take at all, one naming the module and the types), and returns the type the module
// returns eagerly. swap(typed_program) checks at compile time that the module, called with the
// replacement's inputs, returns the replacement's output type.
template <class T, class Backend>
class typed_submodule;

namespace detail {
template <class Backend>
struct typed_tree_core {
  unflattened_module<Backend> tree;
  std::shared_ptr<const void> model;  // (the layout the member paths are taken in)
};

// The name of the member of `obj` at `member` (its hana accessor's), or an argument_error.
template <class T, class U>
std::string member_name(const T& obj, const U& member) {
  std::string out;
  boost::hana::for_each(boost::hana::accessors<T>(), [&](auto acc) {
    const auto& m = boost::hana::second(acc)(obj);
    if constexpr (std::is_same_v<std::remove_cvref_t<decltype(m)>, U>)
      if (static_cast<const void*>(&m) == static_cast<const void*>(&member)) out = boost::hana::to<const char*>(boost::hana::first(acc));
  });
  if (out.empty()) {
    detail::raise<argument_error>([&](auto& w) {
      w.put("typex::unflatten: a member of "); w.put(raw_type_name<T>());
      w.put(" that is not in its reflection (BOOST_HANA_ADAPT_STRUCT / BOOST_HANA_DEFINE_STRUCT): export never saw it");
    });
  }
  return out;
}

template <class T>
struct sequence_element {};
template <class T, std::size_t N>
struct sequence_element<std::array<T, N>> { using type = T; };
template <class T, class A>
struct sequence_element<std::vector<T, A>> { using type = T; };
}  // namespace detail

template <class T, class Backend>
class typed_submodule {
 public:
  typed_submodule(std::shared_ptr<const detail::typed_tree_core<Backend>> core, const T* obj, std::string fqn)
      : core_(std::move(core)), obj_(obj), fqn_(std::move(fqn)) {}

  const std::string& fqn() const noexcept { return fqn_; }
  // The type-erased view of this module (calls(), signature(), state_dict(), swap by program).
  submodule_view<Backend> view() const { return core_->tree.submodule(fqn_); }

  // A member of the module, as in the user's struct: tree.at(&Model::layers).
  template <class U>
    requires(boost::hana::Struct<T>::value)
  typed_submodule<U, Backend> at(U T::*member) const {
    const U& m = obj_->*member;
    return typed_submodule<U, Backend>(core_, &m, detail::join_fqn(fqn_, detail::member_name(*obj_, m)));
  }
  // An element of an array or vector of modules: tree.at(&Model::layers)[3].
  auto operator[](std::size_t i) const
    requires(detail::is_module_sequence<T>::value)
  {
    using E = typename detail::sequence_element<T>::type;
    if (i >= obj_->size()) {
      detail::raise<argument_error>([&](auto& w) {
        w.put("typex::unflatten: '"); w.put(fqn_); w.put("' has "); w.put_int(static_cast<long long>(obj_->size()));
        w.put(" modules; index "); w.put_int(static_cast<long long>(i)); w.put(" is out of range");
      });
    }
    return typed_submodule<E, Backend>(core_, &(*obj_)[i], detail::join_fqn(fqn_, std::to_string(i)));
  }
  // A child of a container that numbers its children (nn::Sequential): tree.at(&Model::body).get<1>().
  template <std::size_t I>
    requires(numbered_module_type<T>)
  auto get() const {
    using E = std::tuple_element_t<I, decltype(obj_->children)>;
    return typed_submodule<E, Backend>(core_, &std::get<I>(obj_->children), detail::join_fqn(fqn_, std::to_string(I)));
  }

  // Calls the module's first call (the program's nodes for it), with the types its own call
  // operator takes; returns what it returns eagerly. Numbers must be the traced ones.
  template <class... A>
  auto operator()(const A&... args) const {
    if constexpr (!std::is_invocable_v<const T&, const A&...>) {
      TYPEX_STATIC_FAIL(static_type_error, [](auto& w) {
        w.put("typex::unflatten: the submodule "); w.put(detail::raw_type_name<T>()); w.put(" cannot be called with (");
        std::size_t i = 0;
        ((w.put(i++ ? ", " : ""), detail::put_tree_type<A>(w)), ...);
        w.put("): call it with the arguments its own call operator takes, as the model does");
      });
      return;
    } else {
      using R = std::invoke_result_t<const T&, const A&...>;
      const submodule_view<Backend> v = view();
      std::vector<any_tensor> flat;
      std::vector<std::pair<std::size_t, std::string>> numbers;  // (leaf, as the program prints it)
      std::size_t leaf = 0;
      auto one = [&](const auto& tree) {
        for_each_leaf(tree, [&](const auto& l) {
          using L = std::remove_cvref_t<decltype(l)>;
          if constexpr (std::is_arithmetic_v<L>) numbers.emplace_back(leaf, number_text(l));
          else flat.push_back(l.erase());
          ++leaf;
        });
      };
      (one(args), ...);
      // the call traced with these numbers (fc(x, 2.0) and fc(x, 3.0) are the calls fc and fc@1)
      const std::string id = call_for(v, numbers, flat);
      const module_call_signature& sig = v.signature(id);
      const std::vector<any_tensor> out = v.call(id, flat);
      std::vector<std::string> names;
      for (std::size_t i = 0; i < out.size(); ++i) names.push_back(fqn_ + " output " + std::to_string(i));
      std::vector<detail::named_output> leaves;
      for (std::size_t i = 0; i < out.size(); ++i) leaves.push_back({&out[i], &names[i]});
      return unflatten<R>(sig.out_spec, leaves);
    }
  }

  // Swaps the module for `replacement`, checked at compile time (the module called with the
  // replacement's input types returns its output type) and then as submodule_view::swap.
  template <class In, class Out>
  void swap(const typed_program<In, Out>& replacement) const {
    constexpr bool fits = []<class... I>(std::type_identity<std::tuple<I...>>) {
      if constexpr (!std::is_invocable_v<const T&, const rebind_tree_t<I, host_tensor>&...>) return false;
      else return std::is_same_v<std::remove_cvref_t<std::invoke_result_t<const T&, const rebind_tree_t<I, host_tensor>&...>>,
                                 rebind_tree_t<Out, host_tensor>>;
    }(std::type_identity<In>{});
    if constexpr (!fits) {
      TYPEX_STATIC_FAIL(static_type_error, [](auto& w) {
        w.put("typex::unflatten: a swap of "); w.put(detail::raw_type_name<T>()); w.put(" by a program taking (");
        [&]<class... I>(std::type_identity<std::tuple<I...>>) {
          std::size_t i = 0;
          ((w.put(i++ ? ", " : ""), detail::put_tree_type<rebind_tree_t<I, host_tensor>>(w)), ...);
          w.put(") and returning "); detail::put_tree_type<rebind_tree_t<Out, host_tensor>>(w);
          if constexpr (std::is_invocable_v<const T&, const rebind_tree_t<I, host_tensor>&...>) {
            w.put(", where the module returns ");
            detail::put_tree_type<std::remove_cvref_t<std::invoke_result_t<const T&, const rebind_tree_t<I, host_tensor>&...>>>(w);
          } else {
            w.put(", which the module cannot be called with");
          }
        }(std::type_identity<In>{});
        w.put(": export a replacement with the module's signature");
      });
    } else {
      view().swap(replacement);
    }
  }

 private:
  template <class N>
  std::string number_text(N value) const {
    const ir::argument a = [&]() -> ir::argument {
      if constexpr (std::is_same_v<N, bool>) return value;
      else if constexpr (std::is_integral_v<N>) return static_cast<std::int64_t>(value);
      else return static_cast<double>(value);
    }();
    std::string text;
    ir::detail::print_argument(text, core_->tree.plan().source->graph(), a);
    return text;
  }
  std::string call_for(const submodule_view<Backend>& v, const std::vector<std::pair<std::size_t, std::string>>& numbers,
                       const std::vector<any_tensor>& tensors) const {
    const std::vector<std::string> ids = v.calls();
    if (ids.size() == 1 && numbers.empty()) return ids.front();  // (its one call checks the tensors itself)
    for (const std::string& id : ids) {
      const module_call_signature& sig = v.signature(id);
      bool same = true;
      for (const auto& [leaf, text] : numbers) same = same && leaf < sig.inputs.size() && sig.inputs[leaf] == text;
      // (and the tensors' count, dtypes, ranks and static extents: a call of other shapes is another call)
      same = same && v.fits(id, tensors);
      if (same) return id;
    }
    detail::raise<argument_error>([&](auto& w) {
      w.put("typex::unflatten: '"); w.put(fqn_); w.put("' was never called with");
      for (const auto& [leaf, text] : numbers) { w.put(" "); w.put(text); w.put(" (argument "); w.put_int(static_cast<long long>(leaf)); w.put(")"); }
      w.put("; its calls:");
      for (const std::string& id : ids) {
        w.put(" '"); w.put(id); w.put("' (");
        const auto& in = v.signature(id).inputs;
        for (std::size_t i = 0; i < in.size(); ++i) { if (i) w.put(", "); w.put(in[i]); }
        w.put(")");
      }
      w.put(" (numbers are specialized into the program: export a call with that number)");
    });
  }

  std::shared_ptr<const detail::typed_tree_core<Backend>> core_;
  const T* obj_;
  std::string fqn_;
};

// The typed tree of a model: the unflattened program, reached through the model's members.
template <module_type M, class Backend = TYPEX_DEFAULT_BACKEND>
class typed_unflattened : public typed_submodule<M, Backend> {
 public:
  typed_unflattened(const exported_program& ep, const M& model, const typename Backend::options& opts = {})
      : typed_unflattened(make(ep, model, opts)) {}
  // A copy has buffers and replacements of its own (as unflattened_module's copies).
  typed_unflattened(const typed_unflattened& o) : typed_unflattened(copy(*o.core_)) {}
  typed_unflattened(typed_unflattened&&) noexcept = default;
  typed_unflattened& operator=(const typed_unflattened& o) {
    if (this != &o) *this = typed_unflattened(o);
    return *this;
  }
  typed_unflattened& operator=(typed_unflattened&&) noexcept = default;

  // The type-erased tree (submodule by FQN, reexport, plan).
  const unflattened_module<Backend>& untyped() const { return core_->tree; }

 private:
  explicit typed_unflattened(std::shared_ptr<const detail::typed_tree_core<Backend>> core)
      : typed_submodule<M, Backend>(core, static_cast<const M*>(core->model.get()), std::string{}), core_(core) {}
  static std::shared_ptr<const detail::typed_tree_core<Backend>> make(const exported_program& ep, const M& model,
                                                                      const typename Backend::options& opts) {
    return std::make_shared<const detail::typed_tree_core<Backend>>(
        detail::typed_tree_core<Backend>{unflattened_module<Backend>(ep, opts), std::make_shared<const M>(model)});
  }
  static std::shared_ptr<const detail::typed_tree_core<Backend>> copy(const detail::typed_tree_core<Backend>& o) {
    return std::make_shared<const detail::typed_tree_core<Backend>>(detail::typed_tree_core<Backend>{o.tree, o.model});
  }
  std::shared_ptr<const detail::typed_tree_core<Backend>> core_;
};

// The typed tree: `model` is the module the program was exported from (or one of its type).
template <class Backend = TYPEX_DEFAULT_BACKEND, module_type M>
typed_unflattened<M, Backend> unflatten(const exported_program& ep, const M& model, const typename Backend::options& opts = {}) {
  return typed_unflattened<M, Backend>(ep, model, opts);
}

// The module tree of `ep`, each call's own nodes planned by Backend.
template <class Backend = TYPEX_DEFAULT_BACKEND>
unflattened_module<Backend> unflatten(const exported_program& ep, const typename Backend::options& opts = {}) {
  return unflattened_module<Backend>(ep, opts);
}

}  // namespace typex

// ---- definitions: compiled once in typex::runtime, or inline here in header-only builds
// (config.hpp: TYPEX_SEPARATE_COMPILATION) ----
#if TYPEX_HEADER_DEFINITIONS
namespace typex::detail::unflatten_impl {
struct inliner {
  const unflatten_plan& plan;
  const std::vector<std::optional<tree_replacement>>& swaps;
  ir::graph g;
  std::unordered_map<std::string, ir::value_ref> state;  // FQN -> its current value
  std::unordered_map<std::string, ir::value_ref> initial;  // FQN -> its placeholder
  std::vector<std::optional<module_call_entry>> entries;  // by call (a call with no nodes is never inlined)
  std::unordered_map<std::string, std::string> renamed;     // the source's value names -> the new graph's

  static std::string name_of(const ir::graph& gr, ir::value_ref v) { return detail::value_name(gr, v); }

  // Copies `p`'s calls into g: its placeholders are `feed` (by placeholder); returns the values of
  // its outputs, in order; `frames`, when given, are the stack of every node (a replacement's).
  std::vector<ir::value_ref> inline_program(const exported_program& p, const std::unordered_map<ir::node_id, ir::value_ref>& feed,
                                            const std::vector<ir::module_frame>* frames) {
    const ir::graph& pg = p.graph();  // (copy_call brings the subgraphs its control flow names)
    std::unordered_map<std::uint64_t, ir::value_ref> local;
    for (const auto& [ph, v] : feed) local[key(ir::value_ref{ph})] = v;
    for (ir::node_id i = 0; i < pg.size(); ++i) {
      if (pg[i].op != ir::node_op::call_function) continue;
      // (a replacement's nodes are the swapped call's own: its inner modules are not the tree's)
      copy_call(g, pg, i, local, frames != nullptr ? *frames : pg[i].nn_module_stack);
    }
    std::vector<ir::value_ref> outs;
    for (const ir::argument& a : pg.output().args) outs.push_back(local.at(key(std::get<ir::value_ref>(a))));
    return outs;
  }

  std::vector<ir::value_ref> inline_call(std::size_t ci, const std::vector<ir::value_ref>& args, const std::vector<ir::module_frame>& parent) {
    const unflatten_call& c = plan.calls[ci];
    std::vector<ir::module_frame> frames = parent;
    if (!c.id.empty()) frames.push_back({c.module, c.type, c.id});
    const std::size_t entry = ci;
    if (!c.id.empty()) entries[ci] = module_call_entry{c.id, c.signature, {}, c.preserved};
    std::vector<ir::value_ref> outs;
    const unflatten_module& m = *plan.find_module(c.module);
    if (const auto& r = swaps[static_cast<std::size_t>(&m - plan.modules.data())]; r && !c.id.empty()) {
      const exported_program& p = *r->program;
      std::unordered_map<ir::node_id, ir::value_ref> feed;
      const auto placeholders = p.graph().placeholders();
      std::size_t user = 0;
      for (std::size_t i = 0; i < placeholders.size(); ++i) {
        const input_spec& sp = p.signature().input_specs()[i];
        if (sp.kind == input_kind::user_input) {
          const std::size_t from = r->adapter != nullptr && !r->adapter->inputs.empty() ? r->adapter->inputs[user] : user;
          feed[placeholders[i]] = args[from];
          ++user;
        } else {
          const std::string fqn = join_fqn(m.fqn, sp.target);
          const auto it = state.find(fqn);
          if (it == state.end()) detail::raise_message<ir::graph_error>("typex::unflatten: re-export: a replacement's tensor is missing");
          feed[placeholders[i]] = it->second;
        }
      }
      const std::vector<ir::value_ref> all = inline_program(p, feed, &frames);
      const auto& os = p.signature().output_specs();
      for (std::size_t i = 0; i < os.size(); ++i) {
        if (os[i].kind == output_kind::buffer_mutation) state[join_fqn(m.fqn, os[i].target)] = all[i];
        else if (os[i].kind == output_kind::user_output) outs.push_back(all[i]);
      }
    } else {
      std::vector<std::optional<ir::value_ref>> env(c.slot_names.size());
      for (std::size_t i = 0; i < c.inputs.size(); ++i) env[c.inputs[i]] = args[i];
      for (std::size_t i = 0; i < c.captured_inputs.size(); ++i) env[c.captured_inputs[i]] = args[c.inputs.size() + i];
      for (const auto& [slot, fqn] : c.state_slots) env[slot] = source_state(fqn);
      for (const unflatten_step& st : c.steps) {
        if (st.is_call()) {
          std::vector<ir::value_ref> a;
          for (const std::size_t x : st.args) a.push_back(*env[x]);
          const std::vector<ir::value_ref> res = inline_call(st.callee, a, frames);
          for (std::size_t i = 0; i < st.results.size() && i < res.size(); ++i) env[st.results[i]] = res[i];
          continue;
        }
        const exported_program& p = *st.program;
        const auto placeholders = p.graph().placeholders();
        std::unordered_map<ir::node_id, ir::value_ref> feed;
        std::unordered_map<std::string, std::string> buffer_of;  // placeholder name -> buffer FQN
        std::size_t user = 0;
        for (std::size_t i = 0; i < placeholders.size(); ++i) {
          const input_spec& sp = p.signature().input_specs()[i];
          if (sp.kind != input_kind::user_input) {
            feed[placeholders[i]] = source_state(sp.target);
          } else if (user < st.reads.size()) {
            feed[placeholders[i]] = *env[st.reads[user++]];
          } else {
            const std::string& b = st.state[user++ - st.reads.size()];
            feed[placeholders[i]] = source_state(b);
            buffer_of.emplace(sp.arg, b);
          }
        }
        const std::vector<ir::value_ref> all = inline_program(p, feed, nullptr);
        const auto& os = p.signature().output_specs();
        std::size_t produced = 0;
        for (std::size_t i = 0; i < os.size(); ++i) {
          if (os[i].kind == output_kind::user_input_mutation) {
            const std::string& b = buffer_of.at(os[i].target);
            state[b] = all[i];
            {
              std::vector<buffer_write>& w = c.id.empty() ? root_writes : entries[entry]->writes;
              w.push_back({b, name_of(g, all[i])});
            }
          } else {
            env[st.produces[produced++]] = all[i];
          }
        }
      }
      for (const std::size_t o : c.outputs) outs.push_back(*env[o]);
      // the entry's signature, in the new graph's names
      for (std::size_t sl = 0; sl < c.slot_names.size(); ++sl)
        if (env[sl]) renamed[c.slot_names[sl]] = name_of(g, *env[sl]);
      if (!c.id.empty()) {
        module_call_signature& sig = *entries[entry]->signature;
        auto rename = [&](std::vector<std::string>& names) {
          for (std::string& n : names)
            for (std::size_t sl = 0; sl < c.slot_names.size(); ++sl)
              if (c.slot_names[sl] == n && env[sl]) {
                n = name_of(g, *env[sl]);
                break;
              }
        };
        rename(sig.inputs);
        rename(sig.outputs);
      }
    }
    if (!c.id.empty() && swaps[static_cast<std::size_t>(&m - plan.modules.data())]) {
      module_call_signature& sig = *entries[entry]->signature;
      std::size_t k = 0;
      for (std::string& n : sig.inputs)  // (tensor inputs in order; numbers keep their text)
        if (k < args.size() && std::any_of(c.slot_names.begin(), c.slot_names.end(), [&](const std::string& s) { return s == n; }))
          n = name_of(g, args[k++]);
      sig.outputs.clear();
      for (const ir::value_ref v : outs) sig.outputs.push_back(name_of(g, v));
    }
    return outs;
  }
  std::vector<buffer_write> root_writes;
  std::unordered_set<std::string> from_replacement;  // FQNs a replacement brought

  // The current value of the tree's tensor `fqn`, read by a segment of the tree (not by a
  // replacement): the source's, which a swap may have taken away.
  ir::value_ref source_state(const std::string& fqn) {
    const auto it = state.find(fqn);
    if (it != state.end() && !from_replacement.contains(fqn)) return it->second;
    detail::raise<unsupported_error>([&](auto& w) {
      w.put("typex::unflatten: re-export: '"); w.put(fqn);
      w.put("' is state of a swapped module that the tree still reads outside it (a parent reading its child's tensor, or "
            "weights tied across the boundary); the tree runs the original tensor there and the replacement its own, which "
            "one program cannot hold under one name. Restore the module, or swap the module that reads it too");
    });
  }
};
}  // namespace typex::detail::unflatten_impl

TYPEX_API auto typex::detail::reexport_tree(const unflatten_plan& plan, const std::vector<std::optional<tree_replacement>>& swaps,
                                            const std::vector<any_tensor>& buffers) -> exported_program {
  const exported_program& src = *plan.source;
  unflatten_impl::inliner in{plan, swaps, {}, {}, {}, std::vector<std::optional<module_call_entry>>(plan.calls.size()), {}, {}, {}};
  auto swapped_module = [&](std::string_view fqn) {
    for (std::size_t i = 0; i < plan.modules.size(); ++i)
      if (swaps[i] && !plan.modules[i].fqn.empty() && inside_module(fqn, plan.modules[i].fqn)) return true;
    return false;
  };
  // the state: the source's (the tree's buffers now), less what swapped modules held, then the
  // replacements' under their modules' paths; kinds in torch's order, then the user inputs
  struct lifted {
    input_spec spec;
    ir::tensor_meta meta;
    any_tensor tensor;
  };
  std::vector<lifted> state;
  const ir::graph& sg = src.graph();
  const auto placeholders = sg.placeholders();
  auto current = [&](const std::string& fqn, const any_tensor& t) {
    for (std::size_t i = 0; i < plan.mutable_state.size(); ++i)
      if (plan.mutable_state[i] == fqn) return buffers[i];
    return t;
  };
  for (std::size_t i = 0; i < placeholders.size(); ++i) {
    const input_spec& sp = src.signature().input_specs()[i];
    if (sp.kind == input_kind::user_input || swapped_module(sp.target)) continue;
    const bool in_state = sp.kind == input_kind::parameter || (sp.kind == input_kind::buffer && sp.persistent);
    state.push_back({sp, sg[placeholders[i]].vals.front(), current(sp.target, in_state ? src.state_dict().at(sp.target) : src.constants().at(sp.target))});
  }
  for (std::size_t mi = 0; mi < plan.modules.size(); ++mi) {
    if (!swaps[mi]) continue;
    const exported_program& p = *swaps[mi]->program;
    const auto ph = p.graph().placeholders();
    for (std::size_t i = 0; i < ph.size(); ++i) {
      input_spec sp = p.signature().input_specs()[i];
      if (sp.kind == input_kind::user_input) continue;
      const bool in_state = sp.kind == input_kind::parameter || (sp.kind == input_kind::buffer && sp.persistent);
      const any_tensor* now = swaps[mi]->state.find(sp.target);
      const any_tensor t = now != nullptr ? *now : in_state ? p.state_dict().at(sp.target) : p.constants().at(sp.target);
      sp.target = join_fqn(plan.modules[mi].fqn, sp.target);
      in.from_replacement.insert(sp.target);
      state.push_back({sp, p.graph()[ph[i]].vals.front(), t});
    }
  }
  std::stable_sort(state.begin(), state.end(), [](const lifted& a, const lifted& b) { return a.spec.kind < b.spec.kind; });
  named_tensors sd, constants;
  std::vector<input_spec> ins;
  std::vector<const any_tensor*> seen;
  for (const lifted& l : state) {
    if (in.state.contains(l.spec.target)) continue;
    const ir::node_id ph = in.g.add_placeholder(l.spec.arg, l.meta);
    in.state[l.spec.target] = in.initial[l.spec.target] = ir::value_ref{ph};
    ins.push_back({l.spec.kind, in.g[ph].name, l.spec.target, l.spec.persistent});
    const bool in_state = l.spec.kind == input_kind::parameter || (l.spec.kind == input_kind::buffer && l.spec.persistent);
    (in_state ? sd : constants).insert(l.spec.target, l.tensor);
  }
  // tied names of the source (a second FQN of one storage): in the state dict under every name
  for (const auto& [fqn, t] : src.state_dict())
    if (!sd.contains(fqn) && !swapped_module(fqn)) sd.insert(fqn, current(fqn, t));
  std::vector<ir::value_ref> user;
  std::vector<std::string> user_names;
  for (std::size_t i = 0; i < placeholders.size(); ++i) {
    const input_spec& sp = src.signature().input_specs()[i];
    if (sp.kind != input_kind::user_input) continue;
    const ir::node_id ph = in.g.add_placeholder(sg[placeholders[i]].name, sg[placeholders[i]].vals.front());
    user.push_back(ir::value_ref{ph});
    user_names.push_back(in.g[ph].name);
    ins.push_back({input_kind::user_input, in.g[ph].name, "", true});
  }
  const std::vector<ir::value_ref> results = in.inline_call(0, user, {});
  // outputs: the buffers written (in placeholder order), then the user's
  std::vector<ir::value_ref> outs;
  std::vector<output_spec> out_specs;
  for (const input_spec& sp : ins) {
    if (sp.kind != input_kind::buffer) continue;
    const ir::value_ref now = in.state.at(sp.target);
    if (now == in.initial.at(sp.target)) continue;
    outs.push_back(now);
    out_specs.push_back({output_kind::buffer_mutation, unflatten_impl::inliner::name_of(in.g, now), sp.target});
  }
  std::vector<std::string> out_names;
  for (const ir::value_ref v : results) {
    outs.push_back(v);
    out_names.push_back(unflatten_impl::inliner::name_of(in.g, v));
    out_specs.push_back({output_kind::user_output, out_names.back(), ""});
  }
  in.g.set_output(std::move(outs));
  std::vector<std::string> keep;  // (a preserved call's outputs stay, as export keeps them)
  for (const auto& e : in.entries)
    if (e && e->preserved && e->signature) keep.insert(keep.end(), e->signature->outputs.begin(), e->signature->outputs.end());
  eliminate_dead_code_keeping(in.g, keep);
  std::vector<module_call_entry> calls;
  const module_call_signature& root = *src.module_call_graph().front().signature;  // (the plan checked it is there)
  calls.push_back({"", module_call_signature{user_names, out_names, root.in_spec, root.out_spec}, std::move(in.root_writes), false});
  for (std::size_t ci = 1; ci < plan.calls.size(); ++ci) {
    if (in.entries[ci]) {
      calls.push_back(std::move(*in.entries[ci]));
      continue;
    }
    // a call with no nodes of its own (an identity: eval-mode dropout): its entry, renamed
    module_call_entry e{plan.calls[ci].id, plan.calls[ci].signature, {}, plan.calls[ci].preserved};
    for (std::vector<std::string>* names : {&e.signature->inputs, &e.signature->outputs})
      for (std::string& n : *names)
        if (const auto it = in.renamed.find(n); it != in.renamed.end()) n = it->second;
    calls.push_back(std::move(e));
  }
  exported_program out(std::move(in.g), graph_signature(std::move(ins), std::move(out_specs)), std::move(sd), std::move(constants),
                       src.ranges(), std::move(calls), src.example_inputs());
  out.set_trusted_shapes(src.trusted_shapes());
  if (src.dialect() != ir::export_dialect) out.set_dialect(src.dialect());
  return out;
}

TYPEX_API auto typex::detail::describe_call(const unflatten_call& c) -> std::string {
  std::string s = "(";
  for (std::size_t i = 0; i < c.inputs.size(); ++i) {
    if (i) s += ", ";
    s += c.slot_meta[c.inputs[i]].to_string();
  }
  s += ") -> (";
  for (std::size_t i = 0; i < c.outputs.size(); ++i) {
    if (i) s += ", ";
    s += c.slot_meta[c.outputs[i]].to_string();
  }
  s += ")";
  return s;
}

TYPEX_API auto typex::detail::fits_meta(const ir::tensor_meta& expected, const ir::tensor_meta& given) -> bool {
  if (expected.scalar_type != given.scalar_type || expected.rank() != given.rank()) return false;
  for (std::size_t d = 0; d < expected.rank(); ++d) {
    const auto a = expected.shape[d].value(), b = given.shape[d].value();
    if (a.has_value() != b.has_value() || (a && *a != *b)) return false;
  }
  return true;
}

TYPEX_API auto typex::detail::fits_tensor(const ir::tensor_meta& expected, const any_tensor& t) -> bool {
  if (t.scalar_type() != expected.scalar_type || t.rank() != expected.rank()) return false;
  for (std::size_t d = 0; d < expected.rank(); ++d)
    if (const auto v = expected.shape[d].value(); v && *v != t.extents()[d]) return false;
  return true;
}

TYPEX_API auto typex::detail::module_at(const unflatten_plan& plan, std::string_view fqn) -> const unflatten_module& {
  if (const unflatten_module* m = plan.find_module(fqn)) return *m;
  detail::raise<argument_error>([&](auto& w) {
    w.put("typex::unflatten: the program has no module '"); w.put(fqn); w.put("' (its modules:");
    std::size_t shown = 0;
    for (const auto& m : plan.modules) {
      if (m.fqn.empty()) continue;
      if (shown++ == 12) { w.put(" ..."); break; }
      w.put(" '"); w.put(m.fqn); w.put("'");
    }
    w.put(")");
  });
}

TYPEX_API auto typex::detail::check_call_inputs(const unflatten_call& c, std::span<const any_tensor> inputs) -> void {
  const std::string_view who = c.id.empty() ? std::string_view("(root)") : std::string_view(c.id);
  if (inputs.size() != c.inputs.size()) {
    detail::raise<argument_error>([&](auto& w) {
      w.put("typex::unflatten: '"); w.put(who); w.put("' takes "); w.put_int(static_cast<long long>(c.inputs.size()));
      w.put(" tensor inputs "); w.put(describe_call(c)); w.put(", but "); w.put_int(static_cast<long long>(inputs.size()));
      w.put(" were given");
    });
  }
  for (std::size_t i = 0; i < inputs.size(); ++i)
    for (std::size_t j = 0; j < i; ++j) {
      if (c.inputs[j] != c.inputs[i]) continue;
      if (inputs[i].raw_data() == inputs[j].raw_data() && inputs[i].extents() == inputs[j].extents()) continue;
      detail::raise<signature_error>([&](auto& w) {
        w.put("typex::unflatten: '"); w.put(who); w.put("' was traced with inputs "); w.put_int(static_cast<long long>(j));
        w.put(" and "); w.put_int(static_cast<long long>(i)); w.put(" the same value ('"); w.put(c.slot_names[c.inputs[i]]);
        w.put("'), so its nodes read one tensor for both; pass the same tensor twice, or export the module called with "
              "distinct values (its signature: "); w.put(describe_call(c)); w.put(")");
      });
    }
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const ir::tensor_meta& m = c.slot_meta[c.inputs[i]];
    const any_tensor& t = inputs[i];
    if (fits_tensor(m, t)) continue;
    detail::raise<shape_error>([&](auto& w) {
      w.put("typex::unflatten: input "); w.put_int(static_cast<long long>(i)); w.put(" ('"); w.put(c.slot_names[c.inputs[i]]);
      w.put("') of '"); w.put(who); w.put("' is "); w.put(t.to_string()); w.put(", expected "); w.put(m.to_string());
      w.put(" (its signature: "); w.put(describe_call(c)); w.put(")");
    });
  }
}

TYPEX_API auto typex::detail::check_state_input(const unflatten_call& c, std::size_t i, const any_tensor& given, const any_tensor& tree)
    -> void {
  if (given.raw_data() == tree.raw_data() ||
      (given.nbytes() == tree.nbytes() && given.nbytes() != 0 && std::memcmp(given.raw_data(), tree.raw_data(), given.nbytes()) == 0))
    return;
  detail::raise<signature_error>([&](auto& w) {
    w.put("typex::unflatten: input "); w.put_int(static_cast<long long>(i)); w.put(" of '"); w.put(c.id.empty() ? "(root)" : c.id);
    w.put("' is the module state '"); w.put(c.input_state[i]);
    w.put("' handed to it as an argument; its nodes read the tree's tensor, so another tensor there would be ignored: pass "
          "that tensor (state_dict() of the module holding it), or export the module taking a plain input");
  });
}

TYPEX_API auto typex::detail::check_swap(const unflatten_plan& plan, const unflatten_module& m, const exported_program& replacement,
                                         const flat_args_adapter& adapter) -> void {
  const std::string_view path = m.fqn.empty() ? std::string_view("(root)") : std::string_view(m.fqn);
  if (m.fqn.empty()) detail::raise_message<argument_error>("typex::unflatten: the root cannot be swapped; unflatten the replacement's program instead");
  if (m.calls.empty()) {
    detail::raise<argument_error>([&](auto& w) {
      w.put("typex::unflatten: '"); w.put(path); w.put("' is never called in the program (only its submodules are); swap those");
    });
  }
  if (!replacement.signature().user_inputs_to_mutate().empty()) {
    detail::raise<signature_error>([&](auto& w) {
      w.put("typex::unflatten: the replacement for '"); w.put(path); w.put("' writes its inputs; a replacement keeps its state in buffers");
    });
  }
  const ir::graph& rg = replacement.graph();
  const std::vector<ir::node_id> rin = replacement.user_inputs();
  std::vector<ir::tensor_meta> rin_meta, rout_meta;
  for (const ir::node_id i : rin) rin_meta.push_back(rg[i].vals.front());
  std::unordered_map<std::string_view, ir::value_ref> by_name;
  for (ir::node_id i = 0; i < rg.size(); ++i)
    for (std::uint32_t k = 0; k < rg[i].vals.size(); ++k) by_name.emplace(rg[i].name, ir::value_ref{i, k});
  for (const std::string& o : replacement.signature().user_outputs()) {
    std::string_view base = o;
    std::uint32_t index = 0;
    if (const auto b = base.find('['); b != std::string_view::npos) {
      index = static_cast<std::uint32_t>(std::stoul(std::string(base.substr(b + 1))));
      base = base.substr(0, b);
    }
    rout_meta.push_back(rg.meta(ir::value_ref{by_name.at(base).node, index}));
  }
  auto describe_replacement = [&] {
    std::string s = "(";
    for (std::size_t i = 0; i < rin_meta.size(); ++i) { if (i) s += ", "; s += rin_meta[i].to_string(); }
    s += ") -> (";
    for (std::size_t i = 0; i < rout_meta.size(); ++i) { if (i) s += ", "; s += rout_meta[i].to_string(); }
    s += ")";
    return s;
  };
  for (const std::size_t ci : m.calls) {
    const unflatten_call& c = plan.calls[ci];
    auto fail = [&](std::string_view why) {
      detail::raise<signature_error>([&](auto& w) {
        w.put("typex::unflatten: cannot swap '"); w.put(path); w.put("': "); w.put(why); w.put("; its call '"); w.put(c.id);
        w.put("' has the signature "); w.put(describe_call(c)); w.put(" with inputs "); w.put(c.signature.in_spec.to_string());
        w.put(" and outputs "); w.put(c.signature.out_spec.to_string()); w.put(", the replacement "); w.put(describe_replacement());
        w.put(" with inputs "); w.put(replacement.in_spec().to_string()); w.put(" and outputs "); w.put(replacement.out_spec().to_string());
      });
    };
    if (!c.preserved)
      fail(std::string("its signature was not preserved at export (export with preserve_module_call_signature = {\"") + m.fqn + "\"})");
    if (!c.captured.empty()) fail("it reads values from outside that its signature does not take");
    if (c.steps.empty())
      fail("the call has no nodes in the program (an identity when it was exported, as eval-mode dropout is), so a "
           "replacement would never run");
    if (adapter.inputs.empty()) {
      if (replacement.in_spec() != c.signature.in_spec) fail("the input trees differ (a flat_args_adapter maps another layout)");
      if (rin_meta.size() != c.inputs.size()) fail("the numbers of tensor inputs differ");
      for (std::size_t i = 0; i < rin_meta.size(); ++i)
        if (!fits_meta(c.slot_meta[c.inputs[i]], rin_meta[i])) fail("input " + std::to_string(i) + " differs");
    } else {
      if (adapter.inputs.size() != rin_meta.size()) fail("the adapter maps " + std::to_string(adapter.inputs.size()) + " inputs, the replacement takes " + std::to_string(rin_meta.size()));
      for (std::size_t i = 0; i < adapter.inputs.size(); ++i) {
        if (adapter.inputs[i] >= c.inputs.size()) fail("the adapter's input " + std::to_string(i) + " names the call's input " + std::to_string(adapter.inputs[i]) + ", which it does not have");
        if (!fits_meta(c.slot_meta[c.inputs[adapter.inputs[i]]], rin_meta[i])) fail("the replacement's input " + std::to_string(i) + " differs from the call's input it is given");
      }
    }
    if (replacement.out_spec() != c.signature.out_spec) fail("the output trees differ");
    if (rout_meta.size() != c.outputs.size()) fail("the numbers of outputs differ");
    for (std::size_t i = 0; i < rout_meta.size(); ++i)
      if (!fits_meta(c.slot_meta[c.outputs[i]], rout_meta[i])) fail("output " + std::to_string(i) + " differs");
  }
}
#endif  // TYPEX_HEADER_DEFINITIONS
