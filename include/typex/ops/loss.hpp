// typex/ops/loss.hpp — losses: cross_entropy, nll_loss, mse_loss.
//
//   cross_entropy(logits, target)              F.cross_entropy(logits, target)
//       -> aten.cross_entropy_loss.default(logits, target, weight, reduction, ignore_index, label_smoothing)
//   nll_loss(log_probs, target)                F.nll_loss(...) -> aten.nll_loss.default(x, target, weight, reduction, ignore_index)
//   mse_loss(x, y)                             F.mse_loss(x, y) -> aten.mse_loss.default(x, y, reduction)
//
// Inputs are [N, C] (or [C], or [N, C, d...]); class-index targets are i64 [N] ([], [N, d...]);
// cross_entropy also takes class probabilities (a floating target of the input's shape). The
// reduction is a template argument, because it decides the result's rank: loss_reduction::mean
// (the default) and ::sum give a 0-d tensor, ::none one loss per element. ignore_index drops a
// target class from the loss and from the mean's denominator; label_smoothing mixes the target
// with the uniform distribution, as PyTorch.
#pragma once

#include <typex/ops/op.hpp>
#include <typex/core/rules/broadcast.hpp>
#include <typex/ops/apply.hpp>
#include <typex/ops/shape_ops.hpp>
#include <typex/ops/tensor_like.hpp>

#include <cstdint>
#include <source_location>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace typex {

namespace detail {
// The derivative of a class loss with respect to the log-probabilities (nll_loss's input;
// cross_entropy's log_softmax of its input), for the node `c` differentiates. torch's
// definitions: class indices count a row where target != ignore_index, weighted by w[target];
// the mean divides by the counted weight; label smoothing adds eps/C of -sum_c w_c logp_c per
// counted row, whose mean divides by the counted weight with weights and by every row without;
// class probabilities (a floating target, smoothed as (1 - eps) t + eps/C) divide the mean by the
// number of rows.
template <class C>
auto class_loss_logp_grad(C& c, bool cross_entropy) {
  const auto x = c.input("self");
  const auto t = c.input("target");
  const std::size_t r = c.rank(x);
  const std::int64_t cls = r == 1 ? 0 : 1;
  const std::int64_t reduction = c.args().integer_or_default("reduction");
  const double eps = cross_entropy ? c.args().real_or_default("label_smoothing") : 0.0;
  const auto classes = c.size(x, cls);
  if (eps != 0.0 && !classes.is_constant()) c.unsupported("label smoothing over a symbolic number of classes");
  const double smooth = eps == 0.0 ? 0.0 : eps / static_cast<double>(*classes.value());
  const bool weighted = c.is_tensor("weight");
  if (c.wants("weight")) c.unsupported("the derivative for 'weight' (the class weights) is not implemented, as in PyTorch");
  const auto along_classes = [&](auto v) { return r == 1 ? v : c.along_channels(v, r); };
  const auto g = c.grad();
  // g for each element of the per-element loss, broadcast along the class dim
  const auto per_row = [&](auto v) { return c.mul(v, r == 1 ? g : c.unsqueeze(g, 1)); };
  const auto rows = c.all_dims_but(r, cls);

  if (is_floating_point(c.scalar_type(t))) {  // class probabilities
    auto d = eps == 0.0 ? c.neg(t) : c.add(c.mul(t, eps - 1.0), -smooth);
    if (weighted) d = c.mul(d, along_classes(c.input("weight")));
    if (reduction == 0) return per_row(d);
    d = c.mul(d, g);
    return reduction == 1 ? c.divide_by_count(d, c.shape(x), rows) : d;
  }
  // class indices: a one-hot of the target along the class dim, zero on the ignored rows
  auto t_cls = r == 1 ? c.unsqueeze(t, 0) : c.unsqueeze(t, 1);
  std::vector<std::remove_cvref_t<decltype(classes)>> along(r, index_t{1});
  along[static_cast<std::size_t>(cls)] = classes;
  const auto counted = c.to(c.ne(t_cls, static_cast<double>(c.args().integer_or_default("ignore_index"))), c.scalar_type(x));
  auto picked = c.mul(c.to(c.eq(t_cls, c.reshape(c.arange(classes), along)), c.scalar_type(x)), counted);
  if (weighted) picked = c.mul(picked, along_classes(c.input("weight")));  // w[target] at the target's class
  auto d = c.mul(picked, eps - 1.0);
  const auto weight_sum = reduction == 1 ? c.sum_all(picked) : g;  // (the mean's denominator)
  const auto scaled = [&](auto v, bool by_weight) {
    if (reduction == 0) return per_row(v);
    if (reduction == 2) return c.mul(v, g);
    return by_weight ? c.mul(v, c.div(g, weight_sum)) : c.divide_by_count(c.mul(v, g), c.shape(x), rows);
  };
  d = scaled(d, true);
  if (eps != 0.0) {
    auto s = c.mul(c.expand(counted, c.shape(x)), -smooth);
    if (weighted) s = c.mul(s, along_classes(c.input("weight")));
    d = c.add(d, scaled(s, weighted));
  }
  return d;
}
}  // namespace detail

// The run-time rules' parts (each op's `infer`, ir/describe.hpp).
namespace detail {
// The loss of per-element shape `per`, reduced: reduction 0 (none) keeps it, 1 (mean, the
// default) and 2 (sum) give a 0-d result.
template <class R, class S>
void reduced_loss_meta(R& r, dtype d, S per) {
  const std::int64_t reduction = r.args().has("reduction") ? r.args().integer("reduction") : 1;
  if (reduction < 0 || reduction > 2) r.fail("reduction must be 0 (none), 1 (mean) or 2 (sum)");
  if (reduction != 0) per.clear();
  r.result(d, std::move(per));
}

// The per-element shape of class scores x ([C], [N, C] or [N, C, d...]) against class indices t:
// x without its class dim (dim 1), which t must have (0-d for a 1-d x).
template <class R, class S>
S class_target_meta_shape(const R& r, const S& x, const S& t) {
  if (x.empty()) r.fail("the input must be [C], [N, C] or [N, C, d...]");
  if (x.size() == 1) {
    if (!t.empty()) r.fail("with a 1-d input [C] the target is a single class index (0-d)");
    return {};
  }
  S per = x;
  per.erase(per.begin() + 1);
  if (t.size() != per.size())
    r.fail("the class-index target " + shape_meta::text(t) + " must have the input's shape without its class dim (dim 1), " +
           shape_meta::text(per));
  return r.broadcast(per, t);
}

// nll_loss and cross_entropy: the class weights (where given) are [C].
template <class R, class M>
void require_class_weights(const R& r, const M& x) {
  if (!r.is_tensor("weight")) return;
  const auto& w = r.input("weight");
  if (w.rank() != 1 || shape_meta::differ(w.shape[0], x.shape[x.rank() == 1 ? 0 : 1]))
    r.fail("the class weights " + shape_meta::text(w.shape) + " must be 1-d, one per class");
}
}  // namespace detail

// The registry's tags for this header's ATen overloads (torch.ops.aten.<op>.<overload>): the op
// types below are templates over static attributes, and every instantiation records one of these.
namespace detail {
// cross_entropy's decomposition (torch's formulas). Class indices: nll_loss(log_softmax(x)), with
// label smoothing (1 - eps) nll + eps/C * smooth, smooth the weighted sum of -log p over the
// classes, ignored targets left out, and for mean divided as nll divides (by the targets' weights,
// or their count). Class probabilities: -sum(target' w log p) over the classes, target' the
// smoothed target, mean over the batch.
template <class NllLoss, class C>
auto cross_entropy_decomposition(C& c) {
  const auto x = c.input("self");
  const auto t = c.input("target");
  const std::size_t r = c.rank(x);
  const std::int64_t cls = r == 1 ? 0 : 1;
  const auto lp = c.log_softmax(x, cls);
  const std::int64_t reduction = c.args().integer_or_default("reduction");
  const double eps = c.args().real_or_default("label_smoothing");
  const bool weighted = c.is_tensor("weight");
  const auto classes = c.size(x, cls);
  if (eps > 0 && !classes.is_constant()) c.unsupported("label smoothing over a symbolic number of classes");
  const double n_classes = eps > 0 ? static_cast<double>(*classes.value()) : 1.0;
  const auto along = [&](auto w) { return r == 1 ? w : c.along_channels(w, r); };
  const auto reduce = [&](auto per_sample) {
    if (reduction == 0) return per_sample;
    return reduction == 2 ? c.sum_all(per_sample) : c.mean(per_sample, c.all_dims_but(c.rank(per_sample), -1));
  };
  if (is_floating_point(c.scalar_type(t))) {  // class probabilities
    auto target = eps > 0 ? c.add(c.mul(t, 1.0 - eps), eps / n_classes) : t;
    auto per = c.mul(lp, target);
    if (weighted) per = c.mul(per, along(c.input("weight")));
    return reduce(c.neg(c.sum(per, {cls})));
  }
  const std::int64_t ignore = c.args().integer_or_default("ignore_index");
  const auto nll = c.emit(op_id_of<NllLoss>, {lp, t, weighted ? c.input("weight") : c.none(), reduction, ignore});
  if (eps == 0) return nll;
  auto per = weighted ? c.mul(lp, along(c.input("weight"))) : lp;
  const auto ignored = c.eq(t, static_cast<double>(ignore));
  const auto smooth = c.masked_fill(c.neg(c.sum(per, {cls})), ignored, 0.0);
  auto smooth_reduced = smooth;
  if (reduction == 2) {
    smooth_reduced = c.sum_all(smooth);
  } else if (reduction == 1) {
    auto counted = c.to(c.logical_not(ignored), c.scalar_type(lp));
    if (weighted) {  // the targets' weights (an ignored target reads class 0, then counts 0)
      const auto safe = c.masked_fill(t, ignored, 0.0);
      std::remove_cvref_t<decltype(c.size(x, 0))> n(index_t{1});
      for (std::size_t k = 0; k < c.rank(t); ++k) n = n * c.size(t, static_cast<std::int64_t>(k));
      const auto picked = c.index_select(c.input("weight"), 0, c.reshape(safe, {n}));
      counted = c.mul(counted, c.reshape(picked, c.shape(t)));
    }
    const auto total = c.sum_all(smooth);  // (one op per statement: see gelu's)
    const auto count = c.sum_all(counted);
    smooth_reduced = c.div(total, count);
  }
  const auto hard = c.mul(nll, 1.0 - eps);
  const auto soft = c.mul(smooth_reduced, eps / n_classes);
  return c.add(hard, soft);
}
}  // namespace detail

namespace aten {
struct nll_loss {
  static constexpr std::string_view target = "aten.nll_loss.default";
  static constexpr std::string_view schema =
      "aten::nll_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean, SymInt ignore_index=-100) -> Tensor";
  // log-probabilities [C], [N, C] or [N, C, d...] against i64 class indices: one loss per target
  // element (reduction none) or a 0-d loss, in the input's dtype
  template <class R> static void infer(R& r) {
    const auto& x = r.input("self");
    const auto& t = r.input("target");
    if (!is_floating_point(x.scalar_type)) r.fail("the input (log-probabilities) must be floating-point");
    if (t.scalar_type != dtype::i64) r.fail("the target must hold i64 class indices");
    const auto per = detail::class_target_meta_shape(r, x.shape, t.shape);
    detail::require_class_weights(r, x);
    detail::reduced_loss_meta(r, x.scalar_type, per);
  }
  // -w[t] at the target class of each row (0 for ignore_index), times g (none, sum) or g over the
  // weight of the counted rows (mean)
  template <class C> static void vjp(C& c) {
    c.accumulate("self", detail::class_loss_logp_grad(c, false));
  }
};
struct cross_entropy_loss {
  static constexpr std::string_view target = "aten.cross_entropy_loss.default";
  static constexpr std::string_view schema =
      "aten::cross_entropy_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean, SymInt ignore_index=-100, float label_smoothing=0.0) -> Tensor";
  // class indices: nll_loss(log_softmax(x, class dim)) (label smoothing mixed in as torch does);
  // class probabilities: -sum(target log_softmax(x)) over the class dim, weighted, reduced
  template <class C> static void decompose(C& c) { c.produce(detail::cross_entropy_decomposition<nll_loss>(c)); }
  // logits [C], [N, C] or [N, C, d...] against i64 class indices (the input's shape without the
  // class dim) or class probabilities (a floating target of the input's shape): one loss per
  // element without the class dim (reduction none) or a 0-d loss, in the input's dtype
  template <class R> static void infer(R& r) {
    const auto& x = r.input("self");
    const auto& t = r.input("target");
    if (!is_floating_point(x.scalar_type)) r.fail("the input (logits) must be floating-point");
    auto per = x.shape;
    if (is_floating_point(t.scalar_type)) {
      if (t.rank() != x.rank() || x.rank() == 0)
        r.fail("the target " + detail::shape_meta::text(t.shape) +
               " holds floating-point values, so it is read as class probabilities, which must have the shape of the input " +
               detail::shape_meta::text(x.shape));
      per = r.broadcast(x.shape, t.shape);
      per.erase(per.begin() + (x.rank() == 1 ? 0 : 1));
    } else {
      if (t.scalar_type != dtype::i64) r.fail("the target must hold i64 class indices or floating-point class probabilities");
      per = detail::class_target_meta_shape(r, x.shape, t.shape);
    }
    detail::require_class_weights(r, x);
    detail::reduced_loss_meta(r, x.scalar_type, std::move(per));
  }
  // through log_softmax: dx = G - softmax(x) sum_c G, G the gradient of the log-probabilities
  // (class indices with label smoothing and weights, or class probabilities: torch's definitions)
  template <class C> static void vjp(C& c) {
    const auto x = c.input("self");
    const std::int64_t cls = c.rank(x) == 1 ? 0 : 1;
    const auto G = detail::class_loss_logp_grad(c, true);
    c.accumulate("self", c.sub(G, c.mul(c.softmax(x, cls), c.sum(G, {cls}, true))));
    if (c.wants("target")) {  // class probabilities: d/dt = -(1 - eps) w logp, reduced as the loss
      const std::size_t r = c.rank(x);
      auto d = c.mul(c.log_softmax(x, cls), c.args().real_or_default("label_smoothing") - 1.0);
      if (c.is_tensor("weight")) d = c.mul(d, r == 1 ? c.input("weight") : c.along_channels(c.input("weight"), r));
      const std::int64_t reduction = c.args().integer_or_default("reduction");
      const auto g = c.grad();
      if (reduction == 0) d = c.mul(d, r == 1 ? g : c.unsqueeze(g, 1));
      else d = c.mul(d, g);
      if (reduction == 1) d = c.divide_by_count(d, c.shape(x), c.all_dims_but(r, cls));
      c.accumulate("target", d);
    }
  }
};
struct mse_loss {
  static constexpr std::string_view target = "aten.mse_loss.default";
  static constexpr std::string_view schema =
      "aten::mse_loss(Tensor self, Tensor target, int reduction=Mean) -> Tensor";
  // (self - target)^2, reduced: none, mean or sum
  template <class C> static void decompose(C& c) {
    const auto d = c.sub(c.input("self"), c.input("target"));
    const auto sq = c.mul(d, d);
    const std::int64_t reduction = c.args().integer_or_default("reduction");
    if (reduction == 0) c.produce(sq);
    else if (reduction == 2) c.produce(c.sum_all(sq));
    else c.produce(c.mean(sq, c.all_dims_but(c.rank(sq), -1)));
  }
  // (x - target)^2 over their broadcast shape (one rank: typex refuses PyTorch's broadcast of
  // another), reduced, in the promoted dtype
  template <class R> static void infer(R& r) {
    const auto& x = r.input("self");
    const auto& t = r.input("target");
    if (!is_floating_point(x.scalar_type)) r.fail("the input must be floating-point");
    if (x.rank() != t.rank())
      r.fail("the input " + detail::shape_meta::text(x.shape) + " and the target " + detail::shape_meta::text(t.shape) +
             " must have one shape (PyTorch warns and broadcasts; typex refuses)");
    detail::reduced_loss_meta(r, promote_types(x.scalar_type, t.scalar_type), r.broadcast(x.shape, t.shape));
  }
  // 2 (x - t), times g (none), g (sum) or g / N (mean)
  template <class C> static void vjp(C& c) {
    const auto x = c.input("self");
    const auto t = c.input("target");
    const std::int64_t reduction = c.args().integer_or_default("reduction");
    auto d = c.mul(c.mul(c.sub(x, t), 2.0), c.grad());
    if (reduction == 1) d = c.divide_by_count(d, c.shape(x), c.all_dims_but(c.rank(x), -1));
    c.accumulate("self", d);
    if (c.wants("target")) c.accumulate("target", c.neg(d));
  }
};
}  // namespace aten

// ATen's reduction enum (at::Reduction): the values graphs record.
enum class loss_reduction : int { none = 0, mean = 1, sum = 2 };

struct loss_options {
  index_t ignore_index = -100;
  double label_smoothing = 0.0;
};

namespace detail {
template <loss_reduction R, class DT, class S>
constexpr auto reduced_loss(const S& per_element) {
  if constexpr (R == loss_reduction::none) return tensor_spec<DT, S>(per_element);
  else return tensor_spec<DT, shape<>>(shape<>{});
}

// The per-element loss shape of class scores x and class-index target t: x without its class dim.
template <fixed_string Op, class X, class T>
constexpr auto class_target_shape(const X& x, const T& t) {
  using SX = typename X::shape_type;
  static_assert(SX::rank >= 1, "typex: the loss's input must be [C], [N, C] or [N, C, d...]");
  if constexpr (SX::rank == 1) {
    static_assert(T::shape_type::rank == 0, "typex: with a 1-d input [C] the target is a single class index (0-d)");
    return shape<>{};
  } else {
    const auto per = join(take<0, 1>(x.shape), take<2, SX::rank - 2>(x.shape));
    static_assert(T::shape_type::rank == SX::rank - 1,
                  "typex: the class-index target must have the input's shape without its class dim (dim 1)");
    return broadcast_shapes(per, t.shape, op_name<Op>);  // (equal: same rank; a static mismatch is a compile error)
  }
}
}  // namespace detail

template <loss_reduction R>
struct nll_loss_op {
  static constexpr std::string_view target = aten::nll_loss::target;
  static constexpr std::string_view schema = aten::nll_loss::schema;
  static constexpr std::size_t attributes_at = 3;  // (self, target, weight, reduction, ignore_index)
  index_t ignore_index = -100;
  template <class X, class T, class W>
  static constexpr auto result(const X& x, const T& t, const W&) {
    static_assert(is_floating_point(X::dtype_type::value), "typex::nll_loss: the input (log-probabilities) must be floating-point");
    static_assert(T::dtype_type::value == dtype::i64, "typex::nll_loss: the target must hold i64 class indices");
    return detail::reduced_loss<R, typename X::dtype_type>(detail::class_target_shape<"nll_loss">(x, t));
  }
  template <class V>
  void attributes(V&& v) const {
    v(index_t{static_cast<int>(R)});
    v(ignore_index);
  }
};

template <loss_reduction R>
struct cross_entropy_op {
  static constexpr std::string_view target = aten::cross_entropy_loss::target;
  static constexpr std::string_view schema = aten::cross_entropy_loss::schema;
  static constexpr std::size_t attributes_at = 3;  // (self, target, weight, reduction, ignore_index, label_smoothing)
  loss_options options;
  template <class X, class T, class W>
  static constexpr auto result(const X& x, const T& t, const W&) {
    static_assert(is_floating_point(X::dtype_type::value), "typex::cross_entropy: the input (logits) must be floating-point");
    if constexpr (is_floating_point(T::dtype_type::value) && T::shape_type::rank != X::shape_type::rank) {
      // (float labels of the wrong shape: most often class indices stored as floats)
      TYPEX_STATIC_FAIL(static_type_error, [](auto& w) {
        w.put("typex::cross_entropy: the target "); T::write_type(w);
        w.put(" holds floating-point values, so it is read as class probabilities, which must have the shape of the input ");
        X::shape_type::write_type(w);
        w.put("; for class indices pass an i64 tensor of that shape without its class dim (dim 1)");
      });
      using SX = typename X::shape_type;
      if constexpr (SX::rank <= 1) return detail::reduced_loss<R, typename X::dtype_type>(shape<>{});
      else return detail::reduced_loss<R, typename X::dtype_type>(detail::join(detail::take<0, 1>(x.shape), detail::take<2, SX::rank - 2>(x.shape)));
    } else if constexpr (is_floating_point(T::dtype_type::value)) {  // class probabilities: the input's shape
      const auto s = broadcast_shapes(x.shape, t.shape, op_name<"cross_entropy">);
      using SX = typename X::shape_type;
      if constexpr (SX::rank == 1) return detail::reduced_loss<R, typename X::dtype_type>(shape<>{});
      else return detail::reduced_loss<R, typename X::dtype_type>(detail::join(detail::take<0, 1>(s), detail::take<2, SX::rank - 2>(s)));
    } else {
      static_assert(T::dtype_type::value == dtype::i64,
                    "typex::cross_entropy: the target must hold i64 class indices or floating-point class probabilities");
      return detail::reduced_loss<R, typename X::dtype_type>(detail::class_target_shape<"cross_entropy">(x, t));
    }
  }
  template <class V>
  void attributes(V&& v) const {
    v(index_t{static_cast<int>(R)});
    v(options.ignore_index);
    v(options.label_smoothing);
  }
};

template <loss_reduction R>
struct mse_loss_op {
  static constexpr std::string_view target = aten::mse_loss::target;
  static constexpr std::string_view schema = aten::mse_loss::schema;
  template <class X, class Y>
  static constexpr auto result(const X& x, const Y& y) {
    static_assert(is_floating_point(X::dtype_type::value), "typex::mse_loss: the input must be floating-point");
    static_assert(X::shape_type::rank == Y::shape_type::rank,
                  "typex::mse_loss: the input and the target must have one shape (PyTorch warns and broadcasts; typex refuses)");
    const auto s = broadcast_shapes(x.shape, y.shape, op_name<"mse_loss">);
    return detail::reduced_loss<R, promote_t<typename X::dtype_type, typename Y::dtype_type>>(s);
  }
  template <class V>
  void attributes(V&& v) const {
    v(index_t{static_cast<int>(R)});
  }
};

template <loss_reduction R = loss_reduction::mean, tensor_like X, tensor_like T>
auto cross_entropy(const X& logits, const T& target, loss_options options = {},
                   const std::source_location& loc = std::source_location::current()) {
  return apply_op(cross_entropy_op<R>{options}, &loc, logits, target, nullptr);
}
// With per-class weights [C].
template <loss_reduction R = loss_reduction::mean, tensor_like X, tensor_like T, tensor_like W>
auto cross_entropy(const X& logits, const T& target, const W& weight, loss_options options = {},
                   const std::source_location& loc = std::source_location::current()) {
  static_assert(W::shape_type::rank == 1, "typex::cross_entropy: the class weights must be 1-d [C]");
  return apply_op(cross_entropy_op<R>{options}, &loc, logits, target, weight);
}
template <loss_reduction R = loss_reduction::mean, tensor_like X, tensor_like T>
auto nll_loss(const X& log_probs, const T& target, index_t ignore_index = -100,
              const std::source_location& loc = std::source_location::current()) {
  return apply_op(nll_loss_op<R>{ignore_index}, &loc, log_probs, target, nullptr);
}
template <loss_reduction R = loss_reduction::mean, tensor_like X, tensor_like T, tensor_like W>
auto nll_loss(const X& log_probs, const T& target, const W& weight, index_t ignore_index = -100,
              const std::source_location& loc = std::source_location::current()) {
  static_assert(W::shape_type::rank == 1, "typex::nll_loss: the class weights must be 1-d [C]");
  return apply_op(nll_loss_op<R>{ignore_index}, &loc, log_probs, target, weight);
}
template <loss_reduction R = loss_reduction::mean, tensor_like X, tensor_like Y>
auto mse_loss(const X& x, const Y& y, const std::source_location& loc = std::source_location::current()) {
  return apply_op(mse_loss_op<R>{}, &loc, x, y);
}

// This header's ops, for the registry (ops/all.hpp).
using loss_ops = op_list<aten::cross_entropy_loss, aten::nll_loss, aten::mse_loss>;

}  // namespace typex
