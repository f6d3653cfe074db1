#include "../support.hpp"

using namespace typex;
using batch = sym<"batch", 1, 64>;

TEST_CASE("static dims take no space in a shape") {
  static_assert(sizeof(shape<batch, fix<784>>) == sizeof(index_t));
  static_assert(std::is_empty_v<shape_c<2, 3, 4>>);
  static_assert(shape_c<2, 3, 4>::is_static && !shape<batch>::is_static);
  static_assert(static_numel_v<shape_c<2, 3, 4>> == 24);
  static_assert(shape<>{}.numel() == 1);
}

TEST_CASE("shapes print their type and their values") {
  const shape<batch, fix<784>> s(batch(32), {});
  CHECK(s.to_string() == "[32, 784]");
  CHECK(decltype(s)::type_string() == "[batch, 784]");
  CHECK(shape<dyn, dim_mul_t<fix<2>, batch>>::type_string() == "[?, 2*batch]");
  CHECK(s.extent(0) == 32);
  CHECK(s.numel() == 32 * 784);
  CHECK(s == shape_c<32, 784>{});
  CHECK_FALSE(s == shape_c<31, 784>{});
}

TEST_CASE("make_shape validates rank, static extents and ranges, naming the input") {
  using S = shape<batch, fix<784>>;
  CHECK(make_shape<S>({7, 784}).extent(0) == 7);
  CHECK(typex_test::message_of<shape_error>([] { (void)make_shape<S>({7}, "input 'x'"); }) ==
        "typex: input 'x' has rank 1, but its type [batch, 784] has rank 2");
  CHECK(typex_test::message_of<shape_error>([] { (void)make_shape<S>({7, 783}, "input 'x'"); }) ==
        "typex: input 'x' has shape [7, 783], which does not fit its type [batch, 784] at dim 1: expected 784, got 783");
  CHECK(typex_test::message_of<constraint_violation>([] { (void)make_shape<S>({65, 784}, "input 'x'"); }) ==
        "typex: input 'x' has shape [65, 784], which does not fit its type [batch, 784] at dim 0: symbolic dim "
        "'batch' was given 65, outside its declared range [1, 64]");
  CHECK_THROWS_AS((void)make_shape<shape<dyn>>({-1}), shape_error);
}

TEST_CASE("free-function access for generic code: typex::get<I>(shape), typex::size<I>(x), dims compare with integers") {
  const shape<batch, fix<784>> s(batch(8), {});
  static_assert(std::is_same_v<decltype(typex::get<1>(s)), fix<784>>);
  static_assert(std::is_same_v<decltype(typex::get<-1>(s)), fix<784>>);
  CHECK(typex::get<0>(s) == 8);
  CHECK(8 == typex::get<0>(s));  // (C++20 rewrites it)
  CHECK(typex::get<-2>(s) != 9);
  CHECK(typex::get<1>(s) == 784);
  const tensor_spec<f32, shape<batch, fix<784>>> x(s);
  CHECK(typex::size<0>(x) == 8);
  static_assert(typex::size<1>(tensor_spec<f32, shape<batch, fix<784>>>{}) == 784);
  static_assert(dyn(5) == 5 && !(dyn(5) == 6));
}
