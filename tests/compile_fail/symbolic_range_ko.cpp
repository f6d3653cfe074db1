// Compile-fail pair "symbolic_range": this twin must fail; the diagnostic's first line must match:
// expect: typex::matmul: inner extents can never be equal \(lhs \[8, batch\], rhs \[784, 10\]\): batch \(declared in \[1, 64\]\) vs 784; the only extent that fits is 784: declare batch as typex::fix<784>
#include <typex/typex.hpp>
using batch = typex::sym<"batch", 1, 64>;
int main() {
  (void)typex::matmul_shape(typex::shape<typex::fix<8>, batch>{}, typex::shape_c<784, 10>{});
}
