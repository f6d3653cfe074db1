// Compile-fail pair "model_while_on_traced": a `while` on a traced value (a loop until a tolerance)
// names typex::while_loop; the fixed twin records the loop with it (bounded, so it differentiates).
// expect: typex: a branch \(if, while, \?:, &&\) on a traced value .*loop with typex::while_loop\(cond_fn, body_fn, carried\.\.\.\)
#include <typex/backend/eigen.hpp>
#include <typex/typex.hpp>

using n = typex::sym<"n", 1, 64>;
struct sqrt_newton {
  template <class A>
  auto operator()(const A& a) const {
    const auto x0 = typex::add(typex::mul(a, 0.5), 0.5);
#ifdef TYPEX_CF_FIXED
    return typex::while_loop(
        typex::max_iterations{50}, [&](const auto& x) { return typex::gt(typex::amax(typex::abs(typex::sub(typex::mul(x, x), a))), 1e-6); },
        [&](const auto& x) { return typex::mul(typex::add(x, typex::div(a, x)), 0.5); }, x0);
#else
    auto x = x0;
    while (typex::gt(typex::amax(typex::abs(typex::sub(typex::mul(x, x), a))), 1e-6))  // the mistake: the loop depends on data
      x = typex::mul(typex::add(x, typex::div(a, x)), 0.5);
    return x;
#endif
  }
};
BOOST_HANA_ADAPT_STRUCT(sqrt_newton);

int main() {
  const auto program = typex::export_program(sqrt_newton{}, typex::input<"a">(typex::tensor_spec<typex::f32, typex::shape<n>>(typex::shape<n>(n(4)))));
  return program.graph().nodes().size() > 2 ? 0 : 1;
}
