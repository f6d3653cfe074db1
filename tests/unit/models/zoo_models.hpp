// The model zoo's models, as a user ports them from PyTorch (tools/zoo_reference.py has the PyTorch
// side of each): ResNet-18, MobileNetV2, a UNet, a ViT, a GPT-2-style LM, a Llama-style stack, a
// Conv1d audio stem, an encoder-decoder transformer. The zoo's tests (zoo_vision.cpp,
// zoo_sequence.cpp) check them against PyTorch; the call fuzzer (tests/robustness/fuzz_call.cpp)
// runs their programs on arbitrary inputs.
#pragma once

#include <typex/typex.hpp>

#include <boost/hana/adapt_struct.hpp>
#include <boost/hana/define_struct.hpp>

#include <array>
#include <cmath>
#include <type_traits>

namespace zoo {
using namespace typex;
using namespace typex::literals;
using batch = sym<"batch", 1, 64>;
using seq = sym<"seq", 1, 16>;  // (the sequence models' position tables hold 16)
}  // namespace zoo

namespace zoo {
// ---- ResNet-18 (torchvision's structure, widths 4/8/16/32) ----------------------------------------
template <index_t In, index_t Out, index_t S>
using downsample_t = nn::Sequential<nn::Conv2d<In, Out, 1, conv2d_options{.stride = {S, S}, .bias = false}>, nn::BatchNorm2d<Out>>;

// (a template's members are declared with BOOST_HANA_DEFINE_STRUCT: ADAPT_STRUCT's macro argument
// cannot hold a template-id with commas)
template <index_t In, index_t Out, index_t S>
struct basic_block {
  using conv1_t = nn::Conv2d<In, Out, 3, conv2d_options{.stride = {S, S}, .padding = {1, 1}, .bias = false}>;
  using conv2_t = nn::Conv2d<Out, Out, 3, conv2d_options{.padding = {1, 1}, .bias = false}>;
  using bn_t = nn::BatchNorm2d<Out>;
  BOOST_HANA_DEFINE_STRUCT(basic_block, (conv1_t, conv1), (bn_t, bn1), (nn::ReLU, relu), (conv2_t, conv2), (bn_t, bn2));
  template <class X>
  auto operator()(const X& x) const {
    const auto y = bn2(conv2(relu(bn1(conv1(x)))));
    return relu(add(y, x));
  }
};
template <index_t In, index_t Out, index_t S>
struct down_block {  // (a BasicBlock whose shortcut is torchvision's `downsample`)
  using conv1_t = nn::Conv2d<In, Out, 3, conv2d_options{.stride = {S, S}, .padding = {1, 1}, .bias = false}>;
  using conv2_t = nn::Conv2d<Out, Out, 3, conv2d_options{.padding = {1, 1}, .bias = false}>;
  using bn_t = nn::BatchNorm2d<Out>;
  using down_t = downsample_t<In, Out, S>;
  BOOST_HANA_DEFINE_STRUCT(down_block, (conv1_t, conv1), (bn_t, bn1), (nn::ReLU, relu), (conv2_t, conv2), (bn_t, bn2),
                           (down_t, downsample));
  template <class X>
  auto operator()(const X& x) const {
    const auto y = bn2(conv2(relu(bn1(conv1(x)))));
    return relu(add(y, downsample(x)));
  }
};

struct resnet18 {
  nn::Conv2d<3, 4, 7, conv2d_options{.stride = {2, 2}, .padding = {3, 3}, .bias = false}> conv1;
  nn::BatchNorm2d<4> bn1;
  nn::ReLU relu;
  nn::MaxPool2d<pool2d_options{.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}}> maxpool;
  nn::Sequential<basic_block<4, 4, 1>, basic_block<4, 4, 1>> layer1;
  nn::Sequential<down_block<4, 8, 2>, basic_block<8, 8, 1>> layer2;
  nn::Sequential<down_block<8, 16, 2>, basic_block<16, 16, 1>> layer3;
  nn::Sequential<down_block<16, 32, 2>, basic_block<32, 32, 1>> layer4;
  nn::AdaptiveAvgPool2d<1> avgpool;
  nn::Linear<32, 10> fc;
  template <class X>
  auto operator()(const X& x) const {
    const auto h = layer4(layer3(layer2(layer1(maxpool(relu(bn1(conv1(x))))))));
    return fc(flatten<1>(avgpool(h)));
  }
};

// ---- MobileNetV2 (torchvision's structure) ---------------------------------------------------------
template <index_t In, index_t Out, index_t K, index_t S = 1, index_t G = 1>
using conv_bn_relu = nn::Sequential<nn::Conv2d<In, Out, K, conv2d_options{.stride = {S, S}, .padding = {(K - 1) / 2, (K - 1) / 2}, .groups = G, .bias = false}>,
                                    nn::BatchNorm2d<Out>, nn::ReLU6>;

template <index_t In, index_t Out, index_t S, index_t T>
struct inverted_residual {
  static constexpr index_t hidden = In * T;
  using depthwise = conv_bn_relu<hidden, hidden, 3, S, hidden>;
  using project = nn::Conv2d<hidden, Out, 1, conv2d_options{.bias = false}>;
  using conv_t = std::conditional_t<T == 1, nn::Sequential<depthwise, project, nn::BatchNorm2d<Out>>,
                                    nn::Sequential<conv_bn_relu<In, hidden, 1>, depthwise, project, nn::BatchNorm2d<Out>>>;
  BOOST_HANA_DEFINE_STRUCT(inverted_residual, (conv_t, conv));
  template <class X>
  auto operator()(const X& x) const {
    if constexpr (S == 1 && In == Out) return add(x, conv(x));
    else return conv(x);
  }
};

struct mobilenet_v2 {
  nn::Sequential<conv_bn_relu<3, 8, 3, 2>, inverted_residual<8, 8, 1, 1>, inverted_residual<8, 12, 2, 6>,
                 inverted_residual<12, 12, 1, 6>, inverted_residual<12, 16, 2, 6>, inverted_residual<16, 16, 1, 6>,
                 conv_bn_relu<16, 32, 1>>
      features;
  nn::Sequential<nn::Dropout, nn::Linear<32, 10>> classifier;
  template <class X>
  auto operator()(const X& x) const {
    return classifier(flatten<1>(adaptive_avg_pool2d<1, 1>(features(x))));
  }
};

// ---- UNet (two levels, ConvTranspose2d up-convolutions, skip concatenations) -----------------------
template <index_t In, index_t Out>
struct double_conv {
  using block_t = nn::Sequential<nn::Conv2d<In, Out, 3, conv2d_options{.padding = {1, 1}, .bias = false}>, nn::BatchNorm2d<Out>, nn::ReLU,
                                 nn::Conv2d<Out, Out, 3, conv2d_options{.padding = {1, 1}, .bias = false}>, nn::BatchNorm2d<Out>, nn::ReLU>;
  BOOST_HANA_DEFINE_STRUCT(double_conv, (block_t, block));
  template <class X>
  auto operator()(const X& x) const {
    return block(x);
  }
};

struct unet {
  double_conv<3, 8> enc1;
  double_conv<8, 16> enc2;
  double_conv<16, 32> bottleneck;
  nn::ConvTranspose2d<32, 16, 2, conv_transpose2d_options{.stride = 2}> up2;
  double_conv<32, 16> dec2;
  nn::ConvTranspose2d<16, 8, 2, conv_transpose2d_options{.stride = 2}> up1;
  double_conv<16, 8> dec1;
  nn::Conv2d<8, 2, 1> out;
  template <class X>
  auto operator()(const X& x) const {
    constexpr pool2d_options half{.kernel = {2, 2}};
    const auto e1 = enc1(x);
    const auto e2 = enc2(max_pool2d<half>(e1));
    const auto b = bottleneck(max_pool2d<half>(e2));
    const auto d2 = dec2(cat<1>(tensors(up2(b), e2)));
    const auto d1 = dec1(cat<1>(tensors(up1(d2), e1)));
    return out(d1);
  }
};

// ---- ViT (patch embedding, class token, position table, pre-norm encoder) -------------------------
struct vit {
  nn::Conv2d<3, 16, 4, conv2d_options{.stride = {4, 4}}> patch_embed;
  parameter<f32, fix<1>, fix<1>, fix<16>> cls_token;
  parameter<f32, fix<1>, fix<65>, fix<16>> pos_embed;
  nn::TransformerEncoder<nn::TransformerEncoderLayer<16, 2, 32, nn::activation::gelu, true, true>, 2> encoder;
  nn::LayerNorm<16> norm;
  nn::Linear<16, 10> head;
  template <class X>
  auto operator()(const X& x) const {
    const auto b = x.shape().template get<0>();
    const auto p = transpose<1, 2>(flatten<2>(patch_embed(x)));                                  // [B, 64, 16]
    const auto t = add(cat<1>(tensors(expand(cls_token, reshape_to(b, 1_c, 16_c)), p)), pos_embed);  // cls_token.expand(B, -1, -1)
    return head(select<1>(norm(encoder(t)), 0));
  }
};
}  // namespace zoo
BOOST_HANA_ADAPT_STRUCT(zoo::resnet18, conv1, bn1, relu, maxpool, layer1, layer2, layer3, layer4, avgpool, fc);
BOOST_HANA_ADAPT_STRUCT(zoo::mobilenet_v2, features, classifier);
BOOST_HANA_ADAPT_STRUCT(zoo::unet, enc1, enc2, bottleneck, up2, dec2, up1, dec1, out);
BOOST_HANA_ADAPT_STRUCT(zoo::vit, patch_embed, cls_token, pos_embed, encoder, norm, head);

namespace zoo {
// ---- GPT-2 (nanoGPT / Hugging Face names; tied head; learned positions; tanh GELU) -----------------
struct gpt2_attention {
  nn::Linear<16, 48> c_attn;
  nn::Linear<16, 16> c_proj;
  buffer<f32, fix<1>, fix<1>, fix<16>, fix<16>> bias;  // the causal tril, persistent (HF's `attn.bias`)
  template <class X>
  auto operator()(const X& x) const {  // [B, T, 16]
    const auto& sh = x.shape();
    const auto b = sh.template get<0>();
    const auto t = sh.template get<1>();
    const auto qkv = c_attn(x);
    const auto heads = [&](const auto& part) {  // [B, T, 16] -> [B, 2, T, 8]
      return transpose<1, 2>(view(part, reshape_to(b, t, 2_c, 8_c)));
    };
    const auto q = heads(slice<2, 0, 16>(qkv));
    const auto k = heads(slice<2, 16, 32>(qkv));
    const auto v = heads(slice<2, 32, 48>(qkv));
    const auto w = div(matmul(q, transpose<-2, -1>(k)), std::sqrt(8.0));
    const auto causal = slice<3>(slice<2>(bias, 0_c, t), 0_c, t);  // bias[:, :, :T, :T]
    const auto p = softmax<-1>(masked_fill(w, eq(causal, 0.0), -INFINITY));
    const auto y = reshape(transpose<1, 2>(matmul(p, v)), reshape_to(b, t, 16_c));
    return c_proj(y);
  }
};
struct gpt2_mlp {
  nn::Linear<16, 64> c_fc;
  nn::GELU act{.approximate = gelu_approximation::tanh};
  nn::Linear<64, 16> c_proj;
  template <class X>
  auto operator()(const X& x) const {
    return c_proj(act(c_fc(x)));
  }
};
struct gpt2_block {
  nn::LayerNorm<16> ln_1;
  gpt2_attention attn;
  nn::LayerNorm<16> ln_2;
  gpt2_mlp mlp;
  template <class X>
  auto operator()(const X& x) const {
    const auto h = add(x, attn(ln_1(x)));
    return add(h, mlp(ln_2(h)));
  }
};
struct gpt2 {
  nn::Embedding<32, 16> wte;
  nn::Embedding<16, 16> wpe;
  std::array<gpt2_block, 2> h;
  nn::LayerNorm<16> ln_f;
  nn::Linear<16, 32, false> lm_head;
  gpt2() { lm_head.weight = wte.weight; }  // tied: one storage under both names
  template <class I>
  auto operator()(const I& idx) const {  // [B, T] i64
    const auto pos = arange(idx.shape().template get<1>(), device_of(idx));  // torch.arange(T, device=idx.device)
    auto x = add(wte(idx), wpe(pos));
    for (const gpt2_block& block : h) x = block(x);
    return lm_head(ln_f(x));
  }
};

// ---- Llama (RMSNorm, rotary embeddings, grouped-query causal attention, SwiGLU) -------------------
template <class X>
auto rotate_half(const X& x) {  // cat([-x[..., 2:], x[..., :2]], -1)
  return cat<-1>(tensors(neg(slice<-1, 2, 4>(x)), slice<-1, 0, 2>(x)));
}
struct llama_attention {
  nn::Linear<16, 16, false> q_proj;
  nn::Linear<16, 8, false> k_proj;
  nn::Linear<16, 8, false> v_proj;
  nn::Linear<16, 16, false> o_proj;
  template <class X, class C>
  auto operator()(const X& x, const C& cos, const C& sin) const {
    const auto b = x.shape().template get<0>();
    const auto t = x.shape().template get<1>();
    const auto q = transpose<1, 2>(view(q_proj(x), reshape_to(b, t, 4_c, 4_c)));  // [B, 4, T, 4]
    const auto k = transpose<1, 2>(view(k_proj(x), reshape_to(b, t, 2_c, 4_c)));  // [B, 2, T, 4]
    const auto v = transpose<1, 2>(view(v_proj(x), reshape_to(b, t, 2_c, 4_c)));
    const auto qr = add(mul(q, cos), mul(rotate_half(q), sin));
    const auto kr = add(mul(k, cos), mul(rotate_half(k), sin));
    // each kv head serves 2 query heads (F.scaled_dot_product_attention(..., enable_gqa=True))
    const auto y = scaled_dot_product_attention(enable_gqa, qr, kr, v, nullptr, {.is_causal = true});
    return o_proj(reshape(transpose<1, 2>(y), reshape_to(b, t, 16_c)));
  }
};
struct llama_mlp {
  nn::Linear<16, 32, false> gate_proj;
  nn::Linear<16, 32, false> up_proj;
  nn::Linear<32, 16, false> down_proj;
  template <class X>
  auto operator()(const X& x) const {
    return down_proj(mul(silu(gate_proj(x)), up_proj(x)));
  }
};
struct llama_layer {
  nn::RMSNorm<16> input_layernorm;
  llama_attention self_attn;
  nn::RMSNorm<16> post_attention_layernorm;
  llama_mlp mlp;
  llama_layer() { input_layernorm.eps = post_attention_layernorm.eps = 1e-6; }
  template <class X, class C>
  auto operator()(const X& x, const C& cos, const C& sin) const {
    const auto h = add(x, self_attn(input_layernorm(x), cos, sin));
    return add(h, mlp(post_attention_layernorm(h)));
  }
};
struct llama {
  nn::Embedding<32, 16> embed_tokens;
  std::array<llama_layer, 2> layers;
  nn::RMSNorm<16> norm;
  nn::Linear<16, 32, false> lm_head;
  buffer<f32, fix<16>, fix<4>> rope_cos, rope_sin;
  llama() { norm.eps = 1e-6; }
  template <class I>
  auto operator()(const I& idx) const {
    const auto t = idx.shape().template get<1>();
    const auto cos = slice<0>(rope_cos, 0_c, t);  // rope_cos[:T]
    const auto sin = slice<0>(rope_sin, 0_c, t);
    auto x = embed_tokens(idx);
    for (const llama_layer& layer : layers) x = layer(x, cos, sin);
    return lm_head(norm(x));
  }
};

// ---- a Conv1d audio stem ------------------------------------------------------------------------------
struct audio_stem {
  nn::Conv1d<1, 8, 9, conv1d_options{.stride = 2, .padding = 4}> conv1;
  nn::GroupNorm<2, 8> norm1;
  nn::Conv1d<8, 16, 5, conv1d_options{.stride = 2, .padding = 2, .bias = false}> conv2;
  nn::GroupNorm<4, 16> norm2;
  nn::Linear<16, 4> fc;
  template <class X>
  auto operator()(const X& x) const {
    const auto h = gelu(norm2(conv2(gelu(norm1(conv1(x))))));
    return fc(mean<-1>(h));
  }
};

// ---- a tiny encoder-decoder transformer (nn.TransformerEncoder / nn.TransformerDecoder) -----------
struct seq2seq {
  nn::Embedding<20, 16> embed;
  nn::TransformerEncoder<nn::TransformerEncoderLayer<16, 2, 32, nn::activation::relu, false, true>, 1, nn::LayerNorm<16>> encoder;
  nn::TransformerDecoder<nn::TransformerDecoderLayer<16, 2, 32, nn::activation::relu, false, true>, 2, nn::LayerNorm<16>> decoder;
  nn::Linear<16, 20> head;
  buffer<b8, fix<16>, fix<16>> causal;  // triu(ones, 1): true where a position may not look
  template <class I>
  auto operator()(const I& ids) const {
    const auto t = ids.shape().template get<1>();
    const auto x = embed(ids);
    const auto memory = encoder(x);
    return head(decoder(x, memory, slice<1>(slice<0>(causal, 0_c, t), 0_c, t)));  // tgt_mask=causal[:T, :T]
  }
};

// ---- layers without biases (torch >= 2.1's bias=False; LayerNorm without affine) -------------------
struct no_bias {
  nn::TransformerEncoderLayer<16, 2, 32, nn::activation::gelu, true, true, f32, false> layer;
  nn::MultiheadAttention<16, 2, true, f32, false> attn;
  nn::LayerNorm<16, f32, false> norm;  // elementwise_affine=False
  template <class X>
  auto operator()(const X& x) const {
    const auto h = layer(x);
    return norm(add(h, attn(h, h, h)));
  }
};
}  // namespace zoo
BOOST_HANA_ADAPT_STRUCT(zoo::no_bias, layer, attn, norm);
BOOST_HANA_ADAPT_STRUCT(zoo::seq2seq, embed, encoder, decoder, head, causal);
BOOST_HANA_ADAPT_STRUCT(zoo::gpt2_attention, c_attn, c_proj, bias);
BOOST_HANA_ADAPT_STRUCT(zoo::gpt2_mlp, c_fc, act, c_proj);
BOOST_HANA_ADAPT_STRUCT(zoo::gpt2_block, ln_1, attn, ln_2, mlp);
BOOST_HANA_ADAPT_STRUCT(zoo::gpt2, wte, wpe, h, ln_f, lm_head);
BOOST_HANA_ADAPT_STRUCT(zoo::llama_attention, q_proj, k_proj, v_proj, o_proj);
BOOST_HANA_ADAPT_STRUCT(zoo::llama_mlp, gate_proj, up_proj, down_proj);
BOOST_HANA_ADAPT_STRUCT(zoo::llama_layer, input_layernorm, self_attn, post_attention_layernorm, mlp);
BOOST_HANA_ADAPT_STRUCT(zoo::llama, embed_tokens, layers, norm, lm_head, rope_cos, rope_sin);
BOOST_HANA_ADAPT_STRUCT(zoo::audio_stem, conv1, norm1, conv2, norm2, fc);
