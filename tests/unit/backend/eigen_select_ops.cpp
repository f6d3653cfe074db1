// The selection, joining and logical ops (indexing.hpp, concat.hpp, the logical and cast ops of
// unary.hpp / binary.hpp, expand / select / squeeze of shape_ops.hpp): their typed results, eager
// values against the definitions, what tracing records, a program using them all equal to eager
// (tolerance 0) with its planned steps, and the run-time errors.
#include "../support.hpp"

#include <typex/backend/eigen.hpp>

#include <boost/hana/adapt_struct.hpp>

#include <limits>

using namespace typex;
using namespace typex::literals;

namespace {
template <class T>
T iota(double start = 0.0, double step = 1.0) {
  T t;
  for (index_t i = 0; i < t.numel(); ++i) t.data()[i] = static_cast<typename T::value_type>(start + step * static_cast<double>(i));
  return t;
}
}  // namespace

TEST_CASE("logical ops, pow of two tensors, casts") {
  const auto x = iota<tensor<f32, fix<2>, fix<3>>>(-2.0);  // [[-2,-1,0],[1,2,3]]
  const auto pos = x > 0.0;
  const auto neg = x < 0.0;
  static_assert(std::is_same_v<decltype(pos)::dtype_type, b8>);
  const auto both = logical_or(pos, neg);  // nonzero
  CHECK(!both(0, 2));
  CHECK(both(1, 0));
  CHECK(logical_and(pos, x)(1, 2));  // a float operand: nonzero is true
  CHECK(!logical_and(pos, neg)(1, 2));
  CHECK(logical_xor(pos, neg)(0, 0));
  const auto n = logical_not(x);
  static_assert(std::is_same_v<decltype(n)::dtype_type, b8>);
  CHECK(n(0, 2));
  CHECK(!n(0, 0));

  const auto base = iota<tensor<i64, fix<4>>>(-1.0);  // [-1, 0, 1, 2]
  const auto e = iota<tensor<i64, fix<4>>>(3.0);      // [3, 4, 5, 6]
  const auto p = pow(base, e);
  static_assert(std::is_same_v<decltype(p)::dtype_type, i64>);
  CHECK(p(0) == -1);
  CHECK(p(1) == 0);
  CHECK(p(3) == 64);
  const auto fp = pow(x, iota<tensor<f32, fix<3>>>(2.0));  // [[(-2)^2, (-1)^3, 0^4], [1, 2^3, 3^4]]
  CHECK(fp(0, 1) == -1.0f);
  CHECK(fp(1, 2) == 81.0f);

  const auto t = iota<tensor<f32, fix<4>>>(-1.75, 1.5);  // [-1.75, -0.25, 1.25, 2.75]
  const auto i = to<i64>(t);
  static_assert(std::is_same_v<decltype(i), const tensor<i64, fix<4>>>);
  CHECK(i(0) == -1);  // toward zero
  CHECK(i(3) == 2);
  CHECK(to<f64>(t)(2) == 1.25);
  CHECK(to<b8>(t)(1));
  const auto nan = tensor<f32, fix<1>>::from_values({}, {std::numeric_limits<float>::quiet_NaN()});
  CHECK(to<i64>(nan)(0) == std::numeric_limits<std::int64_t>::min());  // defined, as x86 PyTorch
}

TEST_CASE("where, masked_fill, tril / triu") {
  const auto x = iota<tensor<f32, fix<2>, fix<3>>>(-2.0);
  const auto y = iota<tensor<i64, fix<3>>>(10.0);  // [10, 11, 12], broadcast, promoted to f32
  const auto w = where(x > 0.0, x, y);
  static_assert(std::is_same_v<decltype(w), const tensor<f32, fix<2>, fix<3>>>);
  CHECK(w(0, 0) == 10.0f);
  CHECK(w(0, 2) == 12.0f);
  CHECK(w(1, 1) == 2.0f);

  const auto mask = tensor<b8, fix<1>, fix<3>>::from_values({}, {true, false, true});
  const auto m = masked_fill(x, mask, -100.0);
  CHECK(m(0, 0) == -100.0f);
  CHECK(m(1, 1) == 2.0f);
  CHECK(m(1, 2) == -100.0f);

  const auto sq = iota<tensor<f32, fix<3>, fix<4>>>(1.0);  // 1..12
  const auto lo = tril(sq);
  CHECK(lo(0, 0) == 1.0f);
  CHECK(lo(0, 1) == 0.0f);
  CHECK(lo(2, 2) == 11.0f);
  CHECK(lo(2, 3) == 0.0f);
  const auto up = triu(sq, 1);
  CHECK(up(0, 0) == 0.0f);
  CHECK(up(0, 1) == 2.0f);
  CHECK(up(1, 1) == 0.0f);
  CHECK(up(1, 2) == 7.0f);
  CHECK(tril(sq, -1)(1, 0) == 5.0f);
  CHECK(tril(sq, -1)(1, 1) == 0.0f);
}

TEST_CASE("select, squeeze, expand, index_select, gather") {
  const auto x = iota<tensor<f32, fix<2>, fix<3>, fix<4>>>();
  const auto s = select<1>(x, -1);
  static_assert(std::is_same_v<decltype(s), const tensor<f32, fix<2>, fix<4>>>);
  CHECK(s(1, 3) == x(1, 2, 3));
  CHECK_THROWS_AS((void)select<1>(x, 3), argument_error);

  const auto col = iota<tensor<f32, fix<3>, fix<1>>>(1.0);
  const auto sq = squeeze<1>(col);
  static_assert(std::is_same_v<decltype(sq)::shape_type, shape_c<3>>);
  CHECK(sq(2) == 3.0f);
  const auto ex = expand(col, reshape_to(2_c, 3_c, 5_c));
  static_assert(std::is_same_v<decltype(ex)::shape_type, shape_c<2, 3, 5>>);
  CHECK(ex(1, 2, 4) == 3.0f);
  CHECK(ex(0, 0, 3) == 1.0f);

  const auto idx = tensor<i64, fix<3>>::from_values({}, {2, 0, 2});
  const auto rows = index_select<1>(x, idx);
  static_assert(std::is_same_v<decltype(rows)::shape_type, shape_c<2, 3, 4>>);
  CHECK(rows(1, 0, 3) == x(1, 2, 3));
  CHECK(rows(1, 1, 3) == x(1, 0, 3));
  const auto bad = tensor<i64, fix<1>>::from_values({}, {3});
  CHECK_THROWS_WITH_AS((void)index_select<1>(x, bad), "aten.index_select.default: index 3 is out of range for dim 1 of extent 3",
                       argument_error);

  const auto m = iota<tensor<f32, fix<2>, fix<3>>>(1.0);             // [[1,2,3],[4,5,6]]
  const auto gi = tensor<i64, fix<2>, fix<2>>::from_values({}, {2, 0, 1, 1});  // per row: picks along dim 1
  const auto g = gather<1>(m, gi);
  CHECK(g(0, 0) == 3.0f);
  CHECK(g(0, 1) == 1.0f);
  CHECK(g(1, 0) == 5.0f);
  const auto gbad = tensor<i64, fix<2>, fix<2>>::from_values({}, {0, 0, 0, -1});
  CHECK_THROWS_AS((void)gather<1>(m, gbad), argument_error);
}

TEST_CASE("cat, stack, split, chunk") {
  const auto a = iota<tensor<f32, fix<2>, fix<3>>>();
  const auto b = iota<tensor<f32, fix<2>, fix<1>>>(100.0);
  const auto c = cat<1>(tensors(a, b, a));
  static_assert(std::is_same_v<decltype(c), const tensor<f32, fix<2>, fix<7>>>);
  CHECK(c(1, 2) == a(1, 2));
  CHECK(c(1, 3) == b(1, 0));
  CHECK(c(1, 6) == a(1, 2));
  const auto d = cat<0>(tensors(a, to<f64>(a)));  // promotes
  static_assert(std::is_same_v<decltype(d), const tensor<f64, fix<4>, fix<3>>>);
  CHECK(d(3, 1) == a(1, 1));

  const auto st = stack<1>(tensors(a, a * 2.0));
  static_assert(std::is_same_v<decltype(st)::shape_type, shape_c<2, 2, 3>>);
  CHECK(st(1, 1, 2) == 2 * a(1, 2));
  CHECK(st(1, 0, 2) == a(1, 2));

  const auto x = iota<tensor<f32, fix<7>, fix<2>>>();
  const auto [p0, p1, p2, p3] = split<0, 2>(x);
  static_assert(std::is_same_v<decltype(p3)::shape_type, shape_c<1, 2>>);
  CHECK(p1(0, 1) == x(2, 1));
  CHECK(p3(0, 0) == x(6, 0));
  const auto pieces = chunk<0, 3>(x);  // torch.chunk: ceil(7 / 3) = 3 rows each, the last 1
  static_assert(std::tuple_size_v<decltype(pieces)> == 3);
  CHECK(std::get<2>(pieces).extents()[0] == 1);
  CHECK(std::get<1>(pieces)(2, 1) == x(5, 1));

  using batch = sym<"batch", 1, 64>;
  const tensor<f32, batch, fix<3>> u({2, 3});
  const tensor<f32, batch, fix<3>> v({3, 3});
  CHECK_THROWS_AS((void)cat<1>(tensors(u, v)), shape_error);  // the symbol bound to 2 and 3
}

namespace select_models {
using batch = sym<"batch", 1, 64>;
// Every new op in one small model, with a constant (a buffer) joined to the input.
struct mixer {
  buffer<f32, fix<1>, fix<4>> extra;
  template <class X>
  auto operator()(const X& x) const {
    const auto wide = cat<0>(tensors(x, expand(as_traced(extra, x), reshape_to(2_c, 4_c))));  // [b + 2, 4]
    const auto mask = logical_and(wide > 0.0, logical_not(wide > 1.0));
    const auto picked = where(mask, wide, wide * 0.5);
    const auto tri = tril(reshape(picked, reshape_to(infer, 2_c, 2_c)));
    const auto first = select<2>(tri, 0);                                        // [2b + 4, 2]
    const auto stacked = stack<0>(tensors(first, masked_fill(first, first < 0.0, 0.0)));  // [2, 2b + 4, 2]
    const auto idx = to<i64>(gt(select<0>(select<2>(stacked, 1), 0), 0.0));      // rows 0 / 1, per row
    const auto g = index_select<0>(squeeze<0>(slice<0, 0, 1>(stacked)), idx);
    return g;
  }
};
}  // namespace select_models
BOOST_HANA_ADAPT_STRUCT(select_models::mixer, extra);

TEST_CASE("a program of the selection ops equals eager, re-plans per batch, and names its eager-kernel steps") {
  using batch = select_models::batch;
  select_models::mixer m;
  for (index_t i = 0; i < 4; ++i) m.extra.data()[i] = 0.5f * static_cast<float>(i) - 0.5f;
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, shape<batch, fix<4>>>(shape<batch, fix<4>>(batch(3), {}))));
  const std::string g = ep.to_string();
  for (const char* target : {"aten.cat.default", "aten.expand.default", "aten.logical_and.default", "aten.logical_not.default",
                             "aten.where.self", "aten.tril.default", "aten.select.int", "aten.stack.default",
                             "aten.masked_fill.Scalar", "aten._to_copy.default", "aten.squeeze.dim", "aten.index_select.default"})
    CHECK_MESSAGE(g.find(target) != std::string::npos, target << " not recorded in\n" << g);
  CHECK(g.find("aten.cat.default([x, expand], 0)") != std::string::npos);  // a list argument, printed as torch.fx does
  auto run = program_module<eigen_backend>(ep);
  for (index_t b : {3, 1, 5}) {
    const auto x = typex_test::random_tensor<tensor<f32, batch, fix<4>>>({b, 4}, std::uint64_t(b));
    const auto eager = m(x).erase();
    const auto out = run({x.erase()});
    REQUIRE(out[0].extents() == eager.extents());
    for (index_t i = 0; i < eager.numel(); ++i) CHECK(out[0].template data<float>()[i] == eager.template data<float>()[i]);
  }
  const auto r = run.report();
  CHECK(r.folded >= 1);  // the expanded buffer
  CHECK(std::find(r.allocating_ops.begin(), r.allocating_ops.end(), "aten.cat.default") != r.allocating_ops.end());
}
