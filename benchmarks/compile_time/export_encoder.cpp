// Compile-time unit: a stack of TYPEX_BENCH_LAYERS transformer encoder layers with a final norm
// (torch.nn.TransformerEncoder), exported and run on the Eigen backend. budget.py compiles it with
// 1 and with 24 layers: a deep model should cost what a shallow one does (the layers share one
// type; what grows with depth is the program, and one small TransformerEncoder::run<I> a layer).
#include <typex/backend/eigen.hpp>
#include <typex/typex.hpp>

#ifndef TYPEX_BENCH_LAYERS
#define TYPEX_BENCH_LAYERS 24
#endif

using batch = typex::sym<"batch", 1, 1024>;
using seq = typex::sym<"seq", 1, 512>;
using layer_t = typex::nn::TransformerEncoderLayer<256, 4, 1024, typex::nn::activation::gelu, false, true>;
using model_t = typex::nn::TransformerEncoder<layer_t, TYPEX_BENCH_LAYERS, typex::nn::LayerNorm<256>>;
using s = typex::shape<batch, seq, typex::fix<256>>;

int export_and_run() {
  model_t model;
  typex::init_module(model, 1);
  const auto ep = typex::export_program(model, typex::input<"x">(typex::tensor_spec<typex::f32, s>(s(batch(2), seq(16), {}))));
  const auto y = ep.module()(typex::host_tensor<typex::f32, s>(s(batch(2), seq(16), {})));
  return static_cast<int>(y.numel());
}
