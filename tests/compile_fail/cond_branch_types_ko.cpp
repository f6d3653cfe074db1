// Compile-fail pair "cond_branch_types": the two branches of typex::cond return different types (a
// width the false branch forgot to project); the sentence names both types and the fix.
// expect: typex::cond: the branches return different types: the true branch returns traced<f32\[batch, 4\]>, the false branch returns traced<f32\[batch, 8\]>
#include <typex/backend/eigen.hpp>
#include <typex/typex.hpp>

using batch = typex::sym<"batch", 1, 64>;
struct picker {
  typex::nn::Linear<8, 4> big;
  typex::nn::Linear<8, 4> small;
  template <class X>
  auto operator()(const X& x) const {
    return typex::cond(
        typex::gt(typex::mean(x), 0.0), [&](const auto& v) { return big(v); },
#ifdef TYPEX_CF_FIXED
        [&](const auto& v) { return small(v); },
#else
        [&](const auto& v) { return typex::relu(v); },  // the mistake: [batch, 8], not [batch, 4]
#endif
        x);
  }
};
BOOST_HANA_ADAPT_STRUCT(picker, big, small);

int main() {
  picker model;
  typex::init_module(model, 4);
  using xs = typex::shape<batch, typex::fix<8>>;
  const auto program = typex::export_program(model, typex::input<"x">(typex::tensor_spec<typex::f32, xs>(xs(batch(2), {}))));
  return program.graph().nodes().size() > 2 ? 0 : 1;
}
