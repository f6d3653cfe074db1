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

namespace typex {

// The registry's tags for this header's ATen overloads (torch.ops.aten.<op>.<overload>): the op
// types below are templates over static attributes, and every instantiation records one of these.
namespace aten {
struct nll_loss {
  static constexpr std::string_view target = "aten.nll_loss.default";
  static constexpr std::string_view schema =
      "aten::nll_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean, SymInt ignore_index=-100) -> Tensor";
};
struct cross_entropy_loss {
  static constexpr std::string_view target = "aten.cross_entropy_loss.default";
  static constexpr std::string_view schema =
      "aten::cross_entropy_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean, SymInt ignore_index=-100, float label_smoothing=0.0) -> Tensor";
};
struct mse_loss {
  static constexpr std::string_view target = "aten.mse_loss.default";
  static constexpr std::string_view schema =
      "aten::mse_loss(Tensor self, Tensor target, int reduction=Mean) -> Tensor";
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
