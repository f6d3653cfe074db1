// Compile-time unit: the model zoo's ResNet-18 (tests/unit/models/zoo_models.hpp: a model as a user
// ports it from PyTorch; 20 convolutions, batch norms, downsample shortcuts), weights loaded by name,
// exported with a symbolic batch, run as a program and eagerly.
#include <typex/backend/eigen.hpp>
#include <typex/typex.hpp>

#include "../../tests/unit/models/zoo_models.hpp"

int export_and_run(const typex::named_tensors& weights) {
  zoo::resnet18 model;
  typex::load_state_dict(model, weights);
  typex::eval(model);
  using image = typex::tensor<typex::f32, zoo::batch, typex::fix<3>, typex::fix<32>, typex::fix<32>>;
  const image x({2, 3, 32, 32});
  const auto ep = typex::export_program(model, typex::input<"x">(x.spec()));
  const auto y = ep.module()(x);
  const auto e = model(x);
  return static_cast<int>(y.numel() + e.numel());
}
