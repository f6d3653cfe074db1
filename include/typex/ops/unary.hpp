// typex/ops/unary.hpp — pointwise unary ops: neg, abs, exp, log, log1p, sqrt, rsqrt, sin, cos,
// erf, reciprocal, relu, gelu, silu, tanh, sigmoid, pow with a number, clamp (and unary minus on
// tensor-like values).
//
// Each op names its ATen target, keeps its argument's dtype and shape, and carries the scalar math
// that backends share (computed in the argument's type; backends compute f16/bf16 in f32).
#pragma once

#include <typex/ops/apply.hpp>
#include <typex/ops/tensor_like.hpp>

#include <cmath>
#include <optional>
#include <source_location>
#include <string_view>

namespace typex {

namespace detail {
struct unary_pointwise {
  template <class A>
  static constexpr A result(const A& a) {
    return a;
  }
};
}  // namespace detail

struct neg_op : detail::unary_pointwise {
  static constexpr std::string_view target = "aten.neg.default";
  template <class T> static constexpr T scalar(T x) { return -x; }
};
struct abs_op : detail::unary_pointwise {
  static constexpr std::string_view target = "aten.abs.default";
  template <class T> static constexpr T scalar(T x) { return x < T(0) ? -x : x; }
};
struct exp_op : detail::unary_pointwise {
  static constexpr std::string_view target = "aten.exp.default";
  template <class T> static T scalar(T x) { return std::exp(x); }
};
struct log_op : detail::unary_pointwise {
  static constexpr std::string_view target = "aten.log.default";
  template <class T> static T scalar(T x) { return std::log(x); }
};
struct sqrt_op : detail::unary_pointwise {
  static constexpr std::string_view target = "aten.sqrt.default";
  template <class T> static T scalar(T x) { return std::sqrt(x); }
};
struct rsqrt_op : detail::unary_pointwise {
  static constexpr std::string_view target = "aten.rsqrt.default";
  template <class T> static T scalar(T x) { return T(1) / std::sqrt(x); }
};
struct log1p_op : detail::unary_pointwise {
  static constexpr std::string_view target = "aten.log1p.default";
  template <class T> static T scalar(T x) { return std::log1p(x); }
};
struct sin_op : detail::unary_pointwise {
  static constexpr std::string_view target = "aten.sin.default";
  template <class T> static T scalar(T x) { return std::sin(x); }
};
struct cos_op : detail::unary_pointwise {
  static constexpr std::string_view target = "aten.cos.default";
  template <class T> static T scalar(T x) { return std::cos(x); }
};
struct erf_op : detail::unary_pointwise {
  static constexpr std::string_view target = "aten.erf.default";
  template <class T> static T scalar(T x) { return std::erf(x); }
};
struct reciprocal_op : detail::unary_pointwise {
  static constexpr std::string_view target = "aten.reciprocal.default";
  template <class T> static T scalar(T x) { return T(1) / x; }
};
struct relu_op : detail::unary_pointwise {
  static constexpr std::string_view target = "aten.relu.default";
  template <class T> static constexpr T scalar(T x) { return x > T(0) ? x : T(0); }
};
struct tanh_op : detail::unary_pointwise {
  static constexpr std::string_view target = "aten.tanh.default";
  template <class T> static T scalar(T x) { return std::tanh(x); }
};
struct sigmoid_op : detail::unary_pointwise {
  static constexpr std::string_view target = "aten.sigmoid.default";
  template <class T> static T scalar(T x) { return T(1) / (T(1) + std::exp(-x)); }
};
struct silu_op : detail::unary_pointwise {
  static constexpr std::string_view target = "aten.silu.default";
  template <class T> static T scalar(T x) { return x / (T(1) + std::exp(-x)); }
};

// torch.nn.functional.gelu's `approximate`: "none" (the exact erf form) or "tanh".
enum class gelu_approximation : unsigned char { none, tanh };

struct gelu_op : detail::unary_pointwise {
  static constexpr std::string_view target = "aten.gelu.default";
  gelu_approximation approximate = gelu_approximation::none;

  template <class V>
  void attributes(V&& v) const {
    if (approximate == gelu_approximation::tanh) v(std::string_view("tanh"));  // the default is not spelled
  }
  template <class T>
  static T scalar(T x, gelu_approximation a) {
    if (a == gelu_approximation::tanh) {
      constexpr T k = T(0.7978845608028654);  // sqrt(2/pi)
      return T(0.5) * x * (T(1) + std::tanh(k * (x + T(0.044715) * x * x * x)));
    }
    return T(0.5) * x * (T(1) + std::erf(x * T(0.7071067811865476)));
  }
};

template <tensor_like X>
auto neg(const X& x, const std::source_location& loc = std::source_location::current()) { return apply_op(neg_op{}, &loc, x); }
template <tensor_like X>
auto abs(const X& x, const std::source_location& loc = std::source_location::current()) { return apply_op(abs_op{}, &loc, x); }
template <tensor_like X>
auto exp(const X& x, const std::source_location& loc = std::source_location::current()) { return apply_op(exp_op{}, &loc, x); }
template <tensor_like X>
auto log(const X& x, const std::source_location& loc = std::source_location::current()) { return apply_op(log_op{}, &loc, x); }
template <tensor_like X>
auto sqrt(const X& x, const std::source_location& loc = std::source_location::current()) { return apply_op(sqrt_op{}, &loc, x); }
template <tensor_like X>
auto rsqrt(const X& x, const std::source_location& loc = std::source_location::current()) { return apply_op(rsqrt_op{}, &loc, x); }
template <tensor_like X>
auto relu(const X& x, const std::source_location& loc = std::source_location::current()) { return apply_op(relu_op{}, &loc, x); }
template <tensor_like X>
auto tanh(const X& x, const std::source_location& loc = std::source_location::current()) { return apply_op(tanh_op{}, &loc, x); }
template <tensor_like X>
auto sigmoid(const X& x, const std::source_location& loc = std::source_location::current()) { return apply_op(sigmoid_op{}, &loc, x); }
template <tensor_like X>
auto silu(const X& x, const std::source_location& loc = std::source_location::current()) { return apply_op(silu_op{}, &loc, x); }
template <tensor_like X>
auto gelu(const X& x, gelu_approximation approximate = gelu_approximation::none,
          const std::source_location& loc = std::source_location::current()) {
  gelu_op op;
  op.approximate = approximate;
  return apply_op(op, &loc, x);
}

template <tensor_like X>
auto log1p(const X& x, const std::source_location& loc = std::source_location::current()) { return apply_op(log1p_op{}, &loc, x); }
template <tensor_like X>
auto sin(const X& x, const std::source_location& loc = std::source_location::current()) { return apply_op(sin_op{}, &loc, x); }
template <tensor_like X>
auto cos(const X& x, const std::source_location& loc = std::source_location::current()) { return apply_op(cos_op{}, &loc, x); }
template <tensor_like X>
auto erf(const X& x, const std::source_location& loc = std::source_location::current()) { return apply_op(erf_op{}, &loc, x); }
template <tensor_like X>
auto reciprocal(const X& x, const std::source_location& loc = std::source_location::current()) {
  return apply_op(reciprocal_op{}, &loc, x);
}

// x ** exponent (aten.pow.Tensor_Scalar), in x's dtype.
struct pow_scalar_op : detail::unary_pointwise {
  static constexpr std::string_view target = "aten.pow.Tensor_Scalar";
  double exponent = 1.0;
  template <class V>
  void attributes(V&& v) const {
    v(exponent);
  }
  template <class T>
  static T scalar(T x, double e) {
    if (e == 2.0) return x * x;  // (exact, and the common case)
    return static_cast<T>(std::pow(x, static_cast<T>(e)));
  }
};
template <tensor_like X>
auto pow(const X& x, double exponent, const std::source_location& loc = std::source_location::current()) {
  pow_scalar_op op;
  op.exponent = exponent;
  return apply_op(op, &loc, x);
}

// min(max(x, lo), hi) with either bound optional (aten.clamp.default); NaN stays NaN, as in torch.
struct clamp_op : detail::unary_pointwise {
  static constexpr std::string_view target = "aten.clamp.default";
  std::optional<double> lo, hi;
  template <class V>
  void attributes(V&& v) const {
    if (lo) v(*lo);
    else v(nullptr);
    if (hi) v(*hi);
    else v(nullptr);
  }
};
template <tensor_like X>
auto clamp(const X& x, std::optional<double> lo, std::optional<double> hi,
           const std::source_location& loc = std::source_location::current()) {
  if (!lo && !hi) detail::raise_message<argument_error>("typex::clamp: at least one of min and max must be given");
  clamp_op op;
  op.lo = lo;
  op.hi = hi;
  return apply_op(op, &loc, x);
}

// not x: true where x is zero (aten.logical_not.default); the result is bool, for any dtype.
struct logical_not_op {
  static constexpr std::string_view target = "aten.logical_not.default";
  template <class A>
  static constexpr auto result(const A& a) {
    return tensor_spec<b8, typename A::shape_type>(a.shape);
  }
  template <class T> static constexpr bool scalar(T x) { return x == T(0); }
};
template <tensor_like X>
auto logical_not(const X& x, const std::source_location& loc = std::source_location::current()) {
  return apply_op(logical_not_op{}, &loc, x);
}

// x converted to dtype DT (aten._to_copy.default(x, dtype=DT), as torch.export's graphs record
// x.to(dtype)): floating to integer truncates toward zero, anything to bool is x != 0, as torch.
template <class DT>
struct to_copy_op {
  static constexpr std::string_view target = "aten._to_copy.default";
  template <class A>
  static constexpr auto result(const A& a) {
    return tensor_spec<DT, typename A::shape_type>(a.shape);
  }
  template <class V>
  void attributes(V&& v) const {
    v(DT::value);
  }
};
// to<f16>(x), to<i64>(x): a converted copy (always a new tensor, even to the same dtype).
template <class DT, tensor_like X>
auto to(const X& x, const std::source_location& loc = std::source_location::current()) {
  return apply_op(to_copy_op<DT>{}, &loc, x);
}

// -x on a tensor-like value records neg (without a source location: operators take no default argument).
template <tensor_like X>
  requires(!tensor_spec_type<X>)
auto operator-(const X& x) { return apply_op(neg_op{}, nullptr, x); }

}  // namespace typex
