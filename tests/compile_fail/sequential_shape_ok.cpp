// Compile-fail pair "sequential_shape": this twin must build. See sequential_shape_ko.cpp.
#include <typex/typex.hpp>

using batch = typex::sym<"batch", 1, 1024>;
using mlp = typex::nn::Sequential<typex::nn::Linear<784, 512>, typex::nn::ReLU, typex::nn::Linear<512, 10>>;

int main() {
  const mlp model;
  const typex::tensor_spec<typex::f32, typex::shape<batch, typex::fix<784>>> x;
  (void)typex::export_program(model, typex::input<"x">(x));
}
