// typex/backend/cuda/kernels/reduce.cuh — reductions (sum, mean, var, amax, amin, argmax) and
// softmax / log_softmax over any dims of an f32 tensor: one block per output row, its elements
// addressed through strides (launch.hpp: reduce_params).
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

// The offset of row r's first element (kept dims) or of element c within a row (reduced dims):
// the coordinates of i in extent[0..rank) (row-major) dotted with stride.
TYPEX_DEVICE std::int64_t strided_offset(std::int64_t i, int rank, const std::int64_t* extent, const std::int64_t* stride) {
  std::int64_t offset = 0;
  TYPEX_DEVICE_UNROLL
  for (int d = max_rank - 1; d >= 0; --d) {
    if (d < rank) {
      offset += i % extent[d] * stride[d];
      i /= extent[d];
    }
  }
  return offset;
}

// (value, index) of the first maximum, a NaN counting above every number (torch's argmax)
struct arg_best {
  float v;
  std::int64_t i;
};
TYPEX_DEVICE bool better(const arg_best& a, const arg_best& b) {  // whether a wins over b
  const bool an = a.v != a.v, bn = b.v != b.v;
  if (an || bn) return an && (!bn || a.i < b.i);
  return a.v > b.v || (a.v == b.v && a.i < b.i);
}
TYPEX_DEVICE arg_best block_argmax(arg_best v, float* shared_v, std::int64_t* shared_i) {
  TYPEX_DEVICE_UNROLL
  for (unsigned offset = warp_size / 2; offset > 0; offset /= 2) {
    const arg_best o{shfl_down_sync(full_mask, v.v, offset), shfl_down_sync(full_mask, v.i, offset)};
    if (o.i >= 0 && (v.i < 0 || better(o, v))) v = o;  // (i < 0: a lane that saw no element)
  }
  const unsigned warps = block_dim().x / warp_size;
  if (lane_id() == 0) shared_v[warp_id()] = v.v, shared_i[warp_id()] = v.i;
  sync_threads();
  if (warp_id() == 0) {
    v = lane_id() < warps ? arg_best{shared_v[lane_id()], shared_i[lane_id()]} : arg_best{-std::numeric_limits<float>::infinity(), -1};
    TYPEX_DEVICE_UNROLL
    for (unsigned offset = warp_size / 2; offset > 0; offset /= 2) {
      const arg_best o{shfl_down_sync(full_mask, v.v, offset), shfl_down_sync(full_mask, v.i, offset)};
      if (o.i >= 0 && (v.i < 0 || better(o, v))) v = o;
    }
    if (lane_id() == 0) shared_v[0] = v.v, shared_i[0] = v.i;
  }
  sync_threads();
  const arg_best total{shared_v[0], shared_i[0]};
  sync_threads();
  return total;
}
}  // namespace detail

// Launch geometry: reduce_launch (a block per row, row_threads threads, a float and an int64 per
// warp of shared memory). Every kind reads the row in the same grid-stride order.
// (A template, as every kernel here, so that a header defines it in many units; f32 only for now.)
template <class T>
TYPEX_GLOBAL void row_reduce_kernel(const TYPEX_GRID_CONSTANT reduce_params p) {
  static_assert(std::is_same_v<T, float>, "typex::cuda: row_reduce_kernel reduces f32 rows");
  const std::int64_t row = block_idx().x;
  if (row >= p.rows) return;  // (the whole block: an empty matrix still launches one block)
  float* shared = TYPEX_SHARED(float);
  std::int64_t* shared_i = reinterpret_cast<std::int64_t*>(shared + row_threads / warp_size);
  const bool strided = p.rank_red > 0;
  const std::int64_t base = strided ? detail::strided_offset(row, p.rank_kept, p.kept_extent, p.kept_stride) : row * p.cols;
  const float* x = p.in + base;
  const auto at = [&](std::int64_t c) { return strided ? detail::strided_offset(c, p.rank_red, p.red_extent, p.red_stride) : c; };
  const std::int64_t first = thread_idx().x, step = block_dim().x;
  const float cols = static_cast<float>(p.cols);
  switch (p.kind) {
    case reduce_kind::sum:
    case reduce_kind::mean:
    case reduce_kind::var:
    case reduce_kind::std: {
      float s = 0.0f;
      for (std::int64_t c = first; c < p.cols; c += step) s += x[at(c)];
      s = detail::block_reduce(s, shared, detail::sum_fn{});
      if (p.kind == reduce_kind::var || p.kind == reduce_kind::std) {  // (two passes: the squares of the deviations from the mean)
        const float mean = s / cols;
        float q = 0.0f;
        for (std::int64_t c = first; c < p.cols; c += step) {
          const float d = x[at(c)] - mean;
          q += d * d;
        }
        q = detail::block_reduce(q, shared, detail::sum_fn{});
        const double dof = static_cast<double>(p.cols) - p.correction;
        const float v = static_cast<float>(q / (dof > 0 ? dof : 0.0));  // (torch divides by max(N - correction, 0))
        if (thread_idx().x == 0) p.out[row] = p.kind == reduce_kind::std ? math::sqrt(v) : v;
        return;
      }
      if (thread_idx().x == 0) p.out[row] = p.kind == reduce_kind::mean ? s / cols : s;
      return;
    }
    case reduce_kind::amax:
    case reduce_kind::amin: {
      const bool mx = p.kind == reduce_kind::amax;
      float m = detail::max_fn::identity;
      for (std::int64_t c = first; c < p.cols; c += step) m = detail::max_fn{}(m, mx ? x[at(c)] : -x[at(c)]);
      m = detail::block_reduce(m, shared, detail::max_fn{});
      if (thread_idx().x == 0) p.out[row] = mx ? m : -m;
      return;
    }
    case reduce_kind::argmax: {
      detail::arg_best b{-std::numeric_limits<float>::infinity(), -1};
      for (std::int64_t c = first; c < p.cols; c += step) {
        const detail::arg_best o{x[at(c)], c};
        if (b.i < 0 || detail::better(o, b)) b = o;
      }
      b = detail::block_argmax(b, shared, shared_i);
      if (thread_idx().x == 0) p.index_out[row] = b.i < 0 ? 0 : b.i;
      return;
    }
    case reduce_kind::softmax:
    case reduce_kind::log_softmax:
    case reduce_kind::logsumexp: break;
  }
  float m = detail::max_fn::identity;
  for (std::int64_t c = first; c < p.cols; c += step) m = detail::max_fn{}(m, x[at(c)]);
  m = detail::block_reduce(m, shared, detail::max_fn{});
  float s = 0.0f;
  for (std::int64_t c = first; c < p.cols; c += step) s += math::exp(x[at(c)] - m);
  s = detail::block_reduce(s, shared, detail::sum_fn{});
  if (p.kind == reduce_kind::logsumexp) {
    if (thread_idx().x == 0) p.out[row] = m == m && (m == std::numeric_limits<float>::infinity() || m == -std::numeric_limits<float>::infinity()) ? m : m + math::log(s);
    return;
  }
  float* y = p.out + base;  // (softmax's output: laid out as its input)
  if (p.kind == reduce_kind::softmax) {
    const float inv = 1.0f / s;
    for (std::int64_t c = first; c < p.cols; c += step) y[at(c)] = math::exp(x[at(c)] - m) * inv;
  } else {
    const float log_s = math::log(s);
    for (std::int64_t c = first; c < p.cols; c += step) y[at(c)] = x[at(c)] - m - log_s;
  }
}

}  // inline namespace TYPEX_CUDA_ABI
}  // namespace typex::cuda::kernels
