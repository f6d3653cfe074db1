// Compile-fail pair "where_condition": this twin must fail; the diagnostic's first line must match:
// expect: typex::where: the condition is a f32 tensor; it must be bool
#include <typex/typex.hpp>

int main() {
  const typex::tensor_spec<typex::f32, typex::shape_c<2, 3>> x;
  (void)typex::where_op::result(x, x, x);  // a float condition: compare first (x > 0)
}
