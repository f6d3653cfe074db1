// Reduced-precision matrix products (compile_options::matmul_precision) on the emulated device: the
// compute type each precision puts in cuBLASLt's descriptor, the emulated model's rounding of the
// operands (operand_rounding), a program's products at tf32 / bf16 / f16 within their bounds of
// f32 (cuda_precision.hpp) and equal to the products of the rounded operands.
#include "../cuda_precision.hpp"

#include <typex/backend/cuda/emulated_device.hpp>
#include <typex/backend/cuda/lt.hpp>
#include <typex/backend/cuda/lt_reference.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

using namespace typex;

namespace {
std::int32_t compute_type_of(const cuda::lt_matmul& m) {
  std::int32_t v = 0;
  std::size_t written = 0;
  REQUIRE(cublasLtMatmulDescGetAttribute(m.desc(), CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, &v, sizeof v, &written) == CUBLAS_STATUS_SUCCESS);
  return v;
}
}  // namespace

TEST_CASE("cuda precision: each matmul_precision is its cuBLASLt compute type in the descriptor, f64 products stay f64") {
  using P = cuda::matmul_precision;
  const std::pair<P, std::int32_t> expected[] = {{P::f32, CUBLAS_COMPUTE_32F},
                                                   {P::tf32, CUBLAS_COMPUTE_32F_FAST_TF32},
                                                   {P::bf16, CUBLAS_COMPUTE_32F_FAST_16BF},
                                                   {P::f16, CUBLAS_COMPUTE_32F_FAST_16F}};
  for (const auto& [p, compute] : expected) {
    INFO(cuda::name(p));
    const cuda::lt_matmul lin = cuda::make_linear(7, 5, 3, cuda::epilogue::relu, true, dtype::f32, p);
    CHECK(compute_type_of(lin) == compute);
    CHECK(lin.compute_type == compute);
    CHECK((lin.label.find("compute") != std::string::npos) == (p != P::f32));
    const cuda::lt_matmul mm = cuda::make_matmul({.m = 4, .n = 6, .k = 5, .transpose_b = true}, cuda::epilogue::none, dtype::f32, p);
    CHECK(compute_type_of(mm) == compute);
    const cuda::lt_matmul mm64 = cuda::make_matmul({.m = 4, .n = 6, .k = 5}, cuda::epilogue::none, dtype::f64, p);
    CHECK(compute_type_of(mm64) == CUBLAS_COMPUTE_64F);
  }
}

TEST_CASE("cuda precision: the emulated model reads an operand rounded to nearest even to the format's significand and range") {
  const cuda::detail::operand_rounding tf32{11, false}, bf16{8, false}, f16{11, true}, none{};
  const float one = 1.0f;
  CHECK(bf16(one + std::ldexp(1.0f, -8)) == one);                                   // (a tie: to the even 1)
  CHECK(bf16(one + 3 * std::ldexp(1.0f, -8)) == one + std::ldexp(1.0f, -6));        // (a tie: to the even 1 + 2^-6)
  CHECK(bf16(one + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20)) == one + std::ldexp(1.0f, -7));
  CHECK(tf32(one + std::ldexp(1.0f, -11)) == one);
  CHECK(tf32(one + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)) == one + std::ldexp(1.0f, -10));
  CHECK(tf32(1e30f) == std::bit_cast<float>(0x714A0000u));  // (f32's 1e30 is 0x7149F2CA: 0x12CA past 11 bits, above the half: up)
  CHECK(bf16(std::ldexp(1.0f + std::ldexp(1.0f, -5), -130)) == std::ldexp(1.0f, -130));  // (bf16's subnormals: 2^-133 apart)
  CHECK(tf32(std::ldexp(3.0f, -137)) == std::ldexp(1.0f, -135));  // (a tie at tf32's subnormal spacing 2^-136: to even)
  CHECK(std::isfinite(bf16(3e38f)));
  CHECK(f16(65519.0f) == 65504.0f);
  CHECK(std::isinf(f16(65520.0f)));
  CHECK(f16(-70000.0f) == -std::numeric_limits<float>::infinity());
  CHECK(f16(1e-8f) == 0.0f);                          // (below half of f16's smallest subnormal, 2^-24)
  CHECK(f16(3e-8f) == std::ldexp(1.0f, -24));
  CHECK(f16(-0.1f) == -0.0999755859375f);             // (f16's nearest to 0.1, negated)
  CHECK(bf16(-0.1f) == -0.10009765625f);
  CHECK(std::isnan(bf16(std::numeric_limits<float>::quiet_NaN())));
  CHECK(none(0.1f) == 0.1f);
}

TEST_CASE("cuda precision: a linear and a transposed matmul at tf32, bf16 and f16 within their bounds of f32, and the products of the rounded operands") {
  const auto gpu = cuda::make_emulated_device();
  cuda_precision_tests::check_precisions(gpu, true);
  // the emulated results are the products of the rounded operands (in double, then f32)
  using namespace cuda_precision_tests;
  const std::vector<any_tensor> in = inputs();
  for (const cuda::matmul_precision p : {cuda::matmul_precision::tf32, cuda::matmul_precision::bf16, cuda::matmul_precision::f16}) {
    INFO(cuda::name(p));
    const cuda::detail::operand_rounding round{bits_of(p), p == cuda::matmul_precision::f16};
    const std::vector<any_tensor> out = run_at(gpu, p, in);
    const float* x = in[0].data<float>();
    const float* w = in[1].data<float>();
    const float* b = in[2].data<float>();
    double worst = 0;
    for (index_t i = 0; i < rows; ++i) {
      for (index_t j = 0; j < features; ++j) {
        double acc = 0;
        for (index_t l = 0; l < depth; ++l) acc += static_cast<double>(round(x[i * depth + l])) * round(w[j * depth + l]);
        worst = std::max(worst, std::abs(out[0].data<float>()[i * features + j] - (acc + b[j])));
        worst = std::max(worst, std::abs(out[1].data<float>()[i * features + j] - acc));
      }
    }
    CHECK(worst <= 1e-5);
  }
}
