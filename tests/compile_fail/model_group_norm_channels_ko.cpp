// Compile-fail pair "model_group_norm_channels": a convolution giving 16 channels into a GroupNorm
// declared for 8. The module names its parameter (num_channels) and the input's layout; the layers
// after it add no error.
// expect: typex::nn::GroupNorm \(num_channels = 8\) takes \[N, 8, \.\.\.\]; its input is \[batch, 16, 8, 8\]: dim 1 is 16, not 8
#include <typex/backend/eigen.hpp>
#include <typex/typex.hpp>

namespace nn = typex::nn;
using batch = typex::sym<"batch", 1, 64>;
struct block {
#ifdef TYPEX_CF_FIXED
  nn::Conv2d<3, 8, 3, typex::conv2d_options{.padding = {1, 1}, .bias = false}> conv;
#else
  nn::Conv2d<3, 16, 3, typex::conv2d_options{.padding = {1, 1}, .bias = false}> conv;  // the mistake: the norm takes 8 channels
#endif
  nn::GroupNorm<4, 8> norm;
  nn::Conv2d<8, 2, 1> out;
  template <class X>
  auto operator()(const X& x) const {
    return out(typex::relu(norm(conv(x))));
  }
};
BOOST_HANA_ADAPT_STRUCT(block, conv, norm, out);

int main() {
  block model;
  typex::init_module(model, 2);
  const typex::tensor<typex::f32, batch, typex::fix<3>, typex::fix<8>, typex::fix<8>> x({2, 3, 8, 8});
  const auto program = typex::export_program(model, typex::input<"x">(x.spec()));
  const auto y = program.module()(x);
  return y(1, 1, 7, 7) == y(1, 1, 7, 7) ? 0 : 1;
}
