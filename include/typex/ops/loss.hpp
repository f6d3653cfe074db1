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
#include <typex/ops/tensor_like.hpp>

#include <source_location>
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

// The registry's tags for this header's ATen overloads (torch.ops.aten.<op>.<overload>): the op
// types below are templates over static attributes, and every instantiation records one of these.
namespace aten {
struct nll_loss {
  static constexpr std::string_view target = "aten.nll_loss.default";
  static constexpr std::string_view schema =
      "aten::nll_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean, SymInt ignore_index=-100) -> Tensor";
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
