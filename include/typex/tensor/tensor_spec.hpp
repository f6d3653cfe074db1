// typex/tensor/tensor_spec.hpp — a tensor's type without data: dtype + shape (what tracing sees).
//
// tensor_spec<f32, shape<batch, fix<784>>> prints as f32[batch, 784] (its type) and, with batch
// bound to 32, as f32[32, 784] (its value): the notation of torch.export's printed programs.
#pragma once

#include <typex/core/dtype.hpp>
#include <typex/core/shape.hpp>

#include <string>

namespace typex {

template <dtype_tag_type DT, shape_type S>
struct tensor_spec {
  using dtype_type = DT;
  using shape_type = S;
  static constexpr dtype scalar_type = DT::value;
  static constexpr std::size_t rank = S::rank;
  static constexpr bool is_pytree_leaf = true;

  S shape{};

  constexpr tensor_spec() = default;
  constexpr explicit tensor_spec(const S& s) : shape(s) {}

  constexpr index_t numel() const noexcept { return shape.numel(); }

  template <class W>
  static constexpr void write_type(W& w) {
    w.put(name(DT::value));
    S::write_type(w);
  }
  template <class W>
  constexpr void write_values(W& w) const {
    w.put(name(DT::value));
    shape.write_values(w);
  }
  static std::string type_string() { return detail::to_string_with([](auto& w) { write_type(w); }); }
  std::string to_string() const { return detail::to_string_with([&](auto& w) { write_values(w); }); }

  friend constexpr bool operator==(const tensor_spec& a, const tensor_spec& b) noexcept { return a.shape == b.shape; }
};

namespace detail {
template <class T> struct is_tensor_spec : std::false_type {};
template <class DT, class S> struct is_tensor_spec<tensor_spec<DT, S>> : std::true_type {};
}  // namespace detail

template <class T>
concept tensor_spec_type = detail::is_tensor_spec<T>::value;

}  // namespace typex
