// Compile-fail pair "conv_channels": this twin must fail; the diagnostic's first line must match:
// expect: typex::conv2d: input \[8, 3, 28, 28\] has 3 channels, but weight \[32, 1, 3, 3\] with groups=1 expects 1
#include <typex/typex.hpp>

int main() {
  (void)typex::conv2d_shape(typex::shape_c<8, 3, 28, 28>{}, typex::shape_c<32, 1, 3, 3>{});
}
