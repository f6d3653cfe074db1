// typex/export/partitioned_module.hpp — a joint program run as its two halves: the forward, which
// keeps what the backward needs, then the backward (aot_autograd's compiled forward and backward).
//
//   typex::partitioned_module<> step(joint, {.recompute = true, .sizes = sizes});  // (sizes: the batch to cut for)
//   std::vector<typex::any_tensor> saved;
//   const auto outs = step.forward({x, y}, saved);   // the loss (and the other user outputs)
//   const auto grads = step.backward(saved);         // the gradients, in the joint's order
//   opt.step(step.gradients(grads));                 // by FQN, for an optimizer on step.parameters()
//
// passes::partition_joint splits the joint graph (<typex/passes/partition.hpp>): by default the
// forward saves every value the backward reads; with `.recompute` a minimum cut over the saved bytes
// (at `.sizes`' symbol values) has the backward recompute cheap ops instead. Between the two calls
// only the saved values are alive: with the min-cut, fewer bytes than the joint program keeps across
// its backward. The two halves run as program_modules: the forward applies the joint's buffer
// mutations and writes back its user input mutations; the trained parameters are this module's own
// copies (`parameters()`, `state_dict()`), handed to the backward with the saved values where it
// reads them. The same inputs give the joint program's outputs bit for bit (`operator()`). A copy
// of the module trains its own parameters; calls on one module are not concurrent.
#pragma once

#include <typex/export/joint.hpp>
#include <typex/export/program_module.hpp>
#include <typex/passes/partition.hpp>

#include <string>
#include <vector>

namespace typex {

namespace detail {
// The joint's forward and backward halves as exported programs: the forward takes the joint's
// inputs and returns its forward outputs then the saved values (as user outputs); the backward
// takes the saved values (as user inputs) and returns the gradients (as user outputs).
struct partitioned_programs {
  exported_program forward, backward;
  std::vector<std::string> trained;   // the parameters with gradients, by FQN
  std::size_t forward_user_outputs;   // of the forward's outputs after its mutations, the joint's own
  passes::partition split;
};
TYPEX_API partitioned_programs partition_programs(const exported_program& joint, const passes::partition_options& options);
}  // namespace detail

template <class Backend = TYPEX_DEFAULT_BACKEND>
class partitioned_module {
 public:
  explicit partitioned_module(const exported_program& joint, const passes::partition_options& options = {},
                              const typename Backend::options& opts = {})
      : partitioned_module(detail::partition_programs(joint, options), opts) {}

  // The forward half: the joint's user outputs (the loss among them; its mutations applied); the
  // values the backward needs go to `saved` (parameters included, as the module holds them now).
  std::vector<any_tensor> forward(const std::vector<any_tensor>& inputs, std::vector<any_tensor>& saved) const {
    std::vector<any_tensor> out = forward_(inputs);
    saved.assign(out.begin() + static_cast<std::ptrdiff_t>(n_user_), out.end());
    out.resize(n_user_);
    return out;
  }
  // The backward half: the gradients, in the joint's order (GRADIENT_TO_PARAMETER, then
  // GRADIENT_TO_USER_INPUT), from what forward saved.
  std::vector<any_tensor> backward(const std::vector<any_tensor>& saved) const { return backward_(saved); }
  // Both halves: what the joint program's module returns for these inputs.
  std::vector<any_tensor> operator()(const std::vector<any_tensor>& inputs) const {
    std::vector<any_tensor> saved;
    std::vector<any_tensor> out = forward(inputs, saved);
    for (any_tensor& g : backward(saved)) out.push_back(std::move(g));
    return out;
  }

  // The gradients of a backward call by parameter FQN (what the optimizers take).
  named_tensors gradients(const std::vector<any_tensor>& grads) const {
    named_tensors out;
    for (std::size_t k = 0; k < trained_.size() && k < grads.size(); ++k) out.insert(trained_[k], grads[k]);
    return out;
  }
  // The trained parameters (this module's copies, sharing storage: an optimizer steps them).
  std::vector<std::pair<std::string, any_tensor>> parameters() const { return forward_.parameters(); }
  named_tensors state_dict() const { return forward_.state_dict(); }
  // The split: the saved values' names and bytes, the nodes the backward recomputes.
  const passes::partition& split() const noexcept { return split_; }
  const program_module<Backend>& forward_module() const noexcept { return forward_; }
  const program_module<Backend>& backward_module() const noexcept { return backward_; }

 private:
  partitioned_module(detail::partitioned_programs p, const typename Backend::options& opts)
      : forward_(p.forward, typename program_module<Backend>::train_too{p.trained}, opts), backward_(p.backward, opts), trained_(std::move(p.trained)),
        n_user_(p.forward_user_outputs), split_(std::move(p.split)) {}

  program_module<Backend> forward_;
  program_module<Backend> backward_;
  std::vector<std::string> trained_;
  std::size_t n_user_;
  passes::partition split_;
};

}  // namespace typex

// ---- definitions: compiled once in typex::runtime, or inline here in header-only builds
// (config.hpp: TYPEX_SEPARATE_COMPILATION) ----
#if TYPEX_HEADER_DEFINITIONS
TYPEX_API auto typex::detail::partition_programs(const exported_program& joint, const passes::partition_options& options)
    -> partitioned_programs {
  const graph_signature& sig = joint.signature();
  std::vector<output_spec> forward_specs;
  std::vector<std::string> trained;
  std::size_t n_gradients = 0;
  for (const output_spec& o : sig.output_specs()) {
    if (o.kind == output_kind::gradient_to_parameter || o.kind == output_kind::gradient_to_user_input) {
      ++n_gradients;
      if (o.kind == output_kind::gradient_to_parameter) trained.push_back(o.target);
    } else {
      forward_specs.push_back(o);
    }
  }
  if (n_gradients == 0) {
    raise_message<argument_error>("typex::partitioned_module: the program has no gradient outputs (make it with typex::make_joint)");
  }
  passes::partition split = passes::partition_joint(joint.graph(), forward_specs.size(), options);
  std::size_t mutations = 0;
  for (const output_spec& o : forward_specs)
    mutations += o.kind == output_kind::buffer_mutation || o.kind == output_kind::user_input_mutation ? 1 : 0;
  const std::size_t forward_user_outputs = forward_specs.size() - mutations;

  // the forward: the joint's inputs; its forward outputs, then the saved values
  const ir::node& fout = split.forward.output();
  for (std::size_t k = 0; k < fout.args.size(); ++k) {
    const auto r = std::get<ir::value_ref>(fout.args[k]);
    if (k < forward_specs.size()) forward_specs[k].arg = split.forward[r.node].name;
    else forward_specs.push_back({output_kind::user_output, split.forward[r.node].name, ""});
  }
  const auto root = [](std::vector<std::string> in, std::vector<std::string> out) {
    const auto flat = [](std::size_t n) { return tree_spec::node(node_kind::tuple, "", {}, std::vector<tree_spec>(n)); };
    const std::size_t n_in = in.size(), n_out = out.size();
    return std::vector<module_call_entry>{{"", module_call_signature{std::move(in), std::move(out), flat(n_in), flat(n_out)}}};
  };
  std::vector<std::string> forward_in, forward_out, backward_in, backward_out;
  for (const input_spec& s : sig.input_specs())
    if (s.kind == input_kind::user_input) forward_in.push_back(s.arg);
  for (const output_spec& o : forward_specs)
    if (o.kind != output_kind::buffer_mutation && o.kind != output_kind::user_input_mutation) forward_out.push_back(o.arg);
  exported_program forward(split.forward, graph_signature(sig.input_specs(), forward_specs), joint.state_dict(), joint.constants(),
                           joint.ranges(), root(forward_in, forward_out), joint.example_inputs());

  // the backward: the saved values in, the gradients out
  std::vector<input_spec> backward_inputs;
  for (const ir::node_id ph : split.backward.placeholders()) {
    backward_inputs.push_back({input_kind::user_input, split.backward[ph].name, "", true});
    backward_in.push_back(split.backward[ph].name);
  }
  std::vector<output_spec> backward_outputs;
  for (const ir::argument& a : split.backward.output().args) {
    const std::string& name = split.backward[std::get<ir::value_ref>(a).node].name;
    backward_outputs.push_back({output_kind::user_output, name, ""});
    backward_out.push_back(name);
  }
  exported_program backward(split.backward, graph_signature(std::move(backward_inputs), std::move(backward_outputs)), {}, {},
                            joint.ranges(), root(backward_in, backward_out));
  forward.set_trusted_shapes(joint.trusted_shapes());
  backward.set_trusted_shapes(joint.trusted_shapes());
  return {std::move(forward), std::move(backward), std::move(trained), forward_user_outputs, std::move(split)};
}
#endif  // TYPEX_HEADER_DEFINITIONS
