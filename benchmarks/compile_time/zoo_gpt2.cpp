// Compile-time unit: the model zoo's GPT-2-style LM (tests/unit/models/zoo_models.hpp: a model as a
// user ports it from PyTorch), weights loaded by name, exported with batch and sequence symbolic,
// run as a program and eagerly: the translation unit a user writes to ship a ported model.
#include <typex/backend/eigen.hpp>
#include <typex/typex.hpp>

#include "../../tests/unit/models/zoo_models.hpp"

int export_and_run(const typex::named_tensors& weights) {
  zoo::gpt2 model;
  typex::load_state_dict(model, weights);
  using tokens = typex::tensor<typex::i64, zoo::batch, zoo::seq>;
  const tokens ids({2, 7});
  const auto ep = typex::export_program(model, typex::input<"idx">(ids.spec()));
  const auto y = ep.module()(ids);
  const auto e = model(ids);
  return static_cast<int>(y.numel() + e.numel());
}
