// A graph run on the Eigen backend's planned engine, its placeholders fed `inputs` (in order) and
// its symbols bound by `symbols`: what the pass tests compare before and after a rewrite.
#pragma once

#include <typex/backend/eigen.hpp>

#include <memory>
#include <vector>

namespace typex_test {
inline std::vector<typex::any_tensor> run_graph(const typex::ir::graph& g, const std::vector<typex::any_tensor>& inputs,
                                                const typex::symbol_table& symbols = {}) {
  typex::program_binding binding;
  binding.graph = std::make_shared<const typex::ir::graph>(g);
  binding.inputs = g.placeholders();
  auto engine = typex::eigen_backend::compile(std::move(binding), {});
  std::vector<typex::any_tensor> out;
  engine->run(inputs, symbols, out);
  return out;
}
}  // namespace typex_test
