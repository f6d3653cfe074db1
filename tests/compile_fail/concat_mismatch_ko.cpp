// Compile-fail pair "concat_mismatch": this twin must fail; the diagnostic's first line must match:
// expect: typex::cat: shapes \[2, 3\] and \[3, 4\] differ at dim 0 \(2 vs 3\)
#include <typex/typex.hpp>

int main() {
  (void)typex::concat_shapes<1>(typex::shape_c<2, 3>{}, typex::shape_c<3, 4>{});
}
