// Tests for typex/core/rules/matmul.hpp.
#include "../../support.hpp"

using namespace typex;
using typex_test::same;
using typex_test::k_sym;
using typex_test::m_sym;
using typex_test::rows;

TEST_CASE_TEMPLATE("matmul: [m, 8] @ [8, 5] for every kind of m", M, fix<4>, m_sym, dyn) {
  const shape<M, fix<8>> a(rows<M>(), {});
  const auto r = matmul_shape(a, shape_c<8, 5>{});
  CHECK(r.to_string() == "[4, 5]");
  static_assert(same<typename std::remove_cvref_t<decltype(r)>::template dim_t<0>, M>);
}

TEST_CASE("matmul: every rank combination of torch.matmul") {
  static_assert(same<decltype(matmul_shape(shape_c<8>{}, shape_c<8>{})), shape<>>);
  static_assert(same<decltype(matmul_shape(shape_c<3, 8>{}, shape_c<8>{})), shape_c<3>>);
  static_assert(same<decltype(matmul_shape(shape_c<8>{}, shape_c<8, 5>{})), shape_c<5>>);
  static_assert(same<decltype(matmul_shape(shape_c<7, 1, 3, 8>{}, shape_c<2, 8, 5>{})), shape_c<7, 2, 3, 5>>);
  static_assert(same<decltype(matmul_shape(shape_c<2, 3, 8>{}, shape_c<8, 5>{})), shape_c<2, 3, 5>>);
}

TEST_CASE("matmul: a symbolic inner dim is checked at run time and recorded") {
  typex_test::recorder rec;
  const shape<m_sym, k_sym> a(m_sym(3), k_sym(8));
  const auto r = matmul_shape(a, shape_c<8, 5>{});
  CHECK(r.to_string() == "[3, 5]");
  REQUIRE(rec.seen.size() == 1);
  CHECK(rec.seen[0].op == "matmul");
  CHECK(rec.seen[0].rel == relation::equal);
  CHECK(rec.seen[0].lhs == "k");
  CHECK(rec.seen[0].rhs == "8");
  const shape<m_sym, k_sym> bad(m_sym(3), k_sym(7));
  CHECK(typex_test::message_of<shape_error>([&] { (void)matmul_shape(bad, shape_c<8, 5>{}, op_name<"linear">); }) ==
        "typex::linear: inner extents differ (lhs [3, 7], rhs [8, 5]): 7 vs 8 (types [m, k] and [8, 5])");
}

TEST_CASE("matmul: the same symbol bound to two values is an error") {
  CHECK_THROWS_AS((void)matmul_shape(shape<fix<2>, k_sym>({}, k_sym(3)), shape<k_sym, fix<4>>(k_sym(4), {})), shape_error);
}
