// 200 distinct shape computations (40 x {broadcast, matmul, reshape, conv2d, reduce}), each with
// different extents so that nothing is shared between instantiations, half with a symbolic batch.
#include <typex/core.hpp>

#include <utility>

using batch = typex::sym<"batch", 1, 4096>;

template <std::size_t I>
constexpr typex::index_t use() {
  using namespace typex;
  constexpr index_t n = 8 + static_cast<index_t>(I);
  using B = std::conditional_t<I % 2 == 0, fix<4>, batch>;
  const B b = [] {
    if constexpr (I % 2 == 0) return B{};
    else return B(4);
  }();
  const auto x = shape<B, fix<n>, fix<16>>(b, {}, {});
  const auto s1 = broadcast_shapes(x, shape_c<1, 16>{});
  const auto s2 = matmul_shape(s1, shape_c<16, n + 1>{});
  const auto s3 = reshape_shape(s2, reshape_to(infer, fix<n + 1>{}));
  const auto s4 = conv2d_shape(shape<B, fix<3>, fix<n + 2>, fix<n + 2>>(b, {}, {}, {}), shape_c<8, 3, 3, 3>{});
  const auto s5 = reduce_shape<true, -1>(s4);
  return s3.numel() + s5.numel();
}

int main() {
  const auto total = []<std::size_t... I>(std::index_sequence<I...>) {
    return (use<I>() + ...);
  }(std::make_index_sequence<40>{});
  return total > 0 ? 0 : 1;
}
