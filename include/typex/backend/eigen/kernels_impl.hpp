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
#include <typex/core/half.hpp>
#include <typex/core/random.hpp>
#include <typex/core/rules/conv.hpp>
#include <typex/ir/typed_call.hpp>
#include <typex/ops/all.hpp>
#include <typex/plan/planner.hpp>

#include <Eigen/Core>

#include <algorithm>
#include <array>
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
// The kernel table: every op of the registry (a missing kernel<Op> fails to compile here, naming
// the op), then those registered by users. Activations (activation_op) also get the fusion
// rule's entry: how to make their activation from a call (a user's: register_activation<Op>).
struct kernel_table {
  std::mutex mutex;  // (look-ups and registrations; a user may register while another thread plans)
  std::unordered_map<op_id, kernel_fn> kernels;
  std::unordered_map<op_id, activation_decoder> activations;
  std::vector<op_id> order;

  kernel_table() {
    for_each_op(builtin_ops{}, [&](auto type) {
      using Op = typename decltype(type)::type;
      add(op_id_of<Op>, &kernel<Op>::run);
      if constexpr (activation_op<Op>) activations.emplace(op_id_of<Op>, &decode_activation<Op>);
    });
  }
  void add(op_id op, kernel_fn fn) {
    if (kernels.emplace(op, fn).second) order.push_back(op);
  }
};
inline kernel_table& kernels() {
  static kernel_table t;
  return t;
}

// The activation node `args` calls (the null activation where its op is not one). (Planning only.)
inline activation activation_of(const kernel_args& args) {
  kernel_table& t = kernels();
  activation_decoder decode = nullptr;
  {
    const std::lock_guard lock(t.mutex);
    const auto it = t.activations.find(args.op());
    if (it != t.activations.end()) decode = it->second;
  }
  return decode != nullptr ? activation(decode(args)) : activation{};
}

TYPEX_EIGEN_API void add_kernel(op_id op, kernel_fn fn) {
  kernel_table& t = kernels();
  const std::lock_guard lock(t.mutex);
  t.add(op, fn);
}

TYPEX_EIGEN_API void add_activation(op_id op, activation_decoder decode) {
  kernel_table& t = kernels();
  const std::lock_guard lock(t.mutex);
  t.activations.emplace(op, decode);
}
}  // namespace detail

TYPEX_EIGEN_API kernel_fn find_kernel(op_id op) {
  detail::kernel_table& t = detail::kernels();
  const std::lock_guard lock(t.mutex);
  const auto it = t.kernels.find(op);
  return it == t.kernels.end() ? nullptr : it->second;
}

TYPEX_EIGEN_API void manual_seed(std::uint64_t seed) { typex::manual_seed(seed); }

TYPEX_EIGEN_API std::vector<op_id> kernel_ops() {
  detail::kernel_table& t = detail::kernels();
  const std::lock_guard lock(t.mutex);
  return t.order;
}

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
