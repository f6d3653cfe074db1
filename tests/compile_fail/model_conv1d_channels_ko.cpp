// Compile-fail pair "model_conv1d_channels": an audio stem whose second Conv1d expects 16 channels
// where the first gives 8. The module says so in torch's terms (in_channels), naming its layout.
// expect: typex::nn::Conv1d \(in_channels = 16\) takes \[N, 16, L\]; its input is \[batch, 8, 32\]: dim 1 is 8, not 16
#include <typex/backend/eigen.hpp>
#include <typex/typex.hpp>

namespace nn = typex::nn;
using batch = typex::sym<"batch", 1, 64>;
struct stem {
  nn::Conv1d<1, 8, 9, typex::conv1d_options{.stride = 2, .padding = 4}> conv1;
#ifdef TYPEX_CF_FIXED
  nn::Conv1d<8, 16, 5, typex::conv1d_options{.stride = 2, .padding = 2}> conv2;
#else
  nn::Conv1d<16, 16, 5, typex::conv1d_options{.stride = 2, .padding = 2}> conv2;  // the mistake: conv1 gives 8 channels
#endif
  nn::Linear<16, 4> fc;
  template <class X>
  auto operator()(const X& x) const {
    return fc(typex::mean<-1>(typex::gelu(conv2(typex::gelu(conv1(x))))));
  }
};
BOOST_HANA_ADAPT_STRUCT(stem, conv1, conv2, fc);

int main() {
  stem model;
  typex::init_module(model, 2);
  const typex::tensor<typex::f32, batch, typex::fix<1>, typex::fix<64>> x({2, 1, 64});
  const auto program = typex::export_program(model, typex::input<"x">(x.spec()));
  const auto y = program.module()(x);
  return y(1, 3) == y(1, 3) ? 0 : 1;
}
