// typex/core/half.hpp — f16 and bf16 storage types.
//
// typex computes in f32 and stores f16/bf16 (the CUDA backend's tensor-core inputs, checkpoints).
// These are plain 16-bit storage types with exact conversions to float and round-to-nearest-even
// conversions from float, both constexpr (std::bit_cast), both usable in device code.
#pragma once

#include <typex/config.hpp>

#include <bit>
#include <cstdint>

namespace typex {

// IEEE 754 binary16.
struct half {
  std::uint16_t bits = 0;

  constexpr half() noexcept = default;
  TYPEX_HOST_DEVICE constexpr explicit half(float f) noexcept : bits(from_float(f)) {}
  TYPEX_HOST_DEVICE constexpr explicit operator float() const noexcept { return to_float(bits); }
  static constexpr half from_bits(std::uint16_t b) noexcept { half h; h.bits = b; return h; }
  friend constexpr bool operator==(half a, half b) noexcept { return float(a) == float(b); }

  TYPEX_HOST_DEVICE static constexpr std::uint16_t from_float(float f) noexcept {
    const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
    const std::uint32_t sign = (x >> 16) & 0x8000u;
    const std::uint32_t absx = x & 0x7fffffffu;
    if (absx >= 0x7f800000u) {  // inf or nan
      return static_cast<std::uint16_t>(sign | 0x7c00u | (absx > 0x7f800000u ? 0x0200u : 0u));
    }
    if (absx >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // rounds to inf
    if (absx < 0x38800000u) {  // subnormal half (or zero)
      if (absx < 0x33000000u) return static_cast<std::uint16_t>(sign);  // below half the smallest subnormal
      const std::uint32_t mant = (absx & 0x007fffffu) | 0x00800000u;
      const int s = 126 - static_cast<int>(absx >> 23);  // bits dropped to reach the 10-bit subnormal mantissa
      std::uint32_t m = mant >> s;
      const std::uint32_t rem = mant & ((1u << s) - 1u);
      const std::uint32_t halfway = 1u << (s - 1);
      if (rem > halfway || (rem == halfway && (m & 1u))) ++m;
      return static_cast<std::uint16_t>(sign | m);
    }
    // normal: rebias exponent 127 -> 15, round the 13 dropped bits to nearest even
    std::uint32_t h = ((absx - 0x38000000u) >> 13);
    const std::uint32_t rem = absx & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
    return static_cast<std::uint16_t>(sign | h);
  }

  TYPEX_HOST_DEVICE static constexpr float to_float(std::uint16_t h) noexcept {
    const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
    const std::uint32_t exp = (h >> 10) & 0x1fu;
    std::uint32_t mant = h & 0x3ffu;
    if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
    if (exp == 0) {
      if (mant == 0) return std::bit_cast<float>(sign);
      int e = -1;
      do { mant <<= 1; ++e; } while ((mant & 0x400u) == 0);  // normalize the subnormal
      return std::bit_cast<float>(sign | (static_cast<std::uint32_t>(112 - e) << 23) | ((mant & 0x3ffu) << 13));
    }
    return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
  }
};

// bfloat16: the upper half of an f32.
struct bfloat16 {
  std::uint16_t bits = 0;

  constexpr bfloat16() noexcept = default;
  TYPEX_HOST_DEVICE constexpr explicit bfloat16(float f) noexcept : bits(from_float(f)) {}
  TYPEX_HOST_DEVICE constexpr explicit operator float() const noexcept {
    return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
  }
  static constexpr bfloat16 from_bits(std::uint16_t b) noexcept { bfloat16 h; h.bits = b; return h; }
  friend constexpr bool operator==(bfloat16 a, bfloat16 b) noexcept { return float(a) == float(b); }

  TYPEX_HOST_DEVICE static constexpr std::uint16_t from_float(float f) noexcept {
    const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | 0x0040u);  // quiet nan
    const std::uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);  // round to nearest even
    return static_cast<std::uint16_t>((x + rounding) >> 16);
  }
};

}  // namespace typex
