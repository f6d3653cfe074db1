// typex/export/module_call_graph.hpp — one entry per module call, with its signature.
//
// torch.export's module_call_graph: the root (fqn "") first, whose signature's in/out specs are the
// program's calling convention, then one entry per submodule call in call order. unflatten uses
// the entries to rebuild the module tree; a submodule called twice gets "fqn" and "fqn@1".
#pragma once

#include <typex/tree/spec.hpp>

#include <optional>
#include <string>
#include <vector>

namespace typex {

struct module_call_signature {
  std::vector<std::string> inputs;   // graph value names the call received (flat)
  std::vector<std::string> outputs;  // graph value names it returned (flat)
  tree_spec in_spec;
  tree_spec out_spec;
  friend bool operator==(const module_call_signature&, const module_call_signature&) = default;
};

struct module_call_entry {
  std::string fqn;  // "" for the root, "layers.0.attn" for a submodule
  std::optional<module_call_signature> signature;
  friend bool operator==(const module_call_entry&, const module_call_entry&) = default;
};

}  // namespace typex
