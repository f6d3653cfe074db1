// Compile-fail pair "unflatten_leaf_type": this twin must fail; the diagnostic's first line must match:
// expect: typex::unflatten: leaf 1 of the structure std::tuple<float, .*> is a tensor<f32\[batch, 4\]>, but a float was given, which does not convert to it
#include <typex/typex.hpp>
using tensor_t = typex::tensor<typex::f32, typex::sym<"batch", 1, 64>, typex::fix<4>>;
int main() {
  (void)typex::unflatten<std::tuple<float, tensor_t>>(std::tuple<float, float>{});
}
