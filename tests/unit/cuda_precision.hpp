// Reduced-precision matrix products on the CUDA backend (compile_options::matmul_precision), shared
// by the emulated tests (unit/cuda/precision.cpp) and the GPU's (unit/cuda_gpu/programs.cpp): a
// linear with its bias and a matmul reading its second operand transposed in place, run at tf32,
// bf16 and f16 against the f32 Eigen backend, within the bound that reading every operand with a
// significand of p bits gives (truncated or rounded: a relative error below 2^(1 - p) per operand).
#pragma once

#include "cuda_patterns.hpp"
#include "support.hpp"

#include <typex/backend/cuda.hpp>
#include <typex/backend/eigen.hpp>

#include <cmath>
#include <cstdint>
#include <memory>
#include <tuple>
#include <utility>
#include <vector>

namespace cuda_precision_tests {
using namespace typex;

struct two_products {
  template <class X, class W, class B>
  auto operator()(const X& x, const W& w, const B& b) const {
    return std::tuple(linear(x, w, b), matmul(x, transpose<0, 1>(w)));
  }
};

}  // namespace cuda_precision_tests
BOOST_HANA_ADAPT_STRUCT(cuda_precision_tests::two_products);

namespace cuda_precision_tests {

// (six digits: a 300-term reduction of them cannot come out exact in a narrower format)
inline any_tensor pattern(std::vector<index_t> extents, std::uint64_t seed) { return typex_test::pattern(std::move(extents), seed, 1.0, 200001); }

// x [m, k], w [n, k], b [n]: m = 37, n = 45, k = 300 (a reduction long enough that rounding shows)
inline constexpr index_t rows = 37, features = 45, depth = 300;

inline exported_program program() {
  return export_program(two_products{}, input<"x">(tensor_spec<f32, shape<fix<rows>, fix<depth>>>()),
                        input<"w">(tensor_spec<f32, shape<fix<features>, fix<depth>>>()),
                        input<"b">(tensor_spec<f32, shape<fix<features>>>()));
}

inline std::vector<any_tensor> inputs() { return {pattern({rows, depth}, 1), pattern({features, depth}, 2), pattern({features}, 3)}; }

// The significand bits a precision reads its operands with.
inline int bits_of(cuda::matmul_precision p) {
  switch (p) {
    case cuda::matmul_precision::f32: return 24;
    case cuda::matmul_precision::tf32: return 11;
    case cuda::matmul_precision::bf16: return 8;
    case cuda::matmul_precision::f16: return 11;
  }
  return 24;
}

// The program's outputs on `gpu` at precision p (host copies).
inline std::vector<any_tensor> run_at(const std::shared_ptr<cuda::device_runtime>& gpu, cuda::matmul_precision p,
                                      const std::vector<any_tensor>& in) {
  const program_module<cuda_backend> run(program(), {.device = gpu, .matmul_precision = p});
  std::vector<any_tensor> dev;
  for (const any_tensor& t : in) dev.push_back(cuda::to_device(t, gpu));
  std::vector<any_tensor> out;
  for (const any_tensor& t : run(dev)) out.push_back(cuda::to_host(t));
  return out;
}

struct deviation {
  double worst_ratio = 0;  // the largest |got - f32| over its element's bound
  double worst = 0;        // the largest |got - f32|
};

// Each output element of the product sum_l a_l b_l against the f32 result: within
// (2 u + u^2 + 2^-20) sum_l |a_l b_l| for u = 2^(1 - bits) (each operand off by less than u relative,
// the f32 sums' own error far below 2^-20 of the magnitudes).
inline deviation against_f32(const std::vector<any_tensor>& got, const std::vector<any_tensor>& want, const std::vector<any_tensor>& in,
                             int bits) {
  const double u = std::ldexp(1.0, 1 - bits), rel = 2 * u + u * u + std::ldexp(1.0, -20);
  const float* x = in[0].data<float>();
  const float* w = in[1].data<float>();
  deviation d;
  for (std::size_t o = 0; o < 2; ++o) {
    for (index_t i = 0; i < rows; ++i) {
      for (index_t j = 0; j < features; ++j) {
        double magnitude = 0;
        for (index_t l = 0; l < depth; ++l) magnitude += std::abs(static_cast<double>(x[i * depth + l]) * w[j * depth + l]);
        const double e = std::abs(static_cast<double>(got[o].data<float>()[i * features + j]) - want[o].data<float>()[i * features + j]);
        d.worst = std::max(d.worst, e);
        d.worst_ratio = std::max(d.worst_ratio, e / (rel * magnitude + 1e-30));
      }
    }
  }
  return d;
}

// Every reduced precision within its bound of the f32 Eigen backend and ten times further from it
// than f32 on the device (the operands really are read narrower); f32 itself within the f32 sums'
// error. Where `modelled` (the emulated device, whose model reads each mode as its format; cuBLAS
// may run the 16-bit modes as TF32): bf16's error the largest, and an f16 operand past f16's range
// read as inf, a product of it inf (or NaN), where tf32 and bf16, with f32's range, stay finite.
inline void check_precisions(const std::shared_ptr<cuda::device_runtime>& gpu, bool modelled) {
  const std::vector<any_tensor> in = inputs();
  const program_module<eigen_backend> cpu(program());
  const std::vector<any_tensor> want = cpu(in);
  double worst_at[4] = {};
  for (const cuda::matmul_precision p :
       {cuda::matmul_precision::f32, cuda::matmul_precision::tf32, cuda::matmul_precision::bf16, cuda::matmul_precision::f16}) {
    INFO("matmul_precision " << cuda::name(p));
    const deviation d = against_f32(run_at(gpu, p, in), want, in, bits_of(p));
    CHECK(d.worst_ratio <= 1.0);
    // (f32's own error is the sums' order only)
    if (p != cuda::matmul_precision::f32) CHECK(d.worst > 10 * worst_at[0]);
    worst_at[static_cast<int>(p)] = d.worst;
  }
  if (!modelled) return;
  CHECK(worst_at[static_cast<int>(cuda::matmul_precision::bf16)] > 4 * worst_at[static_cast<int>(cuda::matmul_precision::tf32)]);
  CHECK(worst_at[static_cast<int>(cuda::matmul_precision::bf16)] > 4 * worst_at[static_cast<int>(cuda::matmul_precision::f16)]);
  std::vector<any_tensor> big = in;
  big[0].data<float>()[5 * depth + 7] = 70000.0f;  // (row 5 of x)
  for (const cuda::matmul_precision p : {cuda::matmul_precision::tf32, cuda::matmul_precision::bf16, cuda::matmul_precision::f16}) {
    INFO("matmul_precision " << cuda::name(p) << " with an operand of 70000");
    const std::vector<any_tensor> out = run_at(gpu, p, big);
    const float v = out[0].data<float>()[5 * features + 3];
    CHECK(std::isfinite(v) == (p != cuda::matmul_precision::f16));
    CHECK(std::isfinite(out[0].data<float>()[4 * features + 3]));  // (the other rows are not touched)
  }
}

}  // namespace cuda_precision_tests
