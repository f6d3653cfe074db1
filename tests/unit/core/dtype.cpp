#include "../support.hpp"

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

using namespace typex;

TEST_CASE("dtype names, sizes and categories") {
  CHECK(name(dtype::f32) == "f32");
  CHECK(name(dtype::b8) == "b8");
  CHECK(torch_name(dtype::bf16) == "torch.bfloat16");
  CHECK(itemsize(dtype::f16) == 2);
  CHECK(itemsize(dtype::i64) == 8);
  CHECK(is_floating_point(dtype::bf16));
  CHECK_FALSE(is_floating_point(dtype::i32));
  CHECK(is_integral(dtype::b8, true));
  CHECK_FALSE(is_integral(dtype::b8));
  static_assert(std::is_same_v<f32::type, float> && std::is_same_v<b8::type, bool> && std::is_same_v<bf16::type, bfloat16>);
  static_assert(dtype_of_v<double> == dtype::f64 && dtype_of_v<std::int64_t> == dtype::i64);
}

// torch.promote_types for every pair: the table below is the output of tools/promotion_table.py
// run with PyTorch 1.13 (Debian's python3-torch).
TEST_CASE("promotion follows torch.promote_types for every pair") {
  using enum dtype;
  constexpr dtype order[] = {b8, u8, i8, i16, i32, i64, f16, bf16, f32, f64};
  constexpr dtype table[10][10] = {
      /* b8   */ {b8, u8, i8, i16, i32, i64, f16, bf16, f32, f64},
      /* u8   */ {u8, u8, i16, i16, i32, i64, f16, bf16, f32, f64},
      /* i8   */ {i8, i16, i8, i16, i32, i64, f16, bf16, f32, f64},
      /* i16  */ {i16, i16, i16, i16, i32, i64, f16, bf16, f32, f64},
      /* i32  */ {i32, i32, i32, i32, i32, i64, f16, bf16, f32, f64},
      /* i64  */ {i64, i64, i64, i64, i64, i64, f16, bf16, f32, f64},
      /* f16  */ {f16, f16, f16, f16, f16, f16, f16, f32, f32, f64},
      /* bf16 */ {bf16, bf16, bf16, bf16, bf16, bf16, f32, bf16, f32, f64},
      /* f32  */ {f32, f32, f32, f32, f32, f32, f32, f32, f32, f64},
      /* f64  */ {f64, f64, f64, f64, f64, f64, f64, f64, f64, f64},
  };
  for (int i = 0; i < 10; ++i)
    for (int j = 0; j < 10; ++j) {
      CAPTURE(name(order[i]));
      CAPTURE(name(order[j]));
      CHECK(promote_types(order[i], order[j]) == table[i][j]);
    }
}

static_assert(std::is_same_v<promote_t<i32, f16>, f16>);

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
