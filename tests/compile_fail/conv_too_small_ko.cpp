// Compile-fail pair "conv_too_small": this twin must fail; the diagnostic's first line must match:
// expect: typex::conv2d: input \[8, 1, 2, 28\] is too small at dim 2: 2 \+ 2\*0 padding < 3 \(the dilated kernel\)
#include <typex/typex.hpp>

int main() {
  (void)typex::conv2d_shape(typex::shape_c<8, 1, 2, 28>{}, typex::shape_c<32, 1, 3, 3>{});
}
