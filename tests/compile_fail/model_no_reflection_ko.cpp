// Compile-fail pair "model_no_reflection": a model struct without BOOST_HANA_ADAPT_STRUCT, initialized,
// exported and run: one error for both uses that need reflection (init_module, export_program), the
// sentence naming the type and the fix, instead of "no matching function for call".
// expect: typex: mlp is not a module \(init_module, export_program and load_state_dict find .*\): adapt it with BOOST_HANA_ADAPT_STRUCT\(mlp, member1, member2, ...\)
#include <typex/backend/eigen.hpp>
#include <typex/typex.hpp>

using batch = typex::sym<"batch", 1, 64>;
struct mlp {
  typex::nn::Linear<8, 16> fc1;
  typex::nn::Linear<16, 2> fc2;
  template <class X>
  auto operator()(const X& x) const {
    return fc2(typex::relu(fc1(x)));
  }
};
#ifdef TYPEX_CF_FIXED
BOOST_HANA_ADAPT_STRUCT(mlp, fc1, fc2);
#endif

int main() {
  mlp model;
  typex::init_module(model, 1);
  using xs = typex::shape<batch, typex::fix<8>>;
  const auto program = typex::export_program(model, typex::input<"x">(typex::tensor_spec<typex::f32, xs>(xs(batch(2), {}))));
  const auto y = program.module()(typex::tensor<typex::f32, batch, typex::fix<8>>({2, 8}, "x"));
  return y(1, 1) == y(1, 1) ? 0 : 1;
}
