// Compile-fail pair "program_input_type": a typed exported program's module takes exactly the
// input types it was exported for; a tensor of another shape type does not compile.
// expect: no match for call to
// expect-clang: error: no matching function for call to object of type
#include <typex/backend/eigen.hpp>
#include <typex/typex.hpp>

using batch = typex::sym<"batch", 1, 1024>;
using mlp = typex::nn::Sequential<typex::nn::Linear<784, 10>>;

int main() {
  const mlp model;
  using s = typex::shape<batch, typex::fix<784>>;
  const auto program = typex::export_program(model, typex::input<"x">(typex::tensor_spec<typex::f32, s>(s(batch(2), {}))));
  const typex::tensor<typex::f32, batch, typex::fix<780>> x({2, 780});
  (void)program.module()(x);
}
