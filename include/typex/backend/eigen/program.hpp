// typex/backend/eigen/program.hpp — running an exported program on the Eigen backend.
//
//   auto run = program.module();                 // program_module<eigen_backend>
//   std::vector<any_tensor> out = run({x});      // tensor leaves in, output leaves out
//   run.run(inputs, outputs);                    // the same, reusing `outputs`: no allocation
//
// Construction resolves every node's kernel (an op the backend does not run is an
// unsupported_error now, not at the first call) and takes the lifted parameters, buffers and
// constants from the program. Each call checks the inputs against the program — count, dtype,
// rank, static extents, the symbols' ranges and agreement between inputs — and throws an error
// naming the input, what was expected and what came (a call with the extents of the previous one
// has passed these checks already and skips them); then runs the plan made for these shapes
// (plan.hpp: folded constants, fused GEMM epilogues, views without copies, one arena). A call with
// new shapes re-plans; the constant weights packed for the GEMMs are kept across plans (packed
// when the module first plans: a module made before the program's weights change keeps reading the
// old ones; make a new module after loading weights).
#pragma once

#include <typex/backend/eigen/kernels.hpp>
#include <typex/backend/eigen/plan.hpp>
#include <typex/export/exported_program.hpp>
#include <typex/export/program_module.hpp>

#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace typex {

template <>
class program_module<eigen_backend> {
 public:
  explicit program_module(const exported_program& ep, eigen::compile_options options = {})
      : ep_(std::make_shared<const exported_program>(ep)) {
    const ir::graph& g = ep_->graph();
    const auto& specs = ep_->signature().input_specs();
    const auto placeholders = g.placeholders();
    for (std::size_t i = 0; i < placeholders.size(); ++i) {
      const input_spec& s = specs[i];
      if (s.kind == input_kind::user_input) {
        user_.push_back(placeholders[i]);
        continue;
      }
      const bool in_state = s.kind == input_kind::parameter || (s.kind == input_kind::buffer && s.persistent);
      const any_tensor* t = in_state ? ep_->state_dict().find(s.target) : ep_->constants().find(s.target);
      if (s.kind == input_kind::buffer && mutated(s.target)) continue;  // (below)
      lifted_.emplace_back(placeholders[i], *t);  // (the program's verifier saw it exists)
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
    for (ir::node_id n = 0; n < g.size(); ++n) {
      const ir::node& node = g[n];
      if (node.op == ir::node_op::call_function && !ir::is_assertion(node)) {  // (assertions: bind_inputs)
        if (node.vals.size() != 1) {
          detail::raise<unsupported_error>([&](auto& w) {
            w.put("typex::eigen: node '"); w.put(node.name); w.put("' ("); w.put(node.target.name());
            w.put(") has several results; the Eigen program runner runs single-result ops");
          });
        }
        if (eigen::find_kernel(node.target) == nullptr) {
          detail::raise<unsupported_error>([&](auto& w) {
            w.put("typex::eigen: the program uses "); w.put(node.target.name()); w.put(" (node '"); w.put(node.name);
            w.put("'), which the Eigen backend does not run");
          });
        }
      }
    }
    std::vector<ir::node_id> engine_inputs = user_;
    if (state_) engine_inputs.insert(engine_inputs.end(), state_->placeholders.begin(), state_->placeholders.end());
    engine_ = eigen::detail::make_engine(ep_, std::move(engine_inputs), lifted_, options);
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
      run_engine(inputs, inputs, outputs);
      return;
    }
    mutable_state& st = *state_;
    st.inputs.assign(inputs.begin(), inputs.end());  // (the user inputs, then the buffers: no
    st.inputs.insert(st.inputs.end(), st.buffers.begin(), st.buffers.end());  //  allocation once sized)
    run_engine(inputs, st.inputs, st.outputs);
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

  // The plan for the last shapes run: steps, fusions, views, the arena's planned peak.
  eigen::plan_report report() const { return engine_->report(); }

 private:
  // user: the user inputs (checked); all: what the engine takes (the user inputs, then the buffers
  // the program writes).
  void run_engine(std::span<const any_tensor> user, std::span<const any_tensor> all, std::vector<any_tensor>& outputs) const {
    if (!engine_->planned_for(all)) {
      symbol_table symbols;
      check_inputs(user, symbols);
      engine_->run(all, symbols, outputs);
    } else {
      check_dtypes(user);
      engine_->run(all, symbol_table{}, outputs);
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
    std::vector<any_tensor> buffers;        // this module's copies (shared by its copies)
    std::vector<any_tensor> inputs, outputs;  // reused by each call
  };

  void check_dtypes(std::span<const any_tensor> inputs) const {
    const ir::graph& g = ep_->graph();
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i].scalar_type() != g[user_[i]].vals.front().scalar_type) {
        symbol_table unused;
        check_inputs(inputs, unused);  // throws the full message
      }
    }
  }

  void check_inputs(std::span<const any_tensor> inputs, symbol_table& symbols) const {
    symbols = ep_->bind_inputs(inputs);
  }

  std::shared_ptr<const exported_program> ep_;
  std::vector<ir::node_id> user_;
  std::vector<std::pair<ir::node_id, any_tensor>> lifted_;
  // The plan for the last shapes. Copies of a module share it: one module (or copy) must not be
  // called from two threads at once; make one module per thread (program.module()) instead.
  std::shared_ptr<eigen::detail::engine> engine_;
  std::shared_ptr<mutable_state> state_;  // (null: the program writes no buffer)
};

}  // namespace typex
