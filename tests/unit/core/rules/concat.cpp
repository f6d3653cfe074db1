// Tests for typex/core/rules/concat.hpp.
#include "../../support.hpp"

using namespace typex;
using typex_test::same;
using typex_test::k_sym;
using typex_test::m_sym;
using typex_test::rows;

TEST_CASE("concat: sums the concatenated dim, unifies the others") {
  static_assert(same<decltype(concat_shapes<1>(shape_c<2, 3>{}, shape_c<2, 4>{}, shape_c<2, 1>{})), shape_c<2, 8>>);
  static_assert(same<decltype(concat_shapes<-1>(shape_c<2, 3>{})), shape_c<2, 3>>);
  const auto c = concat_shapes<0>(shape<m_sym, fix<4>>(m_sym(3), {}), shape<m_sym, dyn>(m_sym(3), dyn(4)));
  CHECK(decltype(c)::type_string() == "[2*m, 4]");
  CHECK(c.to_string() == "[6, 4]");
  CHECK_THROWS_AS((void)concat_shapes<0>(shape<dyn, fix<4>>(dyn(1), {}), shape<dyn, dyn>(dyn(1), dyn(5))), shape_error);
}
