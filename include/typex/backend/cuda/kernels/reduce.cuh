// typex/backend/cuda/kernels/reduce.cuh — reductions (sum, mean, var, amax, amin, argmax) and
// softmax / log_softmax over any dims of an f32 or f64 tensor, and sum, amax, amin, argmax of an
// integer one (sum of a bool one): one block per output row, its elements addressed through strides
// (launch.hpp: reduce_params).
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
// The accumulators: float and double (f32 / f64 rows), int64 (integer and bool rows).
template <class A>
TYPEX_HOST_DEVICE constexpr A lowest_value() {
  if constexpr (std::is_floating_point_v<A>) return -std::numeric_limits<A>::infinity();
  else return std::numeric_limits<A>::lowest();
}
template <class A>
TYPEX_HOST_DEVICE constexpr A highest_value() {
  if constexpr (std::is_floating_point_v<A>) return std::numeric_limits<A>::infinity();
  else return std::numeric_limits<A>::max();
}
// (int64 sums wrap on overflow, as torch's do: added as unsigned, which C++ defines, and converted
// back, which C++20 defines as the same bits)
template <class A>
TYPEX_DEVICE A add(A a, A b) {
  if constexpr (std::is_integral_v<A>) return static_cast<A>(static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b));
  else return a + b;
}
template <class A>
struct sum_fn {
  TYPEX_DEVICE A operator()(A a, A b) const { return add(a, b); }
  static constexpr A identity = A(0);
};
// The larger (Max) or smaller of two; a NaN anywhere in the row makes the max / min NaN, as torch's.
template <class A, bool Max>
struct extreme_fn {
  TYPEX_DEVICE A operator()(A a, A b) const {
    if constexpr (std::is_floating_point_v<A>)
      if (a != a || b != b) return a + b;
    return (Max ? a < b : b < a) ? b : a;
  }
  static constexpr A identity = Max ? lowest_value<A>() : highest_value<A>();
};
template <class A>
using max_fn = extreme_fn<A, true>;
template <class A>
using min_fn = extreme_fn<A, false>;

// The reduction of v over the block (blockDim.x a multiple of 32; `shared`: one A per warp),
// returned to every thread. Every thread of the block must call it (it has barriers).
template <class A, class F>
TYPEX_DEVICE A block_reduce(A v, A* shared, F f) {
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
  const A total = shared[0];
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
template <class A>
struct arg_best {
  A v;
  std::int64_t i;
};
template <class A>
TYPEX_DEVICE bool better(const arg_best<A>& a, const arg_best<A>& b) {  // whether a wins over b
  if constexpr (std::is_floating_point_v<A>) {
    const bool an = a.v != a.v, bn = b.v != b.v;
    if (an || bn) return an && (!bn || a.i < b.i);
  }
  return a.v > b.v || (a.v == b.v && a.i < b.i);
}
template <class A>
TYPEX_DEVICE arg_best<A> block_argmax(arg_best<A> v, A* shared_v, std::int64_t* shared_i) {
  TYPEX_DEVICE_UNROLL
  for (unsigned offset = warp_size / 2; offset > 0; offset /= 2) {
    const arg_best<A> o{shfl_down_sync(full_mask, v.v, offset), shfl_down_sync(full_mask, v.i, offset)};
    if (o.i >= 0 && (v.i < 0 || better(o, v))) v = o;  // (i < 0: a lane that saw no element)
  }
  const unsigned warps = block_dim().x / warp_size;
  if (lane_id() == 0) shared_v[warp_id()] = v.v, shared_i[warp_id()] = v.i;
  sync_threads();
  if (warp_id() == 0) {
    v = lane_id() < warps ? arg_best<A>{shared_v[lane_id()], shared_i[lane_id()]} : arg_best<A>{lowest_value<A>(), -1};
    TYPEX_DEVICE_UNROLL
    for (unsigned offset = warp_size / 2; offset > 0; offset /= 2) {
      const arg_best<A> o{shfl_down_sync(full_mask, v.v, offset), shfl_down_sync(full_mask, v.i, offset)};
      if (o.i >= 0 && (v.i < 0 || better(o, v))) v = o;
    }
    if (lane_id() == 0) shared_v[0] = v.v, shared_i[0] = v.i;
  }
  sync_threads();
  const arg_best<A> total{shared_v[0], shared_i[0]};
  sync_threads();
  return total;
}
}  // namespace detail

// Launch geometry: reduce_launch (a block per row, row_threads threads, 8 bytes of partial and an
// int64 index per warp of shared memory). Every kind reads the row in the same grid-stride order.
// In: the row's element type (float, double, int64, int32, bool); A: what it is reduced in (float,
// double; int64 for the integers and bool, exact). The dispatch instantiates the five pairs
// (reduce_params::type); the kinds an integer type does not have are refused by reduce_launch.
template <class In, class A>
TYPEX_GLOBAL void row_reduce_kernel(const TYPEX_GRID_CONSTANT reduce_params p) {
  static_assert(std::is_same_v<In, A> || (std::is_integral_v<In> && std::is_same_v<A, std::int64_t>),
                "typex::cuda: row_reduce_kernel reduces f32 and f64 rows in their own type, integer and bool rows in int64");
  const std::int64_t row = block_idx().x;
  if (row >= p.rows) return;  // (the whole block: an empty matrix still launches one block)
  unsigned char* scratch = TYPEX_SHARED(unsigned char);
  A* shared = reinterpret_cast<A*>(scratch);
  std::int64_t* shared_i = reinterpret_cast<std::int64_t*>(scratch + row_threads / warp_size * sizeof(double));
  const bool strided = p.rank_red > 0;
  const std::int64_t base = strided ? detail::strided_offset(row, p.rank_kept, p.kept_extent, p.kept_stride) : row * p.cols;
  const In* x = static_cast<const In*>(p.in) + base;
  const auto at = [&](std::int64_t c) { return strided ? detail::strided_offset(c, p.rank_red, p.red_extent, p.red_stride) : c; };
  const auto load = [&](std::int64_t c) { return static_cast<A>(x[at(c)]); };
  const std::int64_t first = thread_idx().x, step = block_dim().x;
  A* out = static_cast<A*>(p.out);
  switch (p.kind) {
    case reduce_kind::sum:
    case reduce_kind::mean:
    case reduce_kind::var:
    case reduce_kind::std: {
      A s = 0;
      for (std::int64_t c = first; c < p.cols; c += step) s = detail::add(s, load(c));
      s = detail::block_reduce(s, shared, detail::sum_fn<A>{});
      if constexpr (std::is_floating_point_v<A>) {
        const A cols = static_cast<A>(p.cols);
        if (p.kind == reduce_kind::var || p.kind == reduce_kind::std) {  // (two passes: the squares of the deviations from the mean)
          const A mean = s / cols;
          A q = 0;
          for (std::int64_t c = first; c < p.cols; c += step) {
            const A d = load(c) - mean;
            q += d * d;
          }
          q = detail::block_reduce(q, shared, detail::sum_fn<A>{});
          const double dof = static_cast<double>(p.cols) - p.correction;
          const A v = static_cast<A>(q / (dof > 0 ? dof : 0.0));  // (torch divides by max(N - correction, 0))
          if (thread_idx().x == 0) out[row] = p.kind == reduce_kind::std ? math::sqrt(v) : v;
          return;
        }
        if (thread_idx().x == 0) out[row] = p.kind == reduce_kind::mean ? s / cols : s;
      } else {
        if (thread_idx().x == 0) out[row] = s;  // (integers: sum only, reduce_launch)
      }
      return;
    }
    case reduce_kind::amax:
    case reduce_kind::amin: {
      // (the result in the input's type: for the integers, int64 back to In exactly)
      In* y = static_cast<In*>(p.out);
      if (p.kind == reduce_kind::amax) {
        A m = detail::max_fn<A>::identity;
        for (std::int64_t c = first; c < p.cols; c += step) m = detail::max_fn<A>{}(m, load(c));
        m = detail::block_reduce(m, shared, detail::max_fn<A>{});
        if (thread_idx().x == 0) y[row] = static_cast<In>(m);
      } else {
        A m = detail::min_fn<A>::identity;
        for (std::int64_t c = first; c < p.cols; c += step) m = detail::min_fn<A>{}(m, load(c));
        m = detail::block_reduce(m, shared, detail::min_fn<A>{});
        if (thread_idx().x == 0) y[row] = static_cast<In>(m);
      }
      return;
    }
    case reduce_kind::argmax: {
      detail::arg_best<A> b{detail::lowest_value<A>(), -1};
      for (std::int64_t c = first; c < p.cols; c += step) {
        const detail::arg_best<A> o{load(c), c};
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
  if constexpr (std::is_floating_point_v<A>) {
    constexpr A inf = std::numeric_limits<A>::infinity();
    A m = detail::max_fn<A>::identity;
    for (std::int64_t c = first; c < p.cols; c += step) m = detail::max_fn<A>{}(m, load(c));
    m = detail::block_reduce(m, shared, detail::max_fn<A>{});
    A s = 0;
    for (std::int64_t c = first; c < p.cols; c += step) s += math::exp(load(c) - m);
    s = detail::block_reduce(s, shared, detail::sum_fn<A>{});
    if (p.kind == reduce_kind::logsumexp) {
      if (thread_idx().x == 0) out[row] = m == m && (m == inf || m == -inf) ? m : m + math::log(s);
      return;
    }
    A* y = out + base;  // (softmax's output: laid out as its input)
    if (p.kind == reduce_kind::softmax) {
      const A inv = A(1) / s;
      for (std::int64_t c = first; c < p.cols; c += step) y[at(c)] = math::exp(load(c) - m) * inv;
    } else {
      const A log_s = math::log(s);
      for (std::int64_t c = first; c < p.cols; c += step) y[at(c)] = load(c) - m - log_s;
    }
  }
}

}  // inline namespace TYPEX_CUDA_ABI
}  // namespace typex::cuda::kernels
