// typex/backend/cuda/kernels/pointwise.cuh — the pointwise chain interpreter: the fusion of the
// planner's pointwise chains, one kernel for every chain.
//
// A chain is a small program in the kernel's parameters (launch.hpp: chain_params): a starting
// operand, then up to max_links links applied in order to a running value y, per output element.
// Unary links run the registry op's own scalar math (ops/unary.hpp: op.math(m, x, y)) with the
// device math policy below, so the GPU, the emulator and the Eigen backend compute one formula;
// binary links add / subtract / multiply / divide by a broadcast tensor operand or a number. No
// code is generated at run time: the emulator runs exactly what the GPU runs.
#pragma once

#include <typex/backend/cuda/kernel_api.cuh>
#include <typex/backend/cuda/launch.hpp>

#include <cstdint>
#include <cstring>

namespace typex::cuda {

// The math policy of ops' math on the device (ops/unary.hpp's scalar_math, with the device's
// functions): k(v) is the constant v in T; max / min keep a NaN x, as torch's relu and clamp do.
template <class T>
struct device_math {
  using scalar_type = T;
  TYPEX_DEVICE static T k(double v) { return static_cast<T>(v); }
  TYPEX_DEVICE static T exp(T x) { return math::exp(x); }
  TYPEX_DEVICE static T log(T x) { return math::log(x); }
  TYPEX_DEVICE static T log1p(T x) { return math::log1p(x); }
  TYPEX_DEVICE static T sqrt(T x) { return math::sqrt(x); }
  TYPEX_DEVICE static T sin(T x) { return math::sin(x); }
  TYPEX_DEVICE static T cos(T x) { return math::cos(x); }
  TYPEX_DEVICE static T tanh(T x) { return math::tanh(x); }
  TYPEX_DEVICE static T erf(T x) { return math::erf(x); }
  TYPEX_DEVICE static T abs(T x) { return math::abs(x); }
  TYPEX_DEVICE static T max(T x, T c) { return x < c ? c : x; }
  TYPEX_DEVICE static T min(T x, T c) { return c < x ? c : x; }
};

namespace kernels {
inline namespace TYPEX_CUDA_ABI {  // (kernel_api.cuh: native or emulated)

namespace detail {
// y = Op's math of x, Op's attributes copied from the link's bytes.
template <class Op, class T>
TYPEX_DEVICE void run_unary(const unsigned char* bytes, T x, T& y) {
  Op op;
  std::memcpy(static_cast<void*>(&op), bytes, sizeof(Op));
  op.math(device_math<T>{}, x, y);
}
// The link's op by its code: a chain of comparisons the compiler turns into a jump table.
template <class T, class... Ops>
TYPEX_DEVICE T apply_unary(op_list<Ops...>, int code, const unsigned char* bytes, T x) {
  T y = x;
  int i = 0;
  (void)((code == i++ ? (run_unary<Ops>(bytes, x, y), true) : false) || ...);
  return y;
}
template <class T>
TYPEX_DEVICE T apply_binary(const chain_link& link, T y, T b) {
  const T first = link.chain_second ? b : y;
  const T second = link.chain_second ? y : b;
  switch (link.kind) {
    case link_kind::add: return first + static_cast<T>(link.alpha) * second;
    case link_kind::sub: return first - static_cast<T>(link.alpha) * second;
    case link_kind::mul: return first * second;
    case link_kind::div: return first / second;
    case link_kind::unary: break;
  }
  return y;
}
}  // namespace detail

// One thread per output element, grid-stride (launch geometry: chain_launch).
template <class T>
TYPEX_GLOBAL void chain_kernel(const TYPEX_GRID_CONSTANT chain_params p) {
  const std::int64_t step = static_cast<std::int64_t>(block_dim().x) * grid_dim().x;
  for (std::int64_t i = static_cast<std::int64_t>(block_idx().x) * block_dim().x + thread_idx().x; i < p.n; i += step) {
    // the output coordinates of i (row-major); the loops have constant bounds and unroll, so the
    // coordinates stay in registers (an array of per-operand offsets indexed by a link's operand
    // would not: nvcc turns that into local memory)
    std::int64_t coord[max_rank] = {};
    std::int64_t rest = i;
    TYPEX_DEVICE_UNROLL
    for (int d = max_rank - 1; d >= 0; --d) {
      if (d < p.rank) {
        coord[d] = rest % p.extent[d];
        rest /= p.extent[d];
      }
    }
    const auto value = [&](const chain_operand& o) {
      std::int64_t offset = 0;
      TYPEX_DEVICE_UNROLL
      for (int d = 0; d < max_rank; ++d)
        if (d < p.rank) offset += coord[d] * o.stride[d];
      return static_cast<const T*>(o.data)[offset];
    };
    T y = value(p.operands[0]);
    for (int l = 0; l < p.n_links; ++l) {
      const chain_link& link = p.links[l];
      if (link.kind == link_kind::unary)
        y = detail::apply_unary<T>(chain_unary_ops{}, link.code, link.op, y);
      else
        y = detail::apply_binary(link, y, link.operand >= 0 ? value(p.operands[link.operand]) : static_cast<T>(link.number));
    }
    static_cast<T*>(p.out)[i] = y;
  }
}

}  // inline namespace TYPEX_CUDA_ABI
}  // namespace kernels
}  // namespace typex::cuda
