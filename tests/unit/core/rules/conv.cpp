// Tests for typex/core/rules/conv.hpp.
#include "../../support.hpp"

using namespace typex;
using typex_test::same;
using typex_test::k_sym;
using typex_test::m_sym;
using typex_test::rows;

TEST_CASE("conv2d / pool2d output sizes") {
  static_assert(same<decltype(conv2d_shape(shape_c<8, 1, 28, 28>{}, shape_c<32, 1, 3, 3>{})), shape_c<8, 32, 26, 26>>);
  static_assert(same<decltype(conv2d_shape<conv2d_options{.stride = {2, 2}, .padding = {3, 3}}>(
                         shape_c<8, 3, 224, 224>{}, shape_c<64, 3, 7, 7>{})),
                     shape_c<8, 64, 112, 112>>);
  static_assert(same<decltype(conv2d_shape<conv2d_options{.dilation = {2, 2}}>(shape_c<1, 1, 10, 10>{},
                                                                                shape_c<1, 1, 3, 3>{})),
                     shape_c<1, 1, 6, 6>>);
  static_assert(same<decltype(conv2d_shape<conv2d_options{.groups = 2}>(shape_c<4, 28, 28>{}, shape_c<8, 2, 3, 3>{})),
                     shape_c<8, 26, 26>>);
  static_assert(same<decltype(pool2d_shape<pool2d_options{.kernel = {2, 2}}>(shape_c<8, 64, 24, 24>{})),
                     shape_c<8, 64, 12, 12>>);
  static_assert(same<decltype(pool2d_shape<pool2d_options{.kernel = {3, 3}, .stride = {2, 2}, .ceil_mode = true}>(
                         shape_c<1, 1, 6, 6>{})),
                     shape_c<1, 1, 3, 3>>);
  static_assert(same<decltype(pool2d_shape<pool2d_options{.kernel = {3, 3}, .stride = {2, 2}}>(shape_c<1, 1, 6, 6>{})),
                     shape_c<1, 1, 2, 2>>);
  // ceil_mode: the last window must start inside the input (PyTorch: 5x5, k2 s2 p1 ceil -> 3x3)
  static_assert(same<decltype(pool2d_shape<pool2d_options{.kernel = {2, 2}, .stride = {2, 2}, .padding = {1, 1},
                                                           .ceil_mode = true}>(shape_c<1, 1, 5, 5>{})),
                     shape_c<1, 1, 3, 3>>);
}

TEST_CASE("conv2d with a symbolic height gives a derived dim that prints like torch") {
  using h_sym = sym<"h", 4, 512>;
  using S = shape<m_sym, fix<3>, h_sym, h_sym>;
  const S x(m_sym(2), {}, h_sym(9), h_sym(9));
  const auto s = conv2d_shape<conv2d_options{.stride = {2, 2}, .padding = {1, 1}}>(x, shape_c<16, 3, 3, 3>{});
  CHECK(decltype(s)::type_string() == "[m, 16, (h - 1)//2 + 1, (h - 1)//2 + 1]");
  CHECK(s.to_string() == "[2, 16, 5, 5]");
  const auto v = conv2d_shape(x, shape_c<16, 3, 3, 3>{});
  CHECK(decltype(v)::type_string() == "[m, 16, h - 2, h - 2]");
  using small = sym<"s", 1, 512>;
  const shape<fix<1>, fix<3>, small, small> tiny({}, {}, small(2), small(2));
  CHECK_THROWS_AS((void)conv2d_shape(tiny, shape_c<16, 3, 3, 3>{}), shape_error);
}
