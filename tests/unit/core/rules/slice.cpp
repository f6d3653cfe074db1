// Tests for typex/core/rules/slice.hpp.
#include "../../support.hpp"

using namespace typex;
using typex_test::same;
using typex_test::k_sym;
using typex_test::m_sym;
using typex_test::rows;

TEST_CASE("slice: PyTorch's clamping, negative bounds and steps") {
  static_assert(same<decltype(slice_shape<1, 1, -1>(shape_c<2, 10>{})), shape_c<2, 8>>);
  static_assert(same<decltype(slice_shape<1, 0, int_oo, 3>(shape_c<2, 10>{})), shape_c<2, 4>>);
  static_assert(same<decltype(slice_shape<1, 20, 30>(shape_c<2, 10>{})), shape_c<2, 0>>);
  static_assert(same<decltype(slice_shape<0, -3>(shape_c<10>{})), shape_c<3>>);
  CHECK(slice_shape<0>(shape<m_sym>(m_sym(9)), 2, 100).to_string() == "[7]");
  CHECK(slice_shape<0>(shape<m_sym>(m_sym(9)), -4, -1, 2).to_string() == "[2]");
  CHECK_THROWS_AS((void)slice_shape<0>(shape<m_sym>(m_sym(9)), 0, 4, 0), argument_error);
}
