// Compile-fail pair "program_input_type": this twin must build. See program_input_type_ko.cpp.
#include <typex/backend/eigen.hpp>
#include <typex/typex.hpp>

using batch = typex::sym<"batch", 1, 1024>;
using mlp = typex::nn::Sequential<typex::nn::Linear<784, 10>>;

int main() {
  const mlp model;
  using s = typex::shape<batch, typex::fix<784>>;
  const auto program = typex::export_program(model, typex::input<"x">(typex::tensor_spec<typex::f32, s>(s(batch(2), {}))));
  const typex::tensor<typex::f32, batch, typex::fix<784>> x({2, 784});
  (void)program.module()(x);
}
