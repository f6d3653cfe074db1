// Tests for typex/core/rules/permute.hpp.
#include "../../support.hpp"

using namespace typex;
using typex_test::same;
using typex_test::k_sym;
using typex_test::m_sym;
using typex_test::rows;

TEST_CASE("permute / transpose") {
  static_assert(same<decltype(permute_shape<2, 0, 1>(shape_c<2, 3, 4>{})), shape_c<4, 2, 3>>);
  static_assert(same<decltype(permute_shape<-1, 0, 1>(shape_c<2, 3, 4>{})), shape_c<4, 2, 3>>);
  static_assert(same<decltype(transpose_shape<0, -1>(shape_c<2, 3, 4>{})), shape_c<4, 3, 2>>);
  const auto t = transpose_shape<0, 1>(shape<m_sym, fix<3>>(m_sym(7), {}));
  CHECK(decltype(t)::type_string() == "[3, m]");
  CHECK(t.to_string() == "[3, 7]");
}
