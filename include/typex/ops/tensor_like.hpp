// typex/ops/tensor_like.hpp — what ops accept (tensor-like values, scalars), and what an op's result
// rule sees of an argument: a tensor's spec, or a scalar.
#pragma once

#include <typex/tensor/tensor_spec.hpp>

#include <concepts>
#include <type_traits>

namespace typex {

// Anything with a dtype, a shape type and a shape(): host tensors, module tensors, traced values,
// tensor specs.
template <class T>
concept tensor_like = requires(const T& t) {
  typename T::dtype_type;
  typename T::shape_type;
  { t.shape() } -> std::convertible_to<typename T::shape_type>;
} || requires(const T& t) {
  typename T::dtype_type;
  typename T::shape_type;
  t.shape;
};

template <class T>
concept scalar_like = std::is_arithmetic_v<T>;

namespace detail {
template <class T>
auto spec_of_argument(const T& a) {
  if constexpr (scalar_like<T> || std::is_null_pointer_v<T>) {
    return a;
  } else if constexpr (requires { a.shape(); }) {
    return tensor_spec<typename T::dtype_type, typename T::shape_type>(a.shape());
  } else {
    return a;  // already a tensor_spec
  }
}
}  // namespace detail

}  // namespace typex
