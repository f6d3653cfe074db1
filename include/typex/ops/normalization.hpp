// typex/ops/normalization.hpp — softmax, log_softmax, layer_norm, batch_norm (inference form), group_norm.
//
//   softmax<-1>(x)                          aten.softmax.int(x, -1)
//   layer_norm(x, weight, bias, 1e-5)       aten.layer_norm.default(x, [256], weight, bias, 1e-05)
//   batch_norm(x, weight, bias, mean, var, 0.1, 1e-5)
//                                           aten.batch_norm.default(x, weight, bias, mean, var, False, 0.1, 1e-05, True)
// layer_norm normalizes over the weight's dims, which must be x's trailing dims; batch_norm over
// every dim but the channels (dim 1), using the running statistics; batch_norm_training uses the
// batch's statistics and updates the running ones in place.
#pragma once

#include <typex/ops/op.hpp>
#include <typex/core/rules/broadcast.hpp>
#include <typex/ops/apply.hpp>
#include <typex/ops/reduce.hpp>
#include <typex/ops/shape_ops.hpp>
#include <typex/ops/tensor_like.hpp>

#include <array>
#include <cstdint>
#include <source_location>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace typex {

// The run-time rules' parts (each op's `infer`, ir/describe.hpp).
namespace detail {
// softmax and log_softmax: the input's shape, in `dtype` where the call gives one (the input is
// converted first), a floating dtype; dim in range.
template <class R>
void softmax_meta(R& r) {
  auto m = r.input("self");
  (void)r.wrap(r.args().integer("dim"), m.rank());
  if (r.args().has("dtype")) m.scalar_type = r.args().scalar_type("dtype");
  if (!is_floating_point(m.scalar_type)) r.fail("the input must be a floating-point tensor (or dtype a floating one)");
  r.result(std::move(m));
}

// A per-channel (or per-element) parameter `t` of a normalization must hold n elements.
template <class R, class M, class E>
void require_elements(const R& r, std::string_view what, const M& t, const E& n) {
  const auto count = shape_meta::product(t.shape.begin(), t.shape.end());
  if (shape_meta::differ(count, n))
    r.fail(std::string(what) + " " + shape_meta::text(t.shape) + " should hold " + n.to_string() + " elements");
}
}  // namespace detail

// The registry's tags for this header's ATen overloads (torch.ops.aten.<op>.<overload>): the op
// types below are templates over static attributes, and every instantiation records one of these.
namespace detail {
// softmax / log_softmax's decomposition over dim, shifted by the max (torch's own trick)
template <class C>
auto softmax_decomposition(C& c, bool log) {
  auto x = c.input("self");
  if (c.scalar_type(x) != c.result_meta().scalar_type) x = c.to(x, c.result_meta().scalar_type);
  const std::vector<std::int64_t> dims{static_cast<std::int64_t>(c.wrap(c.args().integer("dim"), c.rank(x)))};
  const auto shifted = c.sub(x, c.emit(op_id_of<aten::amax>, {x, dims, true}));
  const auto e = c.exp(shifted);
  const auto s = c.sum(e, dims, true);
  return log ? c.sub(shifted, c.log(s)) : c.div(e, s);
}
}  // namespace detail

namespace aten {
struct softmax_int {
  static constexpr std::string_view target = "aten.softmax.int";
  static constexpr std::string_view schema =
      "aten::softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor";
  // exp(x - max) / sum(exp(x - max)) over dim
  template <class C> static void decompose(C& c) { c.produce(detail::softmax_decomposition(c, false)); }
  template <class R> static void infer(R& r) { detail::softmax_meta(r); }
  // y (g - sum(g y))
  template <class C> static void vjp(C& c) {
    const auto y = c.result();
    const auto g = c.grad();
    const std::int64_t dim = c.args().integer("dim");
    c.accumulate("self", c.mul(y, c.sub(g, c.sum(c.mul(g, y), {dim}, true))));
  }
};
struct log_softmax_int {
  static constexpr std::string_view target = "aten.log_softmax.int";
  static constexpr std::string_view schema =
      "aten::log_softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor";
  // x - max - log(sum(exp(x - max))) over dim
  template <class C> static void decompose(C& c) { c.produce(detail::softmax_decomposition(c, true)); }
  template <class R> static void infer(R& r) { detail::softmax_meta(r); }
  // g - exp(y) sum(g)
  template <class C> static void vjp(C& c) {
    const auto g = c.grad();
    const std::int64_t dim = c.args().integer("dim");
    c.accumulate("self", c.sub(g, c.mul(c.exp(c.result()), c.sum(g, {dim}, true))));
  }
};
struct group_norm {
  static constexpr std::string_view target = "aten.group_norm.default";
  static constexpr std::string_view schema =
      "aten::group_norm(Tensor input, int num_groups, Tensor? weight=None, Tensor? bias=None, float eps=1e-05, bool cudnn_enabled=True) -> Tensor";
  // [N, C, *] as [N, G, C/G * prod(*)], normalized over the last dim, back, then * weight + bias
  template <class C> static void decompose(C& c) {
    const auto x = c.input("input");
    const auto shape = c.shape(x);
    const std::int64_t groups = c.args().integer("num_groups");
    using E = std::remove_cvref_t<decltype(shape[0])>;
    E per_group = E::apply(dim_op::floordiv, shape[1], E(index_t{groups}));
    for (std::size_t i = 2; i < shape.size(); ++i) per_group = per_group * shape[i];
    const auto grouped = c.reshape(x, {shape[0], E(index_t{groups}), per_group});
    auto y = c.reshape(c.normalized(grouped, {2}, c.args().real_or_default("eps")).first, shape);
    if (c.is_tensor("weight")) y = c.mul(y, c.along_channels(c.input("weight"), shape.size()));
    if (c.is_tensor("bias")) y = c.add(y, c.along_channels(c.input("bias"), shape.size()));
    c.produce(y);
  }
  // the input's dtype and shape, [N, C, ...] with C split into num_groups; weight and bias [C]
  template <class R> static void infer(R& r) {
    const auto& x = r.input("input");
    if (!is_floating_point(x.scalar_type)) r.fail("the input must be a floating-point tensor");
    if (x.rank() < 2) r.fail("the input must be [N, C, ...], not " + detail::shape_meta::text(x.shape));
    const std::int64_t groups = r.args().integer("num_groups");
    const auto& c = x.shape[1];
    if (groups < 1 || (c.is_constant() && *c.value() % groups != 0))
      r.fail(c.to_string() + " channels do not split into " + std::to_string(groups) + " groups");
    if (r.is_tensor("weight")) detail::require_elements(r, "weight", r.input("weight"), c);
    if (r.is_tensor("bias")) detail::require_elements(r, "bias", r.input("bias"), c);
    r.result(x);
  }
  // [N, C, *] seen as [N, G, C/G * prod(*)], normalized over the last dim
  template <class C> static void vjp(C& c) {
    const auto x = c.input("input");
    const std::size_t r = c.rank(x);
    const auto shape = c.shape(x);
    const std::int64_t groups = c.args().integer("num_groups");
    using extent = std::remove_cvref_t<decltype(shape[0])>;
    auto per_group = shape[1];
    for (std::size_t d = 2; d < r; ++d) per_group = per_group * shape[d];
    per_group = extent::apply(dim_op::floordiv, per_group, extent(index_t{groups}));
    const auto grouped = [&](auto v) { return c.reshape(v, {shape[0], extent(index_t{groups}), per_group}); };
    const auto g = c.grad();
    const auto [xhat_g, rstd] = c.normalized(grouped(x), {2}, c.args().real_or_default("eps"));
    const auto xhat = c.reshape(xhat_g, shape);
    if (c.wants("input")) {
      const auto dxhat = c.is_tensor("weight") ? c.mul(g, c.along_channels(c.input("weight"), r)) : g;
      c.accumulate("input", c.reshape(c.normalize_backward(grouped(dxhat), xhat_g, rstd, {2}), shape));
    }
    const auto dims = c.all_dims_but(r, 1);
    if (c.wants("weight")) c.accumulate("weight", c.sum(c.mul(g, xhat), dims));
    if (c.wants("bias")) c.accumulate("bias", c.sum(g, dims));
  }
};
}  // namespace aten

template <long long Dim, fixed_string Name>
struct softmax_like {
  template <class X>
  static constexpr X result(const X& x) {
    static_assert(is_floating_point(X::dtype_type::value), "typex::softmax: the input must be a floating-point tensor");
    (void)detail::checked_dim<Name, Dim, static_cast<long long>(X::shape_type::rank)>();
    return x;
  }
  template <class V>
  void attributes(V&& v) const {
    v(index_t{Dim});
  }
};
template <long long Dim>
struct softmax_op : softmax_like<Dim, "softmax"> {
  static constexpr std::string_view target = aten::softmax_int::target;
  static constexpr std::string_view schema = aten::softmax_int::schema;
};
template <long long Dim>
struct log_softmax_op : softmax_like<Dim, "log_softmax"> {
  static constexpr std::string_view target = aten::log_softmax_int::target;
  static constexpr std::string_view schema = aten::log_softmax_int::schema;
};

namespace detail {
// The normalized shape (the weight's) must be the input's trailing dims.
template <class SX, class SW>
constexpr auto require_trailing(const SX& x, const SW& w) {
  if constexpr (SW::rank > SX::rank || SW::rank == 0) {
    TYPEX_STATIC_FAIL(static_shape_error, [](auto& out) {
      out.put("typex::layer_norm: the normalized shape "); SW::write_type(out); out.put(" is not the trailing dims of input ");
      SX::write_type(out);
    });
  } else {
    (void)broadcast_shapes(take<SX::rank - SW::rank, SW::rank>(x), w, op_name<"layer_norm">);
  }
}
}  // namespace detail

struct layer_norm_op {
  static constexpr std::string_view target = "aten.layer_norm.default";
  static constexpr std::string_view schema =
      "aten::layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, Tensor? bias=None, float eps=1e-05, bool cudnn_enable=True) -> Tensor";
  // (x - mean) / sqrt(var + eps) over the normalized dims, then * weight + bias
  template <class C> static void decompose(C& c) {
    const auto x = c.input("input");
    const std::size_t k = c.sizes("normalized_shape").size();
    std::vector<std::int64_t> dims;
    for (std::size_t i = c.rank(x) - k; i < c.rank(x); ++i) dims.push_back(static_cast<std::int64_t>(i));
    auto y = c.normalized(x, dims, c.args().real_or_default("eps")).first;
    if (c.is_tensor("weight")) y = c.mul(y, c.input("weight"));
    if (c.is_tensor("bias")) y = c.add(y, c.input("bias"));
    c.produce(y);
  }
  // the input's dtype and shape; normalized_shape is its trailing dims, weight and bias hold as
  // many elements
  template <class R> static void infer(R& r) {
    const auto& x = r.input("input");
    if (!is_floating_point(x.scalar_type)) r.fail("the input must be a floating-point tensor");
    const auto normalized = r.sizes("normalized_shape");
    bool trailing = !normalized.empty() && normalized.size() <= x.rank();
    for (std::size_t k = 0; trailing && k < normalized.size(); ++k)
      trailing = !detail::shape_meta::differ(x.shape[x.rank() - normalized.size() + k], normalized[k]);
    if (!trailing)
      r.fail("the normalized shape " + detail::shape_meta::text(normalized) + " is not the trailing dims of input " +
             detail::shape_meta::text(x.shape));
    const auto n = detail::shape_meta::product(normalized.begin(), normalized.end());
    if (r.is_tensor("weight")) detail::require_elements(r, "weight", r.input("weight"), n);
    if (r.is_tensor("bias")) detail::require_elements(r, "bias", r.input("bias"), n);
    r.result(x);
  }
  // over the last len(normalized_shape) dims, statistics recomputed:
  // dx = rstd (dxhat - mean(dxhat) - xhat mean(dxhat xhat)), dxhat = g w
  template <class C> static void vjp(C& c) {
    const auto x = c.input("input");
    const std::size_t k = c.sizes("normalized_shape").size(), r = c.rank(x);
    std::vector<std::int64_t> dims;
    for (std::size_t d = r - k; d < r; ++d) dims.push_back(static_cast<std::int64_t>(d));
    const auto g = c.grad();
    const auto [xhat, rstd] = c.normalized(x, dims, c.args().real_or_default("eps"));
    if (c.wants("input")) {
      const auto dxhat = c.is_tensor("weight") ? c.mul(g, c.input("weight")) : g;
      c.accumulate("input", c.normalize_backward(dxhat, xhat, rstd, dims));
    }
    if (c.wants("weight")) c.accumulate("weight", c.mul(g, xhat));  // (summed over the leading dims)
    if (c.wants("bias")) c.accumulate("bias", g);
  }
  static constexpr std::size_t attributes_at = 1;  // (input, normalized_shape, weight, bias, eps)
  std::array<index_t, 1> normalized{};

  template <class X, class W, class B>
  static constexpr X result(const X& x, const W& w, const B&, double /*eps*/) {
    static_assert(is_floating_point(X::dtype_type::value), "typex::layer_norm: the input must be a floating-point tensor");
    if constexpr (!std::is_null_pointer_v<W>) detail::require_trailing(x.shape, w.shape);
    return x;
  }
  template <class V>
  void attributes(V&& v) const {
    v(normalized);
  }
};

struct batch_norm_op {
  static constexpr std::string_view target = "aten.batch_norm.default";
  static constexpr std::string_view schema =
      "aten::batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, bool training, float momentum, float eps, bool cudnn_enabled) -> Tensor";
  // per channel (dim 1): with the batch's statistics in training (or without running ones), else
  // with the running ones; then * weight + bias
  template <class C> static void decompose(C& c) {
    const auto x = c.input("input");
    const std::size_t r = c.rank(x);
    const double eps = c.args().real("eps");
    const auto channels = [&](auto v) { return c.along_channels(v, r); };
    auto y = x;
    if (c.args().flag("training") || !c.is_tensor("running_mean")) {
      y = c.normalized(x, c.all_dims_but(r, 1), eps).first;
    } else {
      const auto centered = c.sub(x, channels(c.input("running_mean")));  // (one op per statement: see gelu's)
      const auto rstd = channels(c.rsqrt(c.add(c.input("running_var"), eps)));
      y = c.mul(centered, rstd);
    }
    if (c.is_tensor("weight")) y = c.mul(y, channels(c.input("weight")));
    if (c.is_tensor("bias")) y = c.add(y, channels(c.input("bias")));
    c.produce(y);
  }
  // the input's dtype and shape, [N, C, ...]; weight, bias and the running statistics [C]
  template <class R> static void infer(R& r) {
    const auto& x = r.input("input");
    if (!is_floating_point(x.scalar_type)) r.fail("the input must be a floating-point tensor");
    if (x.rank() < 2) r.fail("the input must be [N, C, ...], not " + detail::shape_meta::text(x.shape));
    if (r.is_tensor("weight")) detail::require_elements(r, "weight", r.input("weight"), x.shape[1]);
    if (r.is_tensor("bias")) detail::require_elements(r, "bias", r.input("bias"), x.shape[1]);
    if (r.is_tensor("running_mean")) detail::require_elements(r, "running_mean", r.input("running_mean"), x.shape[1]);
    if (r.is_tensor("running_var")) detail::require_elements(r, "running_var", r.input("running_var"), x.shape[1]);
    r.result(x);
  }
  // per channel (dim 1): with the batch's statistics in training (or without running ones), else
  // with the running statistics (constants here)
  template <class C> static void vjp(C& c) {
    const auto x = c.input("input");
    const std::size_t r = c.rank(x);
    const auto dims = c.all_dims_but(r, 1);
    const auto g = c.grad();
    const double eps = c.args().real("eps");
    const bool batch_stats = c.args().flag("training") || !c.is_tensor("running_mean");
    const auto per_channel = [&](auto v) { return c.along_channels(v, r); };
    auto xhat = g, rstd = g;
    if (batch_stats) {
      std::tie(xhat, rstd) = c.normalized(x, dims, eps);
    } else {
      rstd = per_channel(c.rsqrt(c.add(c.input("running_var"), eps)));
      xhat = c.mul(c.sub(x, per_channel(c.input("running_mean"))), rstd);
    }
    if (c.wants("input")) {
      const auto dxhat = c.is_tensor("weight") ? c.mul(g, per_channel(c.input("weight"))) : g;
      c.accumulate("input", batch_stats ? c.normalize_backward(dxhat, xhat, rstd, dims) : c.mul(dxhat, rstd));
    }
    if (c.wants("weight")) c.accumulate("weight", c.sum(c.mul(g, xhat), dims));
    if (c.wants("bias")) c.accumulate("bias", c.sum(g, dims));
    if (!batch_stats && (c.wants("running_mean") || c.wants("running_var"))) {  // (constants in eval mode)
      const auto gw = c.is_tensor("weight") ? c.mul(g, per_channel(c.input("weight"))) : g;
      if (c.wants("running_mean")) c.accumulate("running_mean", c.neg(c.sum(c.mul(gw, rstd), dims)));
      if (c.wants("running_var"))  // d/dv (v + eps)^(-1/2) = -rstd^3 / 2
        c.accumulate("running_var", c.sum(c.mul(c.mul(gw, xhat), c.mul(c.mul(rstd, rstd), -0.5)), dims));
    }
  }
  double momentum = 0.1;
  double eps = 1e-5;
  bool training = false;  // batch statistics, and running statistics updated in place (eager)

  template <class X, class W, class B, class M, class Var>
  static constexpr X result(const X& x, const W& w, const B&, const M& mean, const Var&) {
    static_assert(X::shape_type::rank >= 2, "typex::batch_norm: the input must be [N, C, ...]");
    static_assert(M::shape_type::rank == 1, "typex::batch_norm: the running mean must be [C]");
    const auto c = shape(x.shape.template get<1>());
    (void)broadcast_shapes(c, mean.shape, op_name<"batch_norm">);
    if constexpr (!std::is_null_pointer_v<W>) (void)broadcast_shapes(c, w.shape, op_name<"batch_norm">);
    return x;
  }
  template <class V>
  void attributes(V&& v) const {
    v(training);
    v(momentum);
    v(eps);
    v(true);  // cudnn_enabled (PyTorch's default; no effect here)
  }
};

// Normalizes each of G groups of channels of [N, C, ...] over the group's channels and the
// spatial dims, then scales and shifts per channel (aten.group_norm.default(x, G, weight, bias,
// eps, cudnn_enabled)). C must be divisible by G: a compile error when C is static.
template <index_t G>
struct group_norm_op {
  static constexpr std::string_view target = aten::group_norm::target;
  static constexpr std::string_view schema = aten::group_norm::schema;
  static constexpr std::size_t attributes_at = 1;  // (input, num_groups, weight, bias, eps, cudnn_enabled)
  template <class X, class W, class B>
  static constexpr X result(const X& x, const W& w, const B&, double /*eps*/, bool /*cudnn*/) {
    static_assert(is_floating_point(X::dtype_type::value), "typex::group_norm: the input must be a floating-point tensor");
    static_assert(X::shape_type::rank >= 2, "typex::group_norm: the input must be [N, C, ...]");
    static_assert(G >= 1, "typex::group_norm: the number of groups must be at least 1");
    using C = typename X::shape_type::template dim_t<1>;
    if constexpr (is_static_dim_v<C>) {
      if constexpr (C::value % G != 0) {
        TYPEX_STATIC_FAIL(static_shape_error, [](auto& out) {
          out.put("typex::group_norm: "); out.put_int(C::value); out.put(" channels do not split into "); out.put_int(G);
          out.put(" groups; the channel count must be divisible by the number of groups");
        });
      }
    } else if (x.shape.template get<1>().get() % G != 0) {
      detail::raise<shape_error>([&](auto& out) {
        out.put("typex::group_norm: "); out.put_int(x.shape.template get<1>().get()); out.put(" channels do not split into ");
        out.put_int(G); out.put(" groups");
      });
    }
    if constexpr (!std::is_null_pointer_v<W>)
      (void)broadcast_shapes(shape(x.shape.template get<1>()), w.shape, op_name<"group_norm">);
    return x;
  }
  template <class V>
  void attributes(V&& v) const {
    v(G);
  }
};

template <long long Dim, tensor_like X>
auto softmax(const X& x, const std::source_location& loc = std::source_location::current()) {
  return apply_op(softmax_op<Dim>{}, &loc, x);
}
template <long long Dim, tensor_like X>
auto log_softmax(const X& x, const std::source_location& loc = std::source_location::current()) {
  return apply_op(log_softmax_op<Dim>{}, &loc, x);
}

// layer_norm over the last dim (the weight and bias are [normalized]).
template <tensor_like X, tensor_like W, tensor_like B>
auto layer_norm(const X& x, const W& weight, const B& bias, double eps = 1e-5,
                const std::source_location& loc = std::source_location::current()) {
  static_assert(W::shape_type::rank == 1, "typex::layer_norm: the weight must be 1-d (normalizing over the last dim)");
  const layer_norm_op op{.normalized = {weight.shape().template get<0>().get()}};
  return apply_op(op, &loc, x, weight, bias, eps);
}

// Without a bias (torch's LayerNorm(bias=False)), and with neither weight nor bias
// (elementwise_affine=False: over the last dim).
template <tensor_like X, tensor_like W>
auto layer_norm(const X& x, const W& weight, std::nullptr_t, double eps = 1e-5,
                const std::source_location& loc = std::source_location::current()) {
  static_assert(W::shape_type::rank == 1, "typex::layer_norm: the weight must be 1-d (normalizing over the last dim)");
  const layer_norm_op op{.normalized = {weight.shape().template get<0>().get()}};
  return apply_op(op, &loc, x, weight, nullptr, eps);
}
template <tensor_like X>
auto layer_norm(const X& x, double eps = 1e-5, const std::source_location& loc = std::source_location::current()) {
  static_assert(X::shape_type::rank >= 1, "typex::layer_norm: the input must have a dim to normalize");
  const layer_norm_op op{.normalized = {x.shape().template get<X::shape_type::rank - 1>().get()}};
  return apply_op(op, &loc, x, nullptr, nullptr, eps);
}

template <tensor_like X, tensor_like W, tensor_like B, tensor_like M, tensor_like V>
auto batch_norm(const X& x, const W& weight, const B& bias, const M& running_mean, const V& running_var,
                double momentum = 0.1, double eps = 1e-5,
                const std::source_location& loc = std::source_location::current()) {
  return apply_op(batch_norm_op{.momentum = momentum, .eps = eps}, &loc, x, weight, bias, running_mean, running_var);
}
// Training mode: normalizes with the batch's statistics and updates running_mean / running_var in
// place (momentum-weighted, unbiased variance), as torch.nn.functional.batch_norm(training=True).
// Run eagerly; exported programs do not carry the buffer updates yet (they refuse the op).
template <tensor_like X, tensor_like W, tensor_like B, tensor_like M, tensor_like V>
auto batch_norm_training(const X& x, const W& weight, const B& bias, const M& running_mean, const V& running_var,
                         double momentum = 0.1, double eps = 1e-5,
                         const std::source_location& loc = std::source_location::current()) {
  return apply_op(batch_norm_op{.momentum = momentum, .eps = eps, .training = true}, &loc, x, weight, bias, running_mean,
                  running_var);
}

template <index_t G, tensor_like X, tensor_like W, tensor_like B>
auto group_norm(const X& x, const W& weight, const B& bias, double eps = 1e-5,
                const std::source_location& loc = std::source_location::current()) {
  return apply_op(group_norm_op<G>{}, &loc, x, weight, bias, eps, true);
}
// Without weight and bias (torch's affine=False: weight=None, bias=None).
template <index_t G, tensor_like X>
auto group_norm(const X& x, double eps = 1e-5, const std::source_location& loc = std::source_location::current()) {
  return apply_op(group_norm_op<G>{}, &loc, x, nullptr, nullptr, eps, true);
}

// This header's ops, for the registry (ops/all.hpp).
using normalization_ops = op_list<aten::softmax_int, aten::log_softmax_int, layer_norm_op, batch_norm_op, aten::group_norm>;

}  // namespace typex
