// Compile-fail pair "unflatten_swap": this twin must fail; the diagnostic's first line must match:
// expect: typex::unflatten: a swap of cf::affine by a program taking \(tensor<f32\[2, 8\]>\) and returning tensor<f32\[2, 16\]>, where the module returns tensor<f32\[2, 8\]>
#include <typex/backend/eigen.hpp>
#include <typex/export/unflatten.hpp>

#include <boost/hana/adapt_struct.hpp>

namespace cf {
struct affine {
  typex::parameter<typex::f32, typex::fix<8>, typex::fix<8>> weight;
  template <class X>
  auto operator()(const X& x) const {
    const typex::module_scope scope(*this, x);
    return scope.returns(typex::linear(x, weight));
  }
};
struct widen {  // (returns 16 features where affine returns 8)
  typex::parameter<typex::f32, typex::fix<16>, typex::fix<8>> weight;
  template <class X>
  auto operator()(const X& x) const {
    return typex::linear(x, weight);
  }
};
struct two {
  affine a, b;
  template <class X>
  auto operator()(const X& x) const {
    return b(typex::relu(a(x)));
  }
};
}  // namespace cf
BOOST_HANA_ADAPT_STRUCT(cf::affine, weight);
BOOST_HANA_ADAPT_STRUCT(cf::two, a, b);
BOOST_HANA_ADAPT_STRUCT(cf::widen, weight);

int main() {
  cf::two m;
  const auto ep = typex::export_program(m, typex::tensor_spec<typex::f32, typex::shape_c<2, 8>>());
  const auto tree = typex::unflatten(ep, m);
  const cf::widen other;
  tree.at(&cf::two::b).swap(typex::export_program(other, typex::tensor_spec<typex::f32, typex::shape_c<2, 8>>()));
}
