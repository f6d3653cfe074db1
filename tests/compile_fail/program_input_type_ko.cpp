// Compile-fail pair "program_input_type": a typed exported program's module takes exactly the
// input types it was exported for; a tensor of another shape type is one error naming both.
// expect: typex: the exported program takes \(tensor<f32\[batch, 784\]>\) but is called with \(tensor<f32\[batch, 780\]>\)
#include <typex/backend/eigen.hpp>
#include <typex/typex.hpp>

using batch = typex::sym<"batch", 1, 1024>;
using mlp = typex::nn::Sequential<typex::nn::Linear<784, 10>>;

int main() {
  const mlp model;
  using s = typex::shape<batch, typex::fix<784>>;
  const auto program = typex::export_program(model, typex::input<"x">(typex::tensor_spec<typex::f32, s>(s(batch(2), {}))));
  const typex::tensor<typex::f32, batch, typex::fix<780>> x({2, 780});
  const auto y = program.module()(x);  // the result used afterwards: no second error
  return y(0, 0) > 0.0f ? 0 : 1;
}
