// Compile-fail pair "model_encoder_width": a TransformerEncoderLayer of width 64 fed 32-wide
// embeddings (the encoder's first op fails; its attention, norms and feed-forward, the head after
// it and the program's use must not add errors: this case was the 8th error of 8 before).
// expect: typex::linear: inner extents differ \(lhs \[batch, seq, 32\], rhs \[64, 64\]\): 32 vs 64
// max-errors: 2
// (the second error is the encoder's residual add, src + attention(src): 32 vs 64 wide, a real
// consequence of the same mistake that only a sticky poisoned type would silence: see docs/compile_errors.md)
#include <typex/backend/eigen.hpp>
#include <typex/typex.hpp>

namespace nn = typex::nn;
using batch = typex::sym<"batch", 1, 64>;
using seq = typex::sym<"seq", 1, 128>;
struct encoder {
#ifdef TYPEX_CF_FIXED
  nn::Embedding<1000, 64> embed;
#else
  nn::Embedding<1000, 32> embed;  // the mistake: the encoder is 64 wide
#endif
  nn::TransformerEncoderLayer<64, 4, 128> layer;
  nn::Linear<64, 2> head;
  template <class T>
  auto operator()(const T& tokens) const {
    return head(layer(embed(tokens)));
  }
};
BOOST_HANA_ADAPT_STRUCT(encoder, embed, layer, head);

int main() {
  encoder model;
  typex::init_module(model, 2);
  using ts = typex::shape<seq, batch>;
  const auto program = typex::export_program(model, typex::input<"tokens">(typex::tensor_spec<typex::i64, ts>(ts(seq(5), batch(2)))));
  const auto y = program.module()(typex::tensor<typex::i64, seq, batch>({5, 2}, "tokens"));
  return y(4, 1, 1) == y(4, 1, 1) ? 0 : 1;
}
