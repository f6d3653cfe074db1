// Compile-fail pair "model_call_not_template": a model whose call operator takes one concrete
// tensor type (it runs eagerly, but tracing calls it with traced values) says that the call
// operator must be a template.
// expect: typex::export_program: net cannot be called with the traced inputs .*its call operator must be a template over its input types
#include <typex/backend/eigen.hpp>
#include <typex/typex.hpp>

using batch = typex::sym<"batch", 1, 64>;
using input_t = typex::tensor<typex::f32, batch, typex::fix<8>>;
struct net {
  typex::nn::Linear<8, 2> fc;
#ifdef TYPEX_CF_FIXED
  template <class X>
  auto operator()(const X& x) const {
#else
  auto operator()(const input_t& x) const {  // the mistake: not a template
#endif
    return typex::tanh(fc(x));
  }
};
BOOST_HANA_ADAPT_STRUCT(net, fc);

int main() {
  net model;
  typex::init_module(model, 1);
  const input_t x({2, 8}, "x");
  const auto eager = model(x);
  using xs = typex::shape<batch, typex::fix<8>>;
  const auto program = typex::export_program(model, typex::input<"x">(typex::tensor_spec<typex::f32, xs>(xs(batch(2), {}))));
  return eager(0, 0) == eager(0, 0) && program.graph().nodes().size() > 0 ? 0 : 1;
}
