// Compile-time unit: export_mlp.cpp's model run on the CUDA backend (the translation unit a user
// writes to ship it on a GPU: typex.hpp, typex::nn, the CUDA backend's host side: the planned
// engine, cuBLASLt's descriptors, device tensors; the kernels are typex::cuda's, compiled once by
// nvcc). Measured where the CUDA toolkit's headers are (budget.py).
#include <typex/backend/cuda.hpp>
#include <typex/backend/eigen.hpp>
#include <typex/typex.hpp>

using batch = typex::sym<"batch", 1, 1024>;
using model_t = typex::nn::Sequential<typex::nn::Linear<784, 512>, typex::nn::ReLU, typex::nn::Linear<512, 512>, typex::nn::ReLU, typex::nn::Linear<512, 10>>;
using s = typex::shape<batch, typex::fix<784>>;

int export_and_run_on_gpu() {
  model_t model;
  typex::init_module(model, 1);
  const auto ep = typex::export_program(model, typex::input<"x">(typex::tensor_spec<typex::f32, s>(s(batch(32), {}))));
  const auto gpu = typex::cuda::make_native_device(0);
  const typex::program_module<typex::cuda_backend> run(ep, {.device = gpu});
  const auto x = typex::cuda::to_device(typex::host_tensor<typex::f32, s>(s(batch(32), {})), gpu);
  const auto y = run({x.erase()});
  const auto z = typex::relu(x);  // (an eager call on the device)
  return static_cast<int>(typex::cuda::to_host(y[0]).numel() + z.numel());
}
