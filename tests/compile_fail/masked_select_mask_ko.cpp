// Compile-fail pair "masked_select_mask": this twin must fail; the diagnostic's first line must match:
// expect: typex::masked_select: shapes \[3, 5\] and \[3, 4\] are not broadcastable at dim 1 \(5 vs 4\)
#include <typex/typex.hpp>
int main() {
  const typex::host_tensor<typex::f32, typex::shape_c<3, 4>> x;
  const typex::host_tensor<typex::b8, typex::shape_c<3, 5>> mask;
  (void)typex::masked_select_op<"hits">::result(x.spec(), mask.spec());
}
