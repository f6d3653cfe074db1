// typex/export/graph_signature.hpp — what each placeholder and each output of an exported graph is.
//
// torch.export's ExportGraphSignature: input specs (a user input, a lifted parameter, buffer or
// constant tensor, each with the FQN it refers to and, for buffers, whether it is persistent) and
// output specs (user outputs, buffer and user-input mutations, and — filled by the autograd issue —
// the loss and the gradients). Placeholder names follow torch.export: p_fc1_weight, b_bn_running_mean,
// c_<name>, and the user's argument names.
#pragma once

#include <typex/core/error.hpp>
#include <typex/ir/graph.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace typex {

enum class input_kind : unsigned char { user_input, parameter, buffer, constant_tensor };
enum class output_kind : unsigned char {
  user_output,
  loss_output,
  buffer_mutation,
  gradient_to_parameter,
  gradient_to_user_input,
  user_input_mutation,
};

constexpr std::string_view name(input_kind k) noexcept {
  switch (k) {
    case input_kind::user_input: return "USER_INPUT";
    case input_kind::parameter: return "PARAMETER";
    case input_kind::buffer: return "BUFFER";
    case input_kind::constant_tensor: return "CONSTANT_TENSOR";
  }
  return "?";
}

constexpr std::string_view name(output_kind k) noexcept {
  switch (k) {
    case output_kind::user_output: return "USER_OUTPUT";
    case output_kind::loss_output: return "LOSS_OUTPUT";
    case output_kind::buffer_mutation: return "BUFFER_MUTATION";
    case output_kind::gradient_to_parameter: return "GRADIENT_TO_PARAMETER";
    case output_kind::gradient_to_user_input: return "GRADIENT_TO_USER_INPUT";
    case output_kind::user_input_mutation: return "USER_INPUT_MUTATION";
  }
  return "?";
}

struct input_spec {
  input_kind kind = input_kind::user_input;
  std::string arg;          // the placeholder's name
  std::string target;       // the FQN for parameters, buffers and constants; empty for user inputs
  bool persistent = true;   // buffers only: false for non-persistent buffers (not in the state dict)
  friend bool operator==(const input_spec&, const input_spec&) = default;
};

struct output_spec {
  output_kind kind = output_kind::user_output;
  std::string arg;     // the value's name in the graph
  std::string target;  // the buffer FQN, parameter FQN or user input a mutation/gradient refers to
  friend bool operator==(const output_spec&, const output_spec&) = default;
};

// torch.export's placeholder names: "p_" / "b_" / "c_" + the FQN with '.' as '_'; user inputs keep
// their name.
TYPEX_API std::string placeholder_name(input_kind kind, std::string_view fqn_or_name);

class graph_signature {
 public:
  graph_signature() = default;
  graph_signature(std::vector<input_spec> inputs, std::vector<output_spec> outputs)
      : inputs_(std::move(inputs)), outputs_(std::move(outputs)) {}

  const std::vector<input_spec>& input_specs() const noexcept { return inputs_; }
  const std::vector<output_spec>& output_specs() const noexcept { return outputs_; }

  // FQNs of the lifted parameters / buffers, in input order (torch: parameters, buffers).
  std::vector<std::string> parameters() const { return targets_of(input_kind::parameter); }
  std::vector<std::string> buffers() const { return targets_of(input_kind::buffer); }
  std::vector<std::string> non_persistent_buffers() const {
    std::vector<std::string> out;
    for (const auto& s : inputs_)
      if (s.kind == input_kind::buffer && !s.persistent) out.push_back(s.target);
    return out;
  }
  std::vector<std::string> user_inputs() const {
    std::vector<std::string> out;
    for (const auto& s : inputs_)
      if (s.kind == input_kind::user_input) out.push_back(s.arg);
    return out;
  }
  std::vector<std::string> user_outputs() const {
    std::vector<std::string> out;
    for (const auto& s : outputs_)
      if (s.kind == output_kind::user_output) out.push_back(s.arg);
    return out;
  }
  // (output name, buffer FQN) of each buffer mutation, in output order (torch: buffers_to_mutate).
  std::vector<std::pair<std::string, std::string>> buffers_to_mutate() const {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& s : outputs_)
      if (s.kind == output_kind::buffer_mutation) out.emplace_back(s.arg, s.target);
    return out;
  }
  // (output name, user input name) of each user input mutation, in output order (torch:
  // user_inputs_to_mutate).
  std::vector<std::pair<std::string, std::string>> user_inputs_to_mutate() const {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& s : outputs_)
      if (s.kind == output_kind::user_input_mutation) out.emplace_back(s.arg, s.target);
    return out;
  }
  // The spec of placeholder `arg`; nullptr if none.
  const input_spec* input_for(std::string_view arg) const noexcept {
    for (const auto& s : inputs_)
      if (s.arg == arg) return &s;
    return nullptr;
  }

  // torch.export's form (ExportedProgram indents it):
  //   # inputs
  //   p_fc1_weight: PARAMETER target='fc1.weight'
  //   x: USER_INPUT
  //
  //   # outputs
  //   linear: USER_OUTPUT
  std::string to_string() const {
    std::string s;
    // "<arg>: <KIND>[ target='<fqn>']", one spec a line
    auto line = [&](std::size_t k, const std::string& arg, std::string_view kind, const std::string& target) {
      if (k) s += '\n';
      s += arg;
      s += ": ";
      s += kind;
      if (!target.empty()) {
        s += " target='";
        s += target;
        s += '\'';
      }
    };
    s += "\n# inputs\n";
    for (std::size_t k = 0; k < inputs_.size(); ++k) {
      const input_spec& i = inputs_[k];
      line(k, i.arg, name(i.kind), i.target);
      if (i.kind == input_kind::buffer) s += i.persistent ? " persistent=True" : " persistent=False";
    }
    s += "\n\n# outputs\n";
    for (std::size_t k = 0; k < outputs_.size(); ++k) line(k, outputs_[k].arg, name(outputs_[k].kind), outputs_[k].target);
    s += '\n';
    return s;
  }

  friend bool operator==(const graph_signature&, const graph_signature&) = default;

 private:
  std::vector<std::string> targets_of(input_kind k) const {
    std::vector<std::string> out;
    for (const auto& s : inputs_)
      if (s.kind == k) out.push_back(s.target);
    return out;
  }

  std::vector<input_spec> inputs_;
  std::vector<output_spec> outputs_;
};

}  // namespace typex

// ---- definitions: compiled once in typex::runtime, or inline here in header-only builds
// (config.hpp: TYPEX_SEPARATE_COMPILATION) ----
#if TYPEX_HEADER_DEFINITIONS
TYPEX_API auto typex::placeholder_name(input_kind kind, std::string_view fqn_or_name) -> std::string {
  std::string s;
  switch (kind) {
    case input_kind::parameter: s = "p_"; break;
    case input_kind::buffer: s = "b_"; break;
    case input_kind::constant_tensor: s = "c_"; break;
    case input_kind::user_input: break;
  }
  for (char c : fqn_or_name) s += c == '.' ? '_' : c;
  return s;
}
#endif  // TYPEX_HEADER_DEFINITIONS
