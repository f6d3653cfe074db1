// The CUDA backend as the per-backend axis (backend_axis.hpp) runs it, on a given device (the
// emulated one in tests/unit/cuda, a GPU in tests/unit/cuda_gpu): supports() asked of every node,
// the inputs copied to the device, the outputs back to the host.
#pragma once

#include "backend_axis.hpp"

#include <typex/backend/cuda.hpp>

#include <memory>
#include <string>
#include <vector>

namespace typex_test {
inline backend_under_test cuda_backend_under_test(std::string name, std::shared_ptr<typex::cuda::device_runtime> gpu) {
  using namespace typex;
  return {std::move(name),
          [](const ir::graph& g) {
            for (const ir::node& n : g.nodes())
              if (n.op == ir::node_op::call_function && !cuda::supports(g, n)) return false;
            return true;
          },
          [gpu](const ir::graph& g, const std::vector<any_tensor>& inputs) {
            auto e = cuda_backend::compile(binding_of(g), {.device = gpu});
            std::vector<any_tensor> on_device, out;
            for (const any_tensor& t : inputs) on_device.push_back(cuda::to_device(t, gpu));
            e->run(on_device, symbol_table{}, out);
            for (any_tensor& t : out) t = cuda::to_host(t);
            return out;
          }};
}
}  // namespace typex_test
