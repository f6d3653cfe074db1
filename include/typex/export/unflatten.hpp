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
#include <typex/export/unflatten_plan.hpp>

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
// Checks `replacement` against every call of module `m` (a signature_error naming the path and both
// signatures otherwise).
TYPEX_API void check_swap(const unflatten_plan& plan, const unflatten_module& m, const exported_program& replacement,
                          const flat_args_adapter& adapter);
// The module `fqn` of the plan, or an argument_error naming it and the modules there are.
TYPEX_API const unflatten_module& module_at(const unflatten_plan& plan, std::string_view fqn);
// Checks a call's inputs at its boundary (count, dtype, rank, static extents): errors name the path.
TYPEX_API void check_call_inputs(const unflatten_call& c, std::span<const any_tensor> inputs);

template <class Backend>
struct unflatten_shared {  // (immutable once made: shared by copies)
  unflatten_plan plan;
  typename Backend::options opts;
  std::vector<std::vector<std::shared_ptr<const program_module<Backend>>>> steps;  // [call][step]; null for a call step
  std::vector<std::size_t> module_of_call;
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

  void run_call(std::size_t ci, std::span<const any_tensor> args, std::vector<any_tensor>& out) {
    const unflatten_shared<Backend>& sh = *shared;
    const unflatten_call& c = sh.plan.calls[ci];
    if (const auto& s = swaps[sh.module_of_call[ci]]) {
      std::vector<any_tensor> in;
      if (s->adapter.inputs.empty()) in.assign(args.begin(), args.begin() + static_cast<std::ptrdiff_t>(c.inputs.size()));
      else
        for (const std::size_t i : s->adapter.inputs) in.push_back(args[i]);
      out = s->run(in);
      return;
    }
    std::vector<any_tensor> env(c.slot_names.size());
    for (std::size_t i = 0; i < c.inputs.size(); ++i) env[c.inputs[i]] = args[i];
    for (std::size_t i = 0; i < c.captured_inputs.size(); ++i) env[c.captured_inputs[i]] = args[c.inputs.size() + i];
    for (const auto& [slot, fqn] : c.state_slots) env[slot] = tensor(fqn);
    std::vector<any_tensor> in, res;
    for (std::size_t k = 0; k < c.steps.size(); ++k) {
      const unflatten_step& st = c.steps[k];
      in.clear();
      if (st.is_call()) {
        for (const std::size_t a : st.args) in.push_back(env[a]);
        run_call(st.callee, in, res);
        for (std::size_t i = 0; i < st.results.size() && i < res.size(); ++i) env[st.results[i]] = std::move(res[i]);
        continue;
      }
      for (const std::size_t a : st.reads) in.push_back(env[a]);
      for (const std::string& b : st.state) in.push_back(tensor(b));
      res.clear();
      sh.steps[ci][k]->run(in, res);
      for (std::size_t i = 0; i < st.produces.size(); ++i) env[st.produces[i]] = std::move(res[i]);
    }
    out.resize(c.outputs.size());
    for (std::size_t i = 0; i < c.outputs.size(); ++i) {
      any_tensor v = env[c.outputs[i]];
      // (an output that is an input or a buffer handed through: a copy, never an alias)
      bool alias = false;
      for (const any_tensor& a : args) alias = alias || (a.raw_data() != nullptr && a.raw_data() == v.raw_data());
      for (const any_tensor& b : buffers) alias = alias || (b.raw_data() != nullptr && b.raw_data() == v.raw_data());
      out[i] = alias ? v.clone() : std::move(v);
    }
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
    for (const std::size_t c : info().calls) out.push_back(st_->shared->plan.calls[c].id);
    return out;
  }
  // Its direct submodules' FQNs.
  std::vector<std::string> children() const {
    std::vector<std::string> out;
    for (const std::size_t c : info().children) out.push_back(st_->shared->plan.modules[c].fqn);
    return out;
  }
  // The signature of a call ("fc" or "fc@1"; default: the first): value names and pytree specs.
  const module_call_signature& signature(std::string_view call = {}) const { return call_info(call).signature; }
  // Whether the call's signature was preserved at export (it may be swapped).
  bool preserved(std::string_view call = {}) const { return call_info(call).preserved; }
  // Whether the module is running a replacement (swap()).
  bool swapped() const { return st_->swaps[m_].has_value(); }

  // A submodule of this one ("3.self_attn" under "layers").
  submodule_view submodule(std::string_view relative) const {
    std::string fqn = info().fqn;
    if (!fqn.empty() && !relative.empty()) fqn += '.';
    fqn += relative;
    const detail::unflatten_module& m = detail::module_at(st_->shared->plan, fqn);
    return submodule_view(st_, static_cast<std::size_t>(&m - st_->shared->plan.modules.data()));
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
    std::shared_lock<std::shared_mutex> shared(st_->calls);
    std::unique_lock<std::shared_mutex> exclusive;
    if (st_->serialized()) {  // (decided under the shared lock: swaps do not change while it is held)
      shared.unlock();
      exclusive = std::unique_lock<std::shared_mutex>(st_->calls);
    }
    st_->run_call(static_cast<std::size_t>(&c - st_->shared->plan.calls.data()), inputs, out);
    return out;
  }

  // The parameters and persistent buffers under this module, by their names relative to it (the
  // buffers' current values; a swapped module's: its replacement's).
  named_tensors state_dict() const {
    named_tensors out;
    const std::string& me = info().fqn;
    const auto& plan = st_->shared->plan;
    auto relative = [&](const std::string& fqn) { return me.empty() ? fqn : fqn.substr(me.size() + 1); };
    auto swapped_prefix = [&](const std::string& fqn) -> const detail::unflatten_module* {
      for (std::size_t i = 0; i < plan.modules.size(); ++i)
        if (st_->swaps[i] && !plan.modules[i].fqn.empty() && detail::inside_module(fqn, plan.modules[i].fqn)) return &plan.modules[i];
      return nullptr;
    };
    for (const auto& [fqn, t] : plan.source->state_dict())
      if (detail::inside_module(fqn, me) && swapped_prefix(fqn) == nullptr) out.insert(relative(fqn), st_->tensor(fqn));
    for (std::size_t i = 0; i < plan.modules.size(); ++i) {
      if (!st_->swaps[i] || !detail::inside_module(plan.modules[i].fqn, me)) continue;
      for (const auto& [name, t] : st_->swaps[i]->run.state_dict()) {
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
    const auto& plan = st_->shared->plan;
    detail::check_swap(plan, info(), replacement, adapter);
    const std::unique_lock<std::shared_mutex> lock(st_->calls);
    auto p = std::make_shared<const exported_program>(replacement);
    st_->swaps[m_].emplace(typename detail::unflatten_state<Backend>::swapped{p, program_module<Backend>(*p, st_->shared->opts), adapter});
  }
  // Runs the module's own program again (undoes swap()).
  void restore() {
    const std::unique_lock<std::shared_mutex> lock(st_->calls);
    st_->swaps[m_].reset();
  }

 private:
  const detail::unflatten_module& info() const { return st_->shared->plan.modules[m_]; }
  const detail::unflatten_call& call_info(std::string_view id) const {
    const auto& plan = st_->shared->plan;
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
  std::shared_ptr<detail::unflatten_state<Backend>> st_;
};

// The unflattened tree: the root module (a submodule_view of "") that owns the state. A copy has
// buffers and replacements of its own and shares the planned programs.
template <class Backend>
class unflattened_module : public submodule_view<Backend> {
 public:
  explicit unflattened_module(const exported_program& ep, const typename Backend::options& opts = {})
      : submodule_view<Backend>(make(ep, opts), 0) {}
  unflattened_module(const unflattened_module& o) : submodule_view<Backend>(copy_state(*o.state()), 0) {}
  unflattened_module(unflattened_module&&) noexcept = default;
  unflattened_module& operator=(const unflattened_module& o) {
    if (this != &o) *this = unflattened_module(o);
    return *this;
  }
  unflattened_module& operator=(unflattened_module&&) noexcept = default;

  // Every module of the tree, parents first: "", "layers", "layers.0", ...
  std::vector<std::string> modules() const {
    std::vector<std::string> out;
    for (const auto& m : state()->shared->plan.modules) out.push_back(m.fqn);
    return out;
  }
  // The plan (its calls, steps and their programs): what a test or a picture reads.
  const detail::unflatten_plan& plan() const { return state()->shared->plan; }

 private:
  using state_type = detail::unflatten_state<Backend>;
  const std::shared_ptr<state_type>& state() const { return this->st_; }

  static std::shared_ptr<state_type> make(const exported_program& ep, const typename Backend::options& opts) {
    auto sh = std::make_shared<detail::unflatten_shared<Backend>>();
    sh->plan = detail::plan_unflatten(ep);
    sh->opts = opts;
    for (const auto& c : sh->plan.calls) {
      std::vector<std::shared_ptr<const program_module<Backend>>> steps;
      for (const auto& s : c.steps)
        steps.push_back(s.is_call() ? nullptr : std::make_shared<const program_module<Backend>>(*s.program, opts));
      sh->steps.push_back(std::move(steps));
      sh->module_of_call.push_back(static_cast<std::size_t>(&detail::module_at(sh->plan, c.module) - sh->plan.modules.data()));
    }
    auto st = std::make_shared<state_type>();
    for (const std::string& b : sh->plan.mutable_state) {
      const any_tensor* t = ep.state_dict().find(b);
      st->buffers.push_back((t != nullptr ? *t : ep.constants().at(b)).clone());
    }
    st->swaps.resize(sh->plan.modules.size());
    st->shared = std::move(sh);
    return st;
  }
  static std::shared_ptr<state_type> copy_state(state_type& o) {
    auto st = std::make_shared<state_type>();
    const std::unique_lock<std::shared_mutex> lock(o.calls);
    st->shared = o.shared;
    for (const any_tensor& b : o.buffers) st->buffers.push_back(b.clone());
    st->swaps = o.swaps;  // (program_module copies: buffers of their own)
    return st;
  }
};

// The module tree of `ep`, each call's own nodes planned by Backend.
template <class Backend = TYPEX_DEFAULT_BACKEND>
unflattened_module<Backend> unflatten(const exported_program& ep, const typename Backend::options& opts = {}) {
  return unflattened_module<Backend>(ep, opts);
}

}  // namespace typex

// ---- definitions: compiled once in typex::runtime, or inline here in header-only builds
// (config.hpp: TYPEX_SEPARATE_COMPILATION) ----
#if TYPEX_HEADER_DEFINITIONS
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
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const ir::tensor_meta& m = c.slot_meta[c.inputs[i]];
    const any_tensor& t = inputs[i];
    bool ok = t.scalar_type() == m.scalar_type && t.rank() == m.rank();
    for (std::size_t d = 0; ok && d < m.rank(); ++d)
      if (const auto v = m.shape[d].value()) ok = *v == t.extents()[d];
    if (ok) continue;
    detail::raise<shape_error>([&](auto& w) {
      w.put("typex::unflatten: input "); w.put_int(static_cast<long long>(i)); w.put(" ('"); w.put(c.slot_names[c.inputs[i]]);
      w.put("') of '"); w.put(who); w.put("' is "); w.put(t.to_string()); w.put(", expected "); w.put(m.to_string());
      w.put(" (its signature: "); w.put(describe_call(c)); w.put(")");
    });
  }
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
