// typex/nn/container.hpp — nn::Sequential<M...>: modules called in order; children named 0, 1, ...
// (PyTorch's FQNs: `0.weight`, `2.bias`). A static shape mismatch between two layers is a compile
// error naming the element, what it takes and what the element before gives it
// (nn/module_input.hpp), or, for an op inside an element, the op and the shapes.
#pragma once

#include <typex/nn/module_input.hpp>
#include <typex/trace/context.hpp>

#include <tuple>
#include <utility>

namespace typex::nn {

template <class... M>
struct Sequential {
  static constexpr bool numbered_children = true;
  std::tuple<M...> children;

  template <std::size_t I>
  auto& get() noexcept { return std::get<I>(children); }
  template <std::size_t I>
  const auto& get() const noexcept { return std::get<I>(children); }

  template <class X>
  auto operator()(const X& x, const std::source_location& loc = std::source_location::current()) const {
    const library_call site(loc);
    const module_scope scope(*this, x);
    return scope.returns(call<0>(x));
  }

 private:
  template <std::size_t I, class X>
  auto call(const X& x) const {
    if constexpr (I == sizeof...(M)) {
      return x;
    } else {
      using E = std::tuple_element_t<I, std::tuple<M...>>;
      if constexpr (detail::has_input_rule<E>) {
        if constexpr (detail::refutes<E, X>()) {
          detail::fail_sequential_input<I, E, tensor_spec<typename X::dtype_type, typename X::shape_type>>();  // (then as if element I had been given what it takes)
          return detail::not_reached<decltype(call<I>(std::declval<const detail::fitted_t<E, X>&>()))>();
        } else {
          return call<I + 1>(std::get<I>(children)(x));
        }
      } else {
        return call<I + 1>(std::get<I>(children)(x));
      }
    }
  }
};

}  // namespace typex::nn
