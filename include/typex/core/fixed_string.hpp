// typex/core/fixed_string.hpp — a string usable as a template argument.
//
// Symbolic dims carry their name in their type (`typex::sym<"batch", 1, 1024>`), and static shape
// errors carry their formatted message in a type (so that g++ prints the message in the first line
// of the diagnostic). Both need a structural string type: this one.
#pragma once

#include <typex/config.hpp>

#include <cstddef>
#include <string_view>

namespace typex {

template <std::size_t N>
struct fixed_string {
  char data[N + 1]{};  // always NUL-terminated; N is the length without the terminator

  constexpr fixed_string() = default;
  constexpr fixed_string(const char (&s)[N + 1]) {  // NOLINT: implicit on purpose (CTAD from literals)
    for (std::size_t i = 0; i <= N; ++i) data[i] = s[i];
  }

  static constexpr std::size_t size() noexcept { return N; }
  constexpr const char* c_str() const noexcept { return data; }
  constexpr std::string_view view() const noexcept { return {data, N}; }
  constexpr operator std::string_view() const noexcept { return view(); }  // NOLINT

  template <std::size_t M>
  constexpr bool operator==(const fixed_string<M>& o) const noexcept {
    return view() == o.view();
  }
};

template <std::size_t M>
fixed_string(const char (&)[M]) -> fixed_string<M - 1>;

}  // namespace typex
