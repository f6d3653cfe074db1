// Compile-fail pair "cnn_channels": this twin must build. See cnn_channels_ko.cpp.
#include <typex/typex.hpp>

using batch = typex::sym<"batch", 1, 1024>;
using cnn = typex::nn::Sequential<typex::nn::Conv2d<1, 32, 3>, typex::nn::ReLU, typex::nn::Conv2d<32, 64, 3>>;

int main() {
  const cnn model;
  const typex::tensor_spec<typex::f32, typex::shape<batch, typex::fix<1>, typex::fix<28>, typex::fix<28>>> x;
  (void)typex::export_program(model, typex::input<"x">(x));
}
