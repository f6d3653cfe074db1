// typex/backend/cuda/kernels/norm.cuh — layer norm, group norm and batch norm with running
// statistics over the rows of a contiguous f32 matrix: one block per row, two passes for the
// statistics (the mean, then the squared deviations from it: no cancellation of E[x^2] - E[x]^2;
// batch norm reads its running ones), then the normalized, scaled and shifted row.
#pragma once

#include <typex/backend/cuda/kernel_api.cuh>
#include <typex/backend/cuda/kernels/reduce.cuh>
#include <typex/backend/cuda/launch.hpp>

#include <cstdint>
#include <type_traits>

namespace typex::cuda::kernels {
inline namespace TYPEX_CUDA_ABI {  // (kernel_api.cuh: native or emulated)

// Launch geometry: norm_launch (a block per row, row_threads threads, a float per warp shared).
template <class T>
TYPEX_GLOBAL void layer_norm_kernel(const TYPEX_GRID_CONSTANT norm_params p) {
  static_assert(std::is_same_v<T, float>, "typex::cuda: layer_norm_kernel normalizes f32 rows");
  const std::int64_t row = block_idx().x;
  if (row >= p.rows) return;
  float* shared = TYPEX_SHARED(float);
  const float* x = p.in + row * p.cols;
  float* y = p.out + row * p.cols;
  const std::int64_t first = thread_idx().x, step = block_dim().x;
  float mean, rstd;
  if (p.kind == norm_kind::batch_eval) {  // (the running statistics: no reduction)
    const std::int64_t ch = row % p.channels;
    mean = p.running_mean[ch];
    rstd = math::rsqrt(p.running_var[ch] + static_cast<float>(p.eps));
  } else {
    float s = 0.0f;
    for (std::int64_t c = first; c < p.cols; c += step) s += x[c];
    mean = detail::block_reduce(s, shared, detail::sum_fn<float>{}) / static_cast<float>(p.cols);
    float q = 0.0f;
    for (std::int64_t c = first; c < p.cols; c += step) {
      const float d = x[c] - mean;
      q += d * d;
    }
    const float var = detail::block_reduce(q, shared, detail::sum_fn<float>{}) / static_cast<float>(p.cols);
    rstd = math::rsqrt(var + static_cast<float>(p.eps));
  }
  for (std::int64_t c = first; c < p.cols; c += step) {
    const std::int64_t a = p.kind == norm_kind::layer   ? c
                           : p.kind == norm_kind::group ? row % p.groups * p.channels_per_group + c / p.inner
                                                        : row % p.channels;
    float v = (x[c] - mean) * rstd;
    if (p.weight != nullptr) v *= p.weight[a];
    if (p.bias != nullptr) v += p.bias[a];
    y[c] = v;
  }
  if (thread_idx().x == 0) {
    if (p.mean != nullptr) p.mean[row] = mean;
    if (p.rstd != nullptr) p.rstd[row] = rstd;
  }
}

}  // inline namespace TYPEX_CUDA_ABI
}  // namespace typex::cuda::kernels
