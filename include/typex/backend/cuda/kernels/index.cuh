// typex/backend/cuda/kernels/index.cuh — indexing along one dim: take (index_select, embedding,
// gather), add (index_add, scatter_add, embedding's backward) and count (the index's frequencies), one thread per element of the
// iteration shape (launch.hpp: index_params). An index out of range is never read or written
// through: it raises the call's error word, which the engine reads after the call and reports as an
// argument_error naming the node (a GPU cannot throw).
#pragma once

#include <typex/backend/cuda/kernel_api.cuh>
#include <typex/backend/cuda/launch.hpp>

#include <cstdint>
#include <type_traits>

namespace typex::cuda::kernels {
inline namespace TYPEX_CUDA_ABI {  // (kernel_api.cuh: native or emulated)

// Launch geometry: index_launch (elementwise). Item: the element (an unsigned integer of its size
// to take; float or double to add).
template <class Item>
TYPEX_GLOBAL void index_kernel(const TYPEX_GRID_CONSTANT index_params p) {
  const std::int64_t step = static_cast<std::int64_t>(block_dim().x) * grid_dim().x;
  for (std::int64_t i = static_cast<std::int64_t>(block_idx().x) * block_dim().x + thread_idx().x; i < p.n; i += step) {
    std::int64_t src = 0, out = 0, at = 0, along = 0, rest = i;
    TYPEX_DEVICE_UNROLL
    for (int d = max_rank - 1; d >= 0; --d) {
      if (d < p.rank) {
        const std::int64_t c = rest % p.extent[d];
        rest /= p.extent[d];
        at += c * p.index_stride[d];
        if (d == p.dim) {
          along = c;
          continue;
        }
        src += c * p.src_stride[d];
        out += c * p.out_stride[d];
      }
    }
    const std::int64_t idx = p.index32 ? static_cast<const std::int32_t*>(p.index)[at] : static_cast<const std::int64_t*>(p.index)[at];
    const bool skip = idx == p.skip_index && p.skip_index >= 0;
    const bool bad = !skip && (idx < 0 || idx >= p.dim_size);
    if (bad) atomic_max(p.error, p.code);
    if (p.kind == index_kind::count) {
      if (!skip && !bad) atomic_add(p.counts + idx, 1.0);
    } else if (p.kind == index_kind::take) {
      const Item v = skip || bad ? Item{} : static_cast<const Item*>(p.src)[src + idx * p.src_stride[p.dim]];
      static_cast<Item*>(p.out)[out + along * p.out_stride[p.dim]] = v;
    } else if constexpr (std::is_floating_point_v<Item>) {
      if (!skip && !bad) {
        const Item term = static_cast<Item>(p.alpha) * static_cast<const Item*>(p.src)[src + along * p.src_stride[p.dim]];
        atomic_add(static_cast<Item*>(p.out) + out + idx * p.out_stride[p.dim],
                   p.counts != nullptr ? term / static_cast<Item>(p.counts[idx]) : term);
      }
    }
  }
}

}  // inline namespace TYPEX_CUDA_ABI
}  // namespace typex::cuda::kernels
