// typex/backend/cuda/kernels/copy.cuh — strided to contiguous copy: transposes, permutes, expands,
// slices and clones of any dtype (the copy moves bits: one kernel per item size).
#pragma once

#include <typex/backend/cuda/kernel_api.cuh>
#include <typex/backend/cuda/launch.hpp>

#include <cstdint>

namespace typex::cuda::kernels {
inline namespace TYPEX_CUDA_ABI {  // (kernel_api.cuh: native or emulated)

// One thread per output element, grid-stride (launch geometry: copy_launch). Item: an unsigned
// integer of the element's size.
template <class Item>
TYPEX_GLOBAL void copy_kernel(const TYPEX_GRID_CONSTANT copy_params p) {
  const Item* src = static_cast<const Item*>(p.src);
  Item* dst = static_cast<Item*>(p.dst);
  const std::int64_t step = static_cast<std::int64_t>(block_dim().x) * grid_dim().x;
  for (std::int64_t i = static_cast<std::int64_t>(block_idx().x) * block_dim().x + thread_idx().x; i < p.n; i += step) {
    std::int64_t offset = 0, to = 0, rest = i;
    TYPEX_DEVICE_UNROLL
    for (int d = max_rank - 1; d >= 0; --d) {
      if (d < p.rank) {
        const std::int64_t coord = rest % p.extent[d];
        offset += coord * p.src_stride[d];
        to += coord * p.dst_stride[d];
        rest /= p.extent[d];
      }
    }
    dst[p.dst_strided ? to : i] = src[offset];
  }
}

}  // inline namespace TYPEX_CUDA_ABI
}  // namespace typex::cuda::kernels
