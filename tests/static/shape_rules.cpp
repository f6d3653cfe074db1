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
