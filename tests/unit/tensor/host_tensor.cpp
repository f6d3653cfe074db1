#include "../support.hpp"

#include <cstdint>
#include <sstream>

using namespace typex;
using batch = sym<"batch", 1, 64>;
using X = tensor<f32, batch, fix<3>>;

TEST_CASE("host tensors: zero-filled, aligned, row-major, shared") {
  X x({4, 3}, "input 'x'");
  CHECK(x.numel() == 12);
  CHECK(reinterpret_cast<std::uintptr_t>(x.data()) % TYPEX_CONFIG_ALIGNMENT == 0);
  for (index_t i = 0; i < x.numel(); ++i) CHECK(x.data()[i] == 0.0f);
  x(1, 2) = 5.0f;
  CHECK(x.data()[1 * 3 + 2] == 5.0f);
  const X shared = x;  // shares storage
  shared(0, 0) = 1.0f;
  CHECK(x(0, 0) == 1.0f);
  const X copy = x.clone();
  copy(0, 0) = 2.0f;
  CHECK(x(0, 0) == 1.0f);
  CHECK(x.to_string() == "f32[4, 3]");
  CHECK(X::type_string() == "f32[batch, 3]");
}

TEST_CASE("host tensors validate extents when constructed") {
  CHECK_THROWS_AS(X({65, 3}), constraint_violation);
  CHECK_THROWS_AS(X({4, 2}), shape_error);
  CHECK_THROWS_AS(X({4}), shape_error);
  CHECK(typex_test::message_of<argument_error>([] {
          X x({2, 3});
          (void)x.at(2, 0);
        }) == "typex::host_tensor::at: index 2 is out of range for dim 0 of shape [2, 3]");
}

TEST_CASE("from_values checks the count") {
  const auto t = tensor<i64, fix<2>, fix<2>>::from_values({}, {1, 2, 3, 4});
  CHECK(t(1, 0) == 3);
  CHECK_THROWS_AS((tensor<i64, fix<2>>::from_values({}, {1, 2, 3})), shape_error);
}

TEST_CASE("binding a type-erased tensor checks dtype, rank, extents, symbols") {
  const any_tensor a(dtype::f32, {5, 3});
  a.data<float>()[4] = 9.0f;
  const X x = X::bind(a, "input 'x'");
  CHECK(x(1, 1) == 9.0f);  // same storage
  CHECK(x.erase().raw_data() == a.raw_data());
  CHECK(typex_test::message_of<dtype_error>([] { (void)X::bind(any_tensor(dtype::i64, {5, 3}), "input 'x'"); }) ==
        "typex: input 'x' has dtype i64, but its type tensor<f32[batch, 3]> wants f32");
  CHECK_THROWS_AS((void)X::bind(any_tensor(dtype::f32, {5, 4}), "input 'x'"), shape_error);
  CHECK_THROWS_AS((void)X::bind(any_tensor(dtype::f32, {0, 3}), "input 'x'"), constraint_violation);
  CHECK_THROWS_AS((void)a.data<double>(), dtype_error);
  CHECK_THROWS_AS(any_tensor(dtype::f32, {-1, 3}), argument_error);
  symbol_table t;
  (void)X::bind(a, t, "input 'x'");
  CHECK_THROWS_AS((void)(tensor<f32, batch>::bind(any_tensor(dtype::f32, {6}), t, "input 'm'")), constraint_violation);
}

TEST_CASE("typex values print to streams") {
  std::ostringstream os;
  const X x({2, 3});
  os << x << ' ' << x.shape() << ' ' << x.spec() << ' ' << x.erase() << ' ' << spec_of(std::make_tuple(1, 2.0f));
  CHECK(os.str() == "f32[2, 3] [2, 3] f32[2, 3] f32[2, 3] TreeSpec(tuple, None, [*, *])");
}
