// Compile-fail pair "model_dtype_mixed": a double-precision head (weights f64, as someone porting a
// numerically sensitive layer writes it) fed the f32 features of the layers before, with the model
// exported and its output used. PyTorch refuses this (F.linear does not promote); typex says so at
// compile time in PyTorch's words, once.
// expect: typex::linear: mat1 and mat2 must have the same dtype, but got Float and Double
#include <typex/backend/eigen.hpp>
#include <typex/typex.hpp>

using batch = typex::sym<"batch", 1, 256>;
struct regressor {
  typex::nn::Linear<16, 32> body;
  typex::nn::Linear<32, 1, true, typex::f64> head;  // f64 weights
  template <class X>
  auto operator()(const X& x) const {
    const auto h = typex::relu(body(x));
#ifdef TYPEX_CF_FIXED
    return head(typex::to<typex::f64>(h));
#else
    return head(h);  // the mistake: h is f32
#endif
  }
};
BOOST_HANA_ADAPT_STRUCT(regressor, body, head);

int main() {
  regressor model;
  typex::init_module(model, 5);
  using xs = typex::shape<batch, typex::fix<16>>;
  const auto program = typex::export_program(model, typex::input<"x">(typex::tensor_spec<typex::f32, xs>(xs(batch(4), {}))));
  typex::tensor<typex::f32, batch, typex::fix<16>> x({4, 16}, "x");
  const auto y = program.module()(x);
  const double first = y(0, 0);
  return first == first ? 0 : 1;
}
