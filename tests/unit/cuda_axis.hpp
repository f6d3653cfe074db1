// The CUDA backend as the per-backend axis (backend_axis.hpp) runs it, on a given device (the
// emulated one in tests/unit/cuda, a GPU in tests/unit/cuda_gpu): supports() asked of every node,
// the inputs copied to the device, the outputs back to the host. As program_module does
// (cuda_backend::prepare), the ops the backend has no kernel for but that decompose reach it
// decomposed.
#pragma once

#include "backend_axis.hpp"

#include <typex/backend/cuda.hpp>
#include <typex/passes/decompose.hpp>

#include <memory>
#include <string>
#include <vector>

namespace typex_test {
// g with the CUDA backend's fallback decompositions applied (program_module's prepare, on a graph).
inline typex::ir::graph with_cuda_fallbacks(const typex::ir::graph& g) {
  typex::ir::graph out = g;
  for (int round = 0; round < 8; ++round) {
    const typex::passes::decomposition_table t = typex::cuda::fallback_decompositions(out);
    if (t.size() == 0) break;
    out = typex::passes::decompose(out, t);
  }
  return out;
}

inline backend_under_test cuda_backend_under_test(std::string name, std::shared_ptr<typex::cuda::device_runtime> gpu) {
  using namespace typex;
  return {std::move(name),
          [](const ir::graph& original) {
            const ir::graph g = with_cuda_fallbacks(original);
            for (const ir::node& n : g.nodes())
              if (n.op == ir::node_op::call_function && !cuda::supports(g, n)) return false;
            return true;
          },
          [gpu](const ir::graph& original, const std::vector<any_tensor>& inputs) {
            auto e = cuda_backend::compile(binding_of(with_cuda_fallbacks(original)), {.device = gpu});
            std::vector<any_tensor> on_device, out;
            for (const any_tensor& t : inputs) on_device.push_back(cuda::to_device(t, gpu));
            e->run(on_device, symbol_table{}, out);
            for (any_tensor& t : out) t = cuda::to_host(t);
            return out;
          }};
}
}  // namespace typex_test
