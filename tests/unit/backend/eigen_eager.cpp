// Tests for typex/backend/eigen/eager.hpp: ops on host tensors compute now.
#include "../support.hpp"

#include <typex/backend/eigen.hpp>

#include <boost/hana/adapt_struct.hpp>

using namespace typex;

namespace {
template <class T>
T iota(float start = 0.0f, float step = 1.0f) {
  T t;
  for (index_t i = 0; i < t.numel(); ++i) t.data()[i] = static_cast<typename T::value_type>(start + step * i);
  return t;
}
}  // namespace

TEST_CASE("eager pointwise ops: unary, binary with broadcasting, scalars, promotion") {
  const auto x = iota<tensor<f32, fix<2>, fix<3>>>(-2.0f);  // [[-2,-1,0],[1,2,3]]
  const auto r = relu(x);
  static_assert(std::is_same_v<decltype(r), const tensor<f32, fix<2>, fix<3>>>);
  CHECK(r(0, 0) == 0.0f);
  CHECK(r(1, 2) == 3.0f);
  CHECK(neg(x)(0, 1) == 1.0f);

  const auto row = iota<tensor<f32, fix<3>>>(10.0f, 10.0f);  // [10, 20, 30]
  const auto s = x + row;                                     // broadcast over rows
  CHECK(s(0, 0) == 8.0f);
  CHECK(s(1, 2) == 33.0f);
  const auto col = iota<tensor<f32, fix<2>, fix<1>>>(100.0f, 100.0f);  // [[100],[200]]
  const auto t = col * x;
  static_assert(std::is_same_v<decltype(t)::shape_type, shape_c<2, 3>>);
  CHECK(t(1, 2) == 600.0f);
  CHECK((x - 1.5)(1, 0) == doctest::Approx(-0.5));
  CHECK((2.0f / row)(0) == doctest::Approx(0.2));

  const auto i = iota<tensor<i32, fix<3>>>(1.0f);  // i32 [1, 2, 3]
  const auto p = i + row;                         // i32 + f32 -> f32
  static_assert(std::is_same_v<decltype(p)::dtype_type, f32>);
  CHECK(p(2) == 33.0f);
  const auto q = i * 0.5;  // an integer tensor times a float scalar: f32, as PyTorch's default dtype
  static_assert(std::is_same_v<decltype(q)::dtype_type, f32>);
  CHECK(q(1) == 1.0f);
  const auto half = i / (i + i);  // integers true-divide to f32, as torch's div
  static_assert(std::is_same_v<decltype(half)::dtype_type, f32>);
  CHECK(half(2) == 0.5f);
  CHECK((i / 2)(0) == 0.5f);
  const auto h = relu(iota<tensor<f16, fix<2>>>(-1.0f, 2.0f));  // f16 computes in f32
  CHECK(static_cast<float>(h(1)) == 1.0f);
}

TEST_CASE("eager broadcasting with a symbolic dim, and its run-time check") {
  using batch = sym<"batch", 1, 64>;
  const tensor<f32, batch, fix<3>> x({4, 3});
  x.fill(1.0f);
  const tensor<f32, batch, fix<1>> y({4, 1});
  y.fill(2.0f);
  CHECK((x * y)(3, 2) == 2.0f);
  const tensor<f32, batch, fix<1>> wrong({5, 1});
  CHECK_THROWS_AS((void)(x * wrong), shape_error);
}

TEST_CASE("eager linear matches the definition") {
  using batch = sym<"batch", 1, 64>;
  const auto w = iota<tensor<f32, fix<4>, fix<3>>>(0.0f, 0.1f);
  const auto b = iota<tensor<f32, fix<4>>>(1.0f);
  tensor<f32, batch, fix<3>> x({2, 3});
  for (index_t i = 0; i < x.numel(); ++i) x.data()[i] = static_cast<float>(i) - 2.0f;
  const auto y = linear(x, w, b);
  static_assert(std::is_same_v<decltype(y)::shape_type, shape<batch, fix<4>>>);
  for (int m = 0; m < 2; ++m)
    for (int o = 0; o < 4; ++o) {
      float want = b(o);
      for (int i = 0; i < 3; ++i) want += x(m, i) * w(o, i);
      CHECK(y(m, o) == doctest::Approx(want));
    }
  CHECK(linear(x, w)(1, 3) == doctest::Approx(y(1, 3) - b(3)));
}

namespace eager_test {
struct block {
  parameter<f32, fix<3>, fix<2>> weight;
  parameter<f32, fix<3>> bias;
  buffer<f32, fix<3>> shift;
  template <class X>
  auto operator()(const X& x) const {
    const module_scope scope(*this);
    return relu(linear(x, weight, bias)) - shift;
  }
};
}  // namespace eager_test
BOOST_HANA_ADAPT_STRUCT(eager_test::block, weight, bias, shift);

TEST_CASE("the same functor runs eagerly on tensors and traced on specs") {
  eager_test::block m;
  init_module(m, 3);
  m.shift.fill(0.25f);
  tensor<f32, fix<2>, fix<2>> x;
  x(0, 0) = 1.0f;
  x(1, 1) = -1.0f;
  const auto y = m(x);  // eager
  static_assert(std::is_same_v<decltype(y)::shape_type, shape_c<2, 3>>);
  for (int r = 0; r < 2; ++r)
    for (int o = 0; o < 3; ++o) {
      float z = m.bias(o) + x(r, 0) * m.weight(o, 0) + x(r, 1) * m.weight(o, 1);
      CHECK(y(r, o) == doctest::Approx((z > 0 ? z : 0.0f) - 0.25f));
    }
  const exported_program ep = export_program(m, input<"x">(x.spec()));  // traced
  CHECK(ep.signature().buffers() == std::vector<std::string>{"shift"});
  CHECK(ep.graph().size() == 8);  // 4 placeholders, linear, relu, sub, output
}

TEST_CASE("eager reductions: shapes and dtypes by the rule, values by the definition") {
  const auto x = iota<tensor<f32, fix<2>, fix<3>>>();  // [[0,1,2],[3,4,5]]
  const auto s = sum<1>(x);
  static_assert(std::is_same_v<decltype(s), const tensor<f32, fix<2>>>);
  CHECK(s(0) == 3.0f);
  CHECK(s(1) == 12.0f);
  const auto all = sum(x);  // every dim
  static_assert(decltype(all)::shape_type::rank == 0);
  CHECK(all.data()[0] == 15.0f);
  const auto m = mean<0>(x, keepdim);
  static_assert(std::is_same_v<decltype(m)::shape_type, shape_c<1, 3>>);
  CHECK(m(0, 2) == 3.5f);
  CHECK(amax<-1>(x)(1) == 5.0f);
  CHECK(amin<0>(x)(2) == 2.0f);
  const auto am = argmax<1>(x);
  static_assert(std::is_same_v<decltype(am)::dtype_type, i64>);
  CHECK(am(0) == 2);
  CHECK(var<1>(x)(0) == doctest::Approx(1.0));         // unbiased: ((1)+(0)+(1)) / 2
  CHECK(var<1>(x, 0.0)(0) == doctest::Approx(2.0 / 3));  // population
  CHECK(stddev<1>(x, 1.0, keepdim)(1, 0) == doctest::Approx(1.0));
  CHECK(logsumexp<1>(x)(0) == doctest::Approx(std::log(std::exp(0.0) + std::exp(1.0) + std::exp(2.0))));
  const auto counts = sum<0>(gt(x, 1.5));  // bools sum to i64 counts
  static_assert(std::is_same_v<decltype(counts)::dtype_type, i64>);
  CHECK(counts(0) == 1);
  CHECK(counts(2) == 2);
}

TEST_CASE("eager pow, clamp and the new unary ops") {
  const auto x = iota<tensor<f32, fix<4>>>(-1.5f);  // [-1.5, -0.5, 0.5, 1.5]
  CHECK(pow(x, 2.0)(0) == 2.25f);
  const auto c = clamp(x, -1.0, std::nullopt);
  CHECK(c(0) == -1.0f);
  CHECK(c(3) == 1.5f);
  CHECK_THROWS_AS((void)clamp(x, std::nullopt, std::nullopt), argument_error);
  CHECK(sin(x)(2) == doctest::Approx(std::sin(0.5)));
  CHECK(cos(x)(2) == doctest::Approx(std::cos(0.5)));
  CHECK(erf(x)(3) == doctest::Approx(std::erf(1.5)));
  CHECK(log1p(abs(x))(1) == doctest::Approx(std::log1p(0.5)));
  CHECK(reciprocal(x)(1) == -2.0f);
}
