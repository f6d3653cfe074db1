// One regression test per class of defect found by the reliability review (issue 16): each
// failed (crashed, read out of bounds, or computed wrong numbers) on the code before the fix.
#include "models.hpp"

#include "../unit/support.hpp"

#include <bit>
#include <cmath>
#include <limits>

using namespace typex;
using typex_test::message_of;

namespace {
bool contains(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }
}  // namespace

// ---- 1. sizes ------------------------------------------------------------------------------------

TEST_CASE("1. element and byte counts are checked before anything is allocated") {
  const index_t two31 = index_t{1} << 31;
  // 2^61 f32 elements: the count fits, the byte count (2^63) does not (it became 0 bytes + null)
  CHECK(contains(message_of<argument_error>([&] { any_tensor(dtype::f32, {two31, two31 / 2}); }),
                 "tensor with extents [2147483648, 1073741824] needs more bytes than a pointer can address"));
  // 2^61 + 1 f64 elements: 8 bytes before
  CHECK(contains(message_of<argument_error>([&] { any_tensor(dtype::f64, {(index_t{1} << 61) + 1}); }),
                 "needs more bytes than a pointer can address"));
  // 2^80 elements: the product wrapped to 0
  CHECK(contains(message_of<argument_error>([&] { tensor<f32, dyn, dyn>({index_t{1} << 40, index_t{1} << 40}); }),
                 "tensor with extents [1099511627776, 1099511627776] has too many elements (the limit is 2^62)"));
  // an extent at int_oo (dyn's range is [0, int_oo]: the bound itself is not an extent)
  CHECK_THROWS_AS(any_tensor(dtype::u8, {int_oo}), argument_error);
  // a shape made directly (without make_shape's check): a host tensor of it is refused
  const shape<dyn, dyn> big(dyn(index_t{1} << 40), dyn(index_t{1} << 40));
  CHECK_THROWS_AS((host_tensor<f32, shape<dyn, dyn>>(big)), argument_error);
  // an empty tensor with a huge other extent is fine (0 elements)
  CHECK(any_tensor(dtype::f32, {0, index_t{1} << 61}).numel() == 0);
  // storage views whose offset + size would wrap
  const storage s(16);
  CHECK_THROWS_AS(storage::view(s, 8, std::numeric_limits<std::size_t>::max() - 4), argument_error);
}

TEST_CASE("1. derived dims and symbol solving saturate instead of wrapping") {
  using big = sym<"big", 1, int_oo>;
  const big b(index_t{1} << 61);
  // 2*big = 2^62: an extent no tensor can have; the message says so (it printed a negative number)
  const std::string msg = message_of<shape_error>([&] { (void)(fix<2>{} * b + fix<0>{} + b); });
  CHECK(contains(msg, "overflows: its value reaches 2^62, the largest extent"));
  CHECK(detail::apply(dim_op::mul, index_t{1} << 62, 4) == int_oo);
  CHECK(detail::apply(dim_op::sub, -(index_t{1} << 62), index_t{1} << 62) == -int_oo);
  CHECK(detail::apply(dim_op::add, std::numeric_limits<index_t>::max(), 1) == int_oo);
}

// ---- 2. aliasing ---------------------------------------------------------------------------------

TEST_CASE("2. run(v, v): outputs never alias inputs, planned engine (growing and not growing)") {
  const auto m = rb::random_model<rb::with_view>(1);
  const auto x = rb::random_x(3, 2);
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, rb::x_shape>(rb::spec_shape(3))));
  const auto run = program_module<eigen_backend>(ep);
  const std::vector<any_tensor> want = run({x.erase()});
  // the vector grows from 1 to 2 tensors while its first is the input (a use-after-free before)
  std::vector<any_tensor> v{x.clone().erase()};
  run.run(v, v);
  REQUIRE(v.size() == 2);
  CHECK(rb::same_bits(v[0], want[0]));
  CHECK(rb::same_bits(v[1], want[1]));
  // room for both: no reallocation; output 0 was written into the input's storage, then output 1
  // (a view of the input) copied from the overwritten data
  std::vector<any_tensor> w;
  w.reserve(4);
  w.push_back(x.clone().erase());
  w.push_back(any_tensor(dtype::f32, {3, 8}));
  run.run(std::span<const any_tensor>(w.data(), 1), w);
  CHECK(rb::same_bits(w[0], want[0]));
  CHECK(rb::same_bits(w[1], want[1]));
  // an output tensor that shares the input's storage is not written into
  const any_tensor in = x.clone().erase();
  const std::vector<any_tensor> inputs{in};
  std::vector<any_tensor> outs{any_tensor(dtype::f32, {3, 8}, in.get_storage()), any_tensor(dtype::f32, {24}, in.get_storage())};
  const any_tensor before = in.clone();
  run.run(inputs, outs);
  CHECK(rb::same_bits(in, before));
  CHECK(rb::same_bits(outs[1], want[1]));
}

TEST_CASE("2. outputs never alias inputs: the stepwise engine (data-dependent sizes) copies views") {
  const rb::selects m;
  const auto x = rb::random_x(4, 3);
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, rb::x_shape>(rb::spec_shape(4))));
  const auto run = program_module<eigen_backend>(ep);
  const any_tensor in = x.clone().erase();
  const std::vector<any_tensor> out = run({in});
  REQUIRE(out.size() == 2);
  // the second output is x flattened: equal values, its own memory
  CHECK(out[1].raw_data() != in.raw_data());
  out[1].data<float>()[0] = 1234.5f;
  CHECK(in.data<float>()[0] != 1234.5f);
  std::vector<any_tensor> v{x.clone().erase()};
  const any_tensor v0 = v[0].clone();
  run.run(v, v);
  REQUIRE(v.size() == 2);
  CHECK(rb::same_bits(v[1], any_tensor(dtype::f32, {32}, v0.get_storage())));
}

// ---- 3. lifetimes --------------------------------------------------------------------------------

TEST_CASE("3. a typed module made from a temporary program owns what it needs") {
  const auto m = rb::random_model<rb::mlp>(4);
  const auto x = rb::random_x(5, 5);
  auto run = export_program(m, input<"x">(tensor_spec<f32, rb::x_shape>(rb::spec_shape(2)))).module();
  const auto y = run(x);  // (read the destroyed program before)
  CHECK(rb::same_bits(y.erase(), m(x).erase()));
  auto moved = std::move(run);
  CHECK(rb::same_bits(moved(x).erase(), m(x).erase()));
  CHECK(contains(message_of<state_error>([&] { (void)run(x); }), "this module was moved from"));
}

TEST_CASE("3. moved-from tensors and modules are detected with a state_error") {
  const auto m = rb::random_model<rb::mlp>(6);
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, rb::x_shape>(rb::spec_shape(2))));
  auto run = ep.module();
  auto runner = program_module<eigen_backend>(ep);
  // a moved-from any_tensor: its extents may survive, its storage does not
  any_tensor a = rb::random_x(2, 1).erase();
  any_tensor b = std::move(a);
  CHECK(contains(message_of<state_error>([&] { (void)runner({a}); }), "has no storage (it was moved from)"));
  CHECK_THROWS_AS(ep.bind_inputs(std::vector<any_tensor>{a}), state_error);
  CHECK(runner({b}).size() == 1);
  // a moved-from host tensor
  auto x = rb::random_x(2, 2);
  auto x2 = std::move(x);
  CHECK_THROWS_AS(x.erase(), state_error);
  CHECK_THROWS_AS(x.fill(1.0f), state_error);
  CHECK(run(x2).extents()[0] == 2);
  // a moved-from type-erased module
  auto other = std::move(runner);
  CHECK_THROWS_AS((void)runner({b}), state_error);
  CHECK(other({b}).size() == 1);
  // a moved-from model: export names the tensor (it built a corrupt graph before)
  auto model = rb::random_model<rb::mlp>(7);
  auto model2 = std::move(model);
  CHECK(contains(message_of<state_error>([&] { (void)export_program(model, input<"x">(tensor_spec<f32, rb::x_shape>(rb::spec_shape(2)))); }),
                 "the module's tensor 'fc1.weight' has no storage: the module (or this member) was moved from"));
  (void)model2;
}

// ---- 4. weights changed after export -------------------------------------------------------------

TEST_CASE("4. a module keeps the weights it was made with, its load_state_dict replaces them, re-planned") {
  auto m = rb::random_model<rb::mlp>(8);
  const auto x2 = rb::random_x(2, 9), x5 = rb::random_x(5, 10);
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, rb::x_shape>(rb::spec_shape(2))));
  auto run = program_module<eigen_backend>(ep);
  const any_tensor old2 = m(x2).erase(), old5 = m(x5).erase();
  CHECK(rb::same_bits(run({x2.erase()})[0], old2));  // planned: weights packed for the GEMMs
  // new weights loaded into the model (the program shares its storage) ...
  const auto other = rb::random_model<rb::mlp>(11);
  load_state_dict(m, state_dict(other));
  // ... and written into the program's own state dict
  for (const auto& [fqn, t] : ep.state_dict()) std::memset(t.raw_data(), 0, t.nbytes());
  // the module computes with the weights it was made with: same plan, and after a re-plan
  CHECK(rb::same_bits(run({x2.erase()})[0], old2));
  CHECK(rb::same_bits(run({x5.erase()})[0], old5));
  const auto copy = run;  // (made before the load below: keeps the old weights)
  // the module's own load_state_dict: every later call, any shapes, uses the new weights
  const load_result r = run.load_state_dict(state_dict(other));
  CHECK(r.empty());
  CHECK(rb::same_bits(run({x5.erase()})[0], other(x5).erase()));
  CHECK(rb::same_bits(run({x2.erase()})[0], other(x2).erase()));
  CHECK(rb::same_bits(copy({x2.erase()})[0], old2));
  CHECK(rb::same_bits(run.state_dict().at("fc1.weight"), state_dict(other).at("fc1.weight")));
}

// ---- 6. semantics --------------------------------------------------------------------------------

namespace {
struct relu_model {
  template <class X> auto operator()(const X& v) const { return relu(v); }
};
struct plus_big {
  template <class X> auto operator()(const X& v) const { return sub(add(v, (std::int64_t{1} << 53) + 1), std::int64_t{3}); }
};
struct two_inputs {
  template <class X, class Y>
  auto operator()(const X& x, const Y& y) const {
    return std::tuple(add(x, 1.0), add(y, 1.0));
  }
};
}  // namespace
BOOST_HANA_ADAPT_STRUCT(relu_model);
BOOST_HANA_ADAPT_STRUCT(plus_big);
BOOST_HANA_ADAPT_STRUCT(two_inputs);

TEST_CASE("6. relu(NaN) is NaN in every floating dtype, eagerly and exported") {
  auto check = [](auto tag) {
    using DT = decltype(tag);
    using T = typename DT::type;
    tensor<DT, fix<4>> x({4});
    x.data()[0] = T(std::numeric_limits<float>::quiet_NaN());
    x.data()[1] = T(-1.0f);
    x.data()[2] = T(2.0f);
    x.data()[3] = T(-std::numeric_limits<float>::infinity());
    const auto y = relu(x);
    CHECK(std::isnan(static_cast<float>(y.data()[0])));
    CHECK(static_cast<float>(y.data()[1]) == 0.0f);
    CHECK(static_cast<float>(y.data()[2]) == 2.0f);
    CHECK(static_cast<float>(y.data()[3]) == 0.0f);
    const auto ep = export_program(relu_model{}, input<"x">(x.spec()));
    const auto out = program_module<eigen_backend>(ep)({x.erase()});
    CHECK(std::isnan(static_cast<float>(out[0].template data<T>()[0])));
    CHECK(static_cast<float>(out[0].template data<T>()[2]) == 2.0f);
  };
  check(f16{});
  check(bf16{});
  check(f32{});
  check(f64{});
}

TEST_CASE("6. integer scalars are exact: i64 + (2^53 + 1)") {
  const std::int64_t big = (std::int64_t{1} << 53) + 1;
  tensor<i64, fix<2>> x({2});
  x.data()[0] = 0;
  x.data()[1] = 1;
  const auto y = add(x, big);
  CHECK(y.data()[0] == big);
  CHECK(y.data()[1] == big + 1);
  const auto z = mul(x + 3, std::int64_t{1} << 60);
  CHECK(z.data()[1] == (std::int64_t{1} << 62));
  const auto ep = export_program(plus_big{}, input<"x">(x.spec()));
  const auto out = program_module<eigen_backend>(ep)({x.erase()});
  CHECK(out[0].data<std::int64_t>()[0] == big - 3);
  CHECK(out[0].data<std::int64_t>()[1] == big - 2);
}

namespace {
struct scaled_by {
  template <class X, class N>
  auto operator()(const X& x, N n) const {
    return mul(x, static_cast<double>(n == n ? 2.0 : 3.0));
  }
};
}  // namespace
BOOST_HANA_ADAPT_STRUCT(scaled_by);

TEST_CASE("6. numbers specialized into a program compare exactly: NaN, -0.0, integers above 2^53") {
  const tensor<f32, fix<2>> x({2});
  {
    const auto ep = export_program(scaled_by{}, x, std::numeric_limits<double>::quiet_NaN());
    auto run = ep.module();
    CHECK_NOTHROW((void)run(x, std::numeric_limits<double>::quiet_NaN()));  // (never callable before)
    CHECK_THROWS_AS((void)run(x, 1.0), argument_error);
  }
  {
    const auto ep = export_program(scaled_by{}, x, 0.0);
    auto run = ep.module();
    CHECK_NOTHROW((void)run(x, 0.0));
    CHECK(contains(message_of<argument_error>([&] { (void)run(x, -0.0); }), "is the number -0.0, but the program was exported with 0.0"));
  }
  {
    const std::int64_t big = std::int64_t{1} << 53;
    const auto ep = export_program(scaled_by{}, x, big);
    auto run = ep.module();
    CHECK_NOTHROW((void)run(x, big));
    CHECK(contains(message_of<argument_error>([&] { (void)run(x, big + 1); }), "is the number 9007199254740993, but the program was exported with 9007199254740992"));
  }
}

// ---- 7. tracing identity -------------------------------------------------------------------------

namespace {
struct two_empty {
  tensor<f32, fix<0>> a;  // (default extents: 0 elements)
  tensor<f32, fix<0>, fix<3>> b;
  template <class X>
  auto operator()(const X& x) const {
    return std::tuple(add(x, 1.0), a, b);  // (constants captured by the model: lifted)
  }
};
}  // namespace
BOOST_HANA_ADAPT_STRUCT(two_empty, a, b);

TEST_CASE("7. two empty constants are two tensors (they shared the null address)") {
  const two_empty m;
  const tensor<f32, fix<2>> x({2});
  const auto ep = export_program(m, x);
  CHECK(ep.constants().size() == 2);
  const auto out = program_module<eigen_backend>(ep)({x.erase()});
  REQUIRE(out.size() == 3);
  CHECK(out[1].extents() == std::vector<index_t>{0});
  CHECK(out[2].extents() == std::vector<index_t>{0, 3});
}

// ---- 8. shape facts are proven ---------------------------------------------------------------------

namespace {
shape_requirement fact(dim_terms lhs, relation rel, dim_terms rhs) {
  shape_requirement r;
  r.lhs_terms = std::move(lhs);
  r.rhs_terms = std::move(rhs);
  r.rel = rel;
  r.lhs = "lhs";
  r.rhs = "rhs";
  r.op = "test";
  return r;
}
dim_term sym_term(std::string_view name, index_t lo, index_t hi) {
  return {dim_term::kind::symbol, 0, name, lo, hi, dim_op::add};
}
dim_term num(index_t v) { return {dim_term::kind::constant, v, {}, 0, 0, dim_op::add}; }
dim_term op(dim_op o) { return {dim_term::kind::op, 0, {}, 0, 0, o}; }
}  // namespace

TEST_CASE("8. a fact is implied only when proven, one true wherever sampled is checked at run time") {
  const range_constraints ranges;
  const index_t huge = index_t{1} << 40;
  using k = detail::fact_verdict::kind;
  // seq - (seq // 100003) * 100003 >= 1: false at every multiple of 100003, which sampling can miss
  const auto trap = fact({sym_term("seq", 1, huge), sym_term("seq", 1, huge), num(100003), op(dim_op::floordiv), num(100003),
                          op(dim_op::mul), op(dim_op::sub)},
                         relation::at_least, {num(1)});
  CHECK(detail::classify(trap, ranges).k != k::implied);
  // proofs: 2*seq divisible by 2; seq + 1 >= 1; (seq + 2)//2 == (seq + 2)//2 + 0 (same polynomial)
  CHECK(detail::classify(fact({num(2), sym_term("seq", 1, huge), op(dim_op::mul)}, relation::divisible, {num(2)}), ranges).k == k::implied);
  CHECK(detail::classify(fact({sym_term("seq", 1, huge), num(1), op(dim_op::add)}, relation::at_least, {num(1)}), ranges).k == k::implied);
  CHECK(detail::classify(fact({sym_term("seq", 1, huge), num(2), op(dim_op::add), num(2), op(dim_op::floordiv)}, relation::equal,
                              {sym_term("seq", 1, huge), num(2), op(dim_op::add), num(2), op(dim_op::floordiv), num(0), op(dim_op::add)}),
                         ranges).k == k::implied);
  // a small range is tried exhaustively: a proof
  CHECK(detail::classify(fact({sym_term("s", 1, 100), sym_term("s", 1, 100), op(dim_op::mul)}, relation::at_least, {sym_term("s", 1, 100)}), ranges).k == k::implied);
}

namespace {
struct product_dim {
  template <class X>
  auto operator()(const X& x) const {
    return add(x, 1.0);
  }
};
}  // namespace
BOOST_HANA_ADAPT_STRUCT(product_dim);

TEST_CASE("8. a dim a*b that no input determines is an export error (every call was rejected before)") {
  using a = sym<"a", 1, 16>;
  using b = sym<"b", 1, 16>;
  using S = shape<dim_mul_t<a, b>>;
  const std::string msg = message_of<constraint_violation>([&] {
    (void)export_program(product_dim{}, input<"x">(tensor_spec<f32, S>(S(dim_mul_t<a, b>(a(2), b(3))))));
  });
  CHECK(contains(msg, "input 'x' has dim 0 = a*b, and no input binds a and b"));
  CHECK(contains(msg, "fix: declare that dim as one symbol of its own"));
  // bound by another input: fine
  using T = shape<a, b>;
  const auto ep = export_program(two_inputs{}, input<"x">(tensor_spec<f32, S>(S(dim_mul_t<a, b>(a(2), b(3))))),
                                 input<"y">(tensor_spec<f32, T>(T(a(2), b(3)))));
  const auto out = program_module<eigen_backend>(ep)({any_tensor(dtype::f32, {6}), any_tensor(dtype::f32, {2, 3})});
  CHECK(out[0].extents() == std::vector<index_t>{6});
}

// ---- 9. smaller ----------------------------------------------------------------------------------

TEST_CASE("9. load_state_dict: non-strict loads what matches and reports the rest, as torch") {
  auto m = rb::random_model<rb::mlp>(12);
  const auto src = rb::random_model<rb::mlp>(13);
  named_tensors partial;
  partial.insert("fc1.weight", state_dict(src).at("fc1.weight"));
  partial.insert("extra.thing", any_tensor(dtype::f32, {1}));
  const load_result r = load_state_dict(m, partial, false);
  CHECK(r.missing_keys == std::vector<std::string>{"fc1.bias", "fc2.weight", "fc2.bias"});
  CHECK(r.unexpected_keys == std::vector<std::string>{"extra.thing"});
  CHECK(rb::same_bits(state_dict(m).at("fc1.weight"), state_dict(src).at("fc1.weight")));
  CHECK(!rb::same_bits(state_dict(m).at("fc2.weight"), state_dict(src).at("fc2.weight")));
  // strict: both lists in one message, nothing loaded
  auto n = rb::random_model<rb::mlp>(14);
  const any_tensor before = state_dict(n).at("fc1.weight").clone();
  const std::string msg = message_of<argument_error>([&] { load_state_dict(n, partial); });
  CHECK(contains(msg, "missing keys: 'fc1.bias', 'fc2.weight', 'fc2.bias'; unexpected keys: 'extra.thing'"));
  CHECK(rb::same_bits(state_dict(n).at("fc1.weight"), before));
  // a dtype mismatch is a dtype_error
  named_tensors wrong_dtype;
  for (const auto& [k, t] : state_dict(src)) wrong_dtype.insert(k, k == "fc2.bias" ? any_tensor(dtype::f64, {4}) : t);
  CHECK(contains(message_of<dtype_error>([&] { load_state_dict(n, wrong_dtype); }), "'fc2.bias' is f32[4] in the module but f64[4] in the state dict"));
}

namespace {
struct dyn_param {
  parameter<f32, dyn> w{tensor<f32, dyn>({2})};
  template <class X>
  auto operator()(const X& x) const {
    return add(x, 1.0);
  }
};
}  // namespace
BOOST_HANA_ADAPT_STRUCT(dyn_param, w);

TEST_CASE("9. a parameter with a dyn dim is a user-facing export error, and misaligned data is refused") {
  const tensor<f32, fix<2>> x({2});
  CHECK(contains(message_of<argument_error>([&] { (void)export_program(dyn_param{}, x); }),
                 "the module's tensor 'w' has the type tensor<f32[?]>, with a dynamic dim"));
  const storage s(64);
  CHECK(contains(message_of<argument_error>([&] { any_tensor(dtype::f32, {4}, storage::view(s, 2, 16)); }),
                 "the storage's address is not aligned to f32's 4 bytes"));
  CHECK_NOTHROW(any_tensor(dtype::f32, {4}, storage::view(s, 4, 16)));
  CHECK_NOTHROW(any_tensor(dtype::u8, {4}, storage::view(s, 3, 4)));
}
