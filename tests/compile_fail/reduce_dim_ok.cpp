// Compile-fail pair "reduce_dim": a reduction over a dim the tensor has compiles.
#include <typex/backend/eigen.hpp>
#include <typex/typex.hpp>

int main() {
  const typex::tensor<typex::f32, typex::fix<2>, typex::fix<3>, typex::fix<4>> x;
  (void)typex::sum<2>(x);
}
