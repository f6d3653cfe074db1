// The op registry (ops/op.hpp, ops/all.hpp): op identity, look-up by name, user-defined ops through
// the same mechanism as the built-in ones, and the result dtypes of the unary ops.
#include "../support.hpp"

#include <typex/backend/eigen.hpp>
#include <typex/typex.hpp>

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

TEST_CASE("registry: unary ops give PyTorch's dtypes when run (exp of i64 is f32; relu of i64 stays i64)") {
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
