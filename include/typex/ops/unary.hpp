// typex/ops/unary.hpp — pointwise unary ops: neg, relu (the op set grows in the op-set issue).
//
// Each op names its ATen target, keeps its argument's dtype and shape, and carries the scalar math
// that backends share.
#pragma once

#include <typex/ops/apply.hpp>
#include <typex/ops/tensor_like.hpp>

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
  template <class T>
  static constexpr T scalar(T x) { return -x; }
};

struct relu_op : detail::unary_pointwise {
  static constexpr std::string_view target = "aten.relu.default";
  template <class T>
  static constexpr T scalar(T x) { return x > T(0) ? x : T(0); }
};

template <tensor_like X>
auto neg(const X& x, const std::source_location& loc = std::source_location::current()) {
  return apply_op(neg_op{}, &loc, x);
}

template <tensor_like X>
auto relu(const X& x, const std::source_location& loc = std::source_location::current()) {
  return apply_op(relu_op{}, &loc, x);
}

}  // namespace typex
