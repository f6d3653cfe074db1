// One body per rule, run over static, symbolic and dynamic versions of the same shapes
// (STYLE.md 11): the result's values must agree, and the result's *types* keep what is known.
#include "../support.hpp"

using namespace typex;
using typex_test::same;

using m_sym = sym<"m", 1, 4096>;
using k_sym = sym<"k", 1, 4096>;

// The same rows extent (4) as static, symbolic and dynamic.
template <class D>
D rows() {
  if constexpr (is_static_dim_v<D>) return D{};
  else return D(4);
}

TEST_CASE_TEMPLATE("matmul: [m, 8] @ [8, 5] for every kind of m", M, fix<4>, m_sym, dyn) {
  const shape<M, fix<8>> a(rows<M>(), {});
  const auto r = matmul_shape(a, shape_c<8, 5>{});
  CHECK(r.to_string() == "[4, 5]");
  static_assert(same<typename std::remove_cvref_t<decltype(r)>::template dim_t<0>, M>);
}

TEST_CASE("matmul: every rank combination of torch.matmul") {
  static_assert(same<decltype(matmul_shape(shape_c<8>{}, shape_c<8>{})), shape<>>);
  static_assert(same<decltype(matmul_shape(shape_c<3, 8>{}, shape_c<8>{})), shape_c<3>>);
  static_assert(same<decltype(matmul_shape(shape_c<8>{}, shape_c<8, 5>{})), shape_c<5>>);
  static_assert(same<decltype(matmul_shape(shape_c<7, 1, 3, 8>{}, shape_c<2, 8, 5>{})), shape_c<7, 2, 3, 5>>);
  static_assert(same<decltype(matmul_shape(shape_c<2, 3, 8>{}, shape_c<8, 5>{})), shape_c<2, 3, 5>>);
}

TEST_CASE("matmul: a symbolic inner dim is checked at run time and recorded") {
  typex_test::recorder rec;
  const shape<m_sym, k_sym> a(m_sym(3), k_sym(8));
  const auto r = matmul_shape(a, shape_c<8, 5>{});
  CHECK(r.to_string() == "[3, 5]");
  REQUIRE(rec.seen.size() == 1);
  CHECK(rec.seen[0].op == "matmul");
  CHECK(rec.seen[0].rel == relation::equal);
  CHECK(rec.seen[0].lhs == "k");
  CHECK(rec.seen[0].rhs == "8");
  const shape<m_sym, k_sym> bad(m_sym(3), k_sym(7));
  CHECK(typex_test::message_of<shape_error>([&] { (void)matmul_shape(bad, shape_c<8, 5>{}, op_name<"linear">); }) ==
        "typex::linear: inner extents differ (lhs [3, 7], rhs [8, 5]): 7 vs 8 (types [m, k] and [8, 5])");
}

TEST_CASE_TEMPLATE("broadcast: [m, 1, 3] with [2, 1] for every kind of m", M, fix<4>, m_sym, dyn) {
  const shape<M, fix<1>, fix<3>> a(rows<M>(), {}, {});
  const auto r = broadcast_shapes(a, shape_c<2, 1>{});
  CHECK(r.to_string() == "[4, 2, 3]");
}

TEST_CASE("broadcast: static 1 meets a symbol; a symbol meets a static extent") {
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

TEST_CASE("reduce: dims, negative dims, keepdim, all dims") {
  static_assert(same<decltype(reduce_shape<false, 1>(shape_c<2, 3, 4>{})), shape_c<2, 4>>);
  static_assert(same<decltype(reduce_shape<true, -1, 0>(shape_c<2, 3, 4>{})), shape_c<1, 3, 1>>);
  static_assert(same<decltype(reduce_shape<false>(shape_c<2, 3, 4>{})), shape<>>);
  const auto r = reduce_shape<true, -1>(shape<m_sym, fix<6>>(m_sym(9), {}));
  CHECK(decltype(r)::type_string() == "[m, 1]");
  CHECK(r.to_string() == "[9, 1]");
}

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

TEST_CASE("reshape: run-time mismatches throw; divisibility is recorded") {
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

TEST_CASE("permute / transpose / unsqueeze / squeeze") {
  static_assert(same<decltype(permute_shape<2, 0, 1>(shape_c<2, 3, 4>{})), shape_c<4, 2, 3>>);
  static_assert(same<decltype(permute_shape<-1, 0, 1>(shape_c<2, 3, 4>{})), shape_c<4, 2, 3>>);
  static_assert(same<decltype(transpose_shape<0, -1>(shape_c<2, 3, 4>{})), shape_c<4, 3, 2>>);
  static_assert(same<decltype(unsqueeze_shape<-1>(shape_c<2, 3>{})), shape_c<2, 3, 1>>);
  static_assert(same<decltype(unsqueeze_shape<0>(shape_c<2, 3>{})), shape_c<1, 2, 3>>);
  static_assert(same<decltype(squeeze_shape<1>(shape_c<2, 1, 3>{})), shape_c<2, 3>>);
  const auto t = transpose_shape<0, 1>(shape<m_sym, fix<3>>(m_sym(7), {}));
  CHECK(decltype(t)::type_string() == "[3, m]");
  CHECK(t.to_string() == "[3, 7]");
  CHECK(squeeze_shape<0>(shape<m_sym, fix<3>>(m_sym(1), {})).to_string() == "[3]");
  CHECK_THROWS_AS((void)squeeze_shape<0>(shape<m_sym, fix<3>>(m_sym(2), {})), shape_error);
}

TEST_CASE("concat: sums the concatenated dim, unifies the others") {
  static_assert(same<decltype(concat_shapes<1>(shape_c<2, 3>{}, shape_c<2, 4>{}, shape_c<2, 1>{})), shape_c<2, 8>>);
  static_assert(same<decltype(concat_shapes<-1>(shape_c<2, 3>{})), shape_c<2, 3>>);
  const auto c = concat_shapes<0>(shape<m_sym, fix<4>>(m_sym(3), {}), shape<m_sym, dyn>(m_sym(3), dyn(4)));
  CHECK(decltype(c)::type_string() == "[2*m, 4]");
  CHECK(c.to_string() == "[6, 4]");
  CHECK_THROWS_AS((void)concat_shapes<0>(shape<dyn, fix<4>>(dyn(1), {}), shape<dyn, dyn>(dyn(1), dyn(5))), shape_error);
}

TEST_CASE("slice: PyTorch's clamping, negative bounds and steps") {
  static_assert(same<decltype(slice_shape<1, 1, -1>(shape_c<2, 10>{})), shape_c<2, 8>>);
  static_assert(same<decltype(slice_shape<1, 0, int_oo, 3>(shape_c<2, 10>{})), shape_c<2, 4>>);
  static_assert(same<decltype(slice_shape<1, 20, 30>(shape_c<2, 10>{})), shape_c<2, 0>>);
  static_assert(same<decltype(slice_shape<0, -3>(shape_c<10>{})), shape_c<3>>);
  CHECK(slice_shape<0>(shape<m_sym>(m_sym(9)), 2, 100).to_string() == "[7]");
  CHECK(slice_shape<0>(shape<m_sym>(m_sym(9)), -4, -1, 2).to_string() == "[2]");
  CHECK_THROWS_AS((void)slice_shape<0>(shape<m_sym>(m_sym(9)), 0, 4, 0), argument_error);
}

TEST_CASE("conv2d / pool2d output sizes") {
  static_assert(same<decltype(conv2d_shape(shape_c<8, 1, 28, 28>{}, shape_c<32, 1, 3, 3>{})), shape_c<8, 32, 26, 26>>);
  static_assert(same<decltype(conv2d_shape<conv2d_options{.stride = {2, 2}, .padding = {3, 3}}>(
                         shape_c<8, 3, 224, 224>{}, shape_c<64, 3, 7, 7>{})),
                     shape_c<8, 64, 112, 112>>);
  static_assert(same<decltype(conv2d_shape<conv2d_options{.dilation = {2, 2}}>(shape_c<1, 1, 10, 10>{},
                                                                                shape_c<1, 1, 3, 3>{})),
                     shape_c<1, 1, 6, 6>>);
  static_assert(same<decltype(conv2d_shape<conv2d_options{.groups = 2}>(shape_c<4, 28, 28>{}, shape_c<8, 2, 3, 3>{})),
                     shape_c<8, 26, 26>>);
  static_assert(same<decltype(pool2d_shape<pool2d_options{.kernel = {2, 2}}>(shape_c<8, 64, 24, 24>{})),
                     shape_c<8, 64, 12, 12>>);
  static_assert(same<decltype(pool2d_shape<pool2d_options{.kernel = {3, 3}, .stride = {2, 2}, .ceil_mode = true}>(
                         shape_c<1, 1, 6, 6>{})),
                     shape_c<1, 1, 3, 3>>);
  static_assert(same<decltype(pool2d_shape<pool2d_options{.kernel = {3, 3}, .stride = {2, 2}}>(shape_c<1, 1, 6, 6>{})),
                     shape_c<1, 1, 2, 2>>);
  // ceil_mode: the last window must start inside the input (PyTorch: 5x5, k2 s2 p1 ceil -> 3x3)
  static_assert(same<decltype(pool2d_shape<pool2d_options{.kernel = {2, 2}, .stride = {2, 2}, .padding = {1, 1},
                                                           .ceil_mode = true}>(shape_c<1, 1, 5, 5>{})),
                     shape_c<1, 1, 3, 3>>);
}

TEST_CASE("conv2d with a symbolic height gives a derived dim that prints like torch") {
  using h_sym = sym<"h", 4, 512>;
  using S = shape<m_sym, fix<3>, h_sym, h_sym>;
  const S x(m_sym(2), {}, h_sym(9), h_sym(9));
  const auto s = conv2d_shape<conv2d_options{.stride = {2, 2}, .padding = {1, 1}}>(x, shape_c<16, 3, 3, 3>{});
  CHECK(decltype(s)::type_string() == "[m, 16, (h - 1)//2 + 1, (h - 1)//2 + 1]");
  CHECK(s.to_string() == "[2, 16, 5, 5]");
  const auto v = conv2d_shape(x, shape_c<16, 3, 3, 3>{});
  CHECK(decltype(v)::type_string() == "[m, 16, h - 2, h - 2]");
  using small = sym<"s", 1, 512>;
  const shape<fix<1>, fix<3>, small, small> tiny({}, {}, small(2), small(2));
  CHECK_THROWS_AS((void)conv2d_shape(tiny, shape_c<16, 3, 3, 3>{}), shape_error);
}
