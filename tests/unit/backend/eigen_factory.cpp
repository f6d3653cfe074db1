// Factories (zeros, ones, full, arange and the _like forms): typed results and values made now,
// run-time errors in torch's words, and factories recorded into a graph by device_of(x): symbolic
// sizes keep their symbols, so one program runs every length in range, equal to eager.
#include "../support.hpp"

#include <typex/backend/eigen.hpp>

#include <boost/hana/adapt_struct.hpp>

#include <cmath>
#include <limits>
#include <string>

using namespace typex;
using namespace typex::literals;

TEST_CASE("zeros, ones and full make typed tensors now, with the dtype asked for") {
  const auto z = zeros(shape(2_c, 3_c));
  static_assert(std::is_same_v<decltype(z), const tensor<f32, fix<2>, fix<3>>>);
  for (index_t i = 0; i < z.numel(); ++i) REQUIRE(z.data()[i] == 0.0f);
  const auto o = ones<i64>(shape(4_c));
  static_assert(std::is_same_v<decltype(o), const tensor<i64, fix<4>>>);
  for (index_t i = 0; i < o.numel(); ++i) REQUIRE(o(i) == 1);
  const auto b = ones<b8>(shape(2_c));
  CHECK(b(0));
  CHECK(b(1));

  const auto neg_inf = full(shape(2_c, 2_c), -std::numeric_limits<float>::infinity());
  CHECK(std::isinf(neg_inf(1, 0)));
  CHECK(neg_inf(1, 0) < 0);
  const auto big = full<i64>(shape(3_c), index_t{9007199254740993});  // 2^53 + 1: exact, not through a double
  CHECK(big(2) == 9007199254740993);
  const auto truncated = full<i32>(shape(1_c), 2.75);  // a float into an integer dtype truncates, as torch.full
  CHECK(truncated(0) == 2);

  using batch = sym<"batch", 1, 16>;
  const auto zb = zeros<f64>(shape(batch(5), 2_c));
  static_assert(std::is_same_v<decltype(zb), const tensor<f64, batch, fix<2>>>);
  CHECK(zb.shape().get<0>().get() == 5);
  const auto empty = zeros(shape(0_c, 3_c));
  CHECK(empty.numel() == 0);
}

TEST_CASE("zeros_like, ones_like and full_like keep x's dtype and shape") {
  const auto x = typex_test::random_tensor<tensor<f32, fix<2>, fix<3>>>({2, 3}, 4);
  const auto z = zeros_like(x);
  static_assert(std::is_same_v<decltype(z), const tensor<f32, fix<2>, fix<3>>>);
  CHECK(z(1, 2) == 0.0f);
  CHECK(ones_like(x)(0, 1) == 1.0f);
  CHECK(full_like(x, 0.5)(1, 1) == 0.5f);
  tensor<i64, fix<3>> k;
  CHECK(full_like(k, 7)(2) == 7);
}

TEST_CASE("arange: dims give typed lengths, numbers a run-time length, torch's values and errors") {
  const auto a = arange(5_c);
  static_assert(std::is_same_v<decltype(a), const tensor<i64, fix<5>>>);
  for (index_t i = 0; i < 5; ++i) REQUIRE(a(i) == i);
  const auto odd = arange(1_c, 8_c, 2_c);  // 1 3 5 7
  static_assert(std::is_same_v<decltype(odd), const tensor<i64, fix<4>>>);
  CHECK(odd(3) == 7);

  using seq = sym<"seq", 1, 64>;
  const auto s = arange<f32>(seq(6));
  static_assert(std::is_same_v<decltype(s), const tensor<f32, seq>>);
  CHECK(s(5) == 5.0f);
  const auto tail = arange(2_c, seq(6));  // [2, seq): seq - 2 values
  CHECK(tail.numel() == 4);
  CHECK(tail(0) == 2);

  const auto n = arange(0, 10, 3);  // 0 3 6 9
  static_assert(std::is_same_v<decltype(n), const tensor<i64, dyn>>);
  REQUIRE(n.numel() == 4);
  CHECK(n(3) == 9);
  const auto down = arange(10, 0, -3);  // 10 7 4 1
  REQUIRE(down.numel() == 4);
  CHECK(down(3) == 1);
  const auto r = arange(0.0, 1.0, 0.25);  // floating bounds: f32, as torch's default dtype
  static_assert(std::is_same_v<decltype(r), const tensor<f32, dyn>>);
  REQUIRE(r.numel() == 4);
  CHECK(r(3) == 0.75f);
  CHECK(arange(3, 3).numel() == 0);

  CHECK_THROWS_WITH_AS((void)arange(0, 5, 0), doctest::Contains("step must be nonzero"), argument_error);
  CHECK_THROWS_WITH_AS((void)arange(5, 0), doctest::Contains("inconsistent with the step's sign"), argument_error);
  CHECK_THROWS_WITH_AS((void)arange(0.0, std::numeric_limits<double>::infinity()), doctest::Contains("finite"), argument_error);
  CHECK_THROWS_AS((void)arange(seq(6), seq(3)), argument_error);
}

namespace factory_models {
using seq = sym<"seq", 1, 64>;
// Positions and constants made inside the traced function, following the input's seq.
struct positional {
  template <class X>
  auto operator()(const X& x) const {
    const auto s = x.shape().template get<1>();
    const auto pos = to<f32>(arange(s, device_of(x)));                        // [seq]
    const auto scale = full(shape(s, 4_c), 0.5, device_of(x));                 // [seq, 4]
    const auto base = zeros(shape(2_c, s, 4_c), device_of(x)) + ones_like(x);  // [2, seq, 4] of ones
    const auto steps = to<f32>(arange(0_c, 8_c, 2_c, device_of(x)));          // [4]: 0 2 4 6
    return x + unsqueeze<1>(pos) * scale + base + steps;
  }
};
// The input's middle dim is anonymous: nothing would tell the graph which input a size follows.
struct anonymous {
  template <class X>
  auto operator()(const X& x) const {
    return x + zeros(shape(x.shape().template get<0>(), 4_c), device_of(x));
  }
};
// arange with number bounds: a run-time length, which later ops could not follow in a graph.
struct number_arange {
  template <class X>
  auto operator()(const X& x) const {
    return x + to<f32>(arange(0, 3, 1, device_of(x)));
  }
};
// Made without a device: a constant of the program (lifted), sized at trace time.
struct constant_made_now {
  template <class X>
  auto operator()(const X& x) const {
    return x + ones(shape(3_c));
  }
};
}  // namespace factory_models
BOOST_HANA_ADAPT_STRUCT(factory_models::positional);
BOOST_HANA_ADAPT_STRUCT(factory_models::anonymous);
BOOST_HANA_ADAPT_STRUCT(factory_models::constant_made_now);
BOOST_HANA_ADAPT_STRUCT(factory_models::number_arange);

TEST_CASE("factories recorded with device_of(x) follow x's symbols: one program for every length") {
  using seq = factory_models::seq;
  factory_models::positional m;
  using in_t = shape<fix<2>, seq, fix<4>>;
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, in_t>(in_t({}, seq(5), {}))));
  const std::string text = ep.to_string();
  CHECK_MESSAGE(text.find("aten.arange.default(seq, torch.int64)") != std::string::npos, text);
  CHECK_MESSAGE(text.find("aten.full.default([seq, 4], 0.5, torch.float32)") != std::string::npos, text);
  CHECK_MESSAGE(text.find("aten.zeros.default([2, seq, 4], torch.float32)") != std::string::npos, text);
  CHECK_MESSAGE(text.find("aten.ones_like.default(x)") != std::string::npos, text);
  CHECK_MESSAGE(text.find("aten.arange.start_step(0, 8, 2, torch.int64)") != std::string::npos, text);
  auto run = program_module<eigen_backend>(ep);
  for (index_t s : {5, 1, 9}) {
    const auto x = typex_test::random_tensor<tensor<f32, fix<2>, seq, fix<4>>>({2, s, 4}, std::uint64_t(s));
    const auto eager = m(x).erase();
    const auto out = run({x.erase()});
    REQUIRE(out[0].extents() == eager.extents());
    for (index_t i = 0; i < eager.numel(); ++i) REQUIRE(out[0].template data<float>()[i] == eager.template data<float>()[i]);
    // x + pos * 0.5 + 1 + step, written out at one element
    CHECK(eager.template data<float>()[((1 * s) + (s - 1)) * 4 + 3] ==
          doctest::Approx(x(1, s - 1, 3) + float(s - 1) * 0.5f + 1.0f + 6.0f));
  }
}

TEST_CASE("a factory sized by an anonymous dim, or arange with number bounds, is refused while tracing, with the fix") {
  factory_models::anonymous m;
  using in_t = shape<dyn, fix<4>>;
  CHECK_THROWS_WITH_AS((void)export_program(m, input<"x">(tensor_spec<f32, in_t>(in_t(dyn(3), {})))),
                       doctest::Contains("declare that input dim as a named symbolic dim"), argument_error);
  // eagerly it is just a size
  tensor<f32, dyn, fix<4>> x({3, 4});
  CHECK(m(x).numel() == 12);

  factory_models::number_arange a;
  using in3 = shape_c<2, 3>;
  CHECK_THROWS_WITH_AS((void)export_program(a, input<"x">(tensor_spec<f32, in3>(in3{}))),
                       doctest::Contains("pass the bounds as static dims (0_c, 8_c, 2_c) or symbolic ones"), argument_error);
  tensor<f32, fix<2>, fix<3>> y;
  CHECK(a(y)(1, 2) == 2.0f);  // eagerly: 0 1 2
}

TEST_CASE("a factory without a device inside a traced function is a constant of the program") {
  factory_models::constant_made_now m;
  using in_t = shape_c<2, 3>;
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, in_t>(in_t{})));
  CHECK(ep.to_string().find("aten.ones") == std::string::npos);
  CHECK(ep.signature().to_string().find("lifted_tensor_0") != std::string::npos);
  auto run = program_module<eigen_backend>(ep);
  const auto x = typex_test::random_tensor<tensor<f32, fix<2>, fix<3>>>({2, 3}, 1);
  CHECK(run({x.erase()})[0].template data<float>()[4] == x(1, 1) + 1.0f);
}
