// typex/export/joint.hpp — the joint forward/backward program: torch's
// aot_export_module(module, args, trace_joint=True, output_loss_index=k), from an exported program.
//
//   auto ep = typex::export_program(model_with_loss, inputs...);   // returns the loss (and more)
//   typex::exported_program joint = typex::make_joint(ep);          // + its gradients
//   auto step = joint.module();                                     // computes with its own weights
//   typex::optim::adam opt(step.parameters(), {.lr = 1e-3});        // ... and trains them
//   for (...) {
//     auto out = step({x, y});                                      // loss, other outputs, gradients
//     opt.step(typex::parameter_gradients(joint, out));
//   }
//   typex::load_state_dict(model, step.state_dict());               // the trained weights
//
// The joint program is one functional graph: the forward, then the backward of the loss. Its
// signature marks the loss LOSS_OUTPUT, and adds one GRADIENT_TO_PARAMETER output per trainable
// parameter (target: its FQN; frozen parameters have none) and one GRADIENT_TO_USER_INPUT output
// per user input asked for (target: the input's name), after the user outputs, as torch orders
// them. Buffer mutations (training-mode batch norm's running statistics) stay first, so running the
// program updates them as the forward does.
//
// Unlike torch's aot_export_module, a model may return the loss together with other outputs (the
// logits, say): they are outputs of the joint program too, computed by its forward and not
// differentiated (torch refuses such a model and asks for .detach()).
#pragma once

#include <typex/export/exported_program.hpp>
#include <typex/ir/printer.hpp>
#include <typex/passes/autodiff.hpp>
#include <typex/tensor/named_tensors.hpp>

#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace typex {

struct joint_options {
  // which user output is the loss: its position among the program's user outputs (flat leaves)
  std::size_t loss = 0;
  // user inputs whose gradients the program returns too (GRADIENT_TO_USER_INPUT), by name
  std::vector<std::string> input_gradients = {};
  // parameters that get no gradient: FQNs, or module paths ("encoder" freezes encoder.*)
  std::vector<std::string> frozen = {};
};

// The joint program of `ep` (whose user output `options.loss` is a floating-point scalar).
TYPEX_API exported_program make_joint(const exported_program& ep, const joint_options& options = {});

// What a call of a joint program returned (the user outputs then the gradients, as program_module
// returns them), read by its signature. The tensors share storage with `outputs`.
struct joint_outputs {
  any_tensor loss;
  std::vector<any_tensor> user_outputs;  // the other user outputs, in order
  named_tensors gradients;               // by parameter FQN
  named_tensors input_gradients;         // by user input name
};
TYPEX_API joint_outputs read_joint_outputs(const exported_program& joint, std::span<const any_tensor> outputs);

// The gradients by parameter FQN (what the optimizers take).
inline named_tensors parameter_gradients(const exported_program& joint, std::span<const any_tensor> outputs) {
  return read_joint_outputs(joint, outputs).gradients;
}

}  // namespace typex

// ---- definitions: compiled once in typex::runtime, or inline here in header-only builds
// (config.hpp: TYPEX_SEPARATE_COMPILATION) ----
#if TYPEX_HEADER_DEFINITIONS
namespace typex::detail {
inline constexpr std::string_view make_joint_name = "typex::make_joint";
inline bool frozen_by(const std::vector<std::string>& frozen, const std::string& fqn) {
  for (const std::string& f : frozen)
    if (fqn == f || (fqn.size() > f.size() && fqn.compare(0, f.size(), f) == 0 && fqn[f.size()] == '.') || f.empty()) return true;
  return false;
}
}  // namespace typex::detail

TYPEX_API auto typex::make_joint(const exported_program& ep, const joint_options& options) -> exported_program {
  constexpr std::string_view who = detail::make_joint_name;
  const graph_signature& sig = ep.signature();
  for (const auto& o : sig.output_specs()) {
    if (o.kind != output_kind::user_output && o.kind != output_kind::buffer_mutation && o.kind != output_kind::user_input_mutation) {
      detail::raise<argument_error>([&](auto& w) {
        w.put(who); w.put(": the program already has "); w.put(name(o.kind)); w.put(" outputs (it is a joint program)");
      });
    }
  }
  // the loss: user output `options.loss`, counted after the buffer mutations
  std::size_t first_user = 0;
  while (first_user < sig.output_specs().size() && (sig.output_specs()[first_user].kind == output_kind::buffer_mutation ||
                                                    sig.output_specs()[first_user].kind == output_kind::user_input_mutation))
    ++first_user;
  const std::size_t n_user = sig.output_specs().size() - first_user;
  if (options.loss >= n_user) {
    detail::raise<argument_error>([&](auto& w) {
      w.put(who); w.put(": the loss is user output "); w.put_int(static_cast<long long>(options.loss)); w.put(", but the program has ");
      w.put_int(static_cast<long long>(n_user)); w.put(" user outputs");
    });
  }
  // what to differentiate: the trainable parameters (each storage once: tied weights are one
  // placeholder), then the user inputs asked for
  const auto placeholders = ep.graph().placeholders();
  passes::gradient_request request{.loss = first_user + options.loss, .wrt = {}};
  std::vector<output_spec> grads;
  for (std::size_t i = 0; i < placeholders.size(); ++i) {
    const input_spec& s = sig.input_specs()[i];
    if (s.kind != input_kind::parameter || detail::frozen_by(options.frozen, s.target)) continue;
    if (!is_floating_point(ep.graph()[placeholders[i]].vals.front().scalar_type)) continue;
    request.wrt.push_back(placeholders[i]);
    grads.push_back({output_kind::gradient_to_parameter, "", s.target});
  }
  for (const std::string& in : options.input_gradients) {
    std::size_t found = placeholders.size();
    for (std::size_t i = 0; i < placeholders.size(); ++i)
      if (sig.input_specs()[i].kind == input_kind::user_input && sig.input_specs()[i].arg == in) found = i;
    if (found == placeholders.size() || !is_floating_point(ep.graph()[placeholders[found]].vals.front().scalar_type)) {
      detail::raise<argument_error>([&](auto& w) {
        w.put(who); w.put(": a gradient was asked for user input '"); w.put(in);
        w.put(found == placeholders.size() ? "', which the program does not have (its user inputs: " : "', which is not floating-point (its user inputs: ");
        bool first = true;
        for (const std::string& u : sig.user_inputs()) {
          if (!first) w.put(", ");
          w.put(u);
          first = false;
        }
        w.put(")");
      });
    }
    request.wrt.push_back(placeholders[found]);
    grads.push_back({output_kind::gradient_to_user_input, "", in});
  }
  for (const std::string& f : options.frozen) {  // (a frozen name that matches nothing is a typo)
    bool any = false;
    for (const auto& s : sig.input_specs()) any = any || (s.kind == input_kind::parameter && detail::frozen_by({f}, s.target));
    if (!any) {
      detail::raise<argument_error>([&](auto& w) {
        w.put(who); w.put(": frozen '"); w.put(f); w.put("' names no parameter and no module holding one");
      });
    }
  }

  // a constant the trace computed from trainable parameters (an eager op on the module's tensors
  // alone) would silently cut their gradients: refuse it, naming the op and the parameters
  {
    const ir::graph& fg = ep.graph();
    std::vector<bool> feeds_loss(fg.size(), false);
    ir::graph::for_each_ref(fg.output().args[request.loss], [&](ir::value_ref r) { feeds_loss[r.node] = true; });
    for (std::size_t i = fg.size(); i-- > 0;)
      if (feeds_loss[i] && fg[static_cast<ir::node_id>(i)].op != ir::node_op::output)
        ir::graph::for_each_ref(fg[static_cast<ir::node_id>(i)], [&](ir::value_ref r) { feeds_loss[r.node] = true; });
    for (std::size_t i = 0; i < placeholders.size(); ++i) {
      const ir::node& ph = fg[placeholders[i]];
      if (ph.derived_from.empty() || !feeds_loss[placeholders[i]]) continue;
      std::vector<std::string> trained;
      for (const std::string& src : ph.derived_from)
        for (const input_spec& s : sig.input_specs())
          if (s.arg == src && s.kind == input_kind::parameter && !detail::frozen_by(options.frozen, s.target)) trained.push_back(s.target);
      if (trained.empty()) continue;
      detail::raise<unsupported_error>([&](auto& w) {
        w.put(who); w.put(": the constant '"); w.put(sig.input_specs()[i].target); w.put("' ("); w.put(ph.stack_trace);
        w.put(") was computed from the parameter"); w.put(trained.size() > 1 ? "s " : " ");
        for (std::size_t k = 0; k < trained.size(); ++k) {
          if (k) w.put(", ");
          w.put('\''); w.put(trained[k]); w.put('\'');
        }
        w.put(" while the model was traced (an op on the module's tensors alone runs then, and the program gets its result "
              "as a constant), so no gradient would reach them; record the op with one operand made traced "
              "(typex::as_traced(p, x) for a parameter p and a traced input x), or freeze them");
      });
    }
  }

  // (a training-mode dropout becomes input * its mask, so that the backward multiplies by the mask
  // the forward drew; placeholders keep their positions)
  ir::graph g = passes::differentiate(passes::expose_dropout_masks(ep.graph()), request);

  std::vector<output_spec> outs = sig.output_specs();
  outs[first_user + options.loss].kind = output_kind::loss_output;
  outs.insert(outs.end(), grads.begin(), grads.end());
  const ir::node& out = g.output();
  for (std::size_t k = 0; k < outs.size(); ++k) {  // (a result of a call with several is named as printed: scan[0])
    outs[k].arg.clear();
    ir::detail::print_value(outs[k].arg, g, std::get<ir::value_ref>(out.args[k]));
  }
  exported_program joint(std::move(g), graph_signature(sig.input_specs(), std::move(outs)), ep.state_dict(), ep.constants(),
                         ep.ranges(), ep.module_call_graph(), ep.example_inputs());
  joint.set_trusted_shapes(ep.trusted_shapes());  // (its shapes are derived from the forward's records)
  return joint;
}

TYPEX_API auto typex::read_joint_outputs(const exported_program& joint, std::span<const any_tensor> outputs) -> joint_outputs {
  joint_outputs r;
  std::size_t k = 0;
  bool has_loss = false;
  for (const output_spec& s : joint.signature().output_specs()) {
    if (s.kind == output_kind::buffer_mutation || s.kind == output_kind::user_input_mutation) continue;
    if (k >= outputs.size()) {
      detail::raise<argument_error>([&](auto& w) {
        w.put("typex::read_joint_outputs: the program returns more outputs than the "); w.put_int(static_cast<long long>(outputs.size()));
        w.put(" given (pass what its module returned)");
      });
    }
    const any_tensor& t = outputs[k++];
    switch (s.kind) {
      case output_kind::loss_output: r.loss = t; has_loss = true; break;
      case output_kind::user_output: r.user_outputs.push_back(t); break;
      case output_kind::gradient_to_parameter: r.gradients.insert(s.target, t); break;
      case output_kind::gradient_to_user_input: r.input_gradients.insert(s.target, t); break;
      default: break;
    }
  }
  if (k != outputs.size() || !has_loss) {
    detail::raise<argument_error>([&](auto& w) {
      w.put("typex::read_joint_outputs: ");
      if (!has_loss) w.put("the program has no LOSS_OUTPUT (make it with typex::make_joint)");
      else { w.put_int(static_cast<long long>(outputs.size())); w.put(" outputs given, the program returns "); w.put_int(static_cast<long long>(k)); }
    });
  }
  return r;
}
#endif  // TYPEX_HEADER_DEFINITIONS
