// typex/ops/unary.hpp — pointwise unary ops: neg, abs, exp, log, log1p, sqrt, rsqrt, sin, cos,
// erf, reciprocal, relu, gelu, silu, hardswish, hardtanh (relu6), leaky_relu, elu, hardsigmoid, mish,
// softplus, tanh, sigmoid, pow with a number, clamp (and unary minus on tensor-like values).
//
// Each op names its ATen target, keeps its argument's dtype and shape, and carries the scalar math
// that backends share (computed in the argument's type; backends compute f16/bf16 in f32).
#pragma once

#include <typex/core/rules/dtypes.hpp>
#include <typex/ops/op.hpp>
#include <typex/ops/apply.hpp>
#include <typex/ops/tensor_like.hpp>

#include <cmath>
#include <limits>
#include <optional>
#include <source_location>
#include <string>
#include <string_view>
#include <type_traits>

namespace typex {

// The registry's tags for this header's ATen overloads (torch.ops.aten.<op>.<overload>): the op
// types below are templates over static attributes, and every instantiation records one of these.
namespace aten {
// relu's gradient (torch's): grad_output where self > threshold, 0 elsewhere (NaN passes the
// gradient through, as the comparison is false). Derivatives record it; one pass.
struct threshold_backward {
  static constexpr std::string_view target = "aten.threshold_backward.default";
  static constexpr std::string_view schema =
      "aten::threshold_backward(Tensor grad_output, Tensor self, Scalar threshold) -> Tensor";
  // grad_output, 0 where self <= threshold (a NaN self passes the gradient, as the kernel)
  template <class C> static void decompose(C& c) {
    c.produce(c.masked_fill(c.input("grad_output"), c.le(c.input("self"), c.args().real("threshold")), 0.0));
  }
  // linear in grad_output; piecewise constant in self (its derivative is 0 where it exists)
  template <class C> static void vjp(C& c) {
    c.accumulate("grad_output", c.emit(op_id_of<threshold_backward>, {c.grad(), c.input("self"), c.args().real("threshold")}));
  }
  static constexpr bool pointwise = true;
  // a binary pointwise op in PyTorch: grad_output and self broadcast, their dtypes promote
  template <class R> static void infer(R& r) {
    const auto& g = r.input("grad_output");
    const auto& x = r.input("self");
    r.result(promote_types(g.scalar_type, x.scalar_type), r.broadcast(g.shape, x.shape));
  }
};
struct _to_copy {
  static constexpr std::string_view target = "aten._to_copy.default";
  static constexpr std::string_view schema =
      "aten::_to_copy(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, bool non_blocking=False, MemoryFormat? memory_format=None) -> Tensor";
  // the gradient in the input's dtype (accumulate converts it)
  template <class C> static void vjp(C& c) { c.accumulate("self", c.grad()); }
  static constexpr bool pointwise = true;
  // self's shape, in `dtype` (self's own where None)
  template <class R> static void infer(R& r) {
    auto m = r.input("self");
    if (r.args().has("dtype")) m.scalar_type = r.args().scalar_type("dtype");
    r.result(std::move(m));
  }
};
}  // namespace aten

// Pointwise math is written once per op, over a math policy M: op.math(m, x, y) sets y to the op
// of x, with M's functions (m.exp(x), m.max(x, m.k(0)), ...) and constants (m.k(0.5) is 0.5 in M's
// scalar type). scalar_math<T> below runs it on one number; a backend runs the same expression on
// vectors (the Eigen backend's array_math: packets, in a GEMM epilogue or a pointwise pass), so
// eager calls, fused epilogues and every backend compute one formula.
template <class T>
struct scalar_math {
  using scalar_type = T;
  static constexpr T k(double v) noexcept { return static_cast<T>(v); }
  static T exp(T x) { return std::exp(x); }
  static T log(T x) { return std::log(x); }
  static T log1p(T x) { return std::log1p(x); }
  static T sqrt(T x) { return std::sqrt(x); }
  static T sin(T x) { return std::sin(x); }
  static T cos(T x) { return std::cos(x); }
  static T tanh(T x) { return std::tanh(x); }
  static T erf(T x) { return std::erf(x); }
  static constexpr T abs(T x) { return x < T(0) ? T(-x) : x; }
  // max(x, c) / min(x, c) that keep a NaN x (as torch's relu, hardswish, clamp do)
  static constexpr T max(T x, T c) { return x < c ? c : x; }
  static constexpr T min(T x, T c) { return c < x ? c : x; }
};

namespace detail {
struct unary_pointwise {
  template <class A>
  static constexpr A result(const A& a) {
    return a;
  }
  template <class R> static void infer(R& r) { r.result(r.input("self")); }
};

// PyTorch's rule for the ops whose values are not integers (exp, sin, sigmoid, ...): an integer
// or bool input gives the default floating dtype (f32); a floating input keeps its dtype.
struct unary_floating_result {
  template <class A>
  static constexpr auto result(const A& a) {
    if constexpr (is_floating_point(A::dtype_type::value)) return a;
    else return tensor_spec<f32, typename A::shape_type>(a.shape);
  }
  template <class R> static void infer(R& r) {
    auto m = r.input("self");
    if (!is_floating_point(m.scalar_type)) m.scalar_type = dtype::f32;
    r.result(std::move(m));
  }
};

// The activations PyTorch defines on floating dtypes only (silu, gelu, hardswish on an i64 tensor:
// "not implemented for 'Long'"); typex says so at compile time.
struct unary_floating_only {
  template <class A>
  static constexpr A result(const A& a) {
    static_assert(is_floating_point(A::dtype_type::value),
                  "typex: this activation (silu, gelu, hardswish, leaky_relu, elu, hardsigmoid, mish, softplus) is "
                  "defined on floating-point tensors only, as in "
                  "PyTorch: convert the input first (typex::to<typex::f32>(x))");
    return a;
  }
  template <class R> static void infer(R& r) {
    const auto& m = r.input("self");
    if (!is_floating_point(m.scalar_type)) r.fail("defined on floating-point tensors only, as in PyTorch");
    r.result(m);
  }
};
}  // namespace detail

struct neg_op {
  static constexpr std::string_view target = "aten.neg.default";
  static constexpr std::string_view schema =
      "aten::neg(Tensor self) -> Tensor";
  template <class C> static void vjp(C& c) { c.accumulate("self", c.neg(c.grad())); }
  template <class A>  // (not on bool: PyTorch's words, at compile time)
  static constexpr auto result(const A& a) {
    constexpr dtype_verdict verdict = neg_dtypes(A::dtype_type::value);
    return tensor_spec<decltype(checked_dtype<"neg", verdict>()), typename A::shape_type>(a.shape);
  }
  // self's dtype and shape; not on bool (PyTorch's words)
  template <class R> static void infer(R& r) {
    const auto& m = r.input("self");
    if (const dtype_verdict v = neg_dtypes(m.scalar_type); !v.ok())
      r.fail(detail::to_string_with([&](auto& w) { put_dtype_refusal(w, v); }));
    r.result(m);
  }
  template <class M, class X, class Y> TYPEX_HOST_DEVICE void math(M, const X& x, Y& y) const { y = -x; }
};
struct abs_op : detail::unary_pointwise {
  static constexpr std::string_view target = "aten.abs.default";
  static constexpr std::string_view schema =
      "aten::abs(Tensor self) -> Tensor";
  // sign(x) * g, with sign(0) = 0 (torch's sgn)
  template <class C> static void vjp(C& c) {
    const auto x = c.input("self");
    const auto g = c.grad();
    c.accumulate("self", c.masked_fill(c.where(c.lt(x, 0.0), c.neg(g), g), c.eq(x, 0.0), 0.0));
  }
  template <class M, class X, class Y> TYPEX_HOST_DEVICE void math(M m, const X& x, Y& y) const { y = m.abs(x); }
};
struct exp_op : detail::unary_floating_result {
  static constexpr std::string_view target = "aten.exp.default";
  static constexpr std::string_view schema =
      "aten::exp(Tensor self) -> Tensor";
  template <class C> static void vjp(C& c) { c.accumulate("self", c.mul(c.grad(), c.result())); }
  template <class M, class X, class Y> TYPEX_HOST_DEVICE void math(M m, const X& x, Y& y) const { y = m.exp(x); }
};
struct log_op : detail::unary_floating_result {
  static constexpr std::string_view target = "aten.log.default";
  static constexpr std::string_view schema =
      "aten::log(Tensor self) -> Tensor";
  template <class C> static void vjp(C& c) { c.accumulate("self", c.div(c.grad(), c.input("self"))); }
  template <class M, class X, class Y> TYPEX_HOST_DEVICE void math(M m, const X& x, Y& y) const { y = m.log(x); }
};
struct sqrt_op : detail::unary_floating_result {
  static constexpr std::string_view target = "aten.sqrt.default";
  static constexpr std::string_view schema =
      "aten::sqrt(Tensor self) -> Tensor";
  template <class C> static void vjp(C& c) { c.accumulate("self", c.div(c.grad(), c.mul(c.result(), 2.0))); }
  template <class M, class X, class Y> TYPEX_HOST_DEVICE void math(M m, const X& x, Y& y) const { y = m.sqrt(x); }
};
struct rsqrt_op : detail::unary_floating_result {
  static constexpr std::string_view target = "aten.rsqrt.default";
  static constexpr std::string_view schema =
      "aten::rsqrt(Tensor self) -> Tensor";
  // -x^(-3/2) / 2 = -y^3 / 2
  template <class C> static void vjp(C& c) { c.accumulate("self", c.mul(c.grad(), c.mul(c.pow(c.result(), 3.0), -0.5))); }
  template <class M, class X, class Y> TYPEX_HOST_DEVICE void math(M m, const X& x, Y& y) const { y = m.k(1) / m.sqrt(x); }
};
struct log1p_op : detail::unary_floating_result {
  static constexpr std::string_view target = "aten.log1p.default";
  static constexpr std::string_view schema =
      "aten::log1p(Tensor self) -> Tensor";
  template <class C> static void vjp(C& c) { c.accumulate("self", c.div(c.grad(), c.add(c.input("self"), 1.0))); }
  template <class M, class X, class Y> TYPEX_HOST_DEVICE void math(M m, const X& x, Y& y) const { y = m.log1p(x); }
};
struct sin_op : detail::unary_floating_result {
  static constexpr std::string_view target = "aten.sin.default";
  static constexpr std::string_view schema =
      "aten::sin(Tensor self) -> Tensor";
  template <class C> static void vjp(C& c) { c.accumulate("self", c.mul(c.grad(), c.cos(c.input("self")))); }
  template <class M, class X, class Y> TYPEX_HOST_DEVICE void math(M m, const X& x, Y& y) const { y = m.sin(x); }
};
struct cos_op : detail::unary_floating_result {
  static constexpr std::string_view target = "aten.cos.default";
  static constexpr std::string_view schema =
      "aten::cos(Tensor self) -> Tensor";
  template <class C> static void vjp(C& c) { c.accumulate("self", c.mul(c.grad(), c.neg(c.sin(c.input("self"))))); }
  template <class M, class X, class Y> TYPEX_HOST_DEVICE void math(M m, const X& x, Y& y) const { y = m.cos(x); }
};
struct erf_op : detail::unary_floating_result {
  static constexpr std::string_view target = "aten.erf.default";
  static constexpr std::string_view schema =
      "aten::erf(Tensor self) -> Tensor";
  // 2/sqrt(pi) exp(-x^2)
  template <class C> static void vjp(C& c) {
    const auto x = c.input("self");
    c.accumulate("self", c.mul(c.grad(), c.mul(c.exp(c.neg(c.mul(x, x))), 1.1283791670955126)));
  }
  template <class M, class X, class Y> TYPEX_HOST_DEVICE void math(M m, const X& x, Y& y) const { y = m.erf(x); }
};
struct reciprocal_op : detail::unary_floating_result {
  static constexpr std::string_view target = "aten.reciprocal.default";
  static constexpr std::string_view schema =
      "aten::reciprocal(Tensor self) -> Tensor";
  // -1/x^2 = -y^2
  template <class C> static void vjp(C& c) {
    const auto y = c.result();
    c.accumulate("self", c.mul(c.grad(), c.neg(c.mul(y, y))));
  }
  template <class M, class X, class Y> TYPEX_HOST_DEVICE void math(M m, const X& x, Y& y) const { y = m.k(1) / x; }
};
struct relu_op : detail::unary_pointwise {
  static constexpr std::string_view target = "aten.relu.default";
  static constexpr std::string_view schema =
      "aten::relu(Tensor self) -> Tensor";
  // g where y > 0 (torch's threshold_backward on the result)
  template <class C> static void vjp(C& c) {
    c.accumulate("self", c.emit(op_id_of<aten::threshold_backward>, {c.grad(), c.result(), 0.0}));
  }
  static constexpr bool epilogue = true;  // (an activation: fuses into the op before it)
  template <class M, class X, class Y> TYPEX_HOST_DEVICE void math(M m, const X& x, Y& y) const { y = m.max(x, m.k(0)); }
};
struct tanh_op : detail::unary_floating_result {
  static constexpr std::string_view target = "aten.tanh.default";
  static constexpr std::string_view schema =
      "aten::tanh(Tensor self) -> Tensor";
  // 1 - y^2
  template <class C> static void vjp(C& c) {
    const auto y = c.result();
    c.accumulate("self", c.mul(c.grad(), c.add(c.neg(c.mul(y, y)), 1.0)));
  }
  static constexpr bool epilogue = true;  // (an activation: fuses into the op before it)
  template <class M, class X, class Y> TYPEX_HOST_DEVICE void math(M m, const X& x, Y& y) const { y = m.tanh(x); }
};
struct sigmoid_op : detail::unary_floating_result {
  static constexpr std::string_view target = "aten.sigmoid.default";
  static constexpr std::string_view schema =
      "aten::sigmoid(Tensor self) -> Tensor";
  // y (1 - y)
  template <class C> static void vjp(C& c) {
    const auto y = c.result();
    c.accumulate("self", c.mul(c.grad(), c.mul(y, c.add(c.neg(y), 1.0))));
  }
  static constexpr bool epilogue = true;  // (an activation: fuses into the op before it)
  template <class M, class X, class Y> TYPEX_HOST_DEVICE void math(M m, const X& x, Y& y) const { y = m.k(1) / (m.k(1) + m.exp(-x)); }
};
struct silu_op : detail::unary_floating_only {
  static constexpr std::string_view target = "aten.silu.default";
  static constexpr std::string_view schema =
      "aten::silu(Tensor self) -> Tensor";
  // x sigmoid(x)
  template <class C> static void decompose(C& c) {
    const auto x = c.input("self");
    c.produce(c.mul(x, c.sigmoid(x)));
  }
  // s (1 + x (1 - s)), s = sigmoid(x)
  template <class C> static void vjp(C& c) {
    const auto x = c.input("self");
    const auto s = c.sigmoid(x);
    c.accumulate("self", c.mul(c.grad(), c.mul(s, c.add(c.mul(x, c.add(c.neg(s), 1.0)), 1.0))));
  }
  static constexpr bool epilogue = true;  // (an activation: fuses into the op before it)
  template <class M, class X, class Y> TYPEX_HOST_DEVICE void math(M m, const X& x, Y& y) const { y = x / (m.k(1) + m.exp(-x)); }
};
// x * relu6(x + 3) / 6 (torch.nn.functional.hardswish)
struct hardswish_op : detail::unary_floating_only {
  static constexpr std::string_view target = "aten.hardswish.default";
  static constexpr std::string_view schema =
      "aten::hardswish(Tensor self) -> Tensor";
  // x clamp(x + 3, 0, 6) / 6
  template <class C> static void decompose(C& c);  // (defined after clamp_op, which it writes)
  // 0 below -3, x/3 + 1/2 on [-3, 3], 1 above (torch's hardswish_backward)
  template <class C> static void vjp(C& c) {
    const auto x = c.input("self");
    auto d = c.add(c.div(x, 3.0), 0.5);
    d = c.masked_fill(c.masked_fill(d, c.gt(x, 3.0), 1.0), c.lt(x, -3.0), 0.0);
    c.accumulate("self", c.mul(c.grad(), d));
  }
  static constexpr bool epilogue = true;  // (an activation: fuses into the op before it)
  template <class M, class X, class Y> TYPEX_HOST_DEVICE void math(M m, const X& x, Y& y) const { y = x * m.min(m.max(x + m.k(3), m.k(0)), m.k(6)) / m.k(6); }
};

// torch.nn.functional.gelu's `approximate`: "none" (the exact erf form) or "tanh".
enum class gelu_approximation : unsigned char { none, tanh };

struct gelu_op : detail::unary_floating_only {
  static constexpr std::string_view target = "aten.gelu.default";
  static constexpr std::string_view schema =
      "aten::gelu(Tensor self, *, str approximate='none') -> Tensor";
  // exact: x/2 (1 + erf(x / sqrt 2)); tanh form: x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
  template <class C> static void decompose(C& c) {
    const auto x = c.input("self");
    // (one op per statement: the order of a call's arguments is the compiler's, the program's order
    // must not be)
    const auto half_x = c.mul(x, 0.5);
    if (c.args().text("approximate", "none") == "tanh") {
      const auto inner = c.mul(c.add(x, c.mul(c.mul(c.mul(x, x), x), 0.044715)), 0.7978845608028654);
      const auto t = c.add(c.tanh(inner), 1.0);
      c.produce(c.mul(half_x, t));
    } else {
      const auto e = c.add(c.erf(c.mul(x, 0.7071067811865476)), 1.0);
      c.produce(c.mul(half_x, e));
    }
  }
  // torch's gelu_backward(grad, self, approximate): one op, as in torch's joint graphs (a backend
  // runs it as one pass; cuBLASLt's DGELU epilogue applies it to the product before it)
  template <class C> static void vjp(C& c);  // (defined after aten::gelu_backward)
  static constexpr bool epilogue = true;  // (an activation: fuses into the op before it)
  gelu_approximation approximate = gelu_approximation::none;

  template <class V>
  void attributes(V&& v) const {
    if (approximate == gelu_approximation::tanh) v(std::string_view("tanh"));  // the default is not spelled
  }
  // The inverse of attributes(): the op of a recorded call (args: its arguments, as a kernel reads them).
  template <class Args>
  static gelu_op from_arguments(const Args& args) {
    gelu_op op;
    const std::string_view a = args.text(1, "none");
    if (a == "tanh") op.approximate = gelu_approximation::tanh;
    else if (a != "none") args.fail_text(1, "is not a gelu approximation (\"none\" or \"tanh\")");
    return op;
  }
  template <class M, class X, class Y>
  TYPEX_HOST_DEVICE void math(M m, const X& x, Y& y) const {
    if (approximate == gelu_approximation::tanh)
      y = m.k(0.5) * x * (m.k(1) + m.tanh(m.k(0.7978845608028654) * (x + m.k(0.044715) * x * x * x)));  // sqrt(2/pi)
    else
      y = m.k(0.5) * x * (m.k(1) + m.erf(x * m.k(0.7071067811865476)));  // 1/sqrt(2)
  }
};

namespace aten {
// gelu's gradient (torch's aten.gelu_backward): grad_output * gelu'(self), with gelu's
// `approximate`. exact: gelu'(x) = Phi(x) + x phi(x); tanh form, with u = sqrt(2/pi) (x + 0.044715 x^3)
// and t = tanh(u): gelu'(x) = (1 + t) / 2 + x (1 - t^2) u'(x) / 2. Derivatives record it; one pass.
struct gelu_backward {
  static constexpr std::string_view target = "aten.gelu_backward.default";
  static constexpr std::string_view schema =
      "aten::gelu_backward(Tensor grad_output, Tensor self, *, str approximate='none') -> Tensor";
  static constexpr double sqrt_2_over_pi = 0.7978845608028654, kappa = 0.044715;
  static constexpr double inv_sqrt_2 = 0.7071067811865476, inv_sqrt_2pi = 0.3989422804014327;
  gelu_approximation approximate = gelu_approximation::none;

  // gelu'(x), in M's scalar type (the kernels' one formula: Eigen's, the CUDA map kernel's)
  template <class M, class X>
  TYPEX_HOST_DEVICE static X derivative(M m, const X& x, gelu_approximation a) {
    if (a == gelu_approximation::tanh) {
      const X x2 = x * x;
      const X t = m.tanh(m.k(sqrt_2_over_pi) * (x + m.k(kappa) * x2 * x));
      const X du = m.k(sqrt_2_over_pi) * (m.k(1) + m.k(3 * kappa) * x2);
      return m.k(0.5) * (m.k(1) + t) + m.k(0.5) * x * (m.k(1) - t * t) * du;
    }
    const X cdf = m.k(0.5) * (m.k(1) + m.erf(x * m.k(inv_sqrt_2)));
    return cdf + x * m.k(inv_sqrt_2pi) * m.exp(m.k(-0.5) * x * x);
  }

  template <class V>
  void attributes(V&& v) const {
    if (approximate == gelu_approximation::tanh) v(std::string_view("tanh"));  // the default is not spelled
  }
  template <class Args>
  static gelu_backward from_arguments(const Args& args) {
    gelu_backward op;
    const std::string_view a = args.text(2, "none");
    if (a == "tanh") op.approximate = gelu_approximation::tanh;
    else if (a != "none") args.fail_text(2, "is not a gelu approximation (\"none\" or \"tanh\")");
    return op;
  }
  // the formula above as pointwise ops
  template <class C> static void decompose(C& c) {
    const auto x = c.input("self");
    c.produce(c.mul(c.input("grad_output"), derivative_of(c, x, c.args().text("approximate", "none") == "tanh")));
  }
  // linear in grad_output (gelu_backward of the incoming gradient); in self: grad_output gelu''(x)
  //   exact: gelu''(x) = phi(x) (2 - x^2);
  //   tanh:  gelu''(x) = (1 - t^2) (u' - x t u'^2 + x u'' / 2), u'' = 6 sqrt(2/pi) 0.044715 x.
  template <class C> static void vjp(C& c) {
    const auto x = c.input("self");
    const bool tanh_form = c.args().text("approximate", "none") == "tanh";
    if (c.wants("grad_output")) {
      c.accumulate("grad_output", tanh_form ? c.emit(op_id_of<gelu_backward>, {c.grad(), x, std::string("tanh")})
                                            : c.emit(op_id_of<gelu_backward>, {c.grad(), x}));
    }
    if (c.wants("self")) {
      auto second = [&] {
        const auto x2 = c.mul(x, x);
        if (tanh_form) {
          const auto t = c.tanh(c.mul(c.add(x, c.mul(c.mul(x2, x), kappa)), sqrt_2_over_pi));
          const auto du = c.mul(c.add(c.mul(x2, 3 * kappa), 1.0), sqrt_2_over_pi);
          const auto ddu = c.mul(x, 6 * sqrt_2_over_pi * kappa);
          // (one op per statement where two arguments are ops: the program's order is not the compiler's)
          const auto sech2 = c.add(c.neg(c.mul(t, t)), 1.0);
          const auto xt = c.mul(x, t);
          const auto du2 = c.mul(du, du);
          const auto first = c.sub(du, c.mul(xt, du2));
          const auto inner = c.add(first, c.mul(c.mul(x, ddu), 0.5));
          return c.mul(sech2, inner);
        }
        const auto pdf = c.mul(c.exp(c.mul(x2, -0.5)), inv_sqrt_2pi);
        return c.mul(pdf, c.add(c.neg(x2), 2.0));
      };
      const auto d2 = second();
      c.accumulate("self", c.mul(c.mul(c.grad(), c.input("grad_output")), d2));
    }
  }
  static constexpr bool pointwise = true;
  // a binary pointwise op of floating tensors in PyTorch: grad_output and self broadcast, their dtypes
  // promote (the kernels take one shape and dtype, what derivatives record)
  template <class R> static void infer(R& r) {
    const auto& g = r.input("grad_output");
    const auto& x = r.input("self");
    if (!is_floating_point(g.scalar_type) || !is_floating_point(x.scalar_type)) r.fail("defined on floating-point tensors only, as in PyTorch");
    r.result(promote_types(g.scalar_type, x.scalar_type), r.broadcast(g.shape, x.shape));
  }

 private:
  template <class C, class V>
  static auto derivative_of(C& c, const V& x, bool tanh_form) {
    if (tanh_form) {
      const auto x2 = c.mul(x, x);
      const auto t = c.tanh(c.mul(c.add(x, c.mul(c.mul(x2, x), kappa)), sqrt_2_over_pi));
      const auto left = c.mul(c.add(t, 1.0), 0.5);  // (1 + t) / 2
      const auto du = c.mul(c.add(c.mul(x2, 3 * kappa), 1.0), sqrt_2_over_pi);
      const auto half_x = c.mul(x, 0.5);
      const auto sech2 = c.add(c.neg(c.mul(t, t)), 1.0);
      const auto right = c.mul(c.mul(half_x, sech2), du);
      return c.add(left, right);
    }
    const auto cdf = c.mul(c.add(c.erf(c.mul(x, inv_sqrt_2)), 1.0), 0.5);
    const auto pdf = c.mul(c.exp(c.mul(c.mul(x, x), -0.5)), inv_sqrt_2pi);
    return c.add(cdf, c.mul(x, pdf));
  }
};
}  // namespace aten

template <class C>
void gelu_op::vjp(C& c) {
  const auto x = c.input("self");
  // (the default form is not spelled, as torch's graphs)
  c.accumulate("self", c.args().text("approximate", "none") == "tanh" ? c.emit(op_id_of<aten::gelu_backward>, {c.grad(), x, std::string("tanh")})
                                                                     : c.emit(op_id_of<aten::gelu_backward>, {c.grad(), x}));
}

// min(max(x, min_val), max_val) (torch.nn.functional.hardtanh; F.relu6 / nn.ReLU6 is hardtanh(x, 0, 6),
// which is what torch.export records for them). NaN stays NaN, as torch's (a clamp).
struct hardtanh_op : detail::unary_pointwise {
  static constexpr std::string_view target = "aten.hardtanh.default";
  static constexpr std::string_view schema =
      "aten::hardtanh(Tensor self, Scalar min_val=-1, Scalar max_val=1) -> Tensor";
  // clamp(x, min_val, max_val), as two wheres
  template <class C> static void decompose(C& c);  // (defined after clamp_op, which it writes)
  // g strictly between the bounds, 0 at and beyond them and for a NaN x (torch's hardtanh_backward
  // as its vectorized loop computes it, which every tensor but a few elements takes; its scalar
  // loop passes g for a NaN x)
  template <class C> static void vjp(C& c) {
    const auto x = c.input("self");
    const auto inside = c.logical_and(c.gt(x, c.args().real_or_default("min_val")), c.lt(x, c.args().real_or_default("max_val")));
    c.accumulate("self", c.masked_fill(c.grad(), c.logical_not(inside), 0.0));
  }
  static constexpr bool epilogue = true;  // (an activation: fuses into the op before it)
  double min_val = -1.0, max_val = 1.0;

  // Both bounds, always, as torch.export records F.hardtanh (hardtanh(x, -1.0, 1.0)) and F.relu6
  // (hardtanh(x, 0.0, 6.0)): it leaves out only a trailing argument equal to its default in type
  // too, and the schema's defaults are integers.
  template <class V>
  void attributes(V&& v) const {
    v(min_val);
    v(max_val);
  }
  template <class Args>
  static hardtanh_op from_arguments(const Args& args) {
    hardtanh_op op;
    op.min_val = args.real_or_default("min_val");
    op.max_val = args.real_or_default("max_val");
    return op;
  }
  template <class M, class X, class Y>
  TYPEX_HOST_DEVICE void math(M m, const X& x, Y& y) const {
    y = m.min(m.max(x, m.k(min_val)), m.k(max_val));
  }
};

// x where x > 0, negative_slope * x elsewhere (torch.nn.functional.leaky_relu).
struct leaky_relu_op : detail::unary_floating_only {
  static constexpr std::string_view target = "aten.leaky_relu.default";
  static constexpr std::string_view schema =
      "aten::leaky_relu(Tensor self, Scalar negative_slope=0.01) -> Tensor";
  // x where x > 0, else negative_slope x
  template <class C> static void decompose(C& c) {
    const auto x = c.input("self");
    const auto positive = c.gt(x, 0.0);
    const auto scaled = c.mul(x, c.args().real_or_default("negative_slope"));
    c.produce(c.where(positive, x, scaled));
  }
  // g where x > 0, negative_slope * g elsewhere (at 0 and for a NaN x too: torch's leaky_relu_backward)
  template <class C> static void vjp(C& c) {
    const auto x = c.input("self");
    const auto g = c.grad();
    c.accumulate("self", c.where(c.gt(x, 0.0), g, c.mul(g, c.args().real_or_default("negative_slope"))));
  }
  static constexpr bool epilogue = true;  // (an activation: fuses into the op before it)
  double negative_slope = 0.01;

  template <class V>
  void attributes(V&& v) const {
    if (negative_slope != 0.01) v(negative_slope);  // the default (a float 0.01) is not spelled, as torch.export
  }
  template <class Args>
  static leaky_relu_op from_arguments(const Args& args) {
    leaky_relu_op op;
    op.negative_slope = args.real_or_default("negative_slope");
    return op;
  }
  // (one of the two terms is 0: x itself above 0, negative_slope * x at and below it, exactly)
  template <class M, class X, class Y>
  TYPEX_HOST_DEVICE void math(M m, const X& x, Y& y) const {
    y = m.max(x, m.k(0)) + m.k(negative_slope) * m.min(x, m.k(0));
  }
};

// scale * x where x > 0, alpha * scale * (exp(input_scale * x) - 1) elsewhere (torch.nn.functional.elu
// sets alpha; scale and input_scale are ATen's, 1 unless a recorded call gives them).
struct elu_op : detail::unary_floating_only {
  static constexpr std::string_view target = "aten.elu.default";
  static constexpr std::string_view schema =
      "aten::elu(Tensor self, Scalar alpha=1, Scalar scale=1, Scalar input_scale=1) -> Tensor";
  // scale x where x > 0, else scale alpha (exp(input_scale x) - 1)
  template <class C> static void decompose(C& c) {
    const auto x = c.input("self");
    const double alpha = c.args().real_or_default("alpha"), scale = c.args().real_or_default("scale");
    const auto negative = c.mul(c.sub(c.exp(c.mul(x, c.args().real_or_default("input_scale"))), 1.0), scale * alpha);
    const auto positive = c.gt(x, 0.0);
    const auto scaled = c.mul(x, scale);
    c.produce(c.where(positive, scaled, negative));
  }
  // scale g where x > 0, alpha scale input_scale exp(input_scale x) g at and below 0, NaN for a NaN
  // x (torch's elu_backward of the input, as its vectorized loop computes it, which every tensor but
  // a few elements takes; its scalar loop gives scale g there)
  template <class C> static void vjp(C& c) {
    const auto x = c.input("self");
    const auto g = c.grad();
    const double alpha = c.args().real_or_default("alpha"), scale = c.args().real_or_default("scale");
    const double input_scale = c.args().real_or_default("input_scale");
    const auto negative = c.mul(c.mul(g, c.exp(input_scale == 1.0 ? x : c.mul(x, input_scale))), input_scale * alpha * scale);
    c.accumulate("self", c.where(c.gt(x, 0.0), scale == 1.0 ? g : c.mul(g, scale), negative));
  }
  static constexpr bool epilogue = true;  // (an activation: fuses into the op before it)
  double alpha = 1.0, scale = 1.0, input_scale = 1.0;

  // As torch.export records F.elu: elu(x, 1.0) (alpha always: the schema's default is an integer,
  // which a float does not equal for it), then scale and input_scale only where they are not 1.
  template <class V>
  void attributes(V&& v) const {
    v(alpha);
    if (scale != 1.0 || input_scale != 1.0) v(scale);
    if (input_scale != 1.0) v(input_scale);
  }
  template <class Args>
  static elu_op from_arguments(const Args& args) {
    elu_op op;
    op.alpha = args.real_or_default("alpha");
    op.scale = args.real_or_default("scale");
    op.input_scale = args.real_or_default("input_scale");
    return op;
  }
  // scale max(x, 0) + alpha scale expm1(input_scale min(x, 0)): one of the two terms is 0. expm1(u)
  // is tanh(u / 2) (exp(u) + 1), exact in theory and accurate near 0, where exp(u) - 1 is not.
  template <class M, class X, class Y>
  TYPEX_HOST_DEVICE void math(M m, const X& x, Y& y) const {
    const auto u = m.k(input_scale) * m.min(x, m.k(0));
    y = m.k(scale) * m.max(x, m.k(0)) + m.k(alpha * scale) * (m.tanh(u * m.k(0.5)) * (m.exp(u) + m.k(1)));
  }
};

// min(max(x + 3, 0), 6) / 6 (torch.nn.functional.hardsigmoid)
struct hardsigmoid_op : detail::unary_floating_only {
  static constexpr std::string_view target = "aten.hardsigmoid.default";
  static constexpr std::string_view schema =
      "aten::hardsigmoid(Tensor self) -> Tensor";
  // 0 at and below -3, 1 at and above 3, x / 6 + 1/2 between
  template <class C> static void decompose(C& c);  // (defined after clamp_op, which it writes)
  // g / 6 strictly between -3 and 3, 0 elsewhere (at the kinks and for a NaN x too: torch's
  // hardsigmoid_backward)
  template <class C> static void vjp(C& c) {
    const auto x = c.input("self");
    const auto inside = c.logical_and(c.gt(x, -3.0), c.lt(x, 3.0));
    c.accumulate("self", c.masked_fill(c.div(c.grad(), 6.0), c.logical_not(inside), 0.0));
  }
  static constexpr bool epilogue = true;  // (an activation: fuses into the op before it)
  template <class M, class X, class Y> TYPEX_HOST_DEVICE void math(M m, const X& x, Y& y) const { y = m.min(m.max(x + m.k(3), m.k(0)), m.k(6)) / m.k(6); }
};

namespace detail {
// 1 where d > 0, 0 where d <= 0 (NaN where d is NaN), exactly, with the math policy's max and min
// only (a policy has no select): any d > 0, a subnormal too, times big twice reaches 1.
template <class M, class X>
TYPEX_HOST_DEVICE auto positive_step(M m, const X& d) {
  using T = typename M::scalar_type;
  const T big = std::numeric_limits<T>::max() / 4;
  return m.min(m.max(d * big, m.k(0)) * big, m.k(1));
}
}  // namespace detail

// log1p(exp(beta x)) / beta, or x itself where beta x > threshold (torch.nn.functional.softplus).
struct softplus_op : detail::unary_floating_only {
  static constexpr std::string_view target = "aten.softplus.default";
  static constexpr std::string_view schema =
      "aten::softplus(Tensor self, Scalar beta=1, Scalar threshold=20) -> Tensor";
  // x where beta x > threshold, else log1p(exp(beta x)) / beta
  template <class C> static void decompose(C& c) {
    const auto x = c.input("self");
    const double beta = c.args().real_or_default("beta");
    const auto bx = c.mul(x, beta);
    const auto soft = c.div(c.emit(op_id_of<log1p_op>, {c.exp(bx)}), beta);
    c.produce(c.where(c.gt(bx, c.args().real_or_default("threshold")), x, soft));
  }
  // sigmoid(beta x) g, or g where beta x > threshold (torch's softplus_backward: z / (z + 1) with
  // z = exp(beta x), which is that sigmoid)
  template <class C> static void vjp(C& c) {
    const auto x = c.input("self");
    const double beta = c.args().real_or_default("beta"), threshold = c.args().real_or_default("threshold");
    const auto bx = beta == 1.0 ? x : c.mul(x, beta);
    c.accumulate("self", c.mul(c.grad(), c.masked_fill(c.sigmoid(bx), c.gt(bx, threshold), 1.0)));
  }
  static constexpr bool epilogue = true;  // (an activation: fuses into the op before it)
  double beta = 1.0, threshold = 20.0;

  // Both, always, as torch.export records F.softplus (softplus(x, 1.0, 20.0): the schema's defaults
  // are integers, which a float does not equal for it).
  template <class V>
  void attributes(V&& v) const {
    v(beta);
    v(threshold);
  }
  template <class Args>
  static softplus_op from_arguments(const Args& args) {
    softplus_op op;
    op.beta = args.real_or_default("beta");
    op.threshold = args.real_or_default("threshold");
    return op;
  }
  // torch's two branches without a select: s = 1 where beta x > threshold, else 0 (exactly; NaN for
  // a NaN x), y = x s + log1p(exp(a)) / beta with a = beta x where s is 0 and -1000 where s is 1 (so
  // that branch gives 0 there); x is kept finite on the side where s can be 0 (0 * inf is NaN).
  template <class M, class X, class Y>
  TYPEX_HOST_DEVICE void math(M m, const X& x, Y& y) const {
    using T = typename M::scalar_type;
    if constexpr (std::is_floating_point_v<T>) {
      constexpr T inf = std::numeric_limits<T>::infinity(), top = std::numeric_limits<T>::max();
      const auto z = x * m.k(beta);
      const auto s = detail::positive_step(m, z - m.k(threshold));
      const auto a = m.min(z, m.k(threshold)) * (m.k(1) - s) - s * m.k(1000);
      const auto linear = beta > 0 ? m.min(m.max(x, -top), inf) : m.min(m.max(x, -inf), top);
      y = linear * s + m.log1p(m.exp(a)) / m.k(beta);
    } else {
      y = x;  // (never runs: floating-point tensors only)
    }
  }
};

// x tanh(softplus(x)) (torch.nn.functional.mish)
struct mish_op : detail::unary_floating_only {
  static constexpr std::string_view target = "aten.mish.default";
  static constexpr std::string_view schema =
      "aten::mish(Tensor self) -> Tensor";
  // x tanh(softplus(x))
  template <class C> static void decompose(C& c) {
    const auto x = c.input("self");
    c.produce(c.mul(x, c.tanh(c.emit(op_id_of<softplus_op>, {x}))));
  }
  // t + x sigmoid(x) (1 - t^2), t = tanh(softplus(x)) (torch's mish_backward)
  template <class C> static void vjp(C& c) {
    const auto x = c.input("self");
    const auto t = c.tanh(c.emit(op_id_of<softplus_op>, {x}));
    const auto d = c.add(t, c.mul(c.mul(x, c.sigmoid(x)), c.add(c.neg(c.mul(t, t)), 1.0)));
    c.accumulate("self", c.mul(c.grad(), d));
  }
  static constexpr bool epilogue = true;  // (an activation: fuses into the op before it)
  template <class M, class X, class Y> TYPEX_HOST_DEVICE void math(M m, const X& x, Y& y) const { y = x * m.tanh(m.log1p(m.exp(x))); }
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
auto hardswish(const X& x, const std::source_location& loc = std::source_location::current()) {
  return apply_op(hardswish_op{}, &loc, x);
}
template <tensor_like X>
auto gelu(const X& x, gelu_approximation approximate = gelu_approximation::none,
          const std::source_location& loc = std::source_location::current()) {
  gelu_op op;
  op.approximate = approximate;
  return apply_op(op, &loc, x);
}

template <tensor_like X>
auto hardtanh(const X& x, double min_val = -1.0, double max_val = 1.0,
              const std::source_location& loc = std::source_location::current()) {
  hardtanh_op op;
  op.min_val = min_val;
  op.max_val = max_val;
  return apply_op(op, &loc, x);
}
// min(max(x, 0), 6): records aten.hardtanh.default(x, 0.0, 6.0), as torch.export does for F.relu6.
template <tensor_like X>
auto relu6(const X& x, const std::source_location& loc = std::source_location::current()) {
  return hardtanh(x, 0.0, 6.0, loc);
}
template <tensor_like X>
auto leaky_relu(const X& x, double negative_slope = 0.01, const std::source_location& loc = std::source_location::current()) {
  leaky_relu_op op;
  op.negative_slope = negative_slope;
  return apply_op(op, &loc, x);
}
template <tensor_like X>
auto elu(const X& x, double alpha = 1.0, const std::source_location& loc = std::source_location::current()) {
  elu_op op;
  op.alpha = alpha;
  return apply_op(op, &loc, x);
}
template <tensor_like X>
auto hardsigmoid(const X& x, const std::source_location& loc = std::source_location::current()) {
  return apply_op(hardsigmoid_op{}, &loc, x);
}
template <tensor_like X>
auto mish(const X& x, const std::source_location& loc = std::source_location::current()) {
  return apply_op(mish_op{}, &loc, x);
}
template <tensor_like X>
auto softplus(const X& x, double beta = 1.0, double threshold = 20.0,
              const std::source_location& loc = std::source_location::current()) {
  softplus_op op;
  op.beta = beta;
  op.threshold = threshold;
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
  static constexpr std::string_view schema =
      "aten::pow.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor";
  static constexpr bool pointwise = true;
  // e x^(e-1); zero for e == 0 (torch's pow_backward)
  template <class C> static void vjp(C& c) {
    const double e = c.args().real("exponent");
    if (e == 0.0) return;
    const auto x = c.input("self");
    const auto d = e == 2.0 ? c.mul(x, 2.0) : c.mul(c.pow(x, e - 1.0), e);
    c.accumulate("self", c.mul(c.grad(), d));
  }
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
  static constexpr std::string_view schema =
      "aten::clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor";
  static constexpr bool pointwise = true;
  // g where min <= x <= max (NaN x: 0, as torch's clamp_backward)
  template <class C> static void vjp(C& c) {
    const auto x = c.input("self");
    auto g = c.grad();
    if (c.args().has("min")) g = c.masked_fill(g, c.logical_not(c.ge(x, c.args().real("min"))), 0.0);
    if (c.args().has("max")) g = c.masked_fill(g, c.logical_not(c.le(x, c.args().real("max"))), 0.0);
    c.accumulate("self", g);
  }
  std::optional<double> lo, hi;
  template <class V>
  void attributes(V&& v) const {
    if (lo) v(*lo);
    else v(nullptr);
    if (hi) v(*hi);
    else v(nullptr);
  }
};

template <class C>
void hardswish_op::decompose(C& c) {
  const auto x = c.input("self");
  c.produce(c.div(c.mul(x, c.emit(op_id_of<clamp_op>, {c.add(x, 3.0), 0.0, 6.0})), 6.0));
}

template <class C>
void hardtanh_op::decompose(C& c) {
  // (min_val at and below it, max_val at and above it: the gradient is 0 at the bounds, as torch's)
  const auto x = c.input("self");
  const double lo = c.args().real_or_default("min_val"), hi = c.args().real_or_default("max_val");
  const auto bound = [&](double v) { return c.full({}, v, c.scalar_type(x)); };
  // (a NaN x: x * 0, NaN with no gradient, as torch's hardtanh_backward gives it none)
  // (one op per statement: the order of a call's arguments is the compiler's, the program's order
  // must not be)
  const auto nan = is_floating_point(c.scalar_type(x)) ? c.mul(x, 0.0) : x;
  const auto at_or_above = c.ge(x, hi);
  const auto high = bound(hi);
  const auto above = c.where(at_or_above, high, nan);
  const auto at_or_below = c.le(x, lo);
  const auto low = bound(lo);
  const auto outside = c.where(at_or_below, low, above);
  const auto over_lo = c.gt(x, lo);
  const auto under_hi = c.lt(x, hi);
  c.produce(c.where(c.logical_and(over_lo, under_hi), x, outside));
}

template <class C>
void hardsigmoid_op::decompose(C& c) {
  // (0 at and below -3, 1 at and above 3, x / 6 + 1/2 between: the gradient is 0 at the bounds, as torch's)
  const auto x = c.input("self");
  const auto bound = [&](double v) { return c.full({}, v, c.scalar_type(x)); };
  // (a NaN x: x * 0, NaN with no gradient, as torch's hardsigmoid_backward gives it none)
  const auto nan = c.mul(x, 0.0);
  const auto at_or_above = c.ge(x, 3.0);
  const auto one = bound(1.0);
  const auto above = c.where(at_or_above, one, nan);
  const auto at_or_below = c.le(x, -3.0);
  const auto zero = bound(0.0);
  const auto outside = c.where(at_or_below, zero, above);
  const auto over = c.gt(x, -3.0);
  const auto under = c.lt(x, 3.0);
  const auto inside = c.logical_and(over, under);
  const auto linear = c.add(c.div(x, 6.0), 0.5);
  c.produce(c.where(inside, linear, outside));
}
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
  static constexpr std::string_view schema =
      "aten::logical_not(Tensor self) -> Tensor";
  static constexpr bool differentiable = false;
  static constexpr bool pointwise = true;
  template <class A>
  static constexpr auto result(const A& a) {
    return tensor_spec<b8, typename A::shape_type>(a.shape);
  }
  // self's shape, bool
  template <class R> static void infer(R& r) { r.result(dtype::b8, r.input("self").shape); }
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
  static constexpr std::string_view target = aten::_to_copy::target;
  static constexpr std::string_view schema = aten::_to_copy::schema;
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

// This header's ops, for the registry (ops/all.hpp).
using unary_ops = op_list<neg_op, abs_op, relu_op, exp_op, log_op, sqrt_op, rsqrt_op, tanh_op, log1p_op, sin_op, cos_op, erf_op,
                         reciprocal_op, pow_scalar_op, clamp_op, sigmoid_op, silu_op, gelu_op, hardswish_op, hardtanh_op,
                         leaky_relu_op, elu_op, hardsigmoid_op, softplus_op, mish_op, logical_not_op, aten::_to_copy,
                         aten::threshold_backward, aten::gelu_backward>;

}  // namespace typex
