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

// A write of a buffer made during a call (functionalized: the graph value that is the buffer's new
// value from there on). Unflatten gives the write back to the buffer's owner at that point.
struct buffer_write {
  std::string buffer;  // its FQN
  std::string value;   // the graph value written
  friend bool operator==(const buffer_write&, const buffer_write&) = default;
};

struct module_call_entry {
  std::string fqn;  // "" for the root, "layers.0.attn" for a submodule, "fc@1" for fc's second call
  std::optional<module_call_signature> signature;
  // The buffer writes made by this call itself (not by the calls it makes), in order.
  std::vector<buffer_write> writes = {};
  // Whether export was asked to keep this call's signature exact (export_options::
  // preserve_module_call_signature): its inputs and outputs stay values of the program, so that an
  // unflattened tree may swap the module for another implementation with the same signature.
  bool preserved = false;
  friend bool operator==(const module_call_entry&, const module_call_entry&) = default;
};

}  // namespace typex
