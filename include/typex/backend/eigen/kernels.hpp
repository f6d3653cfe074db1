// typex/backend/eigen/kernels.hpp — the Eigen backend's kernels, one per op, on type-erased tensors.
//
// A kernel reads the arguments of one call by the names of the op's schema (kernel_args, which is
// ir::call_args: a.tensor("input"), a.real("alpha"), a.ints("dim"); ops/schema.hpp), or, for an op that declares
// no schema, by position; and returns a new contiguous tensor; it checks what it relies on
// (ranks, extents, index ranges) and throws a typex error naming the op otherwise. Eager calls and
// the program runner use the same kernels: eager mode builds the arguments from a typed call,
// the runner from a graph node.
//
// Kernels are keyed by op type: typex::eigen::kernel<Op> (specialized per op, with
// `static any_tensor run(const kernel_args&)`). The backend's table is built from the op registry
// (ops/all.hpp: builtin_ops), so a registered op without a kernel is a build error that names it;
// a user-defined op joins the same table with register_kernel<Op>(). find_kernel(op_id) looks up.
//
// This header declares them and does not include Eigen; kernels_impl.hpp defines them. Where the
// definitions are compiled is the user's choice (see config.hpp, TYPEX_EIGEN_SEPARATE_COMPILATION):
// in every unit that includes <typex/backend/eigen.hpp> (header-only, the default), or once, in
// the typex::eigen library (or one unit of the user's that defines TYPEX_EIGEN_IMPLEMENTATION).
#pragma once

#include <typex/core/symbol_table.hpp>
#include <typex/ir/call.hpp>
#include <typex/ir/graph.hpp>
#include <typex/ops/all.hpp>
#include <typex/tensor/host_tensor.hpp>

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace typex::eigen {

// The arguments of one op call, as a kernel reads them (ir/call.hpp: by the schema's names).
using kernel_args = ir::call_args;
using ir::arg_name;

using kernel_fn = any_tensor (*)(const kernel_args&);

namespace detail {
template <class Op>
struct no_kernel_sentence {
  template <class W>
  constexpr void operator()(W& w) const {
    w.put("typex::eigen: no kernel for ");
    if constexpr (requires { std::string_view(Op::target); }) w.put(Op::target);
    else w.put("this op");
    w.put(": specialize typex::eigen::kernel<Op> with `static any_tensor run(const typex::eigen::kernel_args&)` "
          "(docs/ops_and_backends.md, \"Your own op\")");
  }
};
}  // namespace detail

// The Eigen backend's kernel for op type Op. A specialization provides
//   static any_tensor run(const kernel_args& args);
// (the built-in ones are in kernels_impl.hpp). An error here means: this op has no Eigen kernel;
// the sentence names its ATen target. Specialize typex::eigen::kernel<YourOp>, or, for an op of the
// registry, write its kernel next to its family's in backend/eigen/kernels_impl.hpp.
template <class Op>
struct kernel {
  using failure [[maybe_unused]] = decltype(sizeof(
      typex::detail::static_failure<typex::detail::sentence_kind::type, detail::no_kernel_sentence<Op>>));
  static any_tensor run(const kernel_args&);  // (declared only: no second error after the sentence)
};

// The kernel for an op, or nullptr.
TYPEX_EIGEN_API kernel_fn find_kernel(op_id op);
// Whether the backend runs a call node (the backend kit's question, asked of every node of a
// program before anything is planned: backend/kit/engine.hpp).
TYPEX_EIGEN_API bool supports(const ir::node& node);

// Every op the backend runs: the registry's, in its order, then the ones users registered. The
// parity test (tests/unit/backend/parity.cpp) iterates it, so that no kernel goes without a
// PyTorch reference.
TYPEX_EIGEN_API std::vector<op_id> kernel_ops();

namespace detail {
TYPEX_EIGEN_API void add_kernel(op_id op, kernel_fn fn);
}  // namespace detail

// Gives a user-defined op its Eigen kernel (kernel<Op>::run) and makes it known by name
// (register_op<Op>): eager calls and programs then run it like a built-in op. Idempotent and
// thread-safe; call it before the first program that uses the op is compiled. The built-in ops go
// through the same table, from the registry.
template <op_type Op>
void register_kernel() {
  register_op<Op>();
  detail::add_kernel(op_id_of<Op>, &kernel<Op>::run);
}

// typex::manual_seed (core/random.hpp), under its earlier name: seeds the calling thread's stream,
// which dropout draws from.
TYPEX_EIGEN_API void manual_seed(std::uint64_t seed);

// Runs the kernel for `target`; an op the backend does not run throws typex::unsupported_error.
TYPEX_EIGEN_API any_tensor run_kernel(const kernel_args& a);

}  // namespace typex::eigen

#include <typex/backend/eigen/plan.hpp>  // (threads and planned programs: declarations)

// Header-only (the default): the definitions come with the declarations.
#if !defined(TYPEX_EIGEN_SEPARATE_COMPILATION) || defined(TYPEX_EIGEN_IMPLEMENTATION)
#include <typex/backend/eigen/kernels_impl.hpp>
#endif
