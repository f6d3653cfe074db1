// static_assert-only: every shape rule evaluated in a constant expression, static shapes throughout.
// Compiling this file is the test.
#include <typex/typex.hpp>

namespace {
using namespace typex;
template <class A, class B>
constexpr bool same = std::is_same_v<std::remove_cvref_t<A>, std::remove_cvref_t<B>>;

// The rules are constexpr: values, not only types, are available at compile time.
constexpr auto mm = matmul_shape(shape_c<32, 784>{}, shape_c<784, 512>{});
static_assert(same<decltype(mm), shape_c<32, 512>> && mm.numel() == 32 * 512);
static_assert(same<decltype(broadcast_shapes(shape_c<8, 1, 6, 1>{}, shape_c<7, 1, 5>{})), shape_c<8, 7, 6, 5>>);
static_assert(same<decltype(broadcast_shapes(shape_c<0>{}, shape_c<1>{})), shape_c<0>>);
static_assert(same<decltype(reduce_shape<true>(shape_c<2, 3>{})), shape_c<1, 1>>);
static_assert(same<decltype(reshape_shape(shape_c<4, 6>{}, reshape_to(fix<2>{}, infer, fix<3>{}))), shape_c<2, 4, 3>>);
static_assert(same<decltype(flatten_shape<-2>(shape_c<2, 3, 4>{})), shape_c<2, 12>>);
static_assert(same<decltype(permute_shape<0, 2, 3, 1>(shape_c<8, 3, 32, 32>{})), shape_c<8, 32, 32, 3>>);
static_assert(same<decltype(concat_shapes<0>(shape_c<1, 4>{}, shape_c<2, 4>{})), shape_c<3, 4>>);
static_assert(same<decltype(slice_shape<0, 0, 5, 2>(shape_c<10>{})), shape_c<3>>);
static_assert(same<decltype(pool2d_shape<pool2d_options{.kernel = {2, 2}}>(shape_c<3, 7, 7>{})), shape_c<3, 3, 3>>);

// dtype promotion and tags
static_assert(same<promote_t<b8, u8>, u8> && same<promote_t<bf16, f16>, f32> && same<promote_t<i64, f32>, f32>);

// pytree structure is a type: leaf counts are constants
static_assert(static_leaf_count_v<std::tuple<float, std::array<std::pair<int, int>, 3>>> == 7);
static_assert(!is_static_tree_v<std::tuple<std::vector<float>>>);

// derived dims: ranges by interval arithmetic
using seq = sym<"seq", 1, 512>;
static_assert(dim_add_t<dim_mul_t<fix<2>, seq>, fix<1>>::lo == 3 && dim_add_t<dim_mul_t<fix<2>, seq>, fix<1>>::hi == 1025);
static_assert(dim_floordiv_t<seq, fix<2>>::lo == 0 && dim_floordiv_t<seq, fix<2>>::hi == 256);
}  // namespace

// Symbolic values work in constant expressions too: the run-time half of a rule runs at compile
// time (a failing check there stops compilation, since the throwing path is not constexpr).
namespace {
using batch = typex::sym<"batch", 1, 64>;
constexpr auto bs = typex::broadcast_shapes(typex::shape<batch, typex::fix<1>>(batch(4), {}), typex::shape_c<4, 3>{});
static_assert(same<decltype(bs), typex::shape_c<4, 3>> && bs.numel() == 12);
constexpr auto mm2 = typex::matmul_shape(typex::shape<batch, typex::dyn>(batch(2), typex::dyn(5)), typex::shape_c<5, 7>{});
static_assert(mm2.extent(0) == 2 && mm2.extent(1) == 7);
}  // namespace

// dtype rules (core/rules/dtypes.hpp): torch.result_type with scalars, and PyTorch's refusals.
namespace {
using namespace typex;
static_assert(result_type({dtype::b8}, scalar_operand<int>()) == dtype::i64);    // bool tensor + 2: i64
static_assert(result_type({dtype::i32}, scalar_operand<double>()) == dtype::f32);  // int tensor * 1.5: f32
static_assert(result_type({dtype::f16}, scalar_operand<double>()) == dtype::f16);  // a scalar never widens a float
static_assert(result_type({dtype::u8}, scalar_operand<bool>()) == dtype::u8);
static_assert(sub_dtypes({dtype::b8}, {dtype::b8}).refusal == dtype_refusal::sub_two_bools);
static_assert(sub_dtypes(scalar_operand<int>(), {dtype::b8}).refusal == dtype_refusal::sub_bool);  // 1 - mask
static_assert(matmul_dtypes(dtype::f64, dtype::f32).refusal == dtype_refusal::m1_m2);
static_assert(matmul_dtypes(dtype::f64, dtype::f32).result == dtype::f64);  // (what the rest of the model gets)
static_assert(matmul_dtypes(dtype::i64, dtype::i64).ok() && bmm_dtypes(dtype::b8, dtype::b8).refusal == dtype_refusal::bool_bmm);
static_assert(same<decltype(typex::mul_op::result(tensor_spec<b8, shape_c<2>>{}, 2)), tensor_spec<i64, shape_c<2>>>);
}  // namespace

// A layer's own input check (nn/module_input.hpp): what refutes it, and the input it is given
// instead after the error (the rest of the model then sees the shapes it was written for).
namespace {
using namespace typex;
using x512 = traced<f32, shape<batch, fix<512>>>;
static_assert(detail::refutes<nn::Linear<256, 10>, x512>() && !detail::refutes<nn::Linear<512, 10>, x512>());
static_assert(!detail::refutes<nn::Linear<256, 10>, traced<f32, shape<batch, dyn>>>());       // run-time: the op checks
static_assert(!detail::refutes<nn::Linear<256, 10>, traced<f32, shape<batch, batch>>>());     // symbolic: the op checks its range
static_assert(same<detail::fitted_t<nn::Linear<256, 10>, x512>, traced<f32, shape<batch, fix<256>>>>);
// a forgotten flatten: [N, 32, 13, 13] into Linear<5408, ...> is fitted as [N, 5408], the shape meant
static_assert(same<detail::fitted_t<nn::Linear<5408, 10>, host_tensor<f32, shape<batch, fix<32>, fix<13>, fix<13>>>>,
                   host_tensor<f32, shape<batch, fix<5408>>>>);
static_assert(detail::refutes<nn::Conv2d<16, 32, 3>, host_tensor<f32, shape_c<2, 8, 9, 9>>>());
static_assert(same<detail::fitted_t<nn::Conv2d<16, 32, 3>, host_tensor<f32, shape_c<2, 8, 9, 9>>>, host_tensor<f32, shape_c<2, 16, 9, 9>>>);
}  // namespace
