// Compile-fail pair "model_cnn_deep": a Conv2d with the wrong input channels deep in a Sequential
// (after a pool), followed by more layers, exported and the program's output used. One error.
// expect: typex::nn::Sequential: element \[5\], nn::Conv2d \(in_channels = 32\), takes \[N, 32, H, W\]; element \[4\] gives it \[batch, 64, 12, 12\]: dim 1 is 64, not 32
#include <typex/backend/eigen.hpp>
#include <typex/typex.hpp>

namespace nn = typex::nn;
using batch = typex::sym<"batch", 1, 256>;
#ifdef TYPEX_CF_FIXED
using third = nn::Conv2d<64, 64, 3>;
#else
using third = nn::Conv2d<32, 64, 3>;  // the mistake: the layer before gives 64 channels
#endif
using cnn = nn::Sequential<nn::Conv2d<1, 32, 3>, nn::ReLU, nn::Conv2d<32, 64, 3>, nn::ReLU, nn::MaxPool2d<typex::pool2d_options{.kernel = {2, 2}}>, third,
                           nn::ReLU, nn::Flatten<>, nn::Linear<6400, 10>>;

int main() {
  cnn model;
  typex::init_module(model, 3);
  using xs = typex::shape<batch, typex::fix<1>, typex::fix<28>, typex::fix<28>>;
  const auto program = typex::export_program(model, typex::input<"x">(typex::tensor_spec<typex::f32, xs>(xs(batch(2), {}, {}, {}))));
  typex::tensor<typex::f32, batch, typex::fix<1>, typex::fix<28>, typex::fix<28>> x({2, 1, 28, 28}, "x");
  const auto logits = program.module()(x);
  return logits(1, 9) == logits(1, 9) ? 0 : 1;
}
