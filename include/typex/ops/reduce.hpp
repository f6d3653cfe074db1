// typex/ops/reduce.hpp — reductions over dims: sum, mean, amax, amin, argmax, var, std, logsumexp.
//
//   sum<1>(x)                     aten.sum.dim_IntList(x, [1], False)
//   mean<-1>(x, keepdim)          aten.mean.dim(x, [-1], True)
//   amax<0, 2>(x)                 aten.amax.default(x, [0, 2], False)
//   argmax<1>(x)                  aten.argmax.default(x, 1, False)             -> i64
//   var<1>(x)                     aten.var.correction(x, [1], 1.0, False)      (correction 1: unbiased)
//   stddev<1>(x, 0.0, keepdim)    aten.std.correction(x, [1], 0.0, True)   (not `std`: with
//                                 `using namespace typex`, a function std is ambiguous with namespace std)
//   logsumexp<-1>(x)              aten.logsumexp.default(x, [-1], False)
// No dims means every dim (recorded as the full list). The result's shape is reduce_shape's: a dim
// past the rank, or one named twice, is a compile error naming the op. Dtypes follow torch: sum of
// integers and bools is i64; mean, var, std and logsumexp need a floating-point input; amax and
// amin keep the dtype; argmax gives i64. (var/std's correction and keepdim are keyword-only in
// ATen; typex records them positionally, in the schema's order.)
#pragma once

#include <typex/ops/op.hpp>
#include <typex/core/rules/reduce.hpp>
#include <typex/ops/apply.hpp>
#include <typex/ops/binary.hpp>
#include <typex/ops/tensor_like.hpp>
#include <typex/core/sym_expr.hpp>

#include <array>
#include <source_location>
#include <string_view>
#include <vector>

namespace typex {

namespace detail {
// amax's and amin's derivative: the gradient shared evenly among the elements equal to the
// extremum (torch's).
template <class C>
void extremum_vjp(C& c) {
  const auto x = c.input("self");
  const auto dims = c.reduced_dims("dim", c.rank(x));
  const bool keep = c.args().flag_or_default("keepdim");
  const auto hit = c.to(c.eq(x, c.expand_reduced(c.result(), c.shape(x), dims, keep)), c.scalar_type(x));
  const auto share = c.div(hit, c.sum(hit, dims, true));
  c.accumulate("self", c.mul(c.expand_reduced(c.grad(), c.shape(x), dims, keep), share));
}
// var's derivative, 2 (x - mean) / (N - correction); std's goes through it: d std = d var / (2 std),
// 0 where std is 0 (torch's).
template <class C>
void variance_vjp(C& c, bool std_dev) {
  const auto x = c.input("self");
  const auto dims = c.reduced_dims("dim", c.rank(x));
  const bool keep = c.args().flag_or_default("keepdim");
  const double correction = c.args().has("correction") ? c.args().real("correction") : 1.0;
  auto g = c.grad();
  if (std_dev) g = c.masked_fill(c.div(g, c.mul(c.result(), 2.0)), c.eq(c.result(), 0.0), 0.0);
  const auto centered = c.sub(x, c.mean(x, dims, true));
  const auto scaled = c.mul(c.expand_reduced(g, c.shape(x), dims, keep), c.mul(centered, 2.0));
  if (correction == 0.0) {
    c.accumulate("self", c.divide_by_count(scaled, c.shape(x), dims));
  } else {  // (N - correction: N from the graph where the extents are symbolic)
    const auto n = c.sum(c.full_like(x, 1.0), dims, true);
    c.accumulate("self", c.div(scaled, c.sub(n, correction)));
  }
}

// A reduction's result at run time: self's shape without the dims `dim` names (None or []: every
// dim; kept as 1 with keepdim), in dtype d. A dim named twice is refused, as PyTorch refuses it.
template <class R>
void reduction_meta(R& r, dtype d) {
  const auto& x = r.input("self");
  std::vector<bool> reduced(x.rank() + 1, false);
  for (const std::int64_t k : r.reduced_dims("dim", x.rank())) {
    if (reduced[static_cast<std::size_t>(k)])
      r.fail(to_string_with([&](auto& w) { w.put("dim "); w.put_int(k); w.put(" appears multiple times in the list of dims"); }));
    reduced[static_cast<std::size_t>(k)] = true;
  }
  const bool keep = r.args().flag_or_default("keepdim");
  std::vector<ir::sym_expr> shape;
  for (std::size_t k = 0; k < x.rank(); ++k) {
    if (!reduced[k]) shape.push_back(x.shape[k]);
    else if (keep) shape.emplace_back(index_t{1});
  }
  r.result(d, std::move(shape));
}
// Refuses an integer or bool dtype d (mean, var, std).
template <class R>
void require_floating(const R& r, dtype d) {
  if (!is_floating_point(d))
    r.fail(to_string_with([&](auto& w) { w.put("needs a floating-point input, not "); w.put(name(d)); w.put(" (convert it first)"); }));
}
// The dtype a call asks for (its `dtype` argument), or `fallback` where it gives none.
template <class R>
dtype requested_dtype(const R& r, dtype fallback) {
  return r.args().has("dtype") ? r.args().scalar_type("dtype") : fallback;
}
}  // namespace detail

// The registry's tags for this header's ATen overloads (torch.ops.aten.<op>.<overload>): the op
// types below are templates over static attributes, and every instantiation records one of these.
namespace detail {
// var.correction's decomposition: sum((x - mean)^2) / (N - correction) over the reduced dims
// (N a number when their extents are static, a count in the graph when they are symbolic)
template <class C>
auto variance(C& c) {
  const auto x = c.input("self");
  const auto dims = c.reduced_dims("dim", c.rank(x));
  const double correction = c.args().has("correction") ? c.args().real("correction") : 1.0;
  const auto d = c.sub(x, c.mean(x, dims, true));
  const auto s = c.sum(c.mul(d, d), dims, c.args().flag_or_default("keepdim"));
  // N - correction, never below 0 (torch's max(0, N - correction): var([1, 3], correction=3) is inf)
  double n = 1;
  std::vector<std::remove_cvref_t<decltype(c.size(x, 0))>> symbolic;
  for (const std::int64_t k : dims) {
    const auto& e = c.shape(x)[static_cast<std::size_t>(k)];
    if (e.is_constant()) n *= static_cast<double>(*e.value());
    else symbolic.push_back(e);
  }
  if (symbolic.empty()) return c.div(s, n - correction > 0 ? n - correction : 0.0);
  // (a count over symbolic extents: summed in f32 (f64 for f64), not in a half type that would
  // round it, then in s's dtype)
  const dtype acc = c.scalar_type(s) == dtype::f64 ? dtype::f64 : dtype::f32;
  const auto count = c.sum_all(c.full(std::move(symbolic), n, acc));
  const auto denominator = c.emit(op_id_of<maximum_op>, {c.sub(count, correction), 0.0});
  return c.to(c.div(c.to(s, acc), denominator), c.scalar_type(s));
}
}  // namespace detail

namespace aten {
struct sum_dim_IntList {
  static constexpr std::string_view target = "aten.sum.dim_IntList";
  static constexpr std::string_view schema =
      "aten::sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor";
  // in `dtype`, else self's if floating, else i64 (a sum of integers or bools)
  template <class R> static void infer(R& r) {
    const dtype in = r.input("self").scalar_type;
    detail::reduction_meta(r, detail::requested_dtype(r, is_floating_point(in) ? in : dtype::i64));
  }
  template <class C> static void vjp(C& c) {
    const auto x = c.input("self");
    c.accumulate("self", c.expand_reduced(c.grad(), c.shape(x), c.reduced_dims("dim", c.rank(x)), c.args().flag_or_default("keepdim")));
  }
};
struct mean_dim {
  static constexpr std::string_view target = "aten.mean.dim";
  static constexpr std::string_view schema =
      "aten::mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor";
  // in `dtype`, else self's; a floating one (PyTorch: "mean(): could not infer output dtype")
  template <class R> static void infer(R& r) {
    const dtype d = detail::requested_dtype(r, r.input("self").scalar_type);
    detail::require_floating(r, d);
    detail::reduction_meta(r, d);
  }
  template <class C> static void vjp(C& c) {
    const auto x = c.input("self");
    const auto dims = c.reduced_dims("dim", c.rank(x));
    const auto g = c.expand_reduced(c.grad(), c.shape(x), dims, c.args().flag_or_default("keepdim"));
    c.accumulate("self", c.divide_by_count(g, c.shape(x), dims));
  }
};
struct amax {
  static constexpr std::string_view target = "aten.amax.default";
  static constexpr std::string_view schema =
      "aten::amax(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor";
  template <class R> static void infer(R& r) { detail::reduction_meta(r, r.input("self").scalar_type); }
  template <class C> static void vjp(C& c) { detail::extremum_vjp(c); }
};
struct amin {
  static constexpr std::string_view target = "aten.amin.default";
  static constexpr std::string_view schema =
      "aten::amin(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor";
  template <class R> static void infer(R& r) { detail::reduction_meta(r, r.input("self").scalar_type); }
  template <class C> static void vjp(C& c) { detail::extremum_vjp(c); }
};
struct logsumexp {
  static constexpr std::string_view target = "aten.logsumexp.default";
  static constexpr std::string_view schema =
      "aten::logsumexp(Tensor self, int[1] dim, bool keepdim=False) -> Tensor";
  // m + log(sum(exp(x - m))), m the max over dim (0 where it is infinite, as torch)
  template <class C> static void decompose(C& c) {
    auto x = c.input("self");
    if (!is_floating_point(c.scalar_type(x))) x = c.to(x, c.result_meta().scalar_type);
    const auto dims = c.reduced_dims("dim", c.rank(x));
    const auto m0 = c.emit(op_id_of<amax>, {x, dims, true});
    const auto m = c.masked_fill(m0, c.eq(c.abs(m0), std::numeric_limits<double>::infinity()), 0.0);
    const auto r = c.add(c.log(c.sum(c.exp(c.sub(x, m)), dims, true)), m);
    c.produce(c.reshape(r, c.result_meta().shape));
  }
  // self's dtype if floating, else f32 (PyTorch computes an integer or bool input in the default
  // dtype; the typed logsumexp takes floating inputs only)
  template <class R> static void infer(R& r) {
    const dtype in = r.input("self").scalar_type;
    detail::reduction_meta(r, is_floating_point(in) ? in : dtype::f32);
  }
  // softmax(x) along the dims
  template <class C> static void vjp(C& c) {
    const auto x = c.input("self");
    const auto dims = c.reduced_dims("dim", c.rank(x));
    const bool keep = c.args().flag_or_default("keepdim");
    const auto p = c.exp(c.sub(x, c.expand_reduced(c.result(), c.shape(x), dims, keep)));
    c.accumulate("self", c.mul(c.expand_reduced(c.grad(), c.shape(x), dims, keep), p));
  }
};
struct argmax {
  static constexpr std::string_view target = "aten.argmax.default";
  static constexpr std::string_view schema =
      "aten::argmax(Tensor self, int? dim=None, bool keepdim=False) -> Tensor";
  static constexpr bool differentiable = false;
  // i64 indices, dim reduced (None: every dim, the flattened input's index)
  template <class R> static void infer(R& r) { detail::reduction_meta(r, dtype::i64); }
};
struct var_correction {
  static constexpr std::string_view target = "aten.var.correction";
  static constexpr std::string_view schema =
      "aten::var.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> Tensor";
  // sum((x - mean)^2) / (N - correction) over dim (correction 1 by default)
  template <class C> static void decompose(C& c) { c.produce(detail::variance(c)); }
  // self's dtype, a floating one (PyTorch: "std and var only support floating point and complex dtypes")
  template <class R> static void infer(R& r) {
    detail::require_floating(r, r.input("self").scalar_type);
    detail::reduction_meta(r, r.input("self").scalar_type);
  }
  template <class C> static void vjp(C& c) { detail::variance_vjp(c, false); }
};
struct std_correction {
  static constexpr std::string_view target = "aten.std.correction";
  static constexpr std::string_view schema =
      "aten::std.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> Tensor";
  // sqrt(var(x))
  template <class C> static void decompose(C& c) { c.produce(c.sqrt(detail::variance(c))); }
  // as var
  template <class R> static void infer(R& r) {
    detail::require_floating(r, r.input("self").scalar_type);
    detail::reduction_meta(r, r.input("self").scalar_type);
  }
  template <class C> static void vjp(C& c) { detail::variance_vjp(c, true); }
};
}  // namespace aten

// Pass `typex::keepdim` to keep the reduced dims as extent 1.
struct keepdim_t {
  explicit constexpr keepdim_t() = default;
};
inline constexpr keepdim_t keepdim{};

enum class reduction : unsigned char { sum, mean, amax, amin, logsumexp, argmax, var, std };

namespace detail {
constexpr std::string_view reduction_target(reduction r) noexcept {
  switch (r) {
    case reduction::sum: return aten::sum_dim_IntList::target;
    case reduction::mean: return aten::mean_dim::target;
    case reduction::amax: return aten::amax::target;
    case reduction::amin: return aten::amin::target;
    case reduction::logsumexp: return aten::logsumexp::target;
    case reduction::argmax: return aten::argmax::target;
    case reduction::var: return aten::var_correction::target;
    case reduction::std: return aten::std_correction::target;
  }
  return "";
}
constexpr std::string_view reduction_schema(reduction r) noexcept {
  switch (r) {
    case reduction::sum: return aten::sum_dim_IntList::schema;
    case reduction::mean: return aten::mean_dim::schema;
    case reduction::amax: return aten::amax::schema;
    case reduction::amin: return aten::amin::schema;
    case reduction::logsumexp: return aten::logsumexp::schema;
    case reduction::argmax: return aten::argmax::schema;
    case reduction::var: return aten::var_correction::schema;
    case reduction::std: return aten::std_correction::schema;
  }
  return "";
}

template <std::size_t Rank, long long... Dims>
constexpr auto reduced_dims() {
  if constexpr (sizeof...(Dims) == 0) {
    std::array<index_t, Rank> all{};
    for (std::size_t i = 0; i < Rank; ++i) all[i] = static_cast<index_t>(i);
    return all;
  } else {
    return std::array<index_t, sizeof...(Dims)>{static_cast<index_t>(Dims)...};
  }
}

template <reduction R>
inline constexpr auto reduction_name = [] {
  if constexpr (R == reduction::sum) return fixed_string("sum");
  else if constexpr (R == reduction::mean) return fixed_string("mean");
  else if constexpr (R == reduction::amax) return fixed_string("amax");
  else if constexpr (R == reduction::amin) return fixed_string("amin");
  else if constexpr (R == reduction::logsumexp) return fixed_string("logsumexp");
  else if constexpr (R == reduction::argmax) return fixed_string("argmax");
  else if constexpr (R == reduction::var) return fixed_string("var");
  else return fixed_string("std");
}();
}  // namespace detail

// One op type for every reduction: R picks the ATen target, the attributes and the result dtype.
template <reduction R, bool KeepDim, std::size_t Rank, long long... Dims>
struct reduction_op {
  static constexpr std::string_view target = detail::reduction_target(R);
  static constexpr std::string_view schema = detail::reduction_schema(R);
  double correction = 1.0;  // var and std

  template <class X>
  static constexpr auto result(const X& x) {
    constexpr dtype in = X::dtype_type::value;
    constexpr bool floating_only = R == reduction::mean || R == reduction::logsumexp || R == reduction::var || R == reduction::std;
    static_assert(!floating_only || is_floating_point(in),
                  "typex: mean, var, std and logsumexp need a floating-point input (cast it first)");
    static_assert(R != reduction::argmax || sizeof...(Dims) == 1, "typex::argmax: name exactly one dim");
    const auto s = reduce_shape<KeepDim, Dims...>(x.shape, op_name<detail::reduction_name<R>>);
    using S = std::remove_cvref_t<decltype(s)>;
    if constexpr (R == reduction::argmax || (R == reduction::sum && !is_floating_point(in))) return tensor_spec<i64, S>(s);
    else return tensor_spec<typename X::dtype_type, S>(s);
  }
  template <class V>
  void attributes(V&& v) const {
    if constexpr (R == reduction::argmax) {
      v(index_t{(Dims, ...)});
    } else {
      v(detail::reduced_dims<Rank, Dims...>());
      if constexpr (R == reduction::var || R == reduction::std) v(correction);
    }
    v(KeepDim);
  }
};

namespace detail {
template <reduction R, bool KeepDim, long long... Dims, class X>
auto reduce(const X& x, const std::source_location& loc, double correction = 1.0) {
  reduction_op<R, KeepDim, X::shape_type::rank, Dims...> op;
  op.correction = correction;
  return apply_op(op, &loc, x);
}
}  // namespace detail

template <long long... Dims, tensor_like X>
auto sum(const X& x, const std::source_location& loc = std::source_location::current()) {
  return detail::reduce<reduction::sum, false, Dims...>(x, loc);
}
template <long long... Dims, tensor_like X>
auto sum(const X& x, keepdim_t, const std::source_location& loc = std::source_location::current()) {
  return detail::reduce<reduction::sum, true, Dims...>(x, loc);
}
template <long long... Dims, tensor_like X>
auto mean(const X& x, const std::source_location& loc = std::source_location::current()) {
  return detail::reduce<reduction::mean, false, Dims...>(x, loc);
}
template <long long... Dims, tensor_like X>
auto mean(const X& x, keepdim_t, const std::source_location& loc = std::source_location::current()) {
  return detail::reduce<reduction::mean, true, Dims...>(x, loc);
}
template <long long... Dims, tensor_like X>
auto amax(const X& x, const std::source_location& loc = std::source_location::current()) {
  return detail::reduce<reduction::amax, false, Dims...>(x, loc);
}
template <long long... Dims, tensor_like X>
auto amax(const X& x, keepdim_t, const std::source_location& loc = std::source_location::current()) {
  return detail::reduce<reduction::amax, true, Dims...>(x, loc);
}
template <long long... Dims, tensor_like X>
auto amin(const X& x, const std::source_location& loc = std::source_location::current()) {
  return detail::reduce<reduction::amin, false, Dims...>(x, loc);
}
template <long long... Dims, tensor_like X>
auto amin(const X& x, keepdim_t, const std::source_location& loc = std::source_location::current()) {
  return detail::reduce<reduction::amin, true, Dims...>(x, loc);
}
template <long long... Dims, tensor_like X>
auto logsumexp(const X& x, const std::source_location& loc = std::source_location::current()) {
  return detail::reduce<reduction::logsumexp, false, Dims...>(x, loc);
}
template <long long... Dims, tensor_like X>
auto logsumexp(const X& x, keepdim_t, const std::source_location& loc = std::source_location::current()) {
  return detail::reduce<reduction::logsumexp, true, Dims...>(x, loc);
}
template <long long Dim, tensor_like X>
auto argmax(const X& x, const std::source_location& loc = std::source_location::current()) {
  return detail::reduce<reduction::argmax, false, Dim>(x, loc);
}
template <long long Dim, tensor_like X>
auto argmax(const X& x, keepdim_t, const std::source_location& loc = std::source_location::current()) {
  return detail::reduce<reduction::argmax, true, Dim>(x, loc);
}
// correction: 1 is the unbiased estimate (torch's default), 0 the population one.
template <long long... Dims, tensor_like X>
auto var(const X& x, double correction = 1.0, const std::source_location& loc = std::source_location::current()) {
  return detail::reduce<reduction::var, false, Dims...>(x, loc, correction);
}
template <long long... Dims, tensor_like X>
auto var(const X& x, double correction, keepdim_t, const std::source_location& loc = std::source_location::current()) {
  return detail::reduce<reduction::var, true, Dims...>(x, loc, correction);
}
template <long long... Dims, tensor_like X>
auto stddev(const X& x, double correction = 1.0, const std::source_location& loc = std::source_location::current()) {
  return detail::reduce<reduction::std, false, Dims...>(x, loc, correction);
}
template <long long... Dims, tensor_like X>
auto stddev(const X& x, double correction, keepdim_t, const std::source_location& loc = std::source_location::current()) {
  return detail::reduce<reduction::std, true, Dims...>(x, loc, correction);
}

// This header's ops, for the registry (ops/all.hpp).
using reduce_ops = op_list<aten::sum_dim_IntList, aten::mean_dim, aten::amax, aten::amin, aten::logsumexp, aten::argmax,
                          aten::var_correction, aten::std_correction>;

}  // namespace typex
