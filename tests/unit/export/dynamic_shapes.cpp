// Dynamic shapes at export: the facts a program needs about its symbolic dims are decided against
// the declared ranges (implied / a violation proposing the corrected declaration / a run-time
// assertion when asked for); inputs sharing a symbol, derived dims, out-of-range inputs; seq
// dynamic through causal attention; one program for every shape in range.
#include "../support.hpp"
#include "round_trip.hpp"

#include <typex/backend/eigen.hpp>

#include <cmath>
#include <regex>

using namespace typex;
using namespace typex::literals;

namespace dyn_models {
using batch = sym<"batch", 1, 1024>;
using seq = sym<"seq", 1, 512>;

// x: [8, batch] @ w: [4, 3] — works only when batch == 4.
struct specializes {
  parameter<f32, fix<4>, fix<3>> w;
  template <class X>
  auto operator()(const X& x) const {
    return matmul(x, w);
  }
};

// A 7x7 convolution needs h >= 7 and w >= 7; the input declares [1, 64].
struct big_kernel {
  nn::Conv2d<1, 2, 7> conv;
  template <class X>
  auto operator()(const X& x) const {
    return conv(x);
  }
};

// [seq, 8] regrouped into rows of 32: needs seq*8 % 32 == 0, i.e. seq a multiple of 4.
struct regroup {
  template <class X>
  auto operator()(const X& x) const {
    return relu(reshape(x, reshape_to(infer, 32_c)));
  }
};

// flatten([a, b]) @ y: [c, 3] — needs a*b == c.
struct product {
  template <class X, class Y>
  auto operator()(const X& x, const Y& y) const {
    return matmul(flatten<0, -1>(x), y);
  }
};

// x: [n, k1] @ y: [k2, 3] — needs k1 == k2.
struct two_symbols {
  template <class X, class Y>
  auto operator()(const X& x, const Y& y) const {
    return matmul(x, y);
  }
};

struct add_inputs {
  template <class X, class Y>
  auto operator()(const X& x, const Y& y) const {
    return add(x, y);
  }
};

// x: [seq, 4], y: [2*seq, 4]: cat(x, x) + y.
struct doubled {
  template <class X, class Y>
  auto operator()(const X& x, const Y& y) const {
    return add(cat<0>(tensors(x, x)), y);
  }
};

struct only_derived {
  template <class Y>
  auto operator()(const Y& y) const {
    return relu(y);
  }
};

// Self-attention over a dynamic seq with a causal mask made inside the model from the input's seq.
struct causal_attention {
  nn::MultiheadAttention<16, 2, true> attn;
  template <class X>
  auto operator()(const X& x) const {
    const auto s = x.shape().template get<1>();
    const auto pos = arange(s, device_of(x));                        // [seq]
    const auto future = gt(unsqueeze<0>(pos), unsqueeze<1>(pos));  // [seq, seq]: key after query
    const auto mask = where(future, full(shape(s, s), -INFINITY, device_of(x)), zeros(shape(s, s), device_of(x)));
    return attn(x, x, x, mask);
  }
};

// The same with the fused op's causal flag.
struct causal_sdpa {
  template <class Q>
  auto operator()(const Q& q) const {
    return scaled_dot_product_attention(q, q, q, nullptr, {.is_causal = true});
  }
};
// A learned positional table of 512 rows, sliced to the input's seq (a symbolic slice bound).
struct positional {
  parameter<f32, fix<512>, fix<16>> pos;
  template <class X>
  auto operator()(const X& x) const {
    const auto s = x.shape().template get<1>();
    return add(x, slice<0>(as_traced(pos, x), 0_c, s));
  }
};

// x[:, 1:]: seq - 1 rows, symbolic.
struct drop_first {
  template <class X>
  auto operator()(const X& x) const {
    return slice<1, 1>(x);
  }
};
// Data-dependent sizes: the positive elements, doubled.
struct positives {
  template <class X>
  auto operator()(const X& x) const {
    return mul(masked_select<"hits">(x, gt(x, 0.0)), 2.0);
  }
};

// nonzero's [hits, 2] reshaped into a static [3, 4]: needs hits == 6, a concrete value.
struct regroup_hits {
  template <class X>
  auto operator()(const X& x) const {
    return reshape(nonzero<"hits">(x), reshape_to(3_c, 4_c));
  }
};

// Two data-dependent ops under one name.
struct same_name_twice {
  template <class X>
  auto operator()(const X& x) const {
    const auto first = nonzero<"hits">(x);
    return std::make_pair(first, masked_select<"hits">(x, gt(x, 0.0)));
  }
};
}  // namespace dyn_models
BOOST_HANA_ADAPT_STRUCT(dyn_models::positives);
BOOST_HANA_ADAPT_STRUCT(dyn_models::regroup_hits);
BOOST_HANA_ADAPT_STRUCT(dyn_models::same_name_twice);
BOOST_HANA_ADAPT_STRUCT(dyn_models::positional, pos);
BOOST_HANA_ADAPT_STRUCT(dyn_models::drop_first);
BOOST_HANA_ADAPT_STRUCT(dyn_models::specializes, w);
BOOST_HANA_ADAPT_STRUCT(dyn_models::big_kernel, conv);
BOOST_HANA_ADAPT_STRUCT(dyn_models::regroup);
BOOST_HANA_ADAPT_STRUCT(dyn_models::product);
BOOST_HANA_ADAPT_STRUCT(dyn_models::two_symbols);
BOOST_HANA_ADAPT_STRUCT(dyn_models::add_inputs);
BOOST_HANA_ADAPT_STRUCT(dyn_models::doubled);
BOOST_HANA_ADAPT_STRUCT(dyn_models::only_derived);
BOOST_HANA_ADAPT_STRUCT(dyn_models::causal_attention, attn);
BOOST_HANA_ADAPT_STRUCT(dyn_models::causal_sdpa);

namespace {
// Line numbers masked: they move when this file changes.
std::string masked(std::string s) {
  static const std::regex line(R"(([A-Za-z_]+\.(cpp|hpp)):[0-9]+ )");
  return std::regex_replace(s, line, "$1:N ");
}

template <class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const constraint_violation& e) {
    return masked(e.what());
  }
  return "(no constraint_violation)";
}

template <class A, class B>
double max_diff(const A& a, const B& b) {
  REQUIRE(a.numel() == b.numel());
  double worst = 0;
  for (index_t i = 0; i < a.numel(); ++i) worst = std::max(worst, std::abs(double(a.data()[i]) - double(b.data()[i])));
  return worst;
}
}  // namespace

TEST_CASE("dynamic shapes: a fact that specializes a declared dim is a violation proposing typex::fix") {
  using namespace dyn_models;
  specializes m;
  init_module(m, 1);
  using S = shape<fix<8>, batch>;
  const std::string msg = message_of([&] { (void)export_program(m, input<"x">(tensor_spec<f32, S>(S({}, batch(4))))); });
  CHECK(msg ==
        "typex::export_program: constraint violation: the program needs a fact about its symbolic dims that the declared "
        "ranges do not guarantee:\n"
        "  - typex::matmul (node 'matmul', at dynamic_shapes.cpp:N in operator()) needs batch == 4, but batch is "
        "declared typex::sym<\"batch\", 1, 1024>: the program only works for batch == 4 (it specializes the dim)\n"
        "    fix: declare the dim typex::fix<4> in place of typex::sym<\"batch\", 1, 1024>, or change the model so that "
        "it works for every batch");
  // the fix works: declared static, the same model exports and runs
  using F = shape<fix<8>, fix<4>>;
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, F>(F{})));
  const auto x = typex_test::random_tensor<tensor<f32, fix<8>, fix<4>>>({8, 4}, 2);
  CHECK(max_diff(ep.module()(x), m(x)) == 0.0);
}

TEST_CASE("dynamic shapes: a fact that narrows a declared range is a violation proposing the corrected range") {
  using namespace dyn_models;
  using side = sym<"side", 1, 64>;
  big_kernel m;
  init_module(m, 3);
  using S = shape<fix<1>, fix<1>, side, side>;
  const std::string msg =
      message_of([&] { (void)export_program(m, input<"image">(tensor_spec<f32, S>(S({}, {}, side(9), side(9))))); });
  // (both spatial dims need side >= 7: one fact, reported once)
  CHECK(msg.find("the program needs a fact about its symbolic dims") != std::string::npos);
  CHECK(msg.find("typex::conv2d (node 'conv2d' in module 'conv', at dynamic_shapes.cpp:N in operator()) needs side >= 7, but side is declared "
                 "typex::sym<\"side\", 1, 64>: the program only works for side in VR[7, 64]\n"
                 "    fix: declare typex::sym<\"side\", 7, 64> in place of typex::sym<\"side\", 1, 64>") != std::string::npos);
  // with the corrected declaration the export goes through, and runs every size in the range
  using fixed_side = sym<"side", 7, 64>;
  using T = shape<fix<1>, fix<1>, fixed_side, fixed_side>;
  const auto ep = export_program(m, input<"image">(tensor_spec<f32, T>(T({}, {}, fixed_side(9), fixed_side(9)))));
  CHECK(ep.ranges().to_string() == "{side: VR[7, 64]}");
  for (index_t n : {7, 12}) {
    const auto x = typex_test::random_tensor<tensor<f32, fix<1>, fix<1>, fixed_side, fixed_side>>({1, 1, n, n}, 4);
    CHECK(max_diff(ep.module()(x), m(x)) < 1e-6);
  }
}

TEST_CASE("dynamic shapes: a divisibility no range expresses: violation proposing a derived dim, or a run-time assertion") {
  using namespace dyn_models;
  regroup m;
  using S = shape<seq, fix<8>>;
  const tensor_spec<f32, S> spec(S(seq(8), {}));
  const std::string msg = message_of([&] { (void)export_program(m, input<"x">(spec)); });
  CHECK(msg ==
        "typex::export_program: constraint violation: the program needs a fact about its symbolic dims that the declared "
        "ranges do not guarantee:\n"
        "  - typex::reshape (node 'reshape', at dynamic_shapes.cpp:N in operator()) needs seq*8 is divisible by 32, "
        "which holds for some values of the symbols in their declared ranges and not for others, and no range says which\n"
        "    fix: declare seq as a multiple of 4: typex::dim_mul_t<typex::fix<4>, typex::sym<\"_seq\", 1, 128>> in place "
        "of typex::sym<\"seq\", 1, 512> (seq % 4 == 0 by construction); or export with "
        "typex::export_options{.runtime_assertions = true} to check it on every call");

  SUBCASE("the proposed declaration exports without an assertion, and binds seq from the input") {
    using q = dim_mul_t<fix<4>, sym<"_seq", 1, 128>>;
    using Q = shape<q, fix<8>>;
    const auto ep = export_program(m, input<"x">(tensor_spec<f32, Q>(Q(q(8), {}))));
    CHECK(ep.ranges().to_string() == "{_seq: VR[1, 128], 4*_seq: VR[4, 512]}");
    CHECK(ep.to_string().find("_assert_shape") == std::string::npos);
    const auto x = typex_test::random_tensor<tensor<f32, q, fix<8>>>({12, 8}, 5);
    CHECK(max_diff(ep.module()(x), m(x)) == 0.0);
    const any_tensor odd = typex_test::random_tensor<tensor<f32, dyn, fix<8>>>({6, 8}, 5).erase();
    CHECK_THROWS_WITH_AS((void)ep.exported_program::module()({odd}),
                         "typex: input 'x' is f32[6, 8], expected f32[4*_seq, 8]: dim 0 is 6, but 4*_seq cannot be 6 "
                         "for any integer value of its symbols",
                         constraint_violation);
  }
  SUBCASE("with run-time assertions: an assertion node, checked on every call") {
    const auto ep = export_program(export_options{.runtime_assertions = true}, m, input<"x">(spec));
    const std::string text = masked(ep.to_string());
    CHECK(text.find("_assert_shape = torch.ops.typex._assert_shape.default(seq*8, 'is divisible by', 32, "
                    "\"typex::reshape (node 'reshape', at dynamic_shapes.cpp:N in operator())\")") != std::string::npos);
    const auto x = typex_test::random_tensor<tensor<f32, seq, fix<8>>>({12, 8}, 6);
    CHECK(max_diff(ep.module()(x), m(x)) == 0.0);
    const auto bad = typex_test::random_tensor<tensor<f32, seq, fix<8>>>({6, 8}, 6);
    CHECK(masked(message_of([&] { (void)ep.module()(bad); })) ==
          "typex: the inputs bind seq = 6 (by input 'x' (dim 0)), and the program asserts seq*8 is divisible by 32, but "
          "48 is not divisible by 32 (run-time assertion '_assert_shape': typex::reshape (node 'reshape', at "
          "dynamic_shapes.cpp:N in operator()))");
  }
}

TEST_CASE("dynamic shapes: s0*s1 == s2 is kept as a run-time assertion, or proposed as a derived declaration") {
  using namespace dyn_models;
  using a = sym<"a", 1, 16>;
  using b = sym<"b", 1, 16>;
  using c = sym<"c", 1, 256>;
  product m;
  using X = shape<a, b>;
  using Y = shape<c, fix<3>>;
  const tensor_spec<f32, X> xs(X(a(2), b(3)));
  const tensor_spec<f32, Y> ys(Y(c(6), {}));
  const std::string msg = message_of([&] { (void)export_program(m, input<"x">(xs), input<"y">(ys)); });
  CHECK(msg.find("needs a*b == c, which holds for some values") != std::string::npos);
  CHECK(msg.find("fix: declare c as typex::dim_mul_t<typex::sym<\"a\", 1, 16>, typex::sym<\"b\", 1, 16>> in place of "
                 "typex::sym<\"c\", 1, 256>; or export with typex::export_options{.runtime_assertions = true}") !=
        std::string::npos);

  const auto ep = export_program(export_options{.runtime_assertions = true}, m, input<"x">(xs), input<"y">(ys));
  CHECK(ep.to_string().find("typex._assert_shape.default(a*b, '==', c, ") != std::string::npos);
  const auto x = typex_test::random_tensor<tensor<f32, a, b>>({3, 4}, 7);
  const auto y = typex_test::random_tensor<tensor<f32, c, fix<3>>>({12, 3}, 8);
  CHECK(max_diff(ep.module()(x, y), m(x, y)) < 1e-6);
  typex_test::check_round_trip(ep, {x.erase(), y.erase()});
  const auto y5 = typex_test::random_tensor<tensor<f32, c, fix<3>>>({5, 3}, 8);
  CHECK(message_of([&] { (void)ep.module()(x, y5); }) ==
        "typex: the inputs bind a = 3 (by input 'x' (dim 0)), b = 4 (by input 'x' (dim 1)), c = 5 (by input 'y' (dim 0)), "
        "and the program asserts a*b == c, but 12 != 5 (run-time assertion '_assert_shape': typex::matmul (node "
        "'matmul', at dynamic_shapes.cpp:N in operator()))");

  // the proposed declaration: no assertion needed, the relation is the input's type
  using abc = dim_mul_t<a, b>;
  using Z = shape<abc, fix<3>>;
  const auto ep2 = export_program(m, input<"x">(xs), input<"y">(tensor_spec<f32, Z>(Z(abc(a(2), b(3)), {}))));
  CHECK(ep2.ranges().to_string() == "{a: VR[1, 16], b: VR[1, 16], a*b: VR[1, 256]}");
  typex_test::check_round_trip(ep2, {x.erase(), y.erase()});
}

TEST_CASE("dynamic shapes: two symbols that must be equal: the fix is one symbol for both") {
  using namespace dyn_models;
  using n = sym<"n", 1, 64>;
  using k1 = sym<"k1", 1, 64>;
  using k2 = sym<"k2", 1, 64>;
  two_symbols m;
  using X = shape<n, k1>;
  using Y = shape<k2, fix<3>>;
  const std::string msg = message_of([&] {
    (void)export_program(m, input<"x">(tensor_spec<f32, X>(X(n(2), k1(5)))), input<"w">(tensor_spec<f32, Y>(Y(k2(5), {}))));
  });
  CHECK(msg.find("needs k1 == k2, which holds for some values") != std::string::npos);
  CHECK(msg.find("fix: declare k1 as typex::sym<\"k2\", 1, 64> in place of typex::sym<\"k1\", 1, 64> (one symbol for "
                 "both dims)") != std::string::npos);
}

TEST_CASE("dynamic shapes: inputs sharing a symbol must agree, out-of-range inputs are rejected at run time") {
  using namespace dyn_models;
  add_inputs m;
  using S = shape<batch, fix<8>>;
  const tensor_spec<f32, S> spec(S(batch(2), {}));
  const auto ep = export_program(m, input<"x">(spec), input<"y">(spec));
  CHECK(ep.ranges().to_string() == "{batch: VR[1, 1024]}");
  const auto run = ep.module();
  const auto x = typex_test::random_tensor<tensor<f32, batch, fix<8>>>({3, 8}, 1);
  const auto y = typex_test::random_tensor<tensor<f32, batch, fix<8>>>({3, 8}, 2);
  CHECK(max_diff(run(x, y), m(x, y)) == 0.0);
  const auto y2 = typex_test::random_tensor<tensor<f32, batch, fix<8>>>({2, 8}, 2);
  CHECK_THROWS_WITH_AS((void)run(x, y2),
                       "typex: input 'y' (dim 0) binds symbolic dim 'batch' to 2, but input 'x' (dim 0) bound it to 3; "
                       "inputs that share a symbol must agree on its value",
                       constraint_violation);
  // out of range, through the type-erased module (a typed tensor of batch 2048 cannot even be made)
  const any_tensor big = typex_test::random_tensor<tensor<f32, dyn, fix<8>>>({2048, 8}, 3).erase();
  CHECK_THROWS_WITH_AS((void)ep.exported_program::module()({big, big}),
                       "typex: input 'x' (dim 0) binds symbol 'batch' to 2048, outside its range VR[1, 1024]",
                       constraint_violation);
}

TEST_CASE("dynamic shapes: a derived dim (2*seq) is listed in the range constraints and checked, even alone") {
  using namespace dyn_models;
  using two_seq = dim_mul_t<fix<2>, seq>;
  {
    doubled m;
    using X = shape<seq, fix<4>>;
    using Y = shape<two_seq, fix<4>>;
    const auto ep = export_program(m, input<"x">(tensor_spec<f32, X>(X(seq(3), {}))),
                                   input<"y">(tensor_spec<f32, Y>(Y(two_seq(6), {}))));
    CHECK(ep.ranges().to_string() == "{seq: VR[1, 512], 2*seq: VR[2, 1024]}");
    const auto x = typex_test::random_tensor<tensor<f32, seq, fix<4>>>({5, 4}, 1);
    const auto y = typex_test::random_tensor<tensor<f32, two_seq, fix<4>>>({10, 4}, 2);
    CHECK(max_diff(ep.module()(x, y), m(x, y)) == 0.0);
    const any_tensor y9 = typex_test::random_tensor<tensor<f32, dyn, fix<4>>>({9, 4}, 2).erase();
    CHECK_THROWS_WITH_AS((void)ep.exported_program::module()({x.erase(), y9}),
                         "typex: input 'y' is f32[9, 4], expected f32[2*seq, 4]: dim 0 is 9, but 2*seq = 10",
                         constraint_violation);
  }
  {
    only_derived m;
    using Y = shape<two_seq, fix<4>>;
    const auto ep = export_program(m, input<"y">(tensor_spec<f32, Y>(Y(two_seq(6), {}))));
    const auto y = typex_test::random_tensor<tensor<f32, two_seq, fix<4>>>({8, 4}, 2);
    CHECK(max_diff(ep.module()(y), m(y)) == 0.0);
    const any_tensor y7 = typex_test::random_tensor<tensor<f32, dyn, fix<4>>>({7, 4}, 2).erase();
    CHECK_THROWS_WITH_AS((void)ep.exported_program::module()({y7}),
                         "typex: input 'y' is f32[7, 4], expected f32[2*seq, 4]: dim 0 is 7, but 2*seq cannot be 7 for "
                         "any integer value of its symbols",
                         constraint_violation);
    const any_tensor y2000 = typex_test::random_tensor<tensor<f32, dyn, fix<4>>>({2000, 4}, 2).erase();
    CHECK_THROWS_WITH_AS((void)ep.exported_program::module()({y2000}),
                         "typex: input 'y' (dim 0) binds symbol 'seq' to 1000, outside its range VR[1, 512]",
                         constraint_violation);
  }
}

TEST_CASE("dynamic shapes: seq dynamic through attention with a causal mask, one program for every seq") {
  using namespace dyn_models;
  {
    causal_attention m;
    init_module(m, 5);
    using S = shape<batch, seq, fix<16>>;
    const auto ep = export_program(m, input<"x">(tensor_spec<f32, S>(S(batch(1), seq(1), {}))));
    CHECK(ep.ranges().to_string() == "{batch: VR[1, 1024], seq: VR[1, 512]}");
    const auto run = ep.module();
    for (const auto& [n, l] : {std::pair<index_t, index_t>{1, 1}, {2, 5}, {1, 17}, {3, 2}}) {
      const auto x = typex_test::random_tensor<tensor<f32, batch, seq, fix<16>>>({n, l, 16}, 9);
      CHECK(max_diff(run(x), m(x)) < 1e-5);
    }
    // causal: the first position's output does not change when later positions do
    auto x = typex_test::random_tensor<tensor<f32, batch, seq, fix<16>>>({1, 6, 16}, 10);
    const auto before = run(x);
    for (index_t i = 16; i < 96; ++i) x.data()[i] += 1.0f;
    const auto after = run(x);
    for (index_t i = 0; i < 16; ++i) CHECK(after.data()[i] == before.data()[i]);
  }
  {
    causal_sdpa m;
    using heads = sym<"heads", 1, 8>;
    using S = shape<batch, heads, seq, fix<8>>;
    const auto ep = export_program(m, input<"q">(tensor_spec<f32, S>(S(batch(2), heads(2), seq(4), {}))));
    for (index_t l : {1, 3, 11}) {
      const auto q = typex_test::random_tensor<tensor<f32, batch, heads, seq, fix<8>>>({2, 3, l, 8}, 11);
      CHECK(max_diff(ep.module()(q), m(q)) < 1e-6);
    }
  }
}

TEST_CASE("dynamic shapes: slicing with symbolic bounds (a positional table cut to seq): seq <= 512 is needed") {
  using namespace dyn_models;
  positional m;
  init_module(m, 2);
  using long_seq = sym<"seq", 1, 1024>;
  using L = shape<batch, long_seq, fix<16>>;
  const std::string msg =
      message_of([&] { (void)export_program(m, input<"x">(tensor_spec<f32, L>(L(batch(2), long_seq(5), {})))); });
  CHECK(msg ==
        "typex::export_program: constraint violation: the program needs a fact about its symbolic dims that the declared "
        "ranges do not guarantee:\n"
        "  - typex::slice (node 'slice', at dynamic_shapes.cpp:N in operator()) needs 512 >= seq, but seq is declared "
        "typex::sym<\"seq\", 1, 1024>: the program only works for seq in VR[1, 512]\n"
        "    fix: declare typex::sym<\"seq\", 1, 512> in place of typex::sym<\"seq\", 1, 1024>");
  // declared as proposed: exports, and every seq runs == eager
  using S = shape<batch, seq, fix<16>>;
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, S>(S(batch(2), seq(5), {}))));
  CHECK(ep.to_string().find("slice: \"f32[seq, 16]\" = torch.ops.aten.slice.Tensor(p_pos, 0, 0, seq, 1)") != std::string::npos);
  for (index_t l : {1, 7, 512}) {
    const auto x = typex_test::random_tensor<tensor<f32, batch, seq, fix<16>>>({2, l, 16}, 3);
    CHECK(max_diff(ep.module()(x), m(x)) == 0.0);
  }
  // eagerly, a bound past the dim is a shape error naming the bounds
  const auto too_long = typex_test::random_tensor<tensor<f32, batch, long_seq, fix<16>>>({1, 600, 16}, 3);
  CHECK_THROWS_WITH_AS((void)m(too_long),
                       "typex::slice: slice [0, 600) of dim 0 of [512, 16]: the bounds must satisfy 0 <= start <= end <= 512",
                       shape_error);

  // a static start on a symbolic dim keeps the symbol: x[:, 1:] is seq - 1
  drop_first d;
  using T = shape<batch, sym<"seq", 2, 512>, fix<16>>;
  const auto ep2 = export_program(d, input<"x">(tensor_spec<f32, T>(T(batch(2), sym<"seq", 2, 512>(5), {}))));
  CHECK(ep2.to_string().find("\"f32[batch, seq - 1, 16]\"") != std::string::npos);
}

TEST_CASE("dynamic shapes: data-dependent sizes (nonzero, masked_select) are named symbols with inline ranges") {
  using namespace dyn_models;
  // eagerly: the count, in the type's range [0, numel]
  host_tensor<f32, shape_c<3, 4>> z;
  for (index_t i = 0; i < 12; ++i) z.data()[i] = (i % 5 == 0) ? 1.5f : 0.0f;  // 0, 5, 10
  const auto idx = nonzero<"hits">(z);
  static_assert(std::is_same_v<decltype(idx)::shape_type, shape<sym<"hits", 0, 12>, fix<2>>>);
  REQUIRE(idx.shape().to_string() == "[3, 2]");
  const std::int64_t want[] = {0, 0, 1, 1, 2, 2};
  for (index_t i = 0; i < 6; ++i) CHECK(idx.data()[i] == want[i]);

  // a mask that broadcasts (as torch's): [4] against [3, 4] keeps columns 0 and 2 of every row
  host_tensor<b8, shape_c<4>> cols;
  for (index_t i = 0; i < 4; ++i) cols.data()[i] = (i % 2 == 0);
  const auto kept = masked_select<"kept">(z, cols);
  REQUIRE(kept.shape().to_string() == "[6]");
  for (index_t k = 0; k < 6; ++k) CHECK(kept.data()[k] == z.data()[(k / 2) * 4 + (k % 2) * 2]);

  positives m;
  using small_batch = sym<"batch", 1, 64>;
  using T = shape<small_batch, fix<4>>;
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, T>(T(small_batch(2), {}))));
  CHECK(ep.ranges().to_string() == "{batch: VR[1, 64], hits: VR[0, 256]}");
  CHECK(ep.to_string().find("masked_select: \"f32[hits]\" = torch.ops.aten.masked_select.default(x, gt)") != std::string::npos);
  const auto run = ep.module();
  for (const auto& [n, seed] : {std::pair<index_t, int>{1, 1}, {3, 2}, {7, 3}, {3, 4}}) {
    const auto x = typex_test::random_tensor<tensor<f32, small_batch, fix<4>>>({n, 4}, static_cast<std::uint64_t>(seed));
    const auto got = run(x), want_ = m(x);
    REQUIRE(got.shape().to_string() == want_.shape().to_string());
    CHECK(max_diff(got, want_) == 0.0);
    typex_test::check_round_trip(ep, {x.erase()});
  }
}

TEST_CASE("dynamic shapes: an op that needs a concrete data-dependent size says so at export, or asserts it at run time") {
  using namespace dyn_models;
  regroup_hits m;
  using S = shape_c<3, 4>;
  const std::string msg = message_of([&] { (void)export_program(m, input<"x">(tensor_spec<f32, S>(S{}))); });
  CHECK(msg ==
        "typex::export_program: constraint violation: the program needs a fact about its symbolic dims that the declared "
        "ranges do not guarantee:\n"
        "  - typex::reshape (node 'reshape', at dynamic_shapes.cpp:N in operator()) needs hits*2 == 12, but hits is "
        "data-dependent (the size of typex::nonzero's result, node 'nonzero', in VR[0, 12]): it is known only when the "
        "program runs, and the op needs it to be a concrete value at export\n"
        "    fix: export with typex::export_options{.runtime_assertions = true} to check hits*2 == 12 when the program runs "
        "(torch._check's role), or keep the ops after typex::nonzero free of facts about hits");

  const auto ep = export_program(export_options{.runtime_assertions = true}, m, input<"x">(tensor_spec<f32, S>(S{})));
  CHECK(ep.to_string().find("typex._assert_shape.default(hits*2, '==', 12, ") != std::string::npos);
  const auto run = ep.module();
  host_tensor<f32, S> x;
  for (index_t i = 0; i < 12; ++i) x.data()[i] = (i % 2 == 0) ? 1.0f : 0.0f;  // 6 hits
  const auto out = run(x);
  CHECK(max_diff(out, m(x)) == 0.0);
  typex_test::check_round_trip(ep, {x.erase()});
  x.data()[0] = 0.0f;  // 5 hits
  CHECK(message_of([&] { (void)run(x); }) ==
        "typex: the program binds hits = 5 (by node 'nonzero' (dim 0)), and the program asserts hits*2 == 12, but 10 != 12 "
        "(run-time assertion '_assert_shape': typex::reshape (node 'reshape', at dynamic_shapes.cpp:N in operator()))");

  same_name_twice twice;
  CHECK_THROWS_WITH_AS((void)export_program(twice, input<"x">(tensor_spec<f32, S>(S{}))),
                       "typex: typex::masked_select (node 'masked_select') names its data-dependent size 'hits', which "
                       "typex::nonzero (node 'nonzero') names already; one name means one value: give each "
                       "data-dependent op its own name",
                       argument_error);
}
