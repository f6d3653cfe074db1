// Compile-fail pair "cnn_channels": a Conv2d expecting 16 input channels after one producing 32 is a
// compile error naming conv2d, the input and the weight.
// expect: typex::nn::Sequential: element \[2\], nn::Conv2d \(in_channels = 16\), takes \[N, 16, H, W\]; element \[1\] gives it \[batch, 32, 26, 26\]: dim 1 is 32, not 16 \(make in_channels 32, or element \[1\] give 16\)
#include <typex/typex.hpp>

using batch = typex::sym<"batch", 1, 1024>;
using cnn = typex::nn::Sequential<typex::nn::Conv2d<1, 32, 3>, typex::nn::ReLU, typex::nn::Conv2d<16, 64, 3>>;

int main() {
  const cnn model;
  const typex::tensor_spec<typex::f32, typex::shape<batch, typex::fix<1>, typex::fix<28>, typex::fix<28>>> x;
  (void)typex::export_program(model, typex::input<"x">(x));
}
