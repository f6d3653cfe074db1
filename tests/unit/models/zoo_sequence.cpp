// The zoo's sequence models against PyTorch: a GPT-2-style causal LM, a Llama-style stack, a
// Conv1d audio stem, an encoder-decoder transformer; batch and sequence symbolic (zoo_models.hpp;
// harness: zoo.hpp).
#include "zoo.hpp"

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

TEST_CASE("zoo: layers without biases (TransformerEncoderLayer and MultiheadAttention bias=False, LayerNorm without affine) equal PyTorch") {
  zoo::no_bias m;
  CHECK(zoo::state_dict(m).find("layer.linear1.bias") == nullptr);
  CHECK(zoo::state_dict(m).find("attn.in_proj_bias") == nullptr);
  CHECK(zoo::state_dict(m).find("norm.weight") == nullptr);
  zoo::check_model<zoo::tensor<zoo::f32, zoo::batch, zoo::seq, zoo::fix<16>>>(m, "no_bias");
}
