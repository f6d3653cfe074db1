// typex/nn/container.hpp — nn::Sequential<M...>: modules called in order; children named 0, 1, ...
// (PyTorch's FQNs: `0.weight`, `2.bias`). A static shape mismatch between two layers is a compile
// error naming the op and the shapes.
#pragma once

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
    if constexpr (I == sizeof...(M)) return x;
    else return call<I + 1>(std::get<I>(children)(x));
  }
};

}  // namespace typex::nn
