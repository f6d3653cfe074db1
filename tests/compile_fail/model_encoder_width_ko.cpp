// Compile-fail pair "model_encoder_width": a TransformerEncoderLayer of width 64 fed 32-wide
// embeddings. The layer says so itself, in its terms (d_model), before any op inside it runs: its
// attention, residual adds, norms and feed-forward, the head after it and the program's use add no
// error (this case was the 8th error of 8 at first, then 2 with the op-level check alone).
// expect: typex::nn::TransformerEncoderLayer \(d_model = 64\) takes \[..., 64\]; its input is \[seq, batch, 32\]: dim 2 is 32, not 64
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
