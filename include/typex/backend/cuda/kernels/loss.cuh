// typex/backend/cuda/kernels/loss.cuh — nll_loss, cross_entropy (the log-softmax and the NLL fused:
// one block per row: a row of [N, C], or one position of spatial scores [N, C, d...]) and mse_loss, with torch's reductions (none, mean over the weights, sum) and
// ignore_index; the reduced forms leave per-block partial sums that a one-block `finish` adds in a
// fixed order (deterministic, no atomics).
#pragma once

#include <typex/backend/cuda/kernel_api.cuh>
#include <typex/backend/cuda/kernels/reduce.cuh>
#include <typex/backend/cuda/launch.hpp>

#include <cstdint>
#include <limits>
#include <type_traits>

namespace typex::cuda::kernels {
inline namespace TYPEX_CUDA_ABI {  // (kernel_api.cuh: native or emulated)

// Launch geometry: loss_launch (loss_blocks blocks of row_threads, a float per warp shared).
template <class T>
TYPEX_GLOBAL void loss_kernel(const TYPEX_GRID_CONSTANT loss_params p) {
  static_assert(std::is_same_v<T, float>, "typex::cuda: loss_kernel computes f32 losses");
  float* shared = TYPEX_SHARED(float);
  const std::int64_t b = block_idx().x;
  const std::int64_t first = thread_idx().x, step = block_dim().x;
  if (p.kind == loss_kind::finish) {  // (one block: the partial sums, then out[0])
    float l = 0.0f, w = 0.0f;
    for (std::int64_t r = first; r < p.rows; r += step) l += p.partial[2 * r], w += p.partial[2 * r + 1];
    l = detail::block_reduce(l, shared, detail::sum_fn<float>{});
    w = detail::block_reduce(w, shared, detail::sum_fn<float>{});
    if (thread_idx().x == 0) p.out[0] = p.reduction == loss_reduction::sum ? l : l / w;
    return;
  }
  if (p.kind == loss_kind::mse) {
    const std::int64_t blocks = grid_dim().x;
    float s = 0.0f;
    for (std::int64_t i = b * step + first; i < p.rows; i += blocks * step) {
      const float d = p.in[i] - static_cast<const float*>(p.target)[i];
      if (p.reduction == loss_reduction::none) p.out[i] = d * d;
      else s += d * d;
    }
    if (p.reduction == loss_reduction::none) return;
    s = detail::block_reduce(s, shared, detail::sum_fn<float>{});
    if (thread_idx().x == 0) {
      p.partial[2 * b] = s;
      p.partial[2 * b + 1] = b == 0 ? static_cast<float>(p.rows) : 0.0f;  // (mean: over the element count)
    }
    return;
  }
  if (b >= p.rows) return;
  const std::int64_t t = p.target32 ? static_cast<const std::int32_t*>(p.target)[b] : static_cast<const std::int64_t*>(p.target)[b];
  const bool ignored = t == p.ignore_index;
  const bool bad = !ignored && (t < 0 || t >= p.cols);
  if (bad && thread_idx().x == 0) atomic_max(p.error, p.code);
  const std::int64_t inner = p.inner;  // (spatial scores: a row's C scores are `inner` apart)
  const float* x = p.in + (b / inner) * p.cols * inner + b % inner;
  float logp = 0.0f;
  if (p.kind == loss_kind::cross_entropy) {  // (the row's log-softmax at t: every thread takes part in the reductions)
    float m = detail::max_fn<float>::identity;
    for (std::int64_t c = first; c < p.cols; c += step) m = detail::max_fn<float>{}(m, x[c * inner]);
    m = detail::block_reduce(m, shared, detail::max_fn<float>{});
    float s = 0.0f;
    for (std::int64_t c = first; c < p.cols; c += step) s += math::exp(x[c * inner] - m);
    s = detail::block_reduce(s, shared, detail::sum_fn<float>{});
    if (!ignored && !bad) logp = x[t * inner] - m - math::log(s);
  } else if (!ignored && !bad) {
    logp = x[t * inner];
  }
  if (thread_idx().x != 0) return;
  const float w = ignored || bad ? 0.0f : (p.weight != nullptr ? p.weight[t] : 1.0f);
  const float loss = ignored || bad ? 0.0f : -w * logp;  // (a zero weight times a NaN or infinite log p is NaN, as torch)
  if (p.reduction == loss_reduction::none) {
    p.out[b] = loss;
  } else {
    p.partial[2 * b] = loss;
    p.partial[2 * b + 1] = w;
  }
}

}  // inline namespace TYPEX_CUDA_ABI
}  // namespace typex::cuda::kernels
