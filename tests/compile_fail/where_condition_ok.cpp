// Compile-fail pair "where_condition": this twin must build. See where_condition_ko.cpp.
#include <typex/typex.hpp>

int main() {
  const typex::tensor_spec<typex::f32, typex::shape_c<2, 3>> x;
  const typex::tensor_spec<typex::b8, typex::shape_c<3>> c;
  (void)typex::where_op::result(c, x, x);
}
