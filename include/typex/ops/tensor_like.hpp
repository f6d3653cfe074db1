// typex/ops/tensor_like.hpp — what ops accept (tensor-like values, scalars), and what an op's result
// rule sees of an argument: a tensor's spec, or a scalar.
#pragma once

#include <typex/ops/apply.hpp>
#include <typex/tensor/tensor_spec.hpp>

#include <concepts>
#include <tuple>
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

// torch's x.size(I) for generic code (no `x.shape().template get<I>()`): the dim, static, symbolic
// or run-time, which compares with integers. Negative I counts from the end.
template <long long I, tensor_like X>
constexpr auto size(const X& x) noexcept {
  if constexpr (requires { x.shape(); }) return typex::get<I>(x.shape());
  else return typex::get<I>(x.shape);
}

// A list of tensors as one argument (ATen's Tensor[]: cat, stack). It refers to the tensors, so it
// lives no longer than the call that makes it: tensors(a, b, c).
template <class... T>
struct tensor_list {
  std::tuple<const T&...> items;
};
template <tensor_like... T>
tensor_list<T...> tensors(const T&... t) {
  return {std::tuple<const T&...>(t...)};
}
// What a result rule sees of a tensor_list: its tensors' specs.
template <class... S>
struct tensor_list_spec {
  std::tuple<S...> items;
};
template <class... T>
struct is_traced_argument<tensor_list<T...>> : std::bool_constant<(is_traced_argument<T>::value || ...)> {};

namespace detail {
template <class T> inline constexpr bool is_tensor_list_v = false;
template <class... T> inline constexpr bool is_tensor_list_v<tensor_list<T...>> = true;

template <class T>
auto spec_of_argument(const T& a);

template <class... T>
auto spec_of_argument(const tensor_list<T...>& l) {
  return std::apply([](const auto&... t) { return tensor_list_spec<decltype(spec_of_argument(t))...>{{spec_of_argument(t)...}}; },
                    l.items);
}

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
