// benchmarks/models/libtorch_encoder.hpp — the post-norm transformer encoder block (batch first,
// d_model 256, 4 heads, FFN 1024, exact GELU) written with ATen ops over parameters named as
// typex's: the LibTorch peer of the model benchmarks (inference) and of the training benchmarks.
#pragma once

#include "workloads.hpp"

#include <torch/torch.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace bench {
// The block's parameters by typex's names, filled by workloads.hpp's fill_weights (as typex's).
inline std::map<std::string, torch::Tensor> encoder_parameters() {
  const std::pair<const char*, std::vector<int64_t>> shapes[] = {
      {"self_attn.in_proj_weight", {768, 256}}, {"self_attn.in_proj_bias", {768}}, {"self_attn.out_proj.weight", {256, 256}},
      {"self_attn.out_proj.bias", {256}},       {"linear1.weight", {1024, 256}},   {"linear1.bias", {1024}},
      {"linear2.weight", {256, 1024}},          {"linear2.bias", {256}},           {"norm1.weight", {256}},
      {"norm1.bias", {256}},                    {"norm2.weight", {256}},           {"norm2.bias", {256}}};
  std::map<std::string, torch::Tensor> p;
  for (const auto& [name, shape] : shapes) {
    auto t = torch::empty(shape);
    const auto n = static_cast<std::size_t>(t.numel());
    fill_weights(name, t.data_ptr<float>(), n, shape.size() >= 2 ? n / static_cast<std::size_t>(shape[0]) : n);
    p[name] = t;
  }
  return p;
}

inline torch::Tensor encoder_forward(std::map<std::string, torch::Tensor>& p, const torch::Tensor& x) {
  namespace F = torch::nn::functional;
  const auto b = x.size(0), s = x.size(1);
  const auto qkv = F::linear(x, p["self_attn.in_proj_weight"], p["self_attn.in_proj_bias"]).chunk(3, -1);
  auto heads = [&](const torch::Tensor& t) { return t.reshape({b, s, 4, 64}).transpose(1, 2); };
  const auto scores = torch::matmul(heads(qkv[0]), heads(qkv[1]).transpose(-2, -1)) * (1.0 / 8.0);
  const auto o = torch::matmul(torch::softmax(scores, -1), heads(qkv[2])).transpose(1, 2).reshape({b, s, 256});
  const auto a = F::linear(o, p["self_attn.out_proj.weight"], p["self_attn.out_proj.bias"]);
  const auto x1 = F::layer_norm(x + a, F::LayerNormFuncOptions({256}).weight(p["norm1.weight"]).bias(p["norm1.bias"]).eps(1e-5));
  const auto h = F::gelu(F::linear(x1, p["linear1.weight"], p["linear1.bias"]));
  const auto y = F::linear(h, p["linear2.weight"], p["linear2.bias"]);
  return F::layer_norm(x1 + y, F::LayerNormFuncOptions({256}).weight(p["norm2.weight"]).bias(p["norm2.bias"]).eps(1e-5));
}

}  // namespace bench
