// Tests for typex/core/rules/reduce.hpp.
#include "../../support.hpp"

using namespace typex;
using typex_test::same;
using typex_test::k_sym;
using typex_test::m_sym;
using typex_test::rows;

TEST_CASE("reduce: dims, negative dims, keepdim, all dims") {
  static_assert(same<decltype(reduce_shape<false, 1>(shape_c<2, 3, 4>{})), shape_c<2, 4>>);
  static_assert(same<decltype(reduce_shape<true, -1, 0>(shape_c<2, 3, 4>{})), shape_c<1, 3, 1>>);
  static_assert(same<decltype(reduce_shape<false>(shape_c<2, 3, 4>{})), shape<>>);
  const auto r = reduce_shape<true, -1>(shape<m_sym, fix<6>>(m_sym(9), {}));
  CHECK(decltype(r)::type_string() == "[m, 1]");
  CHECK(r.to_string() == "[9, 1]");
}
