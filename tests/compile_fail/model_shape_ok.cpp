// Compile-fail pair "model_shape": this twin must build. See model_shape_ko.cpp.
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
  const typex::tensor_spec<typex::f32, typex::shape<app::batch, typex::fix<4>>> x;
  (void)typex::export_program(model, typex::input<"x">(x));
}
