// typex/ops/binary.hpp — pointwise binary ops with broadcasting: add, sub, mul, div, maximum,
// minimum, pow (tensor ** tensor), the comparisons eq, ne, lt, le, gt, ge and logical_and / or /
// xor (bool results), and the operators
// + - * / < <= > >= on tensor-like values (tensor op tensor, tensor op scalar, scalar op tensor).
//
// dtypes promote as torch.result_type (core/rules/dtypes.hpp): a Python-style scalar joins a tensor
// only from a higher category (an integer scalar makes a bool tensor i64; a floating one makes a
// bool or integer tensor f32, PyTorch's default dtype); sub refuses bools and pow two bools, in
// PyTorch's words, at compile time. Shapes broadcast
// with the op's name in every message.
#pragma once

#include <typex/ops/op.hpp>
#include <typex/core/rules/broadcast.hpp>
#include <typex/core/rules/dtypes.hpp>
#include <typex/ops/apply.hpp>
#include <typex/ops/tensor_like.hpp>

#include <cmath>
#include <cstdint>
#include <source_location>
#include <string_view>
#include <type_traits>

namespace typex {

namespace detail {
template <class T>
constexpr operand_dtype operand_of() noexcept {
  if constexpr (scalar_like<T>) return scalar_operand<T>();
  else return {T::dtype_type::value};
}

// Argument `Arg` of a pointwise call at run time as the dtype rules see it: a tensor's dtype, or
// the kind of a number (a bool, an integer or a symbolic size, a float).
template <fixed_string Arg, class R>
operand_dtype run_time_operand(const R& r) {
  if (r.is_tensor(Arg.data)) return {r.input(Arg.data).scalar_type};
  if (r.is_real(Arg.data)) return scalar_operand<double>();
  if (r.args().is_integer(Arg.data)) return scalar_operand<std::int64_t>();
  (void)r.args().flag(Arg.data);  // (refuses anything else: a bool is the last kind a Scalar has)
  return scalar_operand<bool>();
}

// The run-time form of binary_pointwise's rule for self and argument `Other` (each a tensor or a
// number, at least one a tensor): Rule's dtype, refused in PyTorch's words where Rule refuses it,
// and the tensors' shapes broadcast.
template <dtype_verdict (*Rule)(operand_dtype, operand_dtype), fixed_string Other, class R>
auto binary_meta(const R& r) {
  const operand_dtype a = run_time_operand<"self">(r), b = run_time_operand<Other>(r);
  if (a.is_scalar() && b.is_scalar()) r.fail("one of the operands must be a tensor");
  const dtype_verdict v = Rule(a, b);
  if (!v.ok()) r.fail(to_string_with([&](auto& w) { put_dtype_refusal(w, v); }));
  auto m = a.is_scalar() ? r.input(Other.data) : r.input("self");
  if (!a.is_scalar() && !b.is_scalar()) m.shape = r.broadcast(m.shape, r.input(Other.data).shape);
  m.scalar_type = v.result;
  return m;
}

// Refuses a call where shape `from` does not expand to `to` (torch.Tensor.expand's rule: aligned
// to the right, each dim of `from` 1 or `to`'s); what: "the mask", "src", for the message.
template <class R, class S>
void require_expands(const R& r, const S& from, const S& to, std::string_view what) {
  if (from.size() > to.size()) r.fail(to_string_with([&](auto& w) { w.put(what); w.put(" has more dims than the tensor it expands to"); }));
  const S b = r.broadcast(from, to);
  for (std::size_t k = 0; k < to.size(); ++k) {
    if (!(b[k] == to[k]) && b[k].is_constant() && to[k].is_constant()) {
      r.fail(to_string_with([&](auto& w) {
        w.put(what); w.put(" cannot expand to the shape it must take: at dim "); w.put_int(static_cast<long long>(k));
        w.put(" its extent "); w.put_int(*b[k].value()); w.put(" is neither 1 nor the target's ("); w.put_int(*to[k].value());
        w.put("): expand only repeats dims of extent 1");
      }));
    }
  }
}

// TrueDivide: an integer or bool result becomes f32 (torch's div.Tensor, the default dtype).
// Rule: the op's dtype rule (core/rules/dtypes.hpp): promotion, or sub's and pow's refusals.
template <fixed_string Name, bool TrueDivide = false, dtype_verdict (*Rule)(operand_dtype, operand_dtype) = promoting_dtypes>
struct binary_pointwise {
  template <class DT>
  using floating_if_divide = std::conditional_t<TrueDivide && !is_floating_point(DT::value), f32, DT>;

  template <class A, class B>
  static constexpr auto result(const A& a, const B& b) {
    if constexpr (scalar_like<A>) {
      return result(b, a);
    } else {
      constexpr dtype_verdict v = Rule(operand_of<A>(), operand_of<B>());
      using DT = floating_if_divide<decltype(checked_dtype<Name, v>())>;
      if constexpr (scalar_like<B>) {
        return tensor_spec<DT, typename A::shape_type>(a.shape);
      } else {
        const auto s = broadcast_shapes(a.shape, b.shape, op_name<Name>);
        return tensor_spec<DT, std::remove_cvref_t<decltype(s)>>(s);
      }
    }
  }
  static constexpr bool pointwise = true;
  // the dtype the operands promote to (Rule's; f32 for an integer true division), the shape they broadcast to
  template <class R> static void infer(R& r) {
    auto m = binary_meta<Rule, "other">(r);
    if (TrueDivide && !is_floating_point(m.scalar_type)) m.scalar_type = dtype::f32;
    r.result(std::move(m));
  }
};

// Comparisons: the operands promote for the comparison; the result is bool.
template <fixed_string Name>
struct comparison {
  template <class A, class B>
  static constexpr auto result(const A& a, const B& b) {
    const auto r = binary_pointwise<Name>::result(a, b);
    return tensor_spec<b8, typename std::remove_cvref_t<decltype(r)>::shape_type>(r.shape);
  }
  static constexpr bool pointwise = true;
  // bool, in the shape the operands broadcast to
  template <class R> static void infer(R& r) {
    auto m = binary_meta<promoting_dtypes, "other">(r);
    m.scalar_type = dtype::b8;
    r.result(std::move(m));
  }
};
// maximum's (minimum's) derivative: the gradient to the larger (smaller) side, half to each on
// ties (torch's)
template <class C>
void maximum_minimum_vjp(C& c, bool maximum) {
  const auto a = c.input("self");
  const auto b = c.input("other");
  const auto g = c.grad();
  const auto half = c.where(c.eq(a, b), c.mul(g, 0.5), g);
  c.accumulate("self", c.masked_fill(half, maximum ? c.lt(a, b) : c.gt(a, b), 0.0));
  c.accumulate("other", c.masked_fill(half, maximum ? c.gt(a, b) : c.lt(a, b), 0.0));
}
}  // namespace detail

struct add_op : detail::binary_pointwise<"add"> {
  static constexpr std::string_view target = "aten.add.Tensor";
  static constexpr std::string_view schema =
      "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor";
  template <class C> static void vjp(C& c) {
    const auto g = c.grad();
    c.accumulate("self", g);
    const double alpha = c.args().real_or_default("alpha");
    if (c.wants("other")) c.accumulate("other", alpha == 1.0 ? g : c.mul(g, alpha));
  }
  template <class T>
  static constexpr T scalar(T a, T b) { return a + b; }
};
struct sub_op : detail::binary_pointwise<"sub", false, sub_dtypes> {
  static constexpr std::string_view target = "aten.sub.Tensor";
  static constexpr std::string_view schema =
      "aten::sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor";
  template <class C> static void vjp(C& c) {
    const auto g = c.grad();
    c.accumulate("self", g);
    if (c.wants("other")) c.accumulate("other", c.mul(g, -c.args().real_or_default("alpha")));
  }
  template <class T>
  static constexpr T scalar(T a, T b) { return a - b; }
};
struct mul_op : detail::binary_pointwise<"mul"> {
  static constexpr std::string_view target = "aten.mul.Tensor";
  static constexpr std::string_view schema =
      "aten::mul.Tensor(Tensor self, Tensor other) -> Tensor";
  template <class C> static void vjp(C& c) {
    const auto g = c.grad();
    if (c.wants("self"))
      c.accumulate("self", c.is_tensor("other") ? c.mul(g, c.input("other")) : c.mul(g, c.args().real("other")));
    if (c.wants("other")) c.accumulate("other", c.mul(g, c.input("self")));
  }
  template <class T>
  static constexpr T scalar(T a, T b) { return a * b; }
};
struct div_op : detail::binary_pointwise<"div", true> {  // true division: 7 / 2 == 3.5, as torch
  static constexpr std::string_view target = "aten.div.Tensor";
  static constexpr std::string_view schema =
      "aten::div.Tensor(Tensor self, Tensor other) -> Tensor";
  // d/dself = 1/other; d/dother = -self/other^2 = -y/other
  template <class C> static void vjp(C& c) {
    const auto g = c.grad();
    if (c.wants("self"))
      c.accumulate("self", c.is_tensor("other") ? c.div(g, c.input("other")) : c.div(g, c.args().real("other")));
    if (c.wants("other")) c.accumulate("other", c.div(c.mul(g, c.neg(c.result())), c.input("other")));
  }
  template <class T>
  static constexpr T scalar(T a, T b) { return a / b; }
};

struct maximum_op : detail::binary_pointwise<"maximum"> {
  static constexpr std::string_view target = "aten.maximum.default";
  static constexpr std::string_view schema =
      "aten::maximum(Tensor self, Tensor other) -> Tensor";
  template <class C> static void vjp(C& c) { detail::maximum_minimum_vjp(c, true); }
  template <class T>
  static constexpr T scalar(T a, T b) { return a < b ? b : a; }
};
struct minimum_op : detail::binary_pointwise<"minimum"> {
  static constexpr std::string_view target = "aten.minimum.default";
  static constexpr std::string_view schema =
      "aten::minimum(Tensor self, Tensor other) -> Tensor";
  template <class C> static void vjp(C& c) { detail::maximum_minimum_vjp(c, false); }
  template <class T>
  static constexpr T scalar(T a, T b) { return b < a ? b : a; }
};

struct eq_op : detail::comparison<"eq"> {
  static constexpr std::string_view target = "aten.eq.Tensor";
  static constexpr std::string_view schema =
      "aten::eq.Tensor(Tensor self, Tensor other) -> Tensor";
  static constexpr bool differentiable = false;
  template <class T> static constexpr bool scalar(T a, T b) { return a == b; }
};
struct ne_op : detail::comparison<"ne"> {
  static constexpr std::string_view target = "aten.ne.Tensor";
  static constexpr std::string_view schema =
      "aten::ne.Tensor(Tensor self, Tensor other) -> Tensor";
  static constexpr bool differentiable = false;
  template <class T> static constexpr bool scalar(T a, T b) { return a != b; }
};
struct lt_op : detail::comparison<"lt"> {
  static constexpr std::string_view target = "aten.lt.Tensor";
  static constexpr std::string_view schema =
      "aten::lt.Tensor(Tensor self, Tensor other) -> Tensor";
  static constexpr bool differentiable = false;
  template <class T> static constexpr bool scalar(T a, T b) { return a < b; }
};
struct le_op : detail::comparison<"le"> {
  static constexpr std::string_view target = "aten.le.Tensor";
  static constexpr std::string_view schema =
      "aten::le.Tensor(Tensor self, Tensor other) -> Tensor";
  static constexpr bool differentiable = false;
  template <class T> static constexpr bool scalar(T a, T b) { return a <= b; }
};
struct gt_op : detail::comparison<"gt"> {
  static constexpr std::string_view target = "aten.gt.Tensor";
  static constexpr std::string_view schema =
      "aten::gt.Tensor(Tensor self, Tensor other) -> Tensor";
  static constexpr bool differentiable = false;
  template <class T> static constexpr bool scalar(T a, T b) { return a > b; }
};
struct ge_op : detail::comparison<"ge"> {
  static constexpr std::string_view target = "aten.ge.Tensor";
  static constexpr std::string_view schema =
      "aten::ge.Tensor(Tensor self, Tensor other) -> Tensor";
  static constexpr bool differentiable = false;
  template <class T> static constexpr bool scalar(T a, T b) { return a >= b; }
};

// x ** y elementwise (aten.pow.Tensor_Tensor); pow(x, number) is aten.pow.Tensor_Scalar (unary.hpp).
// Integers raise by repeated squaring, as torch does (a negative exponent of an integer base other
// than 1 or -1 gives 0, as torch's integer pow).
struct pow_op : detail::binary_pointwise<"pow", false, pow_dtypes> {
  static constexpr std::string_view target = "aten.pow.Tensor_Tensor";
  static constexpr std::string_view schema =
      "aten::pow.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor";
  // (the second operand is `exponent`)
  template <class R> static void infer(R& r) { r.result(detail::binary_meta<pow_dtypes, "exponent">(r)); }
  // d/dx = e x^(e-1) (0 where e == 0); d/de = y log(x) (0 where x == 0 and e >= 0): torch's
  template <class C> static void vjp(C& c) {
    const auto x = c.input("self");
    const auto e = c.input("exponent");
    const auto g = c.grad();
    if (c.wants("self"))
      c.accumulate("self", c.masked_fill(c.mul(g, c.mul(e, c.pow(x, c.sub(e, 1.0)))), c.eq(e, 0.0), 0.0));
    if (c.wants("exponent"))
      c.accumulate("exponent", c.mul(g, c.masked_fill(c.mul(c.result(), c.log(x)), c.logical_and(c.eq(x, 0.0), c.ge(e, 0.0)), 0.0)));
  }
  template <class T>
  static T scalar(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) {
      return b == T(2) ? a * a : static_cast<T>(std::pow(a, b));
    } else {
      if (b < 0) return a == 1 ? T(1) : (a == -1 ? (b % 2 == 0 ? T(1) : T(-1)) : T(0));
      T r = 1;
      for (T base = a; b > 0; b >>= 1, base *= base)
        if (b & 1) r *= base;
      return r;
    }
  }
};

// Truth of each side (nonzero is true), combined; the result is bool.
struct logical_and_op : detail::comparison<"logical_and"> {
  static constexpr std::string_view target = "aten.logical_and.default";
  static constexpr std::string_view schema =
      "aten::logical_and(Tensor self, Tensor other) -> Tensor";
  static constexpr bool differentiable = false;
  template <class T> static constexpr bool scalar(T a, T b) { return a != T(0) && b != T(0); }
};
struct logical_or_op : detail::comparison<"logical_or"> {
  static constexpr std::string_view target = "aten.logical_or.default";
  static constexpr std::string_view schema =
      "aten::logical_or(Tensor self, Tensor other) -> Tensor";
  static constexpr bool differentiable = false;
  template <class T> static constexpr bool scalar(T a, T b) { return a != T(0) || b != T(0); }
};
struct logical_xor_op : detail::comparison<"logical_xor"> {
  static constexpr std::string_view target = "aten.logical_xor.default";
  static constexpr std::string_view schema =
      "aten::logical_xor(Tensor self, Tensor other) -> Tensor";
  static constexpr bool differentiable = false;
  template <class T> static constexpr bool scalar(T a, T b) { return (a != T(0)) != (b != T(0)); }
};

// At least one side is a tensor; the other a tensor or an arithmetic scalar.
template <class A, class B>
concept binary_operands = (tensor_like<A> && (tensor_like<B> || scalar_like<B>)) || (scalar_like<A> && tensor_like<B>);

template <class A, class B> requires binary_operands<A, B>
auto add(const A& a, const B& b, const std::source_location& loc = std::source_location::current()) {
  return apply_op(add_op{}, &loc, a, b);
}
template <class A, class B> requires binary_operands<A, B>
auto sub(const A& a, const B& b, const std::source_location& loc = std::source_location::current()) {
  return apply_op(sub_op{}, &loc, a, b);
}
template <class A, class B> requires binary_operands<A, B>
auto mul(const A& a, const B& b, const std::source_location& loc = std::source_location::current()) {
  return apply_op(mul_op{}, &loc, a, b);
}
template <class A, class B> requires binary_operands<A, B>
auto div(const A& a, const B& b, const std::source_location& loc = std::source_location::current()) {
  return apply_op(div_op{}, &loc, a, b);
}

template <class A, class B> requires binary_operands<A, B>
auto maximum(const A& a, const B& b, const std::source_location& loc = std::source_location::current()) {
  return apply_op(maximum_op{}, &loc, a, b);
}
template <class A, class B> requires binary_operands<A, B>
auto minimum(const A& a, const B& b, const std::source_location& loc = std::source_location::current()) {
  return apply_op(minimum_op{}, &loc, a, b);
}
template <class A, class B> requires binary_operands<A, B>
auto eq(const A& a, const B& b, const std::source_location& loc = std::source_location::current()) { return apply_op(eq_op{}, &loc, a, b); }
template <class A, class B> requires binary_operands<A, B>
auto ne(const A& a, const B& b, const std::source_location& loc = std::source_location::current()) { return apply_op(ne_op{}, &loc, a, b); }
template <class A, class B> requires binary_operands<A, B>
auto lt(const A& a, const B& b, const std::source_location& loc = std::source_location::current()) { return apply_op(lt_op{}, &loc, a, b); }
template <class A, class B> requires binary_operands<A, B>
auto le(const A& a, const B& b, const std::source_location& loc = std::source_location::current()) { return apply_op(le_op{}, &loc, a, b); }
template <class A, class B> requires binary_operands<A, B>
auto gt(const A& a, const B& b, const std::source_location& loc = std::source_location::current()) { return apply_op(gt_op{}, &loc, a, b); }
template <class A, class B> requires binary_operands<A, B>
auto ge(const A& a, const B& b, const std::source_location& loc = std::source_location::current()) { return apply_op(ge_op{}, &loc, a, b); }

template <tensor_like A, tensor_like B>
auto pow(const A& a, const B& b, const std::source_location& loc = std::source_location::current()) {
  return apply_op(pow_op{}, &loc, a, b);
}
template <tensor_like A, tensor_like B>
auto logical_and(const A& a, const B& b, const std::source_location& loc = std::source_location::current()) {
  return apply_op(logical_and_op{}, &loc, a, b);
}
template <tensor_like A, tensor_like B>
auto logical_or(const A& a, const B& b, const std::source_location& loc = std::source_location::current()) {
  return apply_op(logical_or_op{}, &loc, a, b);
}
template <tensor_like A, tensor_like B>
auto logical_xor(const A& a, const B& b, const std::source_location& loc = std::source_location::current()) {
  return apply_op(logical_xor_op{}, &loc, a, b);
}

// Operators on tensor-like values (never on dims or scalars alone). Operators cannot take a default
// argument, so the nodes they record carry no source location; call add(a, b) to get one.
template <class A, class B> requires binary_operands<A, B>
auto operator+(const A& a, const B& b) { return apply_op(add_op{}, nullptr, a, b); }
template <class A, class B> requires binary_operands<A, B>
auto operator-(const A& a, const B& b) { return apply_op(sub_op{}, nullptr, a, b); }
template <class A, class B> requires binary_operands<A, B>
auto operator*(const A& a, const B& b) { return apply_op(mul_op{}, nullptr, a, b); }
template <class A, class B> requires binary_operands<A, B>
auto operator/(const A& a, const B& b) { return apply_op(div_op{}, nullptr, a, b); }

// Ordering comparisons as operators (== and != stay equality of values: tensor specs compare
// shapes with them; call eq(a, b) / ne(a, b) for the elementwise ops). Not on tensor specs.
template <class A, class B>
concept comparison_operands = binary_operands<A, B> && !tensor_spec_type<A> && !tensor_spec_type<B>;
template <class A, class B> requires comparison_operands<A, B>
auto operator<(const A& a, const B& b) { return apply_op(lt_op{}, nullptr, a, b); }
template <class A, class B> requires comparison_operands<A, B>
auto operator<=(const A& a, const B& b) { return apply_op(le_op{}, nullptr, a, b); }
template <class A, class B> requires comparison_operands<A, B>
auto operator>(const A& a, const B& b) { return apply_op(gt_op{}, nullptr, a, b); }
template <class A, class B> requires comparison_operands<A, B>
auto operator>=(const A& a, const B& b) { return apply_op(ge_op{}, nullptr, a, b); }

// This header's ops, for the registry (ops/all.hpp).
using binary_ops = op_list<add_op, sub_op, mul_op, div_op, maximum_op, minimum_op, pow_op, eq_op, ne_op, lt_op, le_op, gt_op,
                          ge_op, logical_and_op, logical_or_op, logical_xor_op>;

}  // namespace typex
