// Compile-fail pair "reshape_count": this twin must fail; the diagnostic's first line must match:
// expect: typex::reshape: cannot reshape \[2, 3\] \(6 elements\) into \[4, 2\] \(8 elements\); the number of elements must stay the same
#include <typex/typex.hpp>

int main() {
  (void)typex::reshape_shape(typex::shape_c<2, 3>{}, typex::reshape_to(typex::fix<4>{}, typex::fix<2>{}));
}
