// The op registry (ops/op.hpp, ops/all.hpp): op identity, look-up by name, user-defined ops through
// the same mechanism as the built-in ones, and the result dtypes of the unary ops.
#include "../support.hpp"

#include <typex/backend/eigen.hpp>
#include <typex/ir/verifier.hpp>
#include <typex/typex.hpp>

#include <charconv>
#include <cmath>
#include <thread>

using namespace typex;

namespace {
// A user-defined op: y = x * factor + 1, with an attribute, a kernel, registered once.
struct affine_op {
  static constexpr std::string_view target = "mylib.affine.default";
};
struct unknown_op {  // an op that no one gave a kernel
  static constexpr std::string_view target = "mylib.unknown.default";
};
}  // namespace

template <>
struct typex::eigen::kernel<affine_op> {
  static any_tensor run(const kernel_args& a) {
    const double factor = a.real(1);
    any_tensor out = a.tensor(0).clone();
    for (index_t i = 0; i < out.numel(); ++i) out.data<float>()[i] = static_cast<float>(out.data<float>()[i] * factor + 1.0);
    return out;
  }
};

// ids are constants: the planner's tests are pointer comparisons, usable in constant expressions
static_assert(op_id_of<relu_op> != op_id_of<gelu_op>);
static_assert(op_id_of<relu_op>.name() == "aten.relu.default");
static_assert(op_id_of<conv2d_op<conv2d_options{}>> == op_id_of<aten::conv2d>);
static_assert(op_id_of<conv2d_op<conv2d_options{.stride = {2, 2}}>> == op_id_of<aten::conv2d>);
static_assert(op_id_of<cat_op<0>> == op_id_of<cat_op<1>>);
static_assert(op_id_of<mm_op<2>> == op_id_of<aten::mm> && op_id_of<mm_op<3>> == op_id_of<aten::bmm>);
static_assert(op_id_of<aten::sum_dim_IntList>.short_name() == "sum");
static_assert(op_id_of<max_pool2d_backward_op>.short_name() == "max_pool2d_backward");  // (any namespace: typex.<op>.<overload>)
static_assert(!op_id{});

// PyTorch's result dtypes for the unary ops, in the types
using ti64 = tensor<i64, fix<3>>;
using tb8 = tensor<b8, fix<3>>;
static_assert(std::is_same_v<decltype(exp(std::declval<ti64>()))::dtype_type, f32>);
static_assert(std::is_same_v<decltype(sigmoid(std::declval<tb8>()))::dtype_type, f32>);
static_assert(std::is_same_v<decltype(sqrt(std::declval<tensor<f64, fix<3>>>()))::dtype_type, f64>);
static_assert(std::is_same_v<decltype(relu(std::declval<ti64>()))::dtype_type, i64>);
static_assert(std::is_same_v<decltype(neg(std::declval<tensor<i32, fix<3>>>()))::dtype_type, i32>);

TEST_CASE("registry: find_op knows every built-in op by its printed name, and nothing else") {
  CHECK(find_op("aten.linear.default") == op_id_of<linear_op>);
  CHECK(find_op("aten.hardswish.default") == op_id_of<hardswish_op>);
  CHECK(find_op("aten.conv2d.default") == op_id_of<conv2d_op<conv2d_options{}>>);
  CHECK_FALSE(find_op("aten.relu_.default"));  // in-place: never recorded
  CHECK_FALSE(find_op("aten.linear"));
  CHECK_FALSE(find_op(""));
  CHECK(registered_ops().size() >= builtin_ops::size);
}

TEST_CASE("registry: a user-defined op is registered, found by name, and runs like a built-in one") {
  CHECK_FALSE(find_op("mylib.affine.default"));
  const bool no_kernel_yet = eigen::find_kernel(op_id_of<affine_op>) == nullptr;
  CHECK(no_kernel_yet);
  // from several threads at once: registration is idempotent and thread-safe
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) threads.emplace_back([] { eigen::register_kernel<affine_op>(); });
  for (auto& t : threads) t.join();
  CHECK(find_op("mylib.affine.default") == op_id_of<affine_op>);
  const auto all = registered_ops();
  CHECK(std::count(all.begin(), all.end(), op_id_of<affine_op>) == 1);
  const auto kernels = eigen::kernel_ops();
  CHECK(std::count(kernels.begin(), kernels.end(), op_id_of<affine_op>) == 1);

  any_tensor x(dtype::f32, {3});
  for (index_t i = 0; i < 3; ++i) x.data<float>()[i] = static_cast<float>(i);
  const std::vector<ir::argument> args{ir::value_ref{0}, 2.5};
  const std::vector<const any_tensor*> tensors{&x, nullptr};
  const any_tensor y = eigen::run_kernel(eigen::kernel_args(find_op("mylib.affine.default"), args, tensors));
  CHECK(y.data<float>()[2] == doctest::Approx(6.0));
  // printed by its name in a graph
  ir::graph g;
  const auto p = g.add_placeholder("x", {dtype::f32, {3}});
  const auto c = g.add_call({.target = op_id_of<affine_op>, .args = {ir::value_ref{p}, 2.5}, .vals = {{dtype::f32, {3}}}});
  g.set_output({ir::value_ref{c}});
  CHECK(ir::print_readable(g).find("torch.ops.mylib.affine.default(x, 2.5)") != std::string::npos);
  // an op without a kernel is refused by name, with a typed error
  CHECK_THROWS_WITH_AS(eigen::run_kernel(eigen::kernel_args(op_id_of<unknown_op>, args, tensors)),
                       "typex::eigen: no kernel for mylib.unknown.default", unsupported_error);
}

TEST_CASE("registry: unary ops give PyTorch's dtypes when run (exp of i64 is f32, relu of i64 stays i64)") {
  const tensor<i64, fix<3>> n({3});
  for (index_t i = 0; i < 3; ++i) n.data()[i] = i;
  const auto e = exp(n);
  static_assert(std::is_same_v<decltype(e)::dtype_type, f32>);
  CHECK(e.erase().scalar_type() == dtype::f32);
  CHECK(e(2) == doctest::Approx(std::exp(2.0)).epsilon(1e-6));
  const auto r = relu(neg(n));
  CHECK(r.erase().scalar_type() == dtype::i64);
  CHECK(r(2) == 0);
  const tensor<f32, fix<5>> x({5});
  const float v[] = {-4.f, -3.f, 0.5f, 3.f, 4.f};
  for (index_t i = 0; i < 5; ++i) x.data()[i] = v[i];
  const auto h = hardswish(x);
  for (index_t i = 0; i < 5; ++i) {
    const double t = v[i];
    CHECK(h(i) == doctest::Approx(t * std::min(std::max(t + 3.0, 0.0), 6.0) / 6.0));
  }
}

// ---- argument schemas (ops/schema.hpp) --------------------------------------------------------------

// ATen's text, read at compile time
constexpr op_schema conv_schema = op_id_of<aten::conv2d>.schema();
static_assert(conv_schema.name == "aten::conv2d" && conv_schema.returns == "Tensor");
static_assert(conv_schema.args.size() == 7 && conv_schema.required() == 2);
static_assert(conv_schema.index("bias") == 2 && conv_schema.args[2].optional && conv_schema.args[2].default_text == "None");
static_assert(conv_schema.args[3].type == arg_type::int_list && conv_schema.args[3].list_size == 2);
static_assert(conv_schema.index("groups") == 6 && conv_schema.args[6].type == arg_type::integer);
static_assert(conv_schema.index("weights") == op_schema::npos);
static_assert(op_id_of<add_op>.schema().args[2].keyword_only && op_id_of<add_op>.schema().args[2].default_text == "1");
static_assert(op_id_of<aten::cat>.schema().args[0].type == arg_type::tensor_list);
static_assert(op_id_of<aten::view>.schema().args[0].type == arg_type::tensor && !op_id_of<aten::view>.schema().args[0].mutated);
static_assert(op_id_of<gelu_op>.schema().args[1].type == arg_type::string && op_id_of<gelu_op>.schema().args[1].default_text == "'none'");
static_assert(op_id_of<batch_norm_op>.schema().required() == 9);  // (ATen gives its Tensor? arguments no default)
// the schema names the op's overload: "aten::relu(...)" is "aten.relu.default"
static_assert(op_schema{.name = "aten::relu"}.names("aten.relu.default"));
static_assert(op_schema{.name = "aten::add.Tensor"}.names("aten.add.Tensor"));
static_assert(!op_schema{.name = "aten::add.Tensor"}.names("aten.add.default"));
static_assert(!op_schema{.name = "aten::add"}.names("aten.addmm.default"));
// a user op may declare none (its arguments are then read, and checked, by position only)
static_assert(op_id_of<affine_op>.schema().empty());

namespace {
struct mutate_op {  // the parser reads alias annotations
  static constexpr std::string_view target = "mylib.fill_.default";
  static constexpr std::string_view schema = "mylib::fill_(Tensor(a!) self, Scalar value, *, int? count=None) -> Tensor(a!)";
};
struct index_op {  // and lists of optional tensors (ATen's index.Tensor)
  static constexpr std::string_view target = "mylib.index.Tensor";
  static constexpr std::string_view schema = "mylib::index.Tensor(Tensor self, Tensor?[] indices) -> Tensor";
};
}  // namespace
static_assert(op_id_of<mutate_op>.schema().args[0].mutated && op_id_of<mutate_op>.schema().args[0].type == arg_type::tensor);
static_assert(op_id_of<mutate_op>.schema().args[2].keyword_only && op_id_of<mutate_op>.schema().args[2].optional);
static_assert(op_id_of<mutate_op>.schema().returns == "Tensor(a!)");
static_assert(op_id_of<index_op>.schema().args[1].type == arg_type::tensor_list && op_id_of<index_op>.schema().args[1].name == "indices");

TEST_CASE("schemas: every built-in op declares one, named as its target, with known argument types") {
  std::size_t n = 0;
  for_each_op(builtin_ops{}, [&](auto type) {
    using Op = typename decltype(type)::type;
    constexpr op_id id = op_id_of<Op>;
    INFO(id.name());
    REQUIRE_FALSE(id.schema().empty());
    CHECK(id.schema().names(id.name()));
    CHECK(id.schema().returns.size() > 0);
    for (const arg_spec& a : id.schema().args) {
      CHECK_FALSE(a.name.empty());
      // typex records nothing for devices and layouts: those must be optional (None)
      if (a.type == arg_type::other) CHECK(a.optional);
    }
    ++n;
  });
  CHECK(n == builtin_ops::size);
}

// (the constant-evaluated reading of defaults: exact for the forms schemas write)
static_assert(detail::schema_parse::parse_arg("float eps=1e-05", false).default_value == 1e-05);
static_assert(detail::schema_parse::parse_arg("Scalar alpha=1", false).default_value == 1.0);
static_assert(detail::schema_parse::parse_arg("int end_dim=-1", false).default_value == -1.0);
static_assert(detail::schema_parse::parse_arg("bool ceil_mode=False", false).number_default);
static_assert(detail::schema_parse::parse_arg("float negative_slope=0.01", false).default_value == 0.01);
static_assert(!detail::schema_parse::parse_arg("int[1]? dim=None", false).number_default);
static_assert(!detail::schema_parse::parse_arg("int[2] padding=[0,0]", false).number_default);
static_assert(!detail::schema_parse::parse_arg("str approximate=\"none\"", false).number_default);

TEST_CASE("schemas: every number default of every built-in schema is read at compile time as from_chars reads it") {
  std::size_t numbers = 0;
  for_each_op(builtin_ops{}, [&](auto type) {
    using Op = typename decltype(type)::type;
    for (const arg_spec& a : op_id_of<Op>.schema().args) {
      if (!a.has_default()) continue;
      INFO(op_id_of<Op>.name() << " " << a.name << "=" << a.default_text);
      const std::string_view d = a.default_text;
      double want = 0;
      bool is_number = d == "True" || d == "False";
      if (is_number) {
        want = d == "True";
      } else {
        const auto [end, ec] = std::from_chars(d.data(), d.data() + d.size(), want);
        is_number = ec == std::errc{} && end == d.data() + d.size();
      }
      CHECK(a.number_default == is_number);
      if (is_number) CHECK(a.default_value == want);
      numbers += is_number;
    }
  });
  CHECK(numbers > 20);
}

TEST_CASE("schemas: the verifier checks each call's arguments against its op's schema, and names the argument") {
  ir::graph g;
  const auto x = g.add_placeholder("x", {dtype::f32, {2, 3}});
  const auto w = g.add_placeholder("w", {dtype::f32, {4, 3}});
  const auto l = g.add_call({.target = op_id_of<linear_op>, .args = {ir::value_ref{x}, ir::value_ref{w}, ir::none_t{}},
                             .vals = {{dtype::f32, {2, 4}}}});
  const auto s = g.add_call({.target = op_id_of<aten::softmax_int>, .args = {ir::value_ref{l}, std::int64_t{1}},
                             .vals = {{dtype::f32, {2, 4}}}});
  g.set_output({ir::value_ref{s}});
  CHECK_NOTHROW(ir::verify(g));
  // trailing defaults may be left out; None only where the schema says `?`
  CHECK(ir::argument_mismatch(op_id_of<linear_op>, std::vector<ir::argument>{ir::value_ref{x}, ir::value_ref{w}}).empty());
  CHECK(ir::argument_mismatch(op_id_of<linear_op>, std::vector<ir::argument>{ir::value_ref{x}, ir::none_t{}}) ==
        "argument 1 (Tensor weight) is None (schema: aten::linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor)");
  CHECK(ir::argument_mismatch(op_id_of<linear_op>, std::vector<ir::argument>{ir::value_ref{x}}) ==
        "takes 2 to 3 arguments, the call gives 1 (schema: aten::linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor)");
  CHECK(ir::argument_mismatch(op_id_of<aten::softmax_int>, std::vector<ir::argument>{ir::value_ref{x}, 1.5}).starts_with(
      "argument 1 (int dim) is a float"));
  CHECK(ir::argument_mismatch(op_id_of<aten::conv2d>, std::vector<ir::argument>{ir::value_ref{x}, ir::value_ref{w}, ir::none_t{},
                                                                                  std::int64_t{2}})
            .empty());  // (int[2] stride=1: one int for both)
  CHECK(ir::argument_mismatch(op_id_of<add_op>, std::vector<ir::argument>{ir::value_ref{x}, 2.0}).empty());  // a wrapped number
  CHECK(ir::argument_mismatch(op_id_of<affine_op>, std::vector<ir::argument>{std::string("anything")}).empty());  // no schema

  ir::graph bad;
  const auto bx = bad.add_placeholder("x", {dtype::f32, {2, 3}});
  const auto bs = bad.add_call({.target = op_id_of<aten::softmax_int>, .args = {ir::value_ref{bx}, std::string("1")},
                                .vals = {{dtype::f32, {2, 3}}}});
  bad.set_output({ir::value_ref{bs}});
  CHECK(typex_test::message_of<ir::graph_error>([&] { ir::verify(bad); }) ==
        "typex::ir::verify: node 'softmax': aten.softmax.int: argument 1 (int dim) is a string "
        "(schema: aten::softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor)");
}

TEST_CASE("schemas: kernels read arguments by name, add's alpha means the same eagerly and in a planned program") {
  // y = x + 2.5 * w, then y - 0.5 * x (sub's alpha), as aten.add.Tensor / aten.sub.Tensor with alpha
  ir::graph g;
  const auto x = g.add_placeholder("x", {dtype::f32, {2, 3}});
  const auto w = g.add_placeholder("w", {dtype::f32, {2, 3}});
  const auto a = g.add_call({.target = op_id_of<add_op>, .args = {ir::value_ref{x}, ir::value_ref{w}, 2.5}, .vals = {{dtype::f32, {2, 3}}}});
  const auto s = g.add_call({.target = op_id_of<sub_op>, .args = {ir::value_ref{a}, ir::value_ref{x}, 0.5}, .vals = {{dtype::f32, {2, 3}}}});
  const auto n = g.add_call({.target = op_id_of<add_op>, .args = {ir::value_ref{s}, 1.0, std::int64_t{3}}, .vals = {{dtype::f32, {2, 3}}}});
  g.set_output({ir::value_ref{n}});
  const exported_program ep(std::move(g),
                            graph_signature({{input_kind::user_input, "x", ""}, {input_kind::user_input, "w", ""}},
                                            {{output_kind::user_output, "add_1", ""}}),
                            {}, {}, {}, {});
  any_tensor xv(dtype::f32, {2, 3}), wv(dtype::f32, {2, 3});
  for (index_t i = 0; i < 6; ++i) {
    xv.data<float>()[i] = 0.25f * float(i) - 0.5f;
    wv.data<float>()[i] = 1.0f - 0.375f * float(i);
  }
  // eagerly: the kernel reads alpha by name
  const std::vector<ir::argument> args{ir::value_ref{0}, ir::value_ref{1}, 2.5};
  const std::vector<const any_tensor*> tensors{&xv, &wv, nullptr};
  const any_tensor eager = eigen::run_kernel(eigen::kernel_args(op_id_of<add_op>, args, tensors));
  for (index_t i = 0; i < 6; ++i) CHECK(eager.data<float>()[i] == doctest::Approx(xv.data<float>()[i] + 2.5 * wv.data<float>()[i]));
  // integer tensors: an integral alpha only, as PyTorch
  any_tensor iv(dtype::i64, {2});
  iv.data<std::int64_t>()[0] = 3, iv.data<std::int64_t>()[1] = -4;
  const std::vector<const any_tensor*> ints{&iv, &iv, nullptr};
  const any_tensor ie = eigen::run_kernel(eigen::kernel_args(op_id_of<add_op>, std::vector<ir::argument>{ir::value_ref{0}, ir::value_ref{0}, std::int64_t{2}}, ints));
  CHECK(ie.data<std::int64_t>()[1] == -12);
  CHECK_THROWS_AS(eigen::run_kernel(eigen::kernel_args(op_id_of<add_op>, std::vector<ir::argument>{ir::value_ref{0}, ir::value_ref{0}, 0.5}, ints)),
                  argument_error);
  for (const double bad : {1e30, std::nan("")})  // (refused before it is converted to an integer)
    CHECK_THROWS_AS(eigen::run_kernel(eigen::kernel_args(op_id_of<add_op>, std::vector<ir::argument>{ir::value_ref{0}, ir::value_ref{0}, bad}, ints)),
                    argument_error);
  // planned (fused into a chain, and one step per op): the same numbers
  for (const bool fuse : {true, false}) {
    auto m = program_module<eigen_backend>(ep, eigen::compile_options{.fuse = fuse});
    const auto out = m({xv, wv});
    REQUIRE(out.size() == 1);
    for (index_t i = 0; i < 6; ++i) {
      const double xi = xv.data<float>()[i], wi = wv.data<float>()[i];
      CHECK(out[0].data<float>()[i] == doctest::Approx(xi + 2.5 * wi - 0.5 * xi + 3.0));
    }
  }
  // a kernel asking for a name its op's schema lacks: a typed error naming both
  CHECK_THROWS_WITH_AS(eigen::kernel_args(op_id_of<mul_op>, args, tensors).real("alpha"),
                       "aten.mul.Tensor: has no argument 'alpha' (schema: aten::mul.Tensor(Tensor self, Tensor other) -> Tensor)",
                       argument_error);
}
