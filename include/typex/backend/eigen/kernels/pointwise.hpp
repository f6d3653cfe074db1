// typex/backend/eigen/kernels/pointwise.hpp — the Eigen backend: pointwise kernels: unary ops (their math from ops/unary.hpp), pow, clamp, broadcasting binary ops.
//
// One family of the kernel definitions: kernels_impl.hpp includes the families in order (each uses
// the ones before it); kernels.hpp declares the kernels.
#pragma once

#ifndef TYPEX_EIGEN_KERNEL_FAMILIES
#error "typex: backend/eigen/kernels/*.hpp are parts of kernels_impl.hpp (in its order); include <typex/backend/eigen.hpp>"
#endif

namespace typex::eigen::detail {

// pointwise

// Pointwise math runs in three types — i64 for integers and bool, f32 for f16/bf16/f32, f64 —
// and the result is converted back to the op's dtype. Integer results are the same as computing in
// the narrow type (C++ conversions to narrower integers are modular), f16/bf16 compute in f32 as
// PyTorch's CPU kernels do; and each op is instantiated 3 times instead of once per dtype (10),
// which is most of this header's compile time.
inline dtype compute_dtype(dtype d) noexcept {
  if (d == dtype::f64) return dtype::f64;
  return is_floating_point(d) ? dtype::f32 : dtype::i64;
}
template <class F>
decltype(auto) dispatch_compute(dtype d, F&& f) {
  if (d == dtype::f64) return f(double{});
  if (d == dtype::f32) return f(float{});
  return f(std::int64_t{});
}

// Pointwise on x in the compute type of out_dt, the result converted to out_dt; f(v, y) gets
// x's value and writes y, both of the compute type.
template <class F>
any_tensor map_elements(const any_tensor& x, dtype out_dt, F&& f) {
  const dtype cd = compute_dtype(out_dt);
  const any_tensor X = to_dtype(x, cd);
  any_tensor out(cd, x.extents());
  dispatch_compute(cd, [&](auto tag) {
    using T = decltype(tag);
    const T* px = X.data<T>();
    T* po = out.data<T>();
    for (index_t i = 0, n = x.numel(); i < n; ++i) f(px[i], po[i]);
  });
  return to_dtype(out, out_dt);
}

// Pointwise on the call's `self` in its compute type, converted back to its dtype; f(v) gets and
// returns the compute type's values.
template <class F>
any_tensor unary_map(const kernel_args& a, F&& f) {
  const any_tensor& x = a.tensor("self");
  return map_elements(x, x.scalar_type(), [&](auto v, auto& y) { y = f(v); });
}

// A unary pointwise op (ops/unary.hpp: its math written once over a math policy). The result dtype
// is the op's rule, as PyTorch's: the input's, or f32 for an integer or bool input of an op whose
// values are not integers (exp, sin, sigmoid, ...). Activations (activation_op) run on Eigen
// arrays, exactly as in a fused GEMM epilogue; the other ops one number at a time (std::exp, ...),
// in the compute type.
template <class Op>
any_tensor unary(const kernel_args& a) {
  const Op op = decode_op<Op>(a);
  const any_tensor& x = a.tensor("self");
  const dtype in = x.scalar_type();
  constexpr bool floating_only = std::is_base_of_v<typex::detail::unary_floating_only, Op>;
  constexpr bool floating_result = std::is_base_of_v<typex::detail::unary_floating_result, Op>;
  if (floating_only && !is_floating_point(in)) unsupported_dtype(a.target(), in);
  const dtype out_dt = floating_result && !is_floating_point(in) ? dtype::f32 : in;
  if constexpr (activation_op<Op>) {
    if (is_floating_point(in)) {  // (f16 / bf16 in f32)
      const dtype cd = compute_dtype(in);
      any_tensor out = to_dtype(x, cd).clone();
      dispatch_gemm(cd, a.target(), [&](auto tag) { activate(out.data<decltype(tag)>(), out.numel(), activation::of(op)); });
      return to_dtype(out, out_dt);
    }
  }
  return map_elements(x, out_dt, [&](auto v, auto& y) { op.math(scalar_math<decltype(v)>{}, v, y); });
}

// (an activation's gradient kernel reads grad_output and self of one shape and dtype, what
// derivatives record)
inline void require_alike(const kernel_args& a, const any_tensor& g, const any_tensor& x) {
  if (g.extents() != x.extents() || g.scalar_type() != x.scalar_type()) {
    raise<shape_error>([&](auto& w) {
      w.put(a.target()); w.put(": grad_output "); w.put(g.to_string()); w.put(" and self "); w.put(x.to_string());
      w.put(" must have one shape and dtype");
    });
  }
}
// (grad_output, self, threshold): grad_output where self > threshold, else 0 (relu's gradient)
inline any_tensor threshold_backward(const kernel_args& a) {
  const any_tensor& g = a.tensor("grad_output");
  const any_tensor& x = a.tensor("self");
  require_alike(a, g, x);
  const double threshold = a.real("threshold");
  any_tensor out = a.result(g.scalar_type(), g.extents(), false);
  dispatch<true>(g.scalar_type(), a.target(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const C t = static_cast<C>(threshold);
    const T zero = convert<T>(C(0));
    const T* pg = g.data<T>();
    const T* px = x.data<T>();
    T* po = out.data<T>();
    for (index_t i = 0, n = g.numel(); i < n; ++i) po[i] = convert<C>(px[i]) <= t ? zero : pg[i];
  });
  return out;
}

// (grad_output, self; approximate): grad_output * gelu'(self) (gelu's gradient, torch's gelu_backward)
inline any_tensor gelu_backward(const kernel_args& a) {
  const auto op = aten::gelu_backward::from_arguments(a);
  const any_tensor& g = a.tensor("grad_output");
  const any_tensor& x = a.tensor("self");
  require_alike(a, g, x);
  any_tensor out = a.result(g.scalar_type(), g.extents(), false);
  dispatch<true>(g.scalar_type(), a.target(), [&](auto tag) {  // (floating dtypes only)
    using T = decltype(tag);
    using C = compute_t<T>;
    // the op's one formula on Eigen arrays (packets: tanh, erf and exp vectorised), a block of
    // fixed size on the stack at a time, the last one padded
    constexpr index_t block = 256;
    using array = Eigen::Array<C, block, 1>;
    const T* pg = g.data<T>();
    const T* px = x.data<T>();
    T* po = out.data<T>();
    // (blocks split over the threads: an erf and an exp per element, 3 % of the transformer's
    // training step on one thread)
    const index_t n = g.numel(), blocks = (n + block - 1) / block;
    parallel_for(blocks, block * 16, num_threads(), [&](index_t b0, index_t b1) {
      for (index_t i = b0 * block, end = std::min(n, b1 * block); i < end; i += block) {
        const index_t len = std::min(block, end - i);
        array xs, gs;
        for (index_t j = 0; j < len; ++j) xs[j] = convert<C>(px[i + j]), gs[j] = convert<C>(pg[i + j]);
        for (index_t j = len; j < block; ++j) xs[j] = gs[j] = C(0);
        const array d = gs * aten::gelu_backward::derivative(array_math<C>{}, xs, op.approximate);
        for (index_t j = 0; j < len; ++j) po[i + j] = convert<T>(d[j]);
      }
    });
  });
  return out;
}

// x ** e (aten.pow.Tensor_Scalar) and clamp(x, min?, max?): pointwise with numbers from the call.
inline any_tensor pow_scalar(const kernel_args& a) {
  const double e = a.real("exponent");
  return unary_map(a, [e](auto v) { return pow_scalar_op::scalar(v, e); });
}
inline any_tensor clamp(const kernel_args& a) {
  const bool has_lo = a.has("min"), has_hi = a.has("max");
  const double lo = has_lo ? a.real("min") : 0.0, hi = has_hi ? a.real("max") : 0.0;
  return unary_map(a, [&](auto v) {
    using T = decltype(v);
    if (v != v) return v;  // NaN stays NaN
    if (has_lo && v < static_cast<T>(lo)) v = static_cast<T>(lo);
    if (has_hi && v > static_cast<T>(hi)) v = static_cast<T>(hi);
    return v;
  });
}

// Element strides of `in` aligned from the right to an output of rank R; 0 where `in` broadcasts.
inline std::vector<index_t> broadcast_strides(const std::vector<index_t>& in, const std::vector<index_t>& out) {
  std::vector<index_t> strides(out.size(), 0);
  index_t stride = 1;
  for (std::size_t k = 0; k < in.size(); ++k) {
    const std::size_t i = in.size() - 1 - k, o = out.size() - 1 - k;
    strides[o] = (in[i] == 1 && out[o] != 1) ? 0 : stride;
    stride *= in[i];
  }
  return strides;
}

inline std::vector<index_t> broadcast_extents(std::string_view op, const std::vector<index_t>& a, const std::vector<index_t>& b) {
  const std::size_t r = std::max(a.size(), b.size());
  std::vector<index_t> out(r);
  for (std::size_t k = 0; k < r; ++k) {
    const index_t ea = k < a.size() ? a[a.size() - 1 - k] : 1;
    const index_t eb = k < b.size() ? b[b.size() - 1 - k] : 1;
    if (ea != eb && ea != 1 && eb != 1) {
      raise<shape_error>([&](auto& w) {
        w.put(op); w.put(": extents "); w.put_int(ea); w.put(" and "); w.put_int(eb); w.put(" do not broadcast");
      });
    }
    out[r - 1 - k] = ea == 1 ? eb : ea;
  }
  return out;
}

// out[idx] = f(a[idx_a], b[idx_b]) over the output's multi-index.
template <class TA, class TB, class TO, class F>
void broadcast_apply(TO* po, const std::vector<index_t>& oe, const TA* pa, const std::vector<index_t>& ae, const TB* pb,
                     const std::vector<index_t>& be, F&& f) {
  index_t n = 1;
  for (index_t e : oe) n *= e;
  if (ae == oe && be == oe) {
    for (index_t i = 0; i < n; ++i) po[i] = f(pa[i], pb[i]);
    return;
  }
  const auto sa = broadcast_strides(ae, oe), sb = broadcast_strides(be, oe);
  const std::size_t r = oe.size();
  std::vector<index_t> idx(r, 0);
  index_t ia = 0, ib = 0;
  for (index_t i = 0; i < n; ++i) {
    po[i] = f(pa[ia], pb[ib]);
    for (std::size_t d = r; d-- > 0;) {
      ++idx[d];
      ia += sa[d];
      ib += sb[d];
      if (idx[d] < oe[d]) break;
      ia -= sa[d] * oe[d];
      ib -= sb[d] * oe[d];
      idx[d] = 0;
    }
  }
}

// A scalar argument as a rank-0 tensor of dtype d.
// (an integer argument of an integer dtype is converted exactly: 2^53 + 1 does not go through double)
inline any_tensor scalar_tensor(const kernel_args& a, std::size_t i, dtype d) {
  any_tensor t(d, {});
  const bool exact = a.is_integer(i) && !is_floating_point(d);
  const std::int64_t n = exact ? a.integer(i) : 0;
  const double v = exact ? 0.0 : a.real(i);
  dispatch<false>(d, a.target(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T>) *t.data<T>() = exact ? static_cast<T>(n) : convert<T>(v);
    else *t.data<T>() = convert<T>(v);
  });
  return t;
}

template <class Op, bool Compare>
any_tensor binary(const kernel_args& a) {
  // (the two operands by position: every binary pointwise schema starts with them, named self and
  // other, or self and exponent for pow)
  const bool ta = a.is_tensor(0), tb = a.is_tensor(1);
  // The dtype the op computes in: the tensors' promoted type; a scalar joins a tensor as PyTorch's
  // wrapped numbers do (a float scalar makes an integer tensor f32), as the ops' rules say.
  dtype d;
  if (ta && tb) {
    d = promote_types(a.tensor(0).scalar_type(), a.tensor(1).scalar_type());
  } else {  // torch.result_type, as the ops' rules (core/rules/dtypes.hpp): b8 + 2 is i64
    const std::size_t s = ta ? 1 : 0;
    const scalar_kind k = a.is_real(s) ? scalar_kind::floating : (a.is_integer(s) ? scalar_kind::integer : scalar_kind::boolean);
    d = result_type({(ta ? a.tensor(0) : a.tensor(1)).scalar_type()}, {dtype::f32, k});
  }
  if (std::is_same_v<Op, div_op> && !is_floating_point(d)) d = dtype::f32;  // true division, as torch
  const dtype cd = compute_dtype(d);
  const any_tensor A = ta ? to_dtype(a.tensor(0), cd) : scalar_tensor(a, 0, cd);
  const any_tensor B = tb ? to_dtype(a.tensor(1), cd) : scalar_tensor(a, 1, cd);
  const auto oe = broadcast_extents(a.target(), A.extents(), B.extents());
  // add/sub's alpha scales the second operand (self + alpha * other), as the planned step does
  constexpr bool scaled = std::is_same_v<Op, add_op> || std::is_same_v<Op, sub_op>;
  double alpha = 1;
  std::int64_t int_alpha = 1;  // (integer results: alpha exactly, not through double)
  if constexpr (scaled) {
    if (a.has("alpha") && a.is_integer(a.index("alpha"))) int_alpha = a.integer("alpha");
    alpha = a.real_or_default("alpha");
    // (checked before any conversion: a double outside i64 converted to it is undefined)
    if (!is_floating_point(d) && !(std::trunc(alpha) == alpha && std::abs(alpha) < 9.2e18))
      typex::detail::raise<argument_error>([&](auto& w) {
        w.put(a.target());
        w.put(": alpha must be an integer (within i64) for an integral result (as in PyTorch)");
      });
  }
  any_tensor out = a.result(Compare ? dtype::b8 : cd, oe, false);  // (broadcast_apply writes every element)
  dispatch_compute(cd, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (Compare) {
      broadcast_apply(out.data<bool>(), oe, A.data<T>(), A.extents(), B.data<T>(), B.extents(),
                      [](T x, T y) { return Op::scalar(x, y); });
    } else if (scaled && (alpha != 1 || int_alpha != 1)) {
      const T s = std::is_integral_v<T> && a.has("alpha") && a.is_integer(a.index("alpha")) ? static_cast<T>(int_alpha) : static_cast<T>(alpha);
      broadcast_apply(out.data<T>(), oe, A.data<T>(), A.extents(), B.data<T>(), B.extents(),
                      [s](T x, T y) { return static_cast<T>(Op::scalar(x, static_cast<T>(s * y))); });
    } else {
      broadcast_apply(out.data<T>(), oe, A.data<T>(), A.extents(), B.data<T>(), B.extents(),
                      [](T x, T y) { return static_cast<T>(Op::scalar(x, y)); });
    }
  });
  return Compare ? out : to_dtype(out, d);
}

// ---------------------------------------------------------------------------------------------

}  // namespace typex::eigen::detail

// The kernels of this family's ops (kernels_impl.hpp builds the table from the registry).
namespace typex::eigen {
TYPEX_EIGEN_KERNEL(neg_op, detail::unary<neg_op>);
TYPEX_EIGEN_KERNEL(abs_op, detail::unary<abs_op>);
TYPEX_EIGEN_KERNEL(relu_op, detail::unary<relu_op>);
TYPEX_EIGEN_KERNEL(aten::threshold_backward, detail::threshold_backward);
TYPEX_EIGEN_KERNEL(aten::gelu_backward, detail::gelu_backward);
TYPEX_EIGEN_KERNEL(exp_op, detail::unary<exp_op>);
TYPEX_EIGEN_KERNEL(log_op, detail::unary<log_op>);
TYPEX_EIGEN_KERNEL(sqrt_op, detail::unary<sqrt_op>);
TYPEX_EIGEN_KERNEL(rsqrt_op, detail::unary<rsqrt_op>);
TYPEX_EIGEN_KERNEL(tanh_op, detail::unary<tanh_op>);
TYPEX_EIGEN_KERNEL(log1p_op, detail::unary<log1p_op>);
TYPEX_EIGEN_KERNEL(sin_op, detail::unary<sin_op>);
TYPEX_EIGEN_KERNEL(cos_op, detail::unary<cos_op>);
TYPEX_EIGEN_KERNEL(erf_op, detail::unary<erf_op>);
TYPEX_EIGEN_KERNEL(reciprocal_op, detail::unary<reciprocal_op>);
TYPEX_EIGEN_KERNEL(sigmoid_op, detail::unary<sigmoid_op>);
TYPEX_EIGEN_KERNEL(silu_op, detail::unary<silu_op>);
TYPEX_EIGEN_KERNEL(gelu_op, detail::unary<gelu_op>);
TYPEX_EIGEN_KERNEL(hardswish_op, detail::unary<hardswish_op>);
TYPEX_EIGEN_KERNEL(hardtanh_op, detail::unary<hardtanh_op>);
TYPEX_EIGEN_KERNEL(leaky_relu_op, detail::unary<leaky_relu_op>);
TYPEX_EIGEN_KERNEL(elu_op, detail::unary<elu_op>);
TYPEX_EIGEN_KERNEL(hardsigmoid_op, detail::unary<hardsigmoid_op>);
TYPEX_EIGEN_KERNEL(softplus_op, detail::unary<softplus_op>);
TYPEX_EIGEN_KERNEL(mish_op, detail::unary<mish_op>);
TYPEX_EIGEN_KERNEL(pow_scalar_op, detail::pow_scalar);
TYPEX_EIGEN_KERNEL(clamp_op, detail::clamp);
TYPEX_EIGEN_KERNEL(add_op, detail::binary<add_op, false>);
TYPEX_EIGEN_KERNEL(sub_op, detail::binary<sub_op, false>);
TYPEX_EIGEN_KERNEL(mul_op, detail::binary<mul_op, false>);
TYPEX_EIGEN_KERNEL(div_op, detail::binary<div_op, false>);
TYPEX_EIGEN_KERNEL(maximum_op, detail::binary<maximum_op, false>);
TYPEX_EIGEN_KERNEL(minimum_op, detail::binary<minimum_op, false>);
TYPEX_EIGEN_KERNEL(pow_op, detail::binary<pow_op, false>);
TYPEX_EIGEN_KERNEL(eq_op, detail::binary<eq_op, true>);
TYPEX_EIGEN_KERNEL(ne_op, detail::binary<ne_op, true>);
TYPEX_EIGEN_KERNEL(lt_op, detail::binary<lt_op, true>);
TYPEX_EIGEN_KERNEL(le_op, detail::binary<le_op, true>);
TYPEX_EIGEN_KERNEL(gt_op, detail::binary<gt_op, true>);
TYPEX_EIGEN_KERNEL(ge_op, detail::binary<ge_op, true>);
TYPEX_EIGEN_KERNEL(logical_and_op, detail::binary<logical_and_op, true>);
TYPEX_EIGEN_KERNEL(logical_or_op, detail::binary<logical_or_op, true>);
TYPEX_EIGEN_KERNEL(logical_xor_op, detail::binary<logical_xor_op, true>);
}  // namespace typex::eigen
