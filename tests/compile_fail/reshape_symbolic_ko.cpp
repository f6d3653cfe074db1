// Compile-fail pair "reshape_symbolic": this twin must fail; the diagnostic's first line must match:
// expect: typex::reshape: cannot reshape \[batch, 28, 28\] into \[batch, 780\]
#include <typex/typex.hpp>
using batch = typex::sym<"batch", 1, 64>;
int main() {
  (void)typex::reshape_shape(typex::shape<batch, typex::fix<28>, typex::fix<28>>{}, typex::reshape_to(batch(1), typex::fix<780>{}));
}
