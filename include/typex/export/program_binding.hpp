// typex/export/program_binding.hpp — what a backend gets to run a program (program_module.hpp).
//
// Small on purpose: a backend's declarations (backend/eigen/plan.hpp) include it without the
// exported program, its printer and verifier.
#pragma once

#include <typex/core/symbol_table.hpp>
#include <typex/ir/graph.hpp>
#include <typex/tensor/host_tensor.hpp>

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace typex {

// What a backend gets to run a program.
struct program_binding {
  std::shared_ptr<const ir::graph> graph;  // (keeps the program it belongs to alive)
  // The placeholders each call feeds, in the order of the executor's inputs: the user inputs'
  // tensor leaves, then the buffers the program writes (the module's copies).
  std::vector<ir::node_id> inputs;
  // How many of `inputs` are the user's (the rest is module state: written buffers, trained
  // parameters, which the module keeps on the host and writes back after each call).
  std::size_t user_inputs = 0;
  // Whether the program writes user inputs (USER_INPUT_MUTATION): the module copies the new values
  // into the caller's tensors on the host.
  bool writes_user_inputs = false;
  // The placeholders bound for the program's life: lifted parameters, buffers, constants.
  std::vector<std::pair<ir::node_id, any_tensor>> constants;
  // Symbols that only an op binds when it runs (nonzero's count): empty when every size follows
  // from the inputs (a backend may then plan from the inputs' extents).
  std::vector<std::string> data_dependent;
  // Checks the symbols' ranges and the program's run-time assertions, for an executor that binds
  // data-dependent symbols while it runs.
  std::function<void(const symbol_table&)> check;
  // The recorded value shapes are not trusted (exported_program::trusted_shapes): the backend checks
  // them against what the ops compute before it plans memory by them.
  bool check_shapes = false;

  bool is_data_dependent(std::string_view symbol) const noexcept {
    for (const auto& s : data_dependent)
      if (s == symbol) return true;
    return false;
  }
};

}  // namespace typex
