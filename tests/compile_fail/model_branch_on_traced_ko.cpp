// Compile-fail pair "model_branch_on_traced": an `if` on a traced value (data-dependent control
// flow) names typex::where and typex::cond, and the rest of the model compiles on; the fixed twin
// records the branch with typex::cond.
// expect: typex: a branch \(if, while, \?:, &&\) on a traced value .*typex::where\(condition, a, b\), branch with typex::cond\(pred, true_fn, false_fn, operands\.\.\.\)
#include <typex/backend/eigen.hpp>
#include <typex/typex.hpp>

using batch = typex::sym<"batch", 1, 64>;
struct gate {
  typex::nn::Linear<16, 16> fc;
  template <class X>
  auto operator()(const X& x) const {
    const auto h = fc(x);
#ifdef TYPEX_CF_FIXED
    return typex::cond(
        typex::gt(typex::sum(h), 0.0), [](const auto& v) { return v; }, [](const auto& v) { return typex::neg(v); }, h);
#else
    if (typex::gt(typex::sum(h), 0.0)) return h;  // the mistake: the branch depends on data
    return typex::neg(h);
#endif
  }
};
BOOST_HANA_ADAPT_STRUCT(gate, fc);

int main() {
  gate model;
  typex::init_module(model, 4);
  using xs = typex::shape<batch, typex::fix<16>>;
  const auto program = typex::export_program(model, typex::input<"x">(typex::tensor_spec<typex::f32, xs>(xs(batch(2), {}))));
  return program.graph().nodes().size() > 2 ? 0 : 1;
}
