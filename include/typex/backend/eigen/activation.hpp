// typex/backend/eigen/activation.hpp — activations for the Eigen backend's fusion rule, a user's too.
//
// An activation is an op of activation_op (gemm.hpp): a unary pointwise op with
// `static constexpr bool epilogue = true` and its math written once over a math policy. The
// planner fuses it into the GEMM / convolution before it, chains it after pointwise ops and gives
// it a vectorised step. To do that from a graph node it needs the node's activation: a decoder
// per op, in the backend's table. The built-in activations are there from the registry; a user's
// joins with register_activation<Op>(), called from a unit that includes this header (the
// activation's vector math is compiled there, so this header includes Eigen).
#pragma once

#include <typex/backend/eigen/gemm.hpp>

namespace typex::ir {
class call_args;
}

namespace typex::eigen {

using kernel_args = ir::call_args;

namespace detail {
inline namespace TYPEX_SIMD_ABI {  // (what follows is compiled per vector width, as gemm.hpp's activation)
// The op of a recorded call: its attributes decoded (Op::from_arguments), or Op{} for an op without any.
template <class Op>
Op decode_op(const kernel_args& a) {
  if constexpr (requires { Op::from_arguments(a); }) return Op::from_arguments(a);
  else return Op{};
}

// The activation a call computes: the fusion rule's table, keyed by op id, holds one per activation
// op. (As activation_fns: the table lives in the library, which may be compiled for another vector
// width than the unit that registers a user's activation.)
using activation_decoder = activation_fns (*)(const kernel_args&);
template <class Op>
activation_fns decode_activation(const kernel_args& a) {
  return activation::of(decode_op<Op>(a)).fns();
}
}  // namespace TYPEX_SIMD_ABI

TYPEX_EIGEN_API void add_activation(op_id op, activation_decoder decode);
}  // namespace detail

}  // namespace typex::eigen

// (after the declarations above: in a header-only build this brings the kernels, which use them)
#include <typex/backend/eigen/kernels.hpp>

namespace typex::eigen {

// Gives a user-defined activation op its kernel (register_kernel<Op>) and its place in the fusion
// rule: programs then run it in the epilogue of the linear / conv2d before it, in pointwise chains
// and as a vectorised step, exactly as the built-in activations. Idempotent and thread-safe; call
// it before the programs that should fuse it are compiled.
// (An error "constraints not satisfied" here: Op is not an activation — it needs
// `static constexpr bool epilogue = true` and `math(m, x, y)` over a math policy, see ops/unary.hpp.)
template <class Op>
  requires detail::activation_op<Op>
void register_activation() {
  register_kernel<Op>();
  detail::add_activation(op_id_of<Op>, &detail::decode_activation<Op>);
}

}  // namespace typex::eigen
