// Compile-fail pair "split_symbolic": a model splits its input along the symbolic batch dim (the
// number of pieces would be part of the result's type), then uses the pieces. One error.
// expect: typex::split: dim 0 of \[batch, 4\] is not static; the number of pieces is part of the type of the result
#include <typex/typex.hpp>

using batch = typex::sym<"batch", 1, 64>;
struct halves {
  template <class X>
  auto operator()(const X& x) const {
#ifdef TYPEX_CF_FIXED
    const auto pieces = typex::split<1, 2>(x);  // the static dim splits
#else
    const auto pieces = typex::split<0, 2>(x);  // the mistake: batch is symbolic
#endif
    return typex::mul(std::get<0>(pieces), std::get<1>(pieces));
  }
};
BOOST_HANA_ADAPT_STRUCT(halves);

int main() {
  const halves model;
  using xs = typex::shape<batch, typex::fix<4>>;
  const auto program = typex::export_program(model, typex::input<"x">(typex::tensor_spec<typex::f32, xs>(xs(batch(4), {}))));
  return program.graph().nodes().size() > 1 ? 0 : 1;
}
