// Compile-fail pair "split_symbolic": this twin must fail; the diagnostic's first line must match:
// expect: typex::split: dim 0 of \[batch, 4\] is not static; the number of pieces is part of the result.?.s type
#include <typex/typex.hpp>

int main() {
  using batch = typex::sym<"batch", 1, 64>;
  const typex::tensor_spec<typex::f32, typex::shape<batch, typex::fix<4>>> x;
  (void)typex::split<0, 2>(x);  // the number of pieces would depend on batch
}
