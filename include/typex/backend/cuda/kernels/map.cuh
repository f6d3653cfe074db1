// typex/backend/cuda/kernels/map.cuh — elementwise ops of any dtype but f16 / bf16: comparisons and
// logic (bool results), where, maximum / minimum, pow, dtype conversion, integer arithmetic,
// threshold_backward, gelu_backward and the factories (fill, iota). One thread per output element (grid-stride);
// each operand is read at its own dtype and strides (broadcast) into the compute type, the result
// written at the output's dtype. torch's conventions: maximum / minimum propagate a NaN; a float
// converted to an integer is truncated toward zero; a value converted to bool is "not zero".
#pragma once

#include <typex/backend/cuda/kernel_api.cuh>
#include <typex/backend/cuda/kernels/pointwise.cuh>
#include <typex/backend/cuda/launch.hpp>
#include <typex/core/random.hpp>

#include <cstdint>
#include <type_traits>

namespace typex::cuda::kernels {
inline namespace TYPEX_CUDA_ABI {  // (kernel_api.cuh: native or emulated)

namespace detail {
template <class C>
TYPEX_DEVICE C map_load(const map_operand& o, std::int64_t offset) {
  if (o.data == nullptr) return static_cast<C>(o.number);
  switch (o.dt) {
    case map_dtype::b8: return static_cast<C>(static_cast<const bool*>(o.data)[offset] ? 1 : 0);
    case map_dtype::u8: return static_cast<C>(static_cast<const std::uint8_t*>(o.data)[offset]);
    case map_dtype::i8: return static_cast<C>(static_cast<const std::int8_t*>(o.data)[offset]);
    case map_dtype::i16: return static_cast<C>(static_cast<const std::int16_t*>(o.data)[offset]);
    case map_dtype::i32: return static_cast<C>(static_cast<const std::int32_t*>(o.data)[offset]);
    case map_dtype::i64: return static_cast<C>(static_cast<const std::int64_t*>(o.data)[offset]);
    case map_dtype::f32: return static_cast<C>(static_cast<const float*>(o.data)[offset]);
    case map_dtype::f64: return static_cast<C>(static_cast<const double*>(o.data)[offset]);
    default: break;  // (f16 / bf16: refused by map_launch)
  }
  return C{};
}
// (truth of a value of any dtype: a NaN is true, as torch's)
TYPEX_DEVICE bool map_truth(const map_operand& o, std::int64_t offset) {
  if (o.data == nullptr) return o.number != 0.0;
  switch (o.dt) {
    case map_dtype::f32: return static_cast<const float*>(o.data)[offset] != 0.0f;
    case map_dtype::f64: return static_cast<const double*>(o.data)[offset] != 0.0;
    default: return map_load<std::int64_t>(o, offset) != 0;
  }
}
template <class C>
TYPEX_DEVICE void map_store(void* out, map_dtype dt, std::int64_t i, C v) {
  switch (dt) {
    case map_dtype::b8: static_cast<bool*>(out)[i] = v != C{}; return;
    case map_dtype::u8: static_cast<std::uint8_t*>(out)[i] = static_cast<std::uint8_t>(v); return;
    case map_dtype::i8: static_cast<std::int8_t*>(out)[i] = static_cast<std::int8_t>(v); return;
    case map_dtype::i16: static_cast<std::int16_t*>(out)[i] = static_cast<std::int16_t>(v); return;
    case map_dtype::i32: static_cast<std::int32_t*>(out)[i] = static_cast<std::int32_t>(v); return;
    case map_dtype::i64: static_cast<std::int64_t*>(out)[i] = static_cast<std::int64_t>(v); return;
    case map_dtype::f32: static_cast<float*>(out)[i] = static_cast<float>(v); return;
    case map_dtype::f64: static_cast<double*>(out)[i] = static_cast<double>(v); return;
    default: return;
  }
}
template <class C>
TYPEX_DEVICE bool is_nan(C v) {
  return v != v;  // (false for integers)
}
// integer power by squaring (a negative exponent: 1 for a base of 1, +-1 for -1, else 0, as torch)
TYPEX_DEVICE std::int64_t int_pow(std::int64_t base, std::int64_t e) {
  if (e < 0) return base == 1 ? 1 : base == -1 ? (e % 2 == 0 ? 1 : -1) : 0;
  std::int64_t r = 1;
  while (e > 0) {
    if (e & 1) r *= base;
    base *= base;
    e >>= 1;
  }
  return r;
}
TYPEX_DEVICE float map_pow(float a, float b) { return math::pow(a, b); }
TYPEX_DEVICE double map_pow(double a, double b) { return math::pow(a, b); }
TYPEX_DEVICE std::int64_t map_pow(std::int64_t a, std::int64_t b) { return int_pow(a, b); }
}  // namespace detail

// Launch geometry: map_launch (elementwise). C: the compute type (float, double, int64).
template <class C>
TYPEX_GLOBAL void map_kernel(const TYPEX_GRID_CONSTANT map_params p) {
  const std::int64_t step = static_cast<std::int64_t>(block_dim().x) * grid_dim().x;
  for (std::int64_t i = static_cast<std::int64_t>(block_idx().x) * block_dim().x + thread_idx().x; i < p.n; i += step) {
    std::int64_t off0 = 0, off1 = 0, off2 = 0, rest = i;
    TYPEX_DEVICE_UNROLL
    for (int d = max_rank - 1; d >= 0; --d) {
      if (d < p.rank) {
        const std::int64_t c = rest % p.extent[d];
        off0 += c * p.operands[0].stride[d];
        off1 += c * p.operands[1].stride[d];
        off2 += c * p.operands[2].stride[d];
        rest /= p.extent[d];
      }
    }
    const map_operand& x0 = p.operands[0];
    const map_operand& x1 = p.operands[1];
    switch (p.op) {
      case map_op::fill: detail::map_store(p.out, p.out_dt, i, static_cast<C>(p.a)); break;
      case map_op::iota: {
        if constexpr (std::is_integral_v<C>) detail::map_store(p.out, p.out_dt, i, static_cast<C>(p.a) + static_cast<C>(i) * static_cast<C>(p.b));
        else detail::map_store(p.out, p.out_dt, i, static_cast<C>(p.a + static_cast<double>(i) * p.b));
        break;
      }
      case map_op::convert:
        if (p.out_dt == map_dtype::b8) detail::map_store(p.out, p.out_dt, i, detail::map_truth(x0, off0) ? C{1} : C{});
        else detail::map_store(p.out, p.out_dt, i, detail::map_load<C>(x0, off0));
        break;
      case map_op::logical_not: detail::map_store(p.out, p.out_dt, i, detail::map_truth(x0, off0) ? C{} : C{1}); break;
      case map_op::logical_and:
      case map_op::logical_or:
      case map_op::logical_xor: {
        const bool a = detail::map_truth(x0, off0), b = detail::map_truth(x1, off1);
        const bool r = p.op == map_op::logical_and ? (a && b) : p.op == map_op::logical_or ? (a || b) : (a != b);
        detail::map_store(p.out, p.out_dt, i, r ? C{1} : C{});
        break;
      }
      case map_op::where: {
        const bool c = detail::map_truth(x0, off0);
        detail::map_store(p.out, p.out_dt, i, c ? detail::map_load<C>(x1, off1) : detail::map_load<C>(p.operands[2], off2));
        break;
      }
      case map_op::threshold_backward: {
        const C x = detail::map_load<C>(x1, off1);
        // (0 where x <= threshold: a NaN x passes the gradient, as torch's)
        detail::map_store(p.out, p.out_dt, i, x <= static_cast<C>(p.a) ? C{} : detail::map_load<C>(x0, off0));
        break;
      }
      case map_op::gelu_backward: {
        if constexpr (!std::is_integral_v<C>) {
          const gelu_approximation form = p.a != 0.0 ? gelu_approximation::tanh : gelu_approximation::none;
          const C d = aten::gelu_backward::derivative(device_math<C>{}, detail::map_load<C>(x1, off1), form);
          detail::map_store(p.out, p.out_dt, i, static_cast<C>(detail::map_load<C>(x0, off0) * d));
        }
        break;
      }
      case map_op::clamp: {  // (a NaN stays NaN)
        C v = detail::map_load<C>(x0, off0);
        if (p.has_lo && v < static_cast<C>(p.a)) v = static_cast<C>(p.a);
        if (p.has_hi && v > static_cast<C>(p.b)) v = static_cast<C>(p.b);
        detail::map_store(p.out, p.out_dt, i, v);
        break;
      }
      case map_op::unary: {
        if constexpr (!std::is_integral_v<C>)
          detail::map_store(p.out, p.out_dt, i, detail::apply_unary<C>(chain_unary_ops{}, p.link.code, p.link.op, detail::map_load<C>(x0, off0)));
        break;
      }
      case map_op::tril:
      case map_op::triu: {
        const std::int64_t cols = p.rank >= 1 ? p.extent[p.rank - 1] : 1, rows = p.rank >= 2 ? p.extent[p.rank - 2] : 1;
        const std::int64_t diagonal = i % cols - i / cols % rows;
        const bool keep = p.op == map_op::tril ? diagonal <= static_cast<std::int64_t>(p.a) : diagonal >= static_cast<std::int64_t>(p.a);
        detail::map_store(p.out, p.out_dt, i, keep ? detail::map_load<C>(x0, off0) : C{});
        break;
      }
      case map_op::dropout_mask: {
        const rng_state d{p.draw[0], p.draw[1]};
        const auto w = draw_block(d, static_cast<std::uint64_t>(i) / 4);
        const std::int64_t j = i % 4;  // (selected, not indexed: a runtime index would put the words in local memory)
        const std::uint32_t word = j == 0 ? w[0] : j == 1 ? w[1] : j == 2 ? w[2] : w[3];
        detail::map_store(p.out, p.out_dt, i, word < p.threshold ? static_cast<C>(p.a) : C{});
        break;
      }
      case map_op::neg: detail::map_store(p.out, p.out_dt, i, static_cast<C>(-detail::map_load<C>(x0, off0))); break;
      case map_op::abs: {
        const C v = detail::map_load<C>(x0, off0);
        detail::map_store(p.out, p.out_dt, i, v < C{} ? static_cast<C>(-v) : v);
        break;
      }
      default: {  // binary
        const C a = detail::map_load<C>(x0, off0), b = detail::map_load<C>(x1, off1);
        bool r = false;
        C v{};
        switch (p.op) {
          case map_op::eq: r = a == b; break;
          case map_op::ne: r = a != b; break;
          case map_op::lt: r = a < b; break;
          case map_op::le: r = a <= b; break;
          case map_op::gt: r = a > b; break;
          case map_op::ge: r = a >= b; break;
          case map_op::maximum: v = detail::is_nan(a) || detail::is_nan(b) ? static_cast<C>(a + b) : (a < b ? b : a); break;
          case map_op::minimum: v = detail::is_nan(a) || detail::is_nan(b) ? static_cast<C>(a + b) : (b < a ? b : a); break;
          case map_op::pow: v = detail::map_pow(a, b); break;
          case map_op::add: v = static_cast<C>(a + static_cast<C>(p.alpha) * b); break;
          case map_op::sub: v = static_cast<C>(a - static_cast<C>(p.alpha) * b); break;
          case map_op::mul: v = static_cast<C>(a * b); break;
          case map_op::div: v = b == C{} && std::is_integral_v<C> ? C{} : static_cast<C>(a / (b == C{} && std::is_integral_v<C> ? C{1} : b)); break;
          default: break;
        }
        const bool boolean = p.op == map_op::eq || p.op == map_op::ne || p.op == map_op::lt || p.op == map_op::le ||
                             p.op == map_op::gt || p.op == map_op::ge;
        detail::map_store(p.out, p.out_dt, i, boolean ? (r ? C{1} : C{}) : v);
        break;
      }
    }
  }
}

}  // inline namespace TYPEX_CUDA_ABI
}  // namespace typex::cuda::kernels
