#include "../support.hpp"

using namespace typex;
using typex_test::same;

using batch = sym<"batch", 1, 1024>;
using seq = sym<"seq", 1, 512>;

TEST_CASE("static dims are empty and carry their value") {
  static_assert(std::is_empty_v<fix<784>>);
  static_assert(fix<784>::value == 784 && fix<784>::get() == 784);
  static_assert(is_static_dim_v<fix<3>> && !is_static_dim_v<batch> && !is_static_dim_v<dyn>);
  static_assert(dim<fix<3>> && dim<batch> && dim<dyn> && !dim<int>);
  CHECK(sizeof(batch) == sizeof(index_t));
}

TEST_CASE("a symbolic dim checks its declared range") {
  CHECK(batch(1).get() == 1);
  CHECK(batch(1024).get() == 1024);
  // 0 and 1 are ordinary members of a range
  using any_batch = sym<"b", 0, 8>;
  CHECK(any_batch(0).get() == 0);
  const auto msg = typex_test::message_of<constraint_violation>([] { (void)batch(1025); });
  CHECK(msg.find("symbolic dim 'batch' was given 1025, outside its declared range [1, 1024]") != std::string::npos);
  CHECK(msg.find("typex::sym<\"batch\", min, max>") != std::string::npos);
  CHECK_THROWS_AS((void)batch(0), constraint_violation);
  CHECK_THROWS_AS((void)dyn(-1), argument_error);
}

TEST_CASE("arithmetic on static dims stays static") {
  static_assert(same<decltype(fix<2>{} * fix<3>{}), fix<6>>);
  static_assert(same<decltype(fix<7>{} - fix<3>{}), fix<4>>);
  static_assert(same<decltype(floordiv(fix<7>{}, fix<2>{})), fix<3>>);
  static_assert(same<decltype(ceildiv(fix<7>{}, fix<2>{})), fix<4>>);
  static_assert(same<decltype(max(fix<7>{}, fix<2>{})), fix<7>>);
}

TEST_CASE("derived dims: value, range, printing, identities") {
  const auto d = fix<2>{} * seq(7) + fix<1>{};
  using D = std::remove_cvref_t<decltype(d)>;
  static_assert(is_derived_dim_v<D>);
  CHECK(d.get() == 15);
  CHECK(D::lo == 3);
  CHECK(D::hi == 1025);
  CHECK(detail::to_string_with([](auto& w) { D::write_type(w); }) == "2*seq + 1");
  // identities fold away
  static_assert(same<decltype(seq(3) * fix<1>{}), seq>);
  static_assert(same<decltype(fix<1>{} * seq(3)), seq>);
  static_assert(same<decltype(seq(3) + fix<0>{}), seq>);
  static_assert(same<decltype(floordiv(seq(3), fix<1>{})), seq>);
  // constants fold: (seq + 3) - 5 is seq - 2
  const auto e = (seq(9) + fix<3>{}) - fix<5>{};
  CHECK(e.get() == 7);
  CHECK(detail::to_string_with([](auto& w) { std::remove_cvref_t<decltype(e)>::write_type(w); }) == "seq - 2");
  // seq + seq is 2*seq
  const auto twice = seq(4) + seq(4);
  CHECK(twice.get() == 8);
  CHECK(detail::to_string_with([](auto& w) { std::remove_cvref_t<decltype(twice)>::write_type(w); }) == "2*seq");
  // precedence is printed
  using P = dim_floordiv_t<dim_add_t<seq, fix<2>>, fix<2>>;
  CHECK(detail::to_string_with([](auto& w) { P::write_type(w); }) == "(seq + 2)//2");
}

TEST_CASE("derived dims reject negative values and division by zero") {
  CHECK_THROWS_AS((void)(seq(2) - fix<5>{}), shape_error);
  CHECK_THROWS_AS((void)floordiv(seq(2), dyn(0)), argument_error);
}

TEST_CASE("ranges saturate at int_oo") {
  using big = sym<"n">;  // [0, int_oo]
  using D = dim_mul_t<big, fix<4>>;
  CHECK(D::hi == int_oo);
  using S = dim_add_t<big, fix<4>>;
  CHECK(S::hi == int_oo);
  CHECK(S::lo == 4);
}

TEST_CASE("make_dim validates run-time extents") {
  CHECK(make_dim<fix<3>>(3).get() == 3);
  CHECK_THROWS_AS(make_dim<fix<3>>(4), shape_error);
  CHECK_THROWS_AS(make_dim<batch>(2000), constraint_violation);
  CHECK_THROWS_AS((make_dim<dim_mul_t<fix<2>, seq>>(1)), constraint_violation);  // 2*seq >= 2
  CHECK(make_dim<dim_mul_t<fix<2>, seq>>(6).get() == 6);
}

TEST_CASE("verdicts for every mix of dims") {
  static_assert(equal_verdict<fix<3>, fix<3>>() == verdict::always);
  static_assert(equal_verdict<fix<3>, fix<4>>() == verdict::never);
  static_assert(equal_verdict<batch, batch>() == verdict::same_symbol);  // holds by type; values still compared
  static_assert(equal_verdict<dyn, dyn>() == verdict::runtime);  // two anonymous dims say nothing
  static_assert(equal_verdict<batch, fix<784>>() == verdict::runtime);
  static_assert(equal_verdict<sym<"b", 1, 64>, fix<784>>() == verdict::never);
  static_assert(broadcast_verdict<fix<1>, fix<5>>() == verdict::always);
  static_assert(broadcast_verdict<fix<2>, fix<5>>() == verdict::never);
  static_assert(broadcast_verdict<sym<"b", 1, 64>, fix<784>>() == verdict::runtime);  // b may be 1
  static_assert(broadcast_verdict<sym<"b", 2, 64>, fix<784>>() == verdict::never);
  static_assert(same<unify_t<batch, fix<3>>, fix<3>>);
  static_assert(same<unify_t<dyn, batch>, batch>);
}

TEST_CASE("_c literals are static extents") {
  using namespace typex::literals;
  static_assert(std::is_same_v<decltype(784_c), fix<784>>);
  const auto d = 2_c * seq(10) + 1_c;
  CHECK(d.get() == 21);
  CHECK(detail::to_string_with([](auto& w) { std::remove_cvref_t<decltype(d)>::write_type(w); }) == "2*seq + 1");
  static_assert(std::is_same_v<decltype(3_c * 4_c), fix<12>>);
}
