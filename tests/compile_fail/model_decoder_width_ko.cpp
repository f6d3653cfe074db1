// Compile-fail pair "model_decoder_width": a TransformerDecoderLayer of width 32 fed 16-wide target
// embeddings (the memory is right). The layer says so in its terms (d_model), before its attention.
// expect: typex::nn::TransformerDecoderLayer \(d_model = 32\) takes \[\.\.\., 32\]; its input is \[batch, seq, 16\]: dim 2 is 16, not 32
#include <typex/backend/eigen.hpp>
#include <typex/typex.hpp>

namespace nn = typex::nn;
using batch = typex::sym<"batch", 1, 64>;
using seq = typex::sym<"seq", 1, 128>;
struct translator {
  nn::Embedding<100, 32> src_embed;
#ifdef TYPEX_CF_FIXED
  nn::Embedding<100, 32> tgt_embed;
#else
  nn::Embedding<100, 16> tgt_embed;  // the mistake: the decoder is 32 wide
#endif
  nn::TransformerDecoderLayer<32, 4, 64, nn::activation::relu, false, true> layer;
  nn::Linear<32, 100> head;
  template <class S, class T>
  auto operator()(const S& src, const T& tgt) const {
    return head(layer(tgt_embed(tgt), src_embed(src)));
  }
};
BOOST_HANA_ADAPT_STRUCT(translator, src_embed, tgt_embed, layer, head);

int main() {
  translator model;
  typex::init_module(model, 2);
  const typex::tensor<typex::i64, batch, seq> src({2, 7}), tgt({2, 5});
  const auto program = typex::export_program(model, typex::input<"src">(src.spec()), typex::input<"tgt">(tgt.spec()));
  const auto y = program.module()(src, tgt);
  return y(1, 4, 99) == y(1, 4, 99) ? 0 : 1;
}
