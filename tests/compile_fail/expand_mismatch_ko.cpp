// Compile-fail pair "expand_mismatch": this twin must fail; the diagnostic's first line must match:
// expect: typex::expand: cannot expand \[3\] to \[2, 1\]: at dim 1 the input.?.s extent is neither 1 nor the target.?.s 1
#include <typex/typex.hpp>

int main() {
  (void)typex::expand_shape(typex::shape_c<3>{}, typex::shape_c<2, 1>{});
}
