// Compile-fail pair "broadcast_static": this twin must fail; the diagnostic's first line must match:
// expect: typex::add: shapes \[2, 3\] and \[4, 3\] are not broadcastable at dim 0 \(2 vs 4\)
#include <typex/typex.hpp>

int main() {
  (void)typex::broadcast_shapes(typex::shape_c<2, 3>{}, typex::shape_c<4, 3>{}, typex::op_name<"add">);
}
