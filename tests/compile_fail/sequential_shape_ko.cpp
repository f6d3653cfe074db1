// Compile-fail pair "sequential_shape": two typex::nn layers that do not fit (512 features into a
// Linear(256, 10)) are a compile error naming the op and the shapes, not a wall of instantiations.
// expect: typex::nn::Sequential: element \[2\], nn::Linear \(in_features = 256\), takes \[..., 256\]; element \[1\] gives it \[batch, 512\]: dim 1 is 512, not 256
#include <typex/typex.hpp>

using batch = typex::sym<"batch", 1, 1024>;
using mlp = typex::nn::Sequential<typex::nn::Linear<784, 512>, typex::nn::ReLU, typex::nn::Linear<256, 10>>;

int main() {
  const mlp model;
  const typex::tensor_spec<typex::f32, typex::shape<batch, typex::fix<784>>> x;
  (void)typex::export_program(model, typex::input<"x">(x));
}
