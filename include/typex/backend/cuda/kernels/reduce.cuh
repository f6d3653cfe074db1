// typex/backend/cuda/kernels/reduce.cuh — per-row reductions (sum, mean) and row softmax /
// log_softmax over the last dim of a contiguous f32 matrix: one block per row.
//
// The classic shape of a block reduction: each thread accumulates a grid-stride slice of the row,
// each warp reduces with a shfl_down tree, lane 0 of each warp leaves its partial in shared memory,
// a barrier, warp 0 reduces the partials, a barrier before every thread reads the total and another
// before shared memory is reused. Softmax runs two of them (the max, then the sum of exp(x - max)).
#pragma once

#include <typex/backend/cuda/kernel_api.cuh>
#include <typex/backend/cuda/launch.hpp>

#include <cstdint>
#include <limits>
#include <type_traits>

namespace typex::cuda::kernels {
inline namespace TYPEX_CUDA_ABI {  // (kernel_api.cuh: native or emulated)

namespace detail {
struct sum_fn {
  TYPEX_DEVICE float operator()(float a, float b) const { return a + b; }
  static constexpr float identity = 0.0f;
};
// (a NaN anywhere in the row makes the max NaN, as torch's)
struct max_fn {
  TYPEX_DEVICE float operator()(float a, float b) const { return a != a || b != b ? a + b : (a < b ? b : a); }
  static constexpr float identity = -std::numeric_limits<float>::infinity();
};

// The reduction of v over the block (blockDim.x a multiple of 32; `shared`: one float per warp),
// returned to every thread. Every thread of the block must call it (it has barriers).
template <class F>
TYPEX_DEVICE float block_reduce(float v, float* shared, F f) {
  TYPEX_DEVICE_UNROLL
  for (unsigned offset = warp_size / 2; offset > 0; offset /= 2) v = f(v, shfl_down_sync(full_mask, v, offset));
  const unsigned warps = block_dim().x / warp_size;
  if (lane_id() == 0) shared[warp_id()] = v;
  sync_threads();
  if (warp_id() == 0) {
    v = lane_id() < warps ? shared[lane_id()] : F::identity;
    TYPEX_DEVICE_UNROLL
    for (unsigned offset = warp_size / 2; offset > 0; offset /= 2) v = f(v, shfl_down_sync(full_mask, v, offset));
    if (lane_id() == 0) shared[0] = v;
  }
  sync_threads();
  const float total = shared[0];
  sync_threads();  // (the next reduction writes shared[] again)
  return total;
}
}  // namespace detail

// Launch geometry: reduce_launch (a block per row, row_threads threads, a float per warp shared).
// (A template, as every kernel here, so that a header defines it in many units; f32 only for now.)
template <class T>
TYPEX_GLOBAL void row_reduce_kernel(const reduce_params p) {
  static_assert(std::is_same_v<T, float>, "typex::cuda: row_reduce_kernel reduces f32 rows");
  const std::int64_t row = block_idx().x;
  if (row >= p.rows) return;  // (the whole block: an empty matrix still launches one block)
  float* shared = TYPEX_SHARED(float);
  const float* x = p.in + row * p.cols;
  const std::int64_t first = thread_idx().x, step = block_dim().x;
  if (p.kind == reduce_kind::sum || p.kind == reduce_kind::mean) {
    float s = 0.0f;
    for (std::int64_t c = first; c < p.cols; c += step) s += x[c];
    s = detail::block_reduce(s, shared, detail::sum_fn{});
    if (thread_idx().x == 0) p.out[row] = p.kind == reduce_kind::mean ? s / static_cast<float>(p.cols) : s;
    return;
  }
  float m = detail::max_fn::identity;
  for (std::int64_t c = first; c < p.cols; c += step) m = detail::max_fn{}(m, x[c]);
  m = detail::block_reduce(m, shared, detail::max_fn{});
  float s = 0.0f;
  for (std::int64_t c = first; c < p.cols; c += step) s += math::exp(x[c] - m);
  s = detail::block_reduce(s, shared, detail::sum_fn{});
  float* y = p.out + row * p.cols;
  if (p.kind == reduce_kind::softmax) {
    const float inv = 1.0f / s;
    for (std::int64_t c = first; c < p.cols; c += step) y[c] = math::exp(x[c] - m) * inv;
  } else {
    const float log_s = math::log(s);
    for (std::int64_t c = first; c < p.cols; c += step) y[c] = x[c] - m - log_s;
  }
}

}  // inline namespace TYPEX_CUDA_ABI
}  // namespace typex::cuda::kernels
