// typex/core/dtype.hpp — element types: the run-time enum, the compile-time tags, promotion.
//
// `typex::dtype` is the run-time value (what the IR and archives hold); `typex::f32` etc. are empty
// tag types used in tensor types (`tensor_spec<f32, shape<...>>`). Names follow torch.export's
// printed form (f32, i64, b8, bf16). Promotion follows torch.promote_types: bool < integers <
// floating; within a category the wider type wins; u8 with i8 gives i16; f16 with bf16 gives f32.
#pragma once

#include <typex/core/half.hpp>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string_view>

namespace typex {

enum class dtype : unsigned char { b8, u8, i8, i16, i32, i64, f16, bf16, f32, f64 };

inline constexpr dtype all_dtypes[] = {dtype::b8,  dtype::u8,  dtype::i8,   dtype::i16, dtype::i32,
                                       dtype::i64, dtype::f16, dtype::bf16, dtype::f32, dtype::f64};

namespace detail {
// Each dtype's spellings, by enum value: typex's (as torch.export prints it), torch's Python name,
// and the two PyTorch's C++ messages use (c10::ScalarType's name; the C++ type's name).
struct dtype_spelling {
  std::string_view typex, torch, scalar_type, cpp;
};
inline constexpr dtype_spelling dtype_spellings[] = {
    {"b8", "torch.bool", "Bool", "bool"},
    {"u8", "torch.uint8", "Byte", "unsigned char"},
    {"i8", "torch.int8", "Char", "signed char"},
    {"i16", "torch.int16", "Short", "short int"},
    {"i32", "torch.int32", "Int", "int"},
    {"i64", "torch.int64", "Long", "long int"},
    {"f16", "torch.float16", "Half", "c10::Half"},
    {"bf16", "torch.bfloat16", "BFloat16", "c10::BFloat16"},
    {"f32", "torch.float32", "Float", "float"},
    {"f64", "torch.float64", "Double", "double"},
};
constexpr dtype_spelling spelling(dtype d) noexcept {
  const auto i = static_cast<std::size_t>(d);
  return i < std::size(dtype_spellings) ? dtype_spellings[i] : dtype_spelling{"?", "?", "?", "?"};
}
}  // namespace detail

constexpr std::string_view name(dtype d) noexcept { return detail::spelling(d).typex; }

// PyTorch's spelling, for messages aimed at people porting code ("torch.float32").
constexpr std::string_view torch_name(dtype d) noexcept { return detail::spelling(d).torch; }

constexpr std::size_t itemsize(dtype d) noexcept {
  switch (d) {
    case dtype::b8: case dtype::u8: case dtype::i8: return 1;
    case dtype::i16: case dtype::f16: case dtype::bf16: return 2;
    case dtype::i32: case dtype::f32: return 4;
    case dtype::i64: case dtype::f64: return 8;
  }
  return 0;
}

constexpr bool is_floating_point(dtype d) noexcept {
  return d == dtype::f16 || d == dtype::bf16 || d == dtype::f32 || d == dtype::f64;
}
constexpr bool is_integral(dtype d, bool include_bool = false) noexcept {
  return (d == dtype::b8 && include_bool) || d == dtype::u8 || d == dtype::i8 || d == dtype::i16 ||
         d == dtype::i32 || d == dtype::i64;
}
constexpr bool is_signed(dtype d) noexcept { return d != dtype::b8 && d != dtype::u8; }

// torch.promote_types.
constexpr dtype promote_types(dtype a, dtype b) noexcept {
  if (a == b) return a;
  auto category = [](dtype d) { return d == dtype::b8 ? 0 : (is_floating_point(d) ? 2 : 1); };
  const int ca = category(a), cb = category(b);
  if (ca != cb) return ca > cb ? a : b;
  if (ca == 2) {
    if ((a == dtype::f16 && b == dtype::bf16) || (a == dtype::bf16 && b == dtype::f16)) return dtype::f32;
    return itemsize(a) >= itemsize(b) ? a : b;
  }
  // integers
  if ((a == dtype::u8 && b == dtype::i8) || (a == dtype::i8 && b == dtype::u8)) return dtype::i16;
  if (a == dtype::u8) return b;  // any other signed integer is at least as wide
  if (b == dtype::u8) return a;
  return itemsize(a) >= itemsize(b) ? a : b;
}

// ---------------------------------------------------------------------------------------------
// compile-time tags

namespace detail {
template <dtype D> struct storage_of;
template <> struct storage_of<dtype::b8> { using type = bool; };
template <> struct storage_of<dtype::u8> { using type = std::uint8_t; };
template <> struct storage_of<dtype::i8> { using type = std::int8_t; };
template <> struct storage_of<dtype::i16> { using type = std::int16_t; };
template <> struct storage_of<dtype::i32> { using type = std::int32_t; };
template <> struct storage_of<dtype::i64> { using type = std::int64_t; };
template <> struct storage_of<dtype::f16> { using type = half; };
template <> struct storage_of<dtype::bf16> { using type = bfloat16; };
template <> struct storage_of<dtype::f32> { using type = float; };
template <> struct storage_of<dtype::f64> { using type = double; };
}  // namespace detail

template <dtype D>
struct dtype_tag {
  static constexpr dtype value = D;
  using type = typename detail::storage_of<D>::type;  // the C++ element type in host memory
  static constexpr std::string_view name() noexcept { return typex::name(D); }
};

using b8 = dtype_tag<dtype::b8>;
using u8 = dtype_tag<dtype::u8>;
using i8 = dtype_tag<dtype::i8>;
using i16 = dtype_tag<dtype::i16>;
using i32 = dtype_tag<dtype::i32>;
using i64 = dtype_tag<dtype::i64>;
using f16 = dtype_tag<dtype::f16>;
using bf16 = dtype_tag<dtype::bf16>;
using f32 = dtype_tag<dtype::f32>;
using f64 = dtype_tag<dtype::f64>;

namespace detail {
template <class T> struct is_dtype_tag : std::false_type {};
template <dtype D> struct is_dtype_tag<dtype_tag<D>> : std::true_type {};
}  // namespace detail

template <class T>
concept dtype_tag_type = detail::is_dtype_tag<T>::value;

template <dtype_tag_type A, dtype_tag_type B>
using promote_t = dtype_tag<promote_types(A::value, B::value)>;

// The dtype of a C++ element type (float -> f32, ...): the inverse of dtype_tag<D>::type.
template <class T>
inline constexpr dtype dtype_of_v = [] {
  static_assert(sizeof(T) == 0,
                "typex::dtype_of_v<T>: T is not an element type typex knows (bool, uint8_t, int8_t, int16_t, "
                "int32_t, int64_t, half, bfloat16, float, double)");
  return dtype::f32;
}();
template <> inline constexpr dtype dtype_of_v<bool> = dtype::b8;
template <> inline constexpr dtype dtype_of_v<std::uint8_t> = dtype::u8;
template <> inline constexpr dtype dtype_of_v<std::int8_t> = dtype::i8;
template <> inline constexpr dtype dtype_of_v<std::int16_t> = dtype::i16;
template <> inline constexpr dtype dtype_of_v<std::int32_t> = dtype::i32;
template <> inline constexpr dtype dtype_of_v<std::int64_t> = dtype::i64;
template <> inline constexpr dtype dtype_of_v<half> = dtype::f16;
template <> inline constexpr dtype dtype_of_v<bfloat16> = dtype::bf16;
template <> inline constexpr dtype dtype_of_v<float> = dtype::f32;
template <> inline constexpr dtype dtype_of_v<double> = dtype::f64;

}  // namespace typex
