// The zoo's sequence models, written as a user ports them from PyTorch (tools/zoo_reference.py has
// the PyTorch side): a GPT-2-style causal LM, a Llama-style stack, a Conv1d audio stem. Batch and
// sequence symbolic. Harness: zoo.hpp.
#include "zoo.hpp"

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
}  // namespace zoo
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

using tokens = zoo::tensor<zoo::i64, zoo::batch, zoo::seq>;

TEST_CASE("zoo: a GPT-2-style LM (tied head, learned positions, causal-mask buffer, tanh GELU) equals PyTorch, exported, saved, differentiated") {
  zoo::gpt2 m;
  zoo::check_model<tokens>(m, "gpt2");
  CHECK(m.lm_head.weight.get_storage().data() == m.wte.weight.get_storage().data());  // still tied after loading
}

TEST_CASE("zoo: a Llama-style stack (RMSNorm, rotary tables sliced to the sequence, grouped-query causal attention, SwiGLU) equals PyTorch") {
  zoo::llama m;
  zoo::check_model<tokens>(m, "llama");
}

TEST_CASE("zoo: a Conv1d audio stem (strided Conv1d, GroupNorm, GELU) equals PyTorch, exported, saved, differentiated") {
  zoo::audio_stem m;
  zoo::check_model<zoo::tensor<zoo::f32, zoo::batch, zoo::fix<1>, zoo::fix<64>>>(m, "audio_stem");
}

TEST_CASE("zoo: an encoder-decoder transformer (TransformerEncoder, TransformerDecoder with cross-attention, a causal bool buffer) equals PyTorch") {
  zoo::seq2seq m;
  zoo::check_model<tokens>(m, "seq2seq");
}
