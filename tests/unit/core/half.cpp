#include "../support.hpp"

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

using namespace typex;

TEST_CASE("half: every bit pattern round-trips through float") {
  int mismatches = 0;
  for (unsigned b = 0; b < 65536; ++b) {
    const half h = half::from_bits(static_cast<std::uint16_t>(b));
    const float f = static_cast<float>(h);
    if (std::isnan(f)) continue;
    if (half(f).bits != b) ++mismatches;
  }
  CHECK(mismatches == 0);
}

TEST_CASE("half and bfloat16 round to nearest even, saturate to inf, keep nan") {
  CHECK(half(1.0f).bits == 0x3c00);
  CHECK(half(65504.0f).bits == 0x7bff);
  CHECK(half(65520.0f).bits == 0x7c00);  // halfway to the next: rounds to even (inf)
  CHECK(half(1.0f + 1.0f / 2048).bits == 0x3c00);  // tie, rounds to even
  CHECK(half(1.0f + 3.0f / 2048).bits == 0x3c02);  // tie, rounds to even (up)
  CHECK(std::isnan(static_cast<float>(half(std::numeric_limits<float>::quiet_NaN()))));
  CHECK(static_cast<float>(half(5.960464477539063e-08f)) == doctest::Approx(5.960464477539063e-08));  // smallest subnormal
  CHECK(bfloat16(1.0f).bits == 0x3f80);
  CHECK(static_cast<float>(bfloat16(3.14159f)) == doctest::Approx(3.140625));
  CHECK(bfloat16(1.0f + 1.0f / 256).bits == 0x3f80);  // tie to even
  CHECK(std::isnan(static_cast<float>(bfloat16(std::numeric_limits<float>::quiet_NaN()))));
  static_assert(half(2.0f).bits == 0x4000);  // constexpr
}

TEST_CASE("half and bfloat16 conversions match PyTorch bit for bit") {
  struct ref {
    std::uint32_t f32, f16, bf16;
  };
  static constexpr ref table[] = {
#include "../../data/half_reference.inc"
  };
  int checked = 0;
  for (const ref& r : table) {
    const float f = std::bit_cast<float>(r.f32);
    CAPTURE(f);
    CHECK(half(f).bits == r.f16);
    CHECK(bfloat16(f).bits == r.bf16);
    // and back: widening is exact, so converting the widened value again gives the same bits
    CHECK(half(static_cast<float>(half::from_bits(static_cast<std::uint16_t>(r.f16)))).bits == r.f16);
    ++checked;
  }
  CHECK(checked > 400);
}
