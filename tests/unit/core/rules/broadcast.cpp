// Tests for typex/core/rules/broadcast.hpp.
#include "../../support.hpp"

using namespace typex;
using typex_test::same;
using typex_test::k_sym;
using typex_test::m_sym;
using typex_test::rows;

TEST_CASE_TEMPLATE("broadcast: [m, 1, 3] with [2, 1] for every kind of m", M, fix<4>, m_sym, dyn) {
  const shape<M, fix<1>, fix<3>> a(rows<M>(), {}, {});
  const auto r = broadcast_shapes(a, shape_c<2, 1>{});
  CHECK(r.to_string() == "[4, 2, 3]");
}

TEST_CASE("broadcast: static 1 meets a symbol, a symbol meets a static extent") {
  typex_test::recorder rec;
  const shape<m_sym, fix<3>> a(m_sym(1), {});
  const auto r = broadcast_shapes(a, shape_c<5, 3>{});
  static_assert(same<decltype(r), const shape_c<5, 3>>);
  CHECK(r.to_string() == "[5, 3]");
  REQUIRE(rec.seen.size() == 1);
  CHECK(rec.seen[0].rel == relation::broadcastable);
  const shape<m_sym, fix<3>> b(m_sym(4), {});
  CHECK(typex_test::message_of<shape_error>([&] { (void)broadcast_shapes(b, shape_c<5, 3>{}, op_name<"add">); }) ==
        "typex::add: shapes [4, 3] and [5, 3] are not broadcastable at dim 0 (types [m, 3] and [5, 3]); aligned from "
        "the right, each pair of dims must be equal or one of them 1");
}

TEST_CASE("broadcast: two different symbols give broadcast(a, b), including 0-sized dims") {
  const auto r = broadcast_shapes(shape<m_sym>(m_sym(1)), shape<dyn>(dyn(0)));
  CHECK(decltype(r)::type_string() == "[broadcast(m, ?)]");
  CHECK(r.to_string() == "[0]");  // 1 broadcasts against 0, as in PyTorch
  const auto same_sym = broadcast_shapes(shape<m_sym>(m_sym(6)), shape<m_sym>(m_sym(6)));
  static_assert(same<decltype(same_sym), const shape<m_sym>>);
}

TEST_CASE("broadcast: the same symbol bound to two values is an error (eager tensors built apart)") {
  typex_test::recorder rec;
  CHECK_THROWS_AS((void)broadcast_shapes(shape<m_sym>(m_sym(4)), shape<m_sym>(m_sym(5))), shape_error);
  CHECK(broadcast_shapes(shape<m_sym>(m_sym(4)), shape<m_sym>(m_sym(4))).to_string() == "[4]");
  CHECK(rec.seen.empty());  // one symbol: nothing to record
}
