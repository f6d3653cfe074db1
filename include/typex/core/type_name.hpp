// typex/core/type_name.hpp — the readable name of a type, at compile time.
//
// Used in messages ("leaf 1 is a float, but the structure wants a tensor<f32[batch, 784]>").
// Types that print themselves better (dims, shapes, tensors) provide `write_type(w)`; others use the
// compiler's spelling, cut out of __PRETTY_FUNCTION__.
#pragma once

#include <typex/config.hpp>

#include <string_view>

namespace typex::detail {

template <class T>
constexpr std::string_view raw_type_name() noexcept {
#if defined(TYPEX_PRETTY_FUNCTION)
  // g++: "... raw_type_name() [with T = my::s; std::string_view = ...]"; clang: "... [T = my::s]"
  constexpr std::string_view f = TYPEX_PRETTY_FUNCTION;
  constexpr std::size_t begin = f.find("T = ") + 4;
  constexpr std::size_t end = f.find_first_of(";]", begin);
  return f.substr(begin, end - begin);
#else
  return "(type)";
#endif
}

template <class T, class W>
constexpr void write_type_name(W& w) {
  if constexpr (requires { T::write_type(w); }) T::write_type(w);
  else w.put(raw_type_name<T>());
}

}  // namespace typex::detail
