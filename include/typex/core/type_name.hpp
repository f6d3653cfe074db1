// typex/core/type_name.hpp — the readable name of a type, at compile time.
//
// Used in messages ("leaf 1 is a float, but the structure wants a tensor<f32[batch, 784]>").
// Types that print themselves better (dims, shapes, tensors) provide `write_type(w)`; others use the
// compiler's spelling, cut out of __PRETTY_FUNCTION__.
#pragma once

#include <string_view>

namespace typex::detail {

template <class T>
constexpr std::string_view raw_type_name() noexcept {
#if defined(__clang__) || defined(__GNUC__)
  constexpr std::string_view f = __PRETTY_FUNCTION__;
#if defined(__clang__)
  constexpr std::string_view key = "T = ";
  constexpr std::size_t end_mark = f.rfind(']');
#else
  constexpr std::string_view key = "T = ";
  constexpr std::size_t end_mark = f.find_first_of(";]", f.find(key));
#endif
  constexpr std::size_t b = f.find(key) + key.size();
  return f.substr(b, end_mark - b);
#else
  return "T";
#endif
}

template <class T, class W>
constexpr void write_type_name(W& w) {
  if constexpr (requires { T::write_type(w); }) T::write_type(w);
  else w.put(raw_type_name<T>());
}

}  // namespace typex::detail
