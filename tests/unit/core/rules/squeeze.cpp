// Tests for typex/core/rules/squeeze.hpp.
#include "../../support.hpp"

using namespace typex;
using typex_test::same;
using typex_test::k_sym;
using typex_test::m_sym;
using typex_test::rows;

TEST_CASE("unsqueeze / squeeze") {
  static_assert(same<decltype(unsqueeze_shape<-1>(shape_c<2, 3>{})), shape_c<2, 3, 1>>);
  static_assert(same<decltype(unsqueeze_shape<0>(shape_c<2, 3>{})), shape_c<1, 2, 3>>);
  static_assert(same<decltype(squeeze_shape<1>(shape_c<2, 1, 3>{})), shape_c<2, 3>>);
  CHECK(squeeze_shape<0>(shape<m_sym, fix<3>>(m_sym(1), {})).to_string() == "[3]");
  CHECK_THROWS_AS((void)squeeze_shape<0>(shape<m_sym, fix<3>>(m_sym(2), {})), shape_error);
}
