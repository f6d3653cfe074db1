// Compile-fail pair "model_mask_sub": a padding mask inverted with `1 - mask` and two masks
// differenced with `-`, as NumPy habits write them, on bool tensors: PyTorch refuses subtraction
// with bools. One error (the first), in PyTorch's words with the fix, and the model's use after it.
// expect: typex::sub: Subtraction, the `-` operator, with two bool tensors is not supported. Use the `\^` or `logical_xor\(\)` operator instead.
#include <typex/backend/eigen.hpp>
#include <typex/typex.hpp>

using batch = typex::sym<"batch", 1, 64>;
using seq = typex::sym<"seq", 1, 128>;
struct masked_mean {
  typex::nn::Linear<16, 16> proj;
  template <class X, class M, class N>
  auto operator()(const X& x, const M& keep, const N& pad) const {
#ifdef TYPEX_CF_FIXED
    const auto changed = typex::logical_xor(keep, pad);
#else
    const auto changed = keep - pad;  // the mistake: bool - bool
#endif
    const auto w = typex::to<typex::f32>(changed);
    const auto h = proj(x) * typex::unsqueeze<2>(w);
    return typex::sum<1>(h);
  }
};
BOOST_HANA_ADAPT_STRUCT(masked_mean, proj);

int main() {
  masked_mean model;
  typex::init_module(model, 9);
  using xs = typex::shape<batch, seq, typex::fix<16>>;
  using ms = typex::shape<batch, seq>;
  const auto program = typex::export_program(model, typex::input<"x">(typex::tensor_spec<typex::f32, xs>(xs(batch(2), seq(5), {}))),
                                             typex::input<"keep">(typex::tensor_spec<typex::b8, ms>(ms(batch(2), seq(5)))),
                                             typex::input<"pad">(typex::tensor_spec<typex::b8, ms>(ms(batch(2), seq(5)))));
  typex::tensor<typex::f32, batch, seq, typex::fix<16>> x({2, 5, 16}, "x");
  typex::tensor<typex::b8, batch, seq> keep({2, 5}, "keep"), pad({2, 5}, "pad");
  const auto y = program.module()(x, keep, pad);
  return y(1, 15) == y(1, 15) ? 0 : 1;
}
