// Tests for typex/core/rules/reshape.hpp.
#include "../../support.hpp"

using namespace typex;
using typex_test::same;
using typex_test::k_sym;
using typex_test::m_sym;
using typex_test::rows;

TEST_CASE_TEMPLATE("reshape / view / flatten for every kind of batch", M, fix<4>, m_sym, dyn) {
  const shape<M, fix<28>, fix<28>> img(rows<M>(), {}, {});
  const auto flat = reshape_shape(img, reshape_to(infer, fix<784>{}));
  CHECK(flat.to_string() == "[4, 784]");
  const auto back = reshape_shape(flat, reshape_to(flat.template get<0>(), fix<28>{}, fix<28>{}));
  CHECK(back.to_string() == "[4, 28, 28]");
  const auto f = flatten_shape<1>(img);
  CHECK(f.to_string() == "[4, 784]");
  CHECK(flatten_shape(img).to_string() == "[3136]");
}

TEST_CASE("reshape: the inferred dim keeps the symbol when the types allow") {
  const shape<m_sym, fix<28>, fix<28>> img(m_sym(5), {}, {});
  CHECK(decltype(reshape_shape(img, reshape_to(infer, fix<784>{})))::type_string() == "[m, 784]");
  CHECK(decltype(reshape_shape(img, reshape_to(fix<28>{}, infer)))::type_string() == "[28, m*28]");
  CHECK(decltype(reshape_shape(img, reshape_to(m_sym(5), fix<784>{})))::type_string() == "[m, 784]");
  CHECK(decltype(flatten_shape<1>(img))::type_string() == "[m, 784]");
  static_assert(same<decltype(reshape_shape(shape_c<2, 3, 4>{}, reshape_to(infer, fix<4>{}))), shape_c<6, 4>>);
  static_assert(same<decltype(flatten_shape<0, 1>(shape_c<2, 3, 4>{})), shape_c<6, 4>>);
  static_assert(same<decltype(flatten_shape(shape<>{})), shape_c<1>>);
}

TEST_CASE("reshape: run-time mismatches throw, divisibility is recorded") {
  typex_test::recorder rec;
  const shape<m_sym, fix<28>, fix<28>> img(m_sym(5), {}, {});
  CHECK(typex_test::message_of<shape_error>([&] { (void)reshape_shape(img, reshape_to(fix<3>{}, infer)); }) ==
        "typex::reshape: cannot reshape [5, 28, 28] (3920 elements) into [3, -1]: 3920 is not a multiple of 3");
  const shape<m_sym, fix<28>, fix<28>> img6(m_sym(6), {}, {});
  const auto ok = reshape_shape(img6, reshape_to(fix<3>{}, infer));
  CHECK(ok.to_string() == "[3, 1568]");
  CHECK(decltype(ok)::type_string() == "[3, m*28*28//3]");
  REQUIRE(!rec.seen.empty());
  CHECK(rec.seen.back().rel == relation::divisible);
  CHECK_THROWS_AS((void)reshape_shape(shape<dyn>(dyn(6)), reshape_to(fix<4>{})), shape_error);
}

TEST_CASE("reshape: one symbol bound to two values is an error, not a silent wrong shape") {
  const shape<m_sym, fix<28>, fix<28>> img(m_sym(5), {}, {});
  CHECK_THROWS_AS((void)reshape_shape(img, reshape_to(m_sym(6), fix<784>{})), shape_error);
  CHECK(reshape_shape(img, reshape_to(m_sym(5), fix<784>{})).to_string() == "[5, 784]");
}
