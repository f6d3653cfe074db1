// Compile-fail pair "split_symbolic": this twin must build. See split_symbolic_ko.cpp.
#include <typex/typex.hpp>

int main() {
  using batch = typex::sym<"batch", 1, 64>;
  const typex::tensor_spec<typex::f32, typex::shape<batch, typex::fix<4>>> x;
  (void)typex::detail::static_split_extent<"split", 1, decltype(x)>();  // the static dim splits
}
