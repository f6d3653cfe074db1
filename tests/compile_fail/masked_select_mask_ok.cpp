// Compile-fail pair "masked_select_mask": this twin must build. See masked_select_mask_ko.cpp.
#include <typex/typex.hpp>
int main() {
  const typex::host_tensor<typex::f32, typex::shape_c<3, 4>> x;
  const typex::host_tensor<typex::b8, typex::shape_c<3, 1>> mask;  // (expands to [3, 4])
  (void)typex::masked_select_op<"hits">::result(x.spec(), mask.spec());
}
