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

namespace eager_test {
struct activations {
  nn::ReLU6 relu6;
  nn::Hardtanh hardtanh;
  nn::LeakyReLU leaky{.negative_slope = 0.2};
  nn::Softplus softplus;
  nn::LeakyReLU leaky_default;
  nn::ELU elu;
  nn::Identity identity;
  template <class X>
  auto operator()(const X& x) const {
    return identity(elu(leaky_default(softplus(leaky(hardtanh(relu6(x)))))));
  }
};
}  // namespace eager_test
BOOST_HANA_ADAPT_STRUCT(eager_test::activations, relu6, hardtanh, leaky, softplus, leaky_default, elu, identity);

TEST_CASE("eager activation modules: ReLU6, Hardtanh, LeakyReLU, ELU, Hardswish, Hardsigmoid, Mish, Softplus, Softmax, Identity") {
  const tensor<f32, fix<2>, fix<4>> x({2, 4});
  const float v[] = {-4.0f, -1.5f, -0.25f, 0.0f, 0.5f, 2.0f, 3.5f, 7.0f};
  for (index_t i = 0; i < 8; ++i) x.data()[i] = v[i];
  // each module against its scalar formula, element by element
  const auto check = [&](const char* name, const auto& y, auto formula) {
    static_assert(std::is_same_v<typename std::remove_cvref_t<decltype(y)>::shape_type, shape_c<2, 4>>);
    for (index_t i = 0; i < 8; ++i) {
      INFO(name << " at x = " << v[i]);
      CHECK(y.data()[i] == doctest::Approx(formula(static_cast<double>(v[i]))).epsilon(1e-5));
    }
  };
  const auto clamp_to = [](double t, double lo, double hi) { return std::min(std::max(t, lo), hi); };
  check("ReLU6", nn::ReLU6{}(x), [&](double t) { return clamp_to(t, 0, 6); });
  check("Hardtanh", nn::Hardtanh{}(x), [&](double t) { return clamp_to(t, -1, 1); });
  check("Hardtanh(-2, 3)", nn::Hardtanh{.min_val = -2.0, .max_val = 3.0}(x), [&](double t) { return clamp_to(t, -2, 3); });
  check("LeakyReLU", nn::LeakyReLU{}(x), [](double t) { return t > 0 ? t : 0.01 * t; });
  check("LeakyReLU(0.2)", nn::LeakyReLU{.negative_slope = 0.2}(x), [](double t) { return t > 0 ? t : 0.2 * t; });
  check("ELU", nn::ELU{}(x), [](double t) { return t > 0 ? t : std::expm1(t); });
  check("ELU(0.5)", nn::ELU{.alpha = 0.5}(x), [](double t) { return t > 0 ? t : 0.5 * std::expm1(t); });
  check("Hardswish", nn::Hardswish{}(x), [&](double t) { return t * clamp_to(t + 3, 0, 6) / 6; });
  check("Hardsigmoid", nn::Hardsigmoid{}(x), [&](double t) { return clamp_to(t + 3, 0, 6) / 6; });
  check("Mish", nn::Mish{}(x), [](double t) { return t * std::tanh(std::log1p(std::exp(t))); });
  check("Softplus", nn::Softplus{}(x), [](double t) { return std::log1p(std::exp(t)); });
  // beta 2, threshold 4: x itself where 2x > 4 (3.5 and 7), not at 2x == 4 (2.0)
  check("Softplus(2, 4)", nn::Softplus{.beta = 2.0, .threshold = 4.0}(x),
        [](double t) { return 2 * t > 4 ? t : std::log1p(std::exp(2 * t)) / 2; });
  const auto id = nn::Identity{}(x);
  static_assert(std::is_same_v<decltype(id), const tensor<f32, fix<2>, fix<4>>>);
  check("Identity", id, [](double t) { return t; });
  const auto sm = nn::Softmax<1>{}(x);
  const auto lsm = nn::LogSoftmax<-1>{}(x);
  for (index_t r = 0; r < 2; ++r) {
    double z = 0;
    for (index_t c = 0; c < 4; ++c) z += std::exp(static_cast<double>(v[r * 4 + c]));
    for (index_t c = 0; c < 4; ++c) {
      CHECK(sm(r, c) == doctest::Approx(std::exp(static_cast<double>(v[r * 4 + c])) / z).epsilon(1e-5));
      CHECK(lsm(r, c) == doctest::Approx(static_cast<double>(v[r * 4 + c]) - std::log(z)).epsilon(1e-5));
    }
  }
  // the ops record as torch.export records them: relu6 as hardtanh(x, 0.0, 6.0); hardtanh's and
  // softplus's float arguments always, elu's alpha always, leaky_relu's slope only when not its default
  const std::string printed = export_program(eager_test::activations{}, input<"x">(x.spec())).to_string();
  CHECK(printed.find("torch.ops.aten.hardtanh.default(x, 0.0, 6.0)") != std::string::npos);
  CHECK(printed.find("torch.ops.aten.hardtanh.default(hardtanh, -1.0, 1.0)") != std::string::npos);
  CHECK(printed.find("torch.ops.aten.leaky_relu.default(hardtanh_1, 0.2)") != std::string::npos);
  CHECK(printed.find("torch.ops.aten.softplus.default(leaky_relu, 1.0, 20.0)") != std::string::npos);
  CHECK(printed.find("torch.ops.aten.leaky_relu.default(softplus)") != std::string::npos);
  CHECK(printed.find("torch.ops.aten.elu.default(leaky_relu_1, 1.0)") != std::string::npos);
  CHECK(printed.find("return (elu,)") != std::string::npos);  // (Identity records nothing)
}
