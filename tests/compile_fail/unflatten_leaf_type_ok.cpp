// Compile-fail pair "unflatten_leaf_type": this twin must build. See unflatten_leaf_type_ko.cpp.
#include <typex/typex.hpp>
using tensor_t = typex::tensor<typex::f32, typex::sym<"batch", 1, 64>, typex::fix<4>>;
int main() {
  (void)typex::unflatten<std::tuple<float, tensor_t>>(std::tuple<float, tensor_t>{});
}
