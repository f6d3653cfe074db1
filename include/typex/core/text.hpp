// typex/core/text.hpp — tiny formatting that works both at compile time and at run time.
//
// Dims and shapes describe themselves through `write(out)` with a writer `out` that has
// `put(char)`, `put(std::string_view)` and `put_int(long long)`. Three writers exist: one that only
// counts (to size a fixed_string at compile time), one that fills a fixed buffer (compile time), and
// one that appends to a std::string (run time, for exception messages and printing). One
// description, every context: the static error and the run-time error say the same thing.
#pragma once

#include <typex/core/fixed_string.hpp>

#include <concepts>
#include <cstddef>
#include <string>
#include <string_view>

namespace typex::detail {

template <class Out>
constexpr void put_int(Out& out, long long v) {
  // the magnitude as unsigned: -(v + 1) + 1 does not overflow for LLONG_MIN
  unsigned long long u = v < 0 ? static_cast<unsigned long long>(-(v + 1)) + 1 : static_cast<unsigned long long>(v);
  char buf[24]{};
  int n = 0;
  do {
    buf[n++] = static_cast<char>('0' + u % 10);
    u /= 10;
  } while (u);
  if (v < 0) out.put('-');
  while (n) out.put(buf[--n]);
}

struct counting_writer {
  std::size_t n = 0;
  constexpr void put(char) { ++n; }
  constexpr void put(std::string_view s) { n += s.size(); }
  constexpr void put_int(long long v) { detail::put_int(*this, v); }
};

template <std::size_t N>
struct buffer_writer {
  fixed_string<N> s{};
  std::size_t n = 0;
  constexpr void put(char c) { s.data[n++] = c; }
  constexpr void put(std::string_view v) { for (char c : v) put(c); }
  constexpr void put_int(long long v) { detail::put_int(*this, v); }
};

struct string_writer {
  std::string& s;
  void put(char c) { s.push_back(c); }
  void put(std::string_view v) { s.append(v); }
  void put_int(long long v) { detail::put_int(*this, v); }
};

// Run a writer function `F{}(out)` at compile time and return the text as a fixed_string.
// F must be an empty, default-constructible callable (a lambda without captures works).
template <class F>
consteval std::size_t text_length() {
  counting_writer c;
  F{}(c);
  return c.n;
}

template <class F>
consteval auto make_text() {
  buffer_writer<text_length<F>()> w;
  F{}(w);
  return w.s;
}

// prefix + decimal digits of v. (Spelled out: "x" + std::to_string(v) makes g++ 12 -O2 report a
// bogus -Wrestrict, GCC bug 105329, in every unit that includes the code.)
inline std::string with_number(std::string_view prefix, long long v) {
  std::string s(prefix);
  string_writer w{s};
  w.put_int(v);
  return s;
}

template <class F>
std::string to_string_with(F&& f) {
  std::string s;
  string_writer w{s};
  f(w);
  return s;
}

}  // namespace typex::detail

namespace typex {
// `std::cout << x` for every typex value that describes itself with to_string() (shapes, tensor
// specs, tensors, tree specs), without this header including <ostream>.
template <class OStream, class T>
  requires requires(OStream& os, const T& v, const std::string& s) {
    { v.to_string() } -> std::same_as<std::string>;
    os << s;
  }
OStream& operator<<(OStream& os, const T& v) {
  os << v.to_string();
  return os;
}
}  // namespace typex
