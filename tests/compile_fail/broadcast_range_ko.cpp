// Compile-fail pair "broadcast_range": this twin must fail; the diagnostic's first line must match:
// expect: typex::add: shapes \[batch, 3\] and \[784, 3\] can never broadcast at dim 0: batch \(declared in \[2, 64\]\) and 784 can be neither equal nor 1
#include <typex/typex.hpp>
using batch = typex::sym<"batch", 2, 64>;
int main() {
  (void)typex::broadcast_shapes(typex::shape<batch, typex::fix<3>>{}, typex::shape_c<784, 3>{}, typex::op_name<"add">);
}
