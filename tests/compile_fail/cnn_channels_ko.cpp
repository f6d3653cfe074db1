// Compile-fail pair "cnn_channels": a Conv2d expecting 16 input channels after one producing 32 is a
// compile error naming conv2d, the input and the weight.
// expect: typex::conv2d: input \[batch, 32, 26, 26\] has 32 channels, but weight \[64, 16, 3, 3\] with groups=1 expects 16
#include <typex/typex.hpp>

using batch = typex::sym<"batch", 1, 1024>;
using cnn = typex::nn::Sequential<typex::nn::Conv2d<1, 32, 3>, typex::nn::ReLU, typex::nn::Conv2d<16, 64, 3>>;

int main() {
  const cnn model;
  const typex::tensor_spec<typex::f32, typex::shape<batch, typex::fix<1>, typex::fix<28>, typex::fix<28>>> x;
  (void)typex::export_program(model, typex::input<"x">(x));
}
