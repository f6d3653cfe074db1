// Compile-time unit: the mlp of the export tests, exported and run on the Eigen backend (the
// translation unit a user writes to ship this model: typex.hpp, typex::nn, the Eigen backend).
#include <typex/backend/eigen.hpp>
#include <typex/typex.hpp>

using batch = typex::sym<"batch", 1, 1024>;
using model_t = typex::nn::Sequential<typex::nn::Linear<784, 512>, typex::nn::ReLU, typex::nn::Linear<512, 512>, typex::nn::ReLU, typex::nn::Linear<512, 10>>;
using s = typex::shape<batch, typex::fix<784>>;

int export_and_run() {
  model_t model;
  typex::init_module(model, 1);
  const auto ep = typex::export_program(model, typex::input<"x">(typex::tensor_spec<typex::f32, s>(s(batch(32), {}))));
  const auto y = ep.module()(typex::host_tensor<typex::f32, s>(s(batch(32), {})));
  const auto e = model(typex::host_tensor<typex::f32, s>(s(batch(32), {})));
  return static_cast<int>(y.numel() + e.numel());
}
