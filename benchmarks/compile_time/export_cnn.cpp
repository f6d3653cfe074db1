// Compile-time unit: the cnn of the export tests, exported and run on the Eigen backend (the
// translation unit a user writes to ship this model: typex.hpp, typex::nn, the Eigen backend).
#include <typex/backend/eigen.hpp>
#include <typex/typex.hpp>

using batch = typex::sym<"batch", 1, 1024>;
using model_t = typex::nn::Sequential<typex::nn::Conv2d<1, 32, 3>, typex::nn::ReLU, typex::nn::Conv2d<32, 64, 3>, typex::nn::ReLU, typex::nn::MaxPool2d<typex::pool2d_options{.kernel = {2, 2}}>, typex::nn::Flatten<>, typex::nn::Linear<9216, 128>, typex::nn::ReLU, typex::nn::Linear<128, 10>>;
using s = typex::shape<batch, typex::fix<1>, typex::fix<28>, typex::fix<28>>;

int export_and_run() {
  model_t model;
  typex::init_module(model, 1);
  const auto ep = typex::export_program(model, typex::input<"x">(typex::tensor_spec<typex::f32, s>(s(batch(32), {}, {}, {}))));
  const auto y = ep.module()(typex::host_tensor<typex::f32, s>(s(batch(32), {}, {}, {})));
  const auto e = model(typex::host_tensor<typex::f32, s>(s(batch(32), {}, {}, {})));
  return static_cast<int>(y.numel() + e.numel());
}
