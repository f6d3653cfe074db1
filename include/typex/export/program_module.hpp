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
// and knows nothing of exported_program: the binding is all it gets.
#pragma once

#include <typex/core/error.hpp>
#include <typex/core/symbol_table.hpp>
#include <typex/export/exported_program.hpp>
#include <typex/export/program_binding.hpp>
#include <typex/ir/graph.hpp>
#include <typex/tensor/host_tensor.hpp>
#include <typex/tensor/named_tensors.hpp>

#include <cstring>
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

template <class Backend>
  requires backend<Backend>
class program_module<Backend> {
 public:
  using options = typename Backend::options;

  explicit program_module(const exported_program& ep, const options& opts = {})
      : ep_(std::make_shared<const exported_program>(ep)) {
    const ir::graph& g = ep_->graph();
    const auto& specs = ep_->signature().input_specs();
    const auto placeholders = g.placeholders();
    program_binding b;
    b.graph = std::shared_ptr<const ir::graph>(ep_, &ep_->graph());
    for (std::size_t i = 0; i < placeholders.size(); ++i) {
      const input_spec& s = specs[i];
      if (s.kind == input_kind::user_input) {
        user_.push_back(placeholders[i]);
        continue;
      }
      if (s.kind == input_kind::buffer && mutated(s.target)) continue;  // (below)
      const bool in_state = s.kind == input_kind::parameter || (s.kind == input_kind::buffer && s.persistent);
      const any_tensor* t = in_state ? ep_->state_dict().find(s.target) : ep_->constants().find(s.target);
      b.constants.emplace_back(placeholders[i], *t);  // (the program's verifier saw it exists)
    }
    // the buffers the program writes: this module's own copies, inputs of every call (not folded),
    // in the order of the mutation outputs
    const auto writes = ep_->signature().buffers_to_mutate();
    if (!writes.empty()) {
      state_ = std::make_shared<mutable_state>();
      for (const auto& [out, fqn] : writes) {
        for (std::size_t i = 0; i < placeholders.size(); ++i) {
          const input_spec& s = specs[i];
          if (s.kind != input_kind::buffer || s.target != fqn) continue;
          const any_tensor* t = s.persistent ? ep_->state_dict().find(fqn) : ep_->constants().find(fqn);
          state_->placeholders.push_back(placeholders[i]);
          state_->fqns.push_back(fqn);
          state_->buffers.push_back(t->clone());
        }
      }
    }
    b.inputs = user_;
    if (state_) b.inputs.insert(b.inputs.end(), state_->placeholders.begin(), state_->placeholders.end());
    b.data_dependent = ep_->ranges().unbacked();
    b.check = [p = ep_.get()](const symbol_table& symbols) {  // (the binding's graph keeps *p alive)
      p->ranges().check(symbols);
      p->check_assertions(symbols);
    };
    executor_ = Backend::compile(std::move(b), opts);
  }

  // The number of tensor inputs a call takes (the user inputs' tensor leaves).
  std::size_t num_inputs() const noexcept { return user_.size(); }
  const exported_program& program() const noexcept { return *ep_; }

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
    if (!state_) {
      run_executor(inputs, inputs, outputs);
      return;
    }
    mutable_state& st = *state_;
    st.inputs.assign(inputs.begin(), inputs.end());  // (the user inputs, then the buffers: no
    st.inputs.insert(st.inputs.end(), st.buffers.begin(), st.buffers.end());  //  allocation once sized)
    run_executor(inputs, st.inputs, st.outputs);
    const std::size_t n = st.buffers.size();
    for (std::size_t k = 0; k < n; ++k) {
      const any_tensor& v = st.outputs[k];
      const std::size_t bytes = static_cast<std::size_t>(v.numel()) * itemsize(v.scalar_type());
      if (bytes != 0) std::memcpy(st.buffers[k].raw_data(), v.raw_data(), bytes);
    }
    outputs.resize(st.outputs.size() - n);
    for (std::size_t i = 0; i < outputs.size(); ++i) std::swap(outputs[i], st.outputs[n + i]);  // (tensors cycle: reused)
    st.inputs.resize(0);
  }

  // The buffer `fqn` as this module holds it now: its own copy for a buffer the program writes
  // (updated by each call: training-mode batch norm's running statistics), else the program's.
  const any_tensor& buffer(std::string_view fqn) const {
    if (state_)
      for (std::size_t k = 0; k < state_->fqns.size(); ++k)
        if (state_->fqns[k] == fqn) return state_->buffers[k];
    if (const any_tensor* t = ep_->state_dict().find(fqn)) return *t;
    return ep_->constants().at(fqn);
  }
  // The program's state dict with this module's current buffers (what to save after training).
  named_tensors state_dict() const {
    named_tensors out;
    for (const auto& [fqn, t] : ep_->state_dict()) out.insert(fqn, state_ ? buffer(fqn) : t);
    return out;
  }

  // What the backend's executor reports of its plan for the last shapes run (the Eigen backend:
  // steps, fusions, views, the arena's planned peak).
  auto report() const { return executor_->report(); }

 private:
  // user: the user inputs (checked); all: what the executor takes (the user inputs, then the
  // buffers the program writes).
  void run_executor(std::span<const any_tensor> user, std::span<const any_tensor> all, std::vector<any_tensor>& outputs) const {
    if (!executor_->planned_for(all)) {
      const symbol_table symbols = ep_->bind_inputs(user);
      executor_->run(all, symbols, outputs);
    } else {
      check_dtypes(user);
      executor_->run(all, symbol_table{}, outputs);
    }
  }
  bool mutated(std::string_view fqn) const {
    for (const auto& [out, target] : ep_->signature().buffers_to_mutate())
      if (target == fqn) return true;
    return false;
  }

  struct mutable_state {
    std::vector<ir::node_id> placeholders;
    std::vector<std::string> fqns;
    std::vector<any_tensor> buffers;          // this module's copies (shared by its copies)
    std::vector<any_tensor> inputs, outputs;  // reused by each call
  };

  void check_dtypes(std::span<const any_tensor> inputs) const {
    const ir::graph& g = ep_->graph();
    for (std::size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i].scalar_type() != g[user_[i]].vals.front().scalar_type) (void)ep_->bind_inputs(inputs);  // throws the full message
  }

  std::shared_ptr<const exported_program> ep_;
  std::vector<ir::node_id> user_;
  // The plan for the last shapes. Copies of a module share it: one module (or copy) must not be
  // called from two threads at once; make one module per thread (program.module()) instead.
  std::shared_ptr<typename Backend::executor> executor_;
  std::shared_ptr<mutable_state> state_;  // (null: the program writes no buffer)
};

}  // namespace typex
