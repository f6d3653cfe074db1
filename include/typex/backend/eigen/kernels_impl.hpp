// typex/backend/eigen/kernels_impl.hpp — the Eigen backend's kernels, defined.
//
// One kernel per ATen target on type-erased tensors (declared in kernels.hpp), defined by family
// in backend/eigen/kernels/ (common, pointwise, linear, views, reduce, normalization, conv,
// selection, nn, factory), registered here: one line per op, the table built from the registry. GEMMs and
// convolutions go through the backend's own blocked product (gemm.hpp); the hot pointwise and row
// ops (activations, softmax, layer_norm) are vectorised with Eigen's array math, in functions that
// the planned programs (plan_impl.hpp) call too. <typex/backend/eigen.hpp> includes this header
// unless TYPEX_EIGEN_SEPARATE_COMPILATION says the kernels are compiled elsewhere.
#pragma once

#include <typex/backend/eigen/activation.hpp>
#include <typex/backend/eigen/gemm.hpp>
#include <typex/backend/eigen/kernels.hpp>
#include <typex/backend/eigen/plan.hpp>
#include <typex/backend/kit/registry.hpp>
#include <typex/core/half.hpp>
#include <typex/core/random.hpp>
#include <typex/core/rules/conv.hpp>
#include <typex/ir/typed_call.hpp>
#include <typex/ops/all.hpp>
#include <typex/plan/planner.hpp>

#include <Eigen/Core>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <optional>
#include <type_traits>
#include <unordered_map>

// The kernels, by op family (each file uses the ones before it; none is included on its own). Each
// family ends with its ops' kernel lines: TYPEX_EIGEN_KERNEL(relu_op, detail::unary<relu_op>)
// specializes kernel<relu_op> to run that function.
#define TYPEX_EIGEN_KERNEL_FAMILIES
#define TYPEX_EIGEN_KERNEL(OP, ...) \
  template <>                     \
  struct kernel<OP> {             \
    static any_tensor run(const kernel_args& a) { return __VA_ARGS__(a); } \
  }
#include <typex/backend/eigen/kernels/common.hpp>
#include <typex/backend/eigen/kernels/pointwise.hpp>
#include <typex/backend/eigen/kernels/linear.hpp>
#include <typex/backend/eigen/kernels/views.hpp>
#include <typex/backend/eigen/kernels/reduce.hpp>
#include <typex/backend/eigen/kernels/normalization.hpp>
#include <typex/backend/eigen/kernels/conv.hpp>
#include <typex/backend/eigen/kernels/selection.hpp>
#include <typex/backend/eigen/kernels/nn.hpp>
#include <typex/backend/eigen/kernels/factory.hpp>

namespace typex::eigen {

namespace detail {
// The kernel table (the backend kit's registry, backend/kit/registry.hpp): every op of the
// registry (a missing kernel<Op> fails to compile here, naming the op), then those registered by
// users. Activations (activation_op) also get the fusion rule's entry: how to make their activation
// from a call (a user's: register_activation<Op>).
struct kernel_table {
  kit::kernel_registry<kernel_fn> kernels;
  kit::kernel_registry<activation_decoder> activations;

  kernel_table() {
    for_each_op(builtin_ops{}, [&](auto type) {
      using Op = typename decltype(type)::type;
      kernels.add(op_id_of<Op>, &kernel<Op>::run);
      if constexpr (activation_op<Op>) activations.add(op_id_of<Op>, &decode_activation<Op>);
    });
  }
};
inline kernel_table& kernels() {
  static kernel_table t;
  return t;
}

// The activation node `args` calls (the null activation where its op is not one). (Planning only.)
inline activation activation_of(const kernel_args& args) {
  const activation_decoder decode = kernels().activations.find(args.op());
  return decode != nullptr ? activation(decode(args)) : activation{};
}

TYPEX_EIGEN_API void add_kernel(op_id op, kernel_fn fn) { kernels().kernels.add(op, fn); }

TYPEX_EIGEN_API void add_activation(op_id op, activation_decoder decode) { kernels().activations.add(op, decode); }
}  // namespace detail

TYPEX_EIGEN_API kernel_fn find_kernel(op_id op) { return detail::kernels().kernels.find(op); }

TYPEX_EIGEN_API bool supports(const ir::node& node) { return find_kernel(node.target) != nullptr; }

TYPEX_EIGEN_API void manual_seed(std::uint64_t seed) { typex::manual_seed(seed); }

TYPEX_EIGEN_API std::vector<op_id> kernel_ops() { return detail::kernels().kernels.ops(); }

TYPEX_EIGEN_API any_tensor run_kernel(const kernel_args& a) {
  const kernel_fn k = find_kernel(a.op());
  if (k == nullptr) {
    typex::detail::raise<unsupported_error>([&](auto& w) {
      w.put("typex::eigen: no kernel for "); w.put(a.target());
    });
  }
  return k(a);
}

}  // namespace typex::eigen

#include <typex/backend/eigen/plan_impl.hpp>
