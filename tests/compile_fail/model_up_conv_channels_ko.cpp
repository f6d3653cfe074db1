// Compile-fail pair "model_up_conv_channels": a UNet-style up-convolution declared for 16 input
// channels fed the bottleneck's 32. The module names in_channels and the layout it takes.
// expect: typex::nn::ConvTranspose2d \(in_channels = 16\) takes \[N, 16, H, W\]; its input is \[batch, 32, 4, 4\]: dim 1 is 32, not 16
#include <typex/backend/eigen.hpp>
#include <typex/typex.hpp>

namespace nn = typex::nn;
using batch = typex::sym<"batch", 1, 64>;
struct decoder {
  nn::Conv2d<8, 32, 3, typex::conv2d_options{.padding = {1, 1}}> bottleneck;
#ifdef TYPEX_CF_FIXED
  nn::ConvTranspose2d<32, 16, 2, typex::conv_transpose2d_options{.stride = 2}> up;
#else
  nn::ConvTranspose2d<16, 16, 2, typex::conv_transpose2d_options{.stride = 2}> up;  // the mistake: the bottleneck gives 32
#endif
  nn::Conv2d<16, 2, 1> out;
  template <class X>
  auto operator()(const X& x) const {
    return out(up(typex::relu(bottleneck(x))));
  }
};
BOOST_HANA_ADAPT_STRUCT(decoder, bottleneck, up, out);

int main() {
  decoder model;
  typex::init_module(model, 2);
  const typex::tensor<typex::f32, batch, typex::fix<8>, typex::fix<4>, typex::fix<4>> x({2, 8, 4, 4});
  const auto program = typex::export_program(model, typex::input<"x">(x.spec()));
  const auto y = program.module()(x);
  return y(1, 1, 7, 7) == y(1, 1, 7, 7) ? 0 : 1;
}
