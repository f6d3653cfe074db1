// typex/export/program_module.hpp — running an exported program: the calling convention, once,
// for every backend.
//
//   auto run = program.module();                 // program_module<TYPEX_DEFAULT_BACKEND>
//   std::vector<any_tensor> out = run({x});      // tensor leaves in, output leaves out
//   run.run(inputs, outputs);                    // the same, reusing `outputs`: no allocation
//
// The module binds the program to a backend: it takes the lifted parameters, buffers and constants
// from the program, gives the buffers the program writes (BUFFER_MUTATION outputs) copies of their
// own, and hands the backend a program_binding: the graph, the placeholders each call feeds and the
// tensors bound for the program's life. Each call checks the inputs against the program (count,
// dtype, rank, static extents, the symbols' ranges and agreement between inputs: an error names the
// input, what was expected and what came; a call with the extents of the previous one has passed
// these checks already and skips them), runs the backend's executor, writes the mutated buffers back
// into the module's copies and returns the user outputs.
//
// A backend is a type B with
//   using options  = ...;                        // what a user may pass to program_module(ep, opts)
//   using executor = ...;                        // run / planned_for / report, as below
//   static std::shared_ptr<executor> compile(program_binding, const options&);
// and knows nothing of exported_program: the binding is all it gets. A backend whose programs run
// on a device also gives
//   static typex::device device_of(const options&);                 // where the inputs must be
//   static any_tensor place_state(const any_tensor& host, const options&);  // a copy there
//   static exported_program prepare(const exported_program&);        // (optional) what it compiles
// and the module keeps its state (the buffers the program writes, the parameters a joint program
// trains) on that device: written back, cloned and loaded through the device's operations
// (tensor/device_ops.hpp), stepped by the optimizers there.
#pragma once

#include <typex/core/error.hpp>
#include <typex/core/symbol_table.hpp>
#include <typex/export/exported_program.hpp>
#include <typex/export/program_binding.hpp>
#include <typex/ir/graph.hpp>
#include <typex/tensor/device_ops.hpp>
#include <typex/tensor/host_tensor.hpp>
#include <typex/tensor/named_tensors.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace typex {

// The executor contract a backend's program runs on.
template <class E>
concept program_executor = requires(E& e, const E& ce, std::span<const any_tensor> in, const symbol_table& s,
                                    std::vector<any_tensor>& out) {
  e.run(in, s, out);  // inputs (checked), symbols bound from them; outputs resized, reused where they fit
  { ce.planned_for(in) } -> std::convertible_to<bool>;  // the last plan fits these extents: no symbols needed
  ce.report();
};

template <class B>
concept backend = requires { sizeof(B); } &&  // (a backend declared but not included: false, not an error)
                  requires { typename B::options; typename B::executor; } &&
                  requires(program_binding b, const typename B::options& o) {
  typename B::executor;
  { B::compile(std::move(b), o) } -> std::same_as<std::shared_ptr<typename B::executor>>;
} && program_executor<typename B::executor>;

// An error here means: no backend that runs programs is included (or Backend is not one). This
// primary template only reports that, once: its members accept every use silently.
template <class Backend>
class program_module {
 public:
  template <class... A>
  explicit program_module(const A&...) {
    static_assert(backend<Backend>,
                  "typex: exported_program::module() needs a backend that runs programs: include <typex/backend/eigen.hpp> "
                  "(a backend type defines options, executor and compile(program_binding, options))");
  }
  template <class... A>
  std::vector<any_tensor> operator()(const A&...) const { return {}; }
  template <class... A>
  void run(const A&...) const {}
  std::size_t num_inputs() const noexcept { return 0; }
  int report() const { return 0; }
};

namespace detail {
// A copy of `ep` whose state dict and constants are copies of their own (tied names stay tied):
// what a module computes with can no longer change behind its back.
TYPEX_API exported_program with_own_tensors(const exported_program& ep);
// Whether [a, a + na) and [b, b + nb) (objects, by address) overlap.
inline bool overlaps(const void* a, std::size_t na, const void* b, std::size_t nb) noexcept {
  const auto x = reinterpret_cast<std::uintptr_t>(a), y = reinterpret_cast<std::uintptr_t>(b);
  return na != 0 && nb != 0 && x < y + nb && y < x + na;
}
[[noreturn]] TYPEX_API void moved_from_module();
}  // namespace detail

// The calling convention on a backend. Contracts (docs/errors_and_guarantees.md):
//  - weights: the module computes with copies of the program's parameters, buffers and constants
//    taken when it is made. Loading weights into the model or writing into the program's tensors
//    afterwards does not change it (no mix of old packed weights and new biases); the module's
//    own load_state_dict() replaces them, and every later call (any shapes) uses the new ones.
//  - threads: operator() and run() are const and may be called from any number of threads at
//    once, on one module or on copies: each call leases an executor (its plan and arena) from the
//    module's pool, making one when all are busy. A copy shares the pool and the (immutable)
//    weights; a program that writes buffers gives each copy its own buffers, and serializes the
//    calls of one module (they update its buffers in turn). Non-const members (assignment,
//    load_state_dict) need the usual exclusive access.
//  - aliasing: outputs never share memory with the inputs or the module's tensors; run(v, v) and
//    outputs holding the inputs' storage are detected and computed as if they were distinct.
//  - a moved-from module throws state_error when called.
template <class Backend>
  requires backend<Backend>
class program_module<Backend> {
 public:
  using options = typename Backend::options;
  using executor = typename Backend::executor;

  explicit program_module(const exported_program& ep, const options& opts = {})
      : core_(std::make_shared<const core>(prepared(ep), opts)) {
    init_state();
  }

  // A copy shares the weights and the executors' pool; it has its own buffers (the values o holds now).
  // (partitioned_module's forward half trains the parameters `trained` (by FQN), which its program
  // has no gradient outputs for: per-call inputs kept in the module, as a joint program's)
  template <class>
  friend class partitioned_module;
  program_module(const program_module& o) : core_(o.core_) {
    if (!o.state_) return;
    state_ = std::make_unique<mutable_state>();
    const std::lock_guard<std::mutex> lock(o.state_->calls);
    for (const any_tensor& t : o.state_->buffers) state_->buffers.push_back(clone_where_it_is(t, "typex::program_module's copy"));
  }
  program_module(program_module&&) noexcept = default;
  program_module& operator=(const program_module& o) {
    if (this != &o) *this = program_module(o);
    return *this;
  }
  program_module& operator=(program_module&&) noexcept = default;

  // The number of tensor inputs a call takes (the user inputs' tensor leaves).
  std::size_t num_inputs() const { return get().user.size(); }
  // The program this module runs (its tensors are the module's own copies; a backend that prepares
  // programs, Backend::prepare, gives its own form of it: the CUDA backend's with the ops it has no
  // kernel for decomposed).
  const exported_program& program() const { return *get().ep; }

  std::vector<any_tensor> operator()(const std::vector<any_tensor>& inputs) const {
    std::vector<any_tensor> out;
    run(inputs, out);
    return out;
  }

  // Runs the program on `inputs`, writing the outputs into `outputs` (resized to the program's
  // outputs; a tensor already of the right dtype and extents, not shared, is reused).
  // A program that writes buffers (BUFFER_MUTATION outputs) updates this module's copies of them
  // after each call, and returns the user outputs only.
  void run(std::span<const any_tensor> inputs, std::vector<any_tensor>& outputs) const {
    const core& c = get();
    // run(v, v), or inputs inside the outputs' vector: resizing or writing the outputs would
    // destroy or overwrite the inputs while they are read. Hold the inputs' handles: then no
    // output reuses their storage (it is shared), and the span no longer points into `outputs`.
    std::vector<any_tensor> held;
    if (detail::overlaps(inputs.data(), inputs.size_bytes(), outputs.data(), outputs.capacity() * sizeof(any_tensor))) {
      held.assign(inputs.begin(), inputs.end());
      inputs = held;
    }
    for (std::size_t i = 0; i < inputs.size() && i < c.user.size(); ++i) {
      if (inputs[i].raw_data() == nullptr || inputs[i].get_storage().bytes() < inputs[i].nbytes()) check_storage_of(inputs, i);
      if (inputs[i].device() != c.device) wrong_device(inputs, i);
    }
    if (!c.input_writes.empty()) check_written_inputs(c, inputs);
    if (!state_) {
      run_leased(c, inputs, inputs, outputs);
      write_inputs(c, inputs, outputs);
      return;
    }
    mutable_state& st = *state_;
    const std::lock_guard<std::mutex> lock(st.calls);  // (one call at a time updates the buffers)
    st.inputs.assign(inputs.begin(), inputs.end());  // (the user inputs, then the buffers: no
    st.inputs.insert(st.inputs.end(), st.buffers.begin(), st.buffers.end());  //  allocation once sized)
    run_leased(c, inputs, st.inputs, st.outputs);
    const std::size_t n = c.written;
    for (std::size_t k = 0; k < n; ++k) {
      const any_tensor& v = st.outputs[k];
      if (v.nbytes() == 0) continue;
      if (v.device().is_host() && st.buffers[k].device().is_host()) std::memcpy(st.buffers[k].raw_data(), v.raw_data(), v.nbytes());
      else copy_bytes(st.buffers[k], v, "typex::program_module's write-back of a buffer");
    }
    outputs.resize(st.outputs.size() - n);
    for (std::size_t i = 0; i < outputs.size(); ++i) std::swap(outputs[i], st.outputs[n + i]);  // (tensors cycle: reused)
    st.inputs.resize(0);
    write_inputs(c, inputs, outputs);
  }

  // The tensor `fqn` (a buffer or parameter) as this module holds it now: its own copy for a
  // buffer the program writes (updated by each call: training-mode batch norm's running
  // statistics) and for a parameter a joint program trains (stepped by an optimizer), else the
  // program's. The module's own copies live where the backend runs (on a CUDA device: device tensors).
  const any_tensor& buffer(std::string_view fqn) const {
    const core& c = get();
    const any_tensor* t = c.ep->state_dict().find(fqn);
    if (state_)
      for (std::size_t k = 0; k < c.fqns.size(); ++k)  // (a tied name shares its first name's storage)
        if (c.fqns[k] == fqn || (t != nullptr && t->raw_data() != nullptr && t->raw_data() == c.initial[k].raw_data()))
          return state_->buffers[k];
    if (t != nullptr) return *t;
    return c.ep->constants().at(fqn);
  }

  // The parameters a joint program trains (make_joint: those with GRADIENT_TO_PARAMETER outputs),
  // by FQN, sharing storage with this module's copies: what an optimizer takes
  // (typex::optim::adam opt(step.parameters())). Empty for other programs. A copy of the module
  // has copies of its own. Step them between calls, not during one. On a device backend they are
  // device tensors, and the optimizers step them there.
  std::vector<std::pair<std::string, any_tensor>> parameters() const {
    const core& c = get();
    std::vector<std::pair<std::string, any_tensor>> out;
    for (std::size_t k = c.written; k < c.fqns.size(); ++k) out.emplace_back(c.fqns[k], state_->buffers[k]);
    return out;
  }
  // The state dict this module computes with, with its current buffers (what to save after
  // training). On the host: the module's own buffers shared, or host copies of those a device
  // backend keeps on its device.
  named_tensors state_dict() const {
    const core& c = get();
    named_tensors out;
    for (const auto& [fqn, t] : c.ep->state_dict()) {
      if (!state_) {
        out.insert(fqn, t);
        continue;
      }
      const any_tensor& b = buffer(fqn);
      out.insert(fqn, b.device().is_host() ? b : host_copy(b, "typex::program_module::state_dict"));
    }
    return out;
  }

  // Replaces the weights this module computes with (torch's load_state_dict rules: names, dtypes
  // and extents checked; strict: missing and unexpected keys are an error and nothing changes).
  // Every later call, with any shapes, uses the new values (plans and packed weights are remade).
  // Copies of this module made before keep theirs. Not concurrent with calls on this object.
  load_result load_state_dict(const named_tensors& sd, bool strict = true) { return load_state_dict(sd, load_options{.strict = strict}); }
  load_result load_state_dict(const named_tensors& sd, const load_options& options) {
    const core& c = get();
    const exported_program fresh = detail::with_own_tensors(*c.ep);
    std::vector<std::pair<std::string, any_tensor>> dst;
    for (const auto& [fqn, t] : fresh.state_dict()) dst.emplace_back(fqn, t);
    load_result r = detail::load_named(dst, sd, options, "typex::program_module::load_state_dict");
    auto next = std::make_shared<const core>(fresh, c.opts, c.also_trained);
    if (state_)  // (the buffers the program writes: the loaded values, where loaded)
      for (std::size_t k = 0; k < next->fqns.size(); ++k)
        if (const any_tensor* t = fresh.state_dict().find(next->fqns[k])) copy_bytes(state_->buffers[k], *t, "typex::program_module::load_state_dict");
    core_ = std::move(next);
    return r;
  }

  // What the backend's executor reports of its plan for the last shapes run (the Eigen backend:
  // steps, fusions, views, the arena's planned peak).
  auto report() const {
    const core& c = get();
    std::shared_ptr<executor> e;
    {
      const std::lock_guard<std::mutex> lock(c.pool);
      e = c.last.lock();
      if (e && c.busy(e.get())) e = nullptr;
      if (e) c.in_use.push_back(e.get());
    }
    if (!e) return Backend::compile(c.binding, c.opts)->report();  // (none idle: an empty plan's)
    auto r = e->report();
    c.give_back(e);
    return r;
  }

 private:
  // `ep` with tensors of its own, as the backend prepares it (Backend::prepare, where it has one)
  static exported_program prepared(const exported_program& ep) {
    if constexpr (requires { Backend::prepare(ep); }) return detail::with_own_tensors(Backend::prepare(ep));
    else return detail::with_own_tensors(ep);
  }
  struct train_too {  // (a tag: a braced options argument never selects this constructor)
    std::vector<std::string> fqns;
  };
  program_module(const exported_program& ep, train_too trained, const options& opts)
      : core_(std::make_shared<const core>(prepared(ep), opts, std::move(trained.fqns))) {
    init_state();
  }

  // What copies share: the program with the module's own tensors, its binding, and the pool of
  // executors (each a plan and its arena; leased by one call at a time).
  struct core {
    core(exported_program program, const options& o, std::vector<std::string> trained_too = {})
        : ep(std::make_shared<const exported_program>(std::move(program))), opts(o), also_trained(std::move(trained_too)) {
      const ir::graph& g = ep->graph();
      const auto& specs = ep->signature().input_specs();
      const auto placeholders = g.placeholders();
      const auto writes = ep->signature().buffers_to_mutate();
      auto mutated = [&](std::string_view fqn) {
        for (const auto& [out, target] : writes)
          if (target == fqn) return true;
        return false;
      };
      auto trained = [&](std::string_view fqn) {  // (a joint program's: it returns their gradients)
        for (const auto& o : ep->signature().output_specs())
          if (o.kind == output_kind::gradient_to_parameter && o.target == fqn) return true;
        return std::find(also_trained.begin(), also_trained.end(), fqn) != also_trained.end();
      };
      binding.graph = std::shared_ptr<const ir::graph>(ep, &ep->graph());
      for (std::size_t i = 0; i < placeholders.size(); ++i) {
        const input_spec& s = specs[i];
        if (s.kind == input_kind::user_input) {
          user.push_back(placeholders[i]);
          continue;
        }
        if (s.kind == input_kind::buffer && mutated(s.target)) continue;  // (below)
        if (s.kind == input_kind::parameter && trained(s.target)) continue;
        const bool in_state = s.kind == input_kind::parameter || (s.kind == input_kind::buffer && s.persistent);
        const any_tensor* t = in_state ? ep->state_dict().find(s.target) : ep->constants().find(s.target);
        binding.constants.emplace_back(placeholders[i], *t);  // (the program's verifier saw it exists)
      }
      // the buffers the program writes: each module's own copies, inputs of every call (not
      // folded), in the order of the mutation outputs
      for (const auto& [out, fqn] : writes) {
        for (std::size_t i = 0; i < placeholders.size(); ++i) {
          const input_spec& s = specs[i];
          if (s.kind != input_kind::buffer || s.target != fqn) continue;
          state_placeholders.push_back(placeholders[i]);
          fqns.push_back(fqn);
          initial.push_back(s.persistent ? *ep->state_dict().find(fqn) : *ep->constants().find(fqn));
        }
      }
      written = fqns.size();
      // the user inputs the program writes (USER_INPUT_MUTATION outputs, after the buffers'): each
      // call copies their new values into the caller's tensors
      for (const auto& [out, arg] : ep->signature().user_inputs_to_mutate())
        for (std::size_t j = 0; j < user.size(); ++j)
          if (g[user[j]].name == arg) input_writes.push_back(j);
      // the parameters a joint program trains: each module's own copies, inputs of every call (an
      // optimizer steps them between calls, so they are neither folded nor packed)
      for (std::size_t i = 0; i < placeholders.size(); ++i) {
        const input_spec& s = specs[i];
        if (s.kind != input_kind::parameter || !trained(s.target)) continue;
        state_placeholders.push_back(placeholders[i]);
        fqns.push_back(s.target);
        initial.push_back(*ep->state_dict().find(s.target));
      }
      binding.inputs = user;
      binding.inputs.insert(binding.inputs.end(), state_placeholders.begin(), state_placeholders.end());
      binding.user_inputs = user.size();
      binding.writes_user_inputs = !input_writes.empty();
      if constexpr (requires { Backend::device_of(o); }) device = Backend::device_of(o);
      binding.data_dependent = ep->ranges().unbacked();
      binding.check_shapes = !ep->trusted_shapes();
      binding.check = [p = ep.get()](const symbol_table& symbols) {  // (the binding's graph keeps *p alive)
        p->ranges().check(symbols);
        p->check_assertions(symbols);
      };
      idle.push_back(Backend::compile(binding, opts));  // (checks now that the backend runs every node)
      last = idle.back();
    }

    // An idle executor, preferably one planned for these inputs' extents; a new one when all are busy.
    std::shared_ptr<executor> lease(std::span<const any_tensor> all) const {
      {
        const std::lock_guard<std::mutex> lock(pool);
        if (!idle.empty()) {
          std::size_t k = idle.size() - 1;  // (the last given back, unless another fits these extents)
          for (std::size_t j = idle.size(); j-- > 0;)
            if (idle[j]->planned_for(all)) {
              k = j;
              break;
            }
          std::shared_ptr<executor> e = std::move(idle[k]);
          idle.erase(idle.begin() + static_cast<std::ptrdiff_t>(k));
          in_use.push_back(e.get());
          return e;
        }
      }
      std::shared_ptr<executor> e = Backend::compile(binding, opts);
      const std::lock_guard<std::mutex> lock(pool);
      in_use.push_back(e.get());
      return e;
    }
    void give_back(std::shared_ptr<executor> e) const noexcept {
      const std::lock_guard<std::mutex> lock(pool);
      std::erase(in_use, e.get());
      last = e;
      try {
        idle.push_back(std::move(e));
      } catch (...) {  // (out of memory: the executor is dropped, a later call makes another)
      }
    }
    bool busy(const executor* e) const noexcept { return std::find(in_use.begin(), in_use.end(), e) != in_use.end(); }

    std::shared_ptr<const exported_program> ep;
    options opts;
    std::vector<std::string> also_trained;  // trained without a gradient output (partitioned_module's forward)
    program_binding binding;
    std::vector<ir::node_id> user;
    std::vector<ir::node_id> state_placeholders;
    std::vector<std::string> fqns;       // the buffers the program writes, then the parameters it trains
    std::size_t written = 0;             // how many of them are buffers (written back after each call)
    std::vector<std::size_t> input_writes;  // the user inputs written back, in output order
    std::vector<any_tensor> initial;     // their values in the program
    typex::device device;                // where the backend wants the inputs (Backend::device_of; the host)
    mutable std::mutex pool;
    mutable std::vector<std::shared_ptr<executor>> idle;
    mutable std::vector<const executor*> in_use;
    mutable std::weak_ptr<executor> last;  // the last one a call gave back (report())
  };

  // A user input the program writes must not share memory with another input: the program reads
  // them as distinct values, and writing one back would change the other behind its back.
  static void check_written_inputs(const core& c, std::span<const any_tensor> inputs) {
    for (const std::size_t j : c.input_writes) {
      if (j >= inputs.size()) return;  // (the binding reports the count)
      const std::byte* a = inputs[j].raw_data();
      for (std::size_t i = 0; i < inputs.size(); ++i)
        if (i != j && inputs[i].raw_data() != nullptr && inputs[i].nbytes() != 0 && inputs[j].nbytes() != 0 &&
            detail::overlaps(a, inputs[j].nbytes(), inputs[i].raw_data(), inputs[i].nbytes())) {
          detail::raise<argument_error>([&](auto& w) {
            w.put("typex::program_module: user input "); w.put_int(static_cast<long long>(j)); w.put(" ('");
            w.put(c.ep->graph()[c.user[j]].name); w.put("') is written by the program (USER_INPUT_MUTATION) and shares memory with input ");
            w.put_int(static_cast<long long>(i)); w.put("; pass distinct tensors (clone one)");
          });
        }
    }
  }
  // Copies the user input mutations (the first outputs, once the buffers' are taken) into the
  // caller's tensors and drops them from the outputs.
  static void write_inputs(const core& c, std::span<const any_tensor> inputs, std::vector<any_tensor>& outputs) {
    if (c.input_writes.empty()) return;
    for (std::size_t k = 0; k < c.input_writes.size(); ++k) {
      const any_tensor& v = outputs[k];
      const any_tensor& dst = inputs[c.input_writes[k]];
      if (v.nbytes() == 0) continue;
      if (v.device().is_host() && dst.device().is_host()) std::memcpy(dst.raw_data(), v.raw_data(), v.nbytes());
      else copy_bytes(dst, v, "typex::program_module's write-back of a user input");
    }
    outputs.erase(outputs.begin(), outputs.begin() + static_cast<std::ptrdiff_t>(c.input_writes.size()));
  }

  struct mutable_state {
    std::vector<any_tensor> buffers;          // this module's copies
    std::vector<any_tensor> inputs, outputs;  // reused by each call
    std::mutex calls;
  };

  const core& get() const {
    if (!core_) detail::moved_from_module();
    return *core_;
  }
  void init_state() {
    const core& c = get();
    if (c.fqns.empty()) return;
    state_ = std::make_unique<mutable_state>();
    for (const any_tensor& t : c.initial) {
      if constexpr (requires { Backend::place_state(t, c.opts); }) state_->buffers.push_back(Backend::place_state(t, c.opts));
      else state_->buffers.push_back(t.clone());
    }
  }
  [[noreturn]] TYPEX_NOINLINE TYPEX_COLD void wrong_device(std::span<const any_tensor> inputs, std::size_t i) const {
    const core& c = get();
    typex::detail::raise<device_error>([&](auto& w) {
      w.put("typex: input '"); w.put(c.ep->graph()[c.user[i]].name); w.put("' is on "); w.put(inputs[i].device().to_string());
      w.put(", but this program runs on "); w.put(c.device.to_string());
      w.put(c.device.is_host() ? " (copy it to the host first: typex::cuda::to_host)" : " (copy it there first: typex::cuda::to_device)");
    });
  }

  void check_storage_of(std::span<const any_tensor> inputs, std::size_t i) const {
    const exported_program& ep = *get().ep;
    std::string what = "input '";
    what += ep.graph()[get().user[i]].name;
    what += '\'';
    inputs[i].check_storage(what);
  }

  // user: the user inputs (checked); all: what the executor takes (the user inputs, then the
  // buffers the program writes).
  void run_leased(const core& c, std::span<const any_tensor> user, std::span<const any_tensor> all,
                  std::vector<any_tensor>& outputs) const {
    struct giver {
      const core& c;
      std::shared_ptr<executor> e;
      ~giver() { c.give_back(std::move(e)); }
    } lease{c, c.lease(all)};
    executor& e = *lease.e;
    if (!e.planned_for(all)) {
      const symbol_table symbols = c.ep->bind_inputs(user);
      e.run(all, symbols, outputs);
    } else {
      check_dtypes(c, user);
      e.run(all, symbol_table{}, outputs);
    }
  }

  static void check_dtypes(const core& c, std::span<const any_tensor> inputs) {
    const ir::graph& g = c.ep->graph();
    for (std::size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i].scalar_type() != g[c.user[i]].vals.front().scalar_type) (void)c.ep->bind_inputs(inputs);  // throws the full message
  }

  std::shared_ptr<const core> core_;
  std::unique_ptr<mutable_state> state_;  // (null: the program writes no buffer)
};

}  // namespace typex

// ---- definitions: compiled once in typex::runtime, or inline here in header-only builds
// (config.hpp: TYPEX_SEPARATE_COMPILATION) ----
#if TYPEX_HEADER_DEFINITIONS
TYPEX_API auto typex::detail::with_own_tensors(const exported_program& ep) -> exported_program {
  std::vector<std::pair<const std::byte*, storage>> copies;  // (tied names share one copy)
  auto own = [&](const any_tensor& t) {
    for (const auto& [from, to] : copies)
      if (from == t.raw_data() && t.raw_data() != nullptr) return any_tensor(t.scalar_type(), t.extents(), to);
    any_tensor c = t.clone();
    copies.emplace_back(t.raw_data(), c.get_storage());
    return c;
  };
  named_tensors state, constants;
  for (const auto& [fqn, t] : ep.state_dict()) state.insert(fqn, own(t));
  for (const auto& [fqn, t] : ep.constants()) constants.insert(fqn, own(t));
  exported_program own_copy(ep.graph(), ep.signature(), std::move(state), std::move(constants), ep.ranges(), ep.module_call_graph(),
                            ep.example_inputs());
  own_copy.set_trusted_shapes(ep.trusted_shapes());
  return own_copy;
}

TYPEX_API auto typex::detail::moved_from_module() -> void {
  raise_message<state_error>(
      "typex: this module was moved from: it has no program any more (call the module it was moved to, or make one with "
      "program.module())");
}
#endif  // TYPEX_HEADER_DEFINITIONS
