// typex/core/sizes.hpp — every size computed from user data, checked here and nowhere else.
//
// Extents come from users (host tensors, any_tensor, program inputs, derived dims). Their product
// (the element count) and that times the item size (the byte count) must fit before anything is
// allocated or indexed: a product that wraps gives a small buffer that kernels then index far out
// of bounds. The limits:
//   - an extent is in [0, int_oo) (int_oo = 2^62: torch.export's "no upper bound");
//   - the element count is below int_oo;
//   - the byte count fits std::ptrdiff_t (pointer arithmetic over the buffer is defined).
// checked_numel / checked_bytes throw typex::argument_error naming the value and its extents;
// numel_or_overflow is the non-throwing form (constexpr, for shape::numel()).
#pragma once

#include <typex/core/dim.hpp>
#include <typex/core/dtype.hpp>
#include <typex/core/error.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string_view>

namespace typex {

// The largest byte count of one tensor.
inline constexpr index_t max_tensor_bytes = std::numeric_limits<std::ptrdiff_t>::max();

namespace detail {

// a * b, or nullopt when it does not fit index_t (or an operand is negative).
constexpr std::optional<index_t> checked_mul(index_t a, index_t b) noexcept {
  if (a < 0 || b < 0) return std::nullopt;
  index_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// The element count of `extents`, or nullopt when an extent is negative or >= int_oo, or the
// product reaches int_oo.
constexpr std::optional<index_t> numel_or_overflow(std::span<const index_t> extents) noexcept {
  index_t n = 1;
  bool zero = false;
  for (index_t e : extents) {
    if (e < 0 || e >= int_oo) return std::nullopt;
    zero = zero || e == 0;
  }
  if (zero) return 0;  // (an empty tensor: no overflow, whatever the other extents)
  for (index_t e : extents) {
    const auto p = checked_mul(n, e);
    if (!p || *p >= int_oo) return std::nullopt;
    n = *p;
  }
  return n;
}

// The product of the extents in modular arithmetic: no undefined behaviour whatever they are, the
// true count whenever checked_numel accepts them (every tensor's extents are checked where it is
// made). For loops over a tensor's elements (numel() of a tensor is never a saturated sentinel
// that a compiler could see as a 2^62-iteration loop).
constexpr index_t unchecked_numel(std::span<const index_t> extents) noexcept {
  std::uint64_t n = 1;
  for (index_t e : extents) n *= static_cast<std::uint64_t>(e);
  return static_cast<index_t>(n);
}

template <class W>
void put_extents(W& w, std::span<const index_t> extents) {
  w.put('[');
  for (std::size_t i = 0; i < extents.size(); ++i) {
    if (i) w.put(", ");
    w.put_int(extents[i]);
  }
  w.put(']');
}

[[noreturn]] TYPEX_NOINLINE TYPEX_COLD inline void size_overflow(std::span<const index_t> extents, std::string_view what,
                                                                  std::string_view why) {
  raise<argument_error>([&](auto& w) {
    w.put("typex: "); w.put(what); w.put(" with extents "); put_extents(w, extents); w.put(' '); w.put(why);
  });
}

// The element count of `extents`; throws argument_error naming `what` when an extent is negative or
// the count does not fit.
inline index_t checked_numel(std::span<const index_t> extents, std::string_view what) {
  for (std::size_t i = 0; i < extents.size(); ++i) {
    if (extents[i] < 0) {
      raise<argument_error>([&](auto& w) {
        w.put("typex: "); w.put(what); w.put(" has a negative extent "); w.put_int(extents[i]); w.put(" at dim ");
        w.put_int(static_cast<long long>(i));
      });
    }
  }
  const auto n = numel_or_overflow(extents);
  if (!n) size_overflow(extents, what, "has too many elements (the limit is 2^62)");
  return *n;
}

// The byte count of a tensor of dtype d with `extents`, checked as checked_numel and against
// max_tensor_bytes.
inline std::size_t checked_bytes(std::span<const index_t> extents, dtype d, std::string_view what) {
  const index_t n = checked_numel(extents, what);
  const auto bytes = checked_mul(n, static_cast<index_t>(itemsize(d)));
  if (!bytes || *bytes > max_tensor_bytes) size_overflow(extents, what, "needs more bytes than a pointer can address");
  return static_cast<std::size_t>(*bytes);
}

}  // namespace detail
}  // namespace typex
