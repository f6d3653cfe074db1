// Compile-fail pair "dim_out_of_range": this twin must fail; the diagnostic's first line must match:
// expect: typex::reduce: dim 3 is out of range for a tensor of rank 3 \(valid dims: -3 to 2\)
#include <typex/typex.hpp>

int main() {
  (void)typex::reduce_shape<false, 3>(typex::shape_c<2, 3, 4>{});
}
