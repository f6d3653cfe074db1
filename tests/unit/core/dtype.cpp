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
