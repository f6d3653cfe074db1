// Compile-fail pair "model_no_transpose": a hand-written layer computing x @ W with W stored
// [out, in] as torch.nn.Linear stores it (the transpose forgotten), with more layers after it.
// expect: typex::matmul: inner extents differ \(lhs \[batch, 64\], rhs \[32, 64\]\): 64 vs 32
#include <typex/backend/eigen.hpp>
#include <typex/typex.hpp>

using batch = typex::sym<"batch", 1, 512>;
struct projection {
  typex::parameter<typex::f32, typex::fix<32>, typex::fix<64>> weight;  // [out, in]
  typex::nn::LayerNorm<32> norm;
  typex::nn::Linear<32, 4> head;
  template <class X>
  auto operator()(const X& x) const {
#ifdef TYPEX_CF_FIXED
    const auto h = typex::matmul(x, typex::transpose<0, 1>(weight));
#else
    const auto h = typex::matmul(x, weight);  // the mistake: W is [out, in]
#endif
    return head(typex::gelu(norm(h)));
  }
};
BOOST_HANA_ADAPT_STRUCT(projection, weight, norm, head);

int main() {
  projection model;
  typex::init_module(model, 11);
  using xs = typex::shape<batch, typex::fix<64>>;
  const auto program = typex::export_program(model, typex::input<"x">(typex::tensor_spec<typex::f32, xs>(xs(batch(3), {}))));
  typex::tensor<typex::f32, batch, typex::fix<64>> x({3, 64}, "x");
  const auto y = program.module()(x);
  return y.shape().get<1>() == 4 && y(2, 3) == y(2, 3) ? 0 : 1;
}
