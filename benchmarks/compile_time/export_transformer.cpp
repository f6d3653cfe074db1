// Compile-time unit: the transformer of the export tests, exported and run on the Eigen backend (the
// translation unit a user writes to ship this model: typex.hpp, typex::nn, the Eigen backend).
#include <typex/backend/eigen.hpp>
#include <typex/typex.hpp>

using batch = typex::sym<"batch", 1, 1024>;
using model_t = typex::nn::TransformerEncoderLayer<256, 4, 1024, typex::nn::activation::gelu, false, true>;
using s = typex::shape<batch, typex::sym<"seq", 1, 512>, typex::fix<256>>;

int export_and_run() {
  model_t model;
  typex::init_module(model, 1);
  const auto ep = typex::export_program(model, typex::input<"x">(typex::tensor_spec<typex::f32, s>(s(batch(8), typex::sym<"seq", 1, 512>(128), {}))));
  const auto y = ep.module()(typex::host_tensor<typex::f32, s>(s(batch(8), typex::sym<"seq", 1, 512>(128), {})));
  const auto e = model(typex::host_tensor<typex::f32, s>(s(batch(8), typex::sym<"seq", 1, 512>(128), {})));
  return static_cast<int>(y.numel() + e.numel());
}
