// Compile-fail pair "matmul_inner": this twin must fail; the diagnostic's first line must match:
// expect: typex::matmul: inner extents differ \(lhs \[32, 784\], rhs \[512, 10\]\): 784 vs 512
#include <typex/typex.hpp>

int main() {
  (void)typex::matmul_shape(typex::shape_c<32, 784>{}, typex::shape_c<512, 10>{});
}
