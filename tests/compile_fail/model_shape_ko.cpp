// Compile-fail pair "model_shape": a wrong static shape inside a model is a compile error naming
// the op and the shapes, when the model is exported (here: 5 input features into a Linear(4, 10)).
// expect: typex::linear: inner extents differ \(lhs \[batch, 5\], rhs \[4, 10\]\): 5 vs 4
#include <typex/typex.hpp>

#include <boost/hana/adapt_struct.hpp>

namespace app {
using batch = typex::sym<"batch", 1, 1024>;
struct classifier {
  typex::parameter<typex::f32, typex::fix<10>, typex::fix<4>> weight;
  template <class X>
  auto operator()(const X& x) const { return typex::linear(x, weight); }
};
}  // namespace app
BOOST_HANA_ADAPT_STRUCT(app::classifier, weight);

int main() {
  const app::classifier model;
  const typex::tensor_spec<typex::f32, typex::shape<app::batch, typex::fix<5>>> x;
  (void)typex::export_program(model, typex::input<"x">(x));
}
