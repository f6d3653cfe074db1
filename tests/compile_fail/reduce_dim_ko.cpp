// Compile-fail pair "reduce_dim": this twin must fail; the diagnostic's first line must match:
// expect: typex::sum: dim 3 is out of range for a tensor of rank 3 \(valid dims: -3 to 2\)
#include <typex/backend/eigen.hpp>
#include <typex/typex.hpp>

int main() {
  const typex::tensor<typex::f32, typex::fix<2>, typex::fix<3>, typex::fix<4>> x;
  (void)typex::sum<3>(x);
}
