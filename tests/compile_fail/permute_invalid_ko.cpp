// Compile-fail pair "permute_invalid": this twin must fail; the diagnostic's first line must match:
// expect: typex::permute: \(0, 0, 1\) is not a permutation of the dims of \[2, 3, 4\]
#include <typex/typex.hpp>

int main() {
  (void)typex::permute_shape<0, 0, 1>(typex::shape_c<2, 3, 4>{});
}
