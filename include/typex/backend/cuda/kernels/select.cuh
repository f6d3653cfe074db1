// typex/backend/cuda/kernels/select.cuh — compaction: the elements whose condition holds, in order
// (nonzero's coordinates, masked_select's values), in two passes over chunks of select_chunk
// elements, one block of 256 threads each (launch.hpp: select_params). The count pass gives each
// chunk's count; the host adds them up (the result's size, which only the data decide) and gives
// each chunk its offset; the write pass walks its chunk in rounds of 256, each round's flags scanned
// in shared memory, so every selected element lands at its rank: the order is the elements', not the
// threads'. masked_scatter is the reverse (source's elements, in order, into the selected positions
// of self's copy): its result's size is self's, so a planned program runs it on the device alone,
// the offsets made by the one-block scan pass, and the scatter pass reading where the write pass
// writes.
#pragma once

#include <typex/backend/cuda/kernel_api.cuh>
#include <typex/backend/cuda/launch.hpp>

#include <cstdint>

namespace typex::cuda::kernels {
inline namespace TYPEX_CUDA_ABI {  // (kernel_api.cuh: native or emulated)

namespace detail {
// Whether element i's condition holds, and its source offset (for masked_select).
TYPEX_DEVICE bool select_flag(const select_params& p, std::int64_t i, std::int64_t& src) {
  std::int64_t at = 0, rest = i;
  src = 0;
  TYPEX_DEVICE_UNROLL
  for (int d = max_rank - 1; d >= 0; --d) {
    if (d < p.rank) {
      const std::int64_t c = rest % p.extent[d];
      rest /= p.extent[d];
      at += c * p.cond_stride[d];
      src += c * p.src_stride[d];
    }
  }
  const unsigned char* base = static_cast<const unsigned char*>(p.cond) + at * p.cond_itemsize;
  std::uint64_t bits = 0;
  switch (p.cond_itemsize) {
    case 1: bits = *base; break;
    case 2: bits = *reinterpret_cast<const std::uint16_t*>(base); break;
    case 4: bits = *reinterpret_cast<const std::uint32_t*>(base); break;
    default: bits = *reinterpret_cast<const std::uint64_t*>(base); break;
  }
  // (a float is zero where every bit but the sign is: +0 and -0; NaN, infinities and subnormals are not)
  if (p.cond_float) bits &= ~(std::uint64_t{1} << (8 * p.cond_itemsize - 1));
  return bits != 0;
}

// scan[0, 256) replaced by its inclusive prefix sums (Hillis-Steele; every thread of the block calls
// it, t its index, and a barrier separates each step's reads from its writes).
TYPEX_DEVICE void block_scan_256(std::int64_t* scan, int t) {
  for (int step = 1; step < 256; step *= 2) {
    const std::int64_t add = t >= step ? scan[t - step] : 0;
    sync_threads();
    scan[t] += add;
    sync_threads();
  }
}
}  // namespace detail

// Launch geometry: select_launch (a block of 256 threads per chunk, 256 int64 of shared memory;
// the scan pass one block). Item: the bits of masked_select's and masked_scatter's elements (an
// unsigned integer of their size); nonzero's coordinates are int64 whatever Item is.
template <class Item>
TYPEX_GLOBAL void select_kernel(const TYPEX_GRID_CONSTANT select_params p) {
  std::int64_t* scan = TYPEX_SHARED(std::int64_t);  // [256]: this round's flags (or counts), scanned
  const int t = static_cast<int>(thread_idx().x);
  if (p.kind == select_kind::scan) {  // (one block: the chunks' counts, 256 at a time, carried over)
    const std::int64_t chunks = (p.n + select_chunk - 1) / select_chunk;
    std::int64_t carry = 0;
    for (std::int64_t base = 0; base < chunks; base += 256) {
      const std::int64_t k = base + t;
      const std::int64_t v = k < chunks ? p.counts[k] : 0;
      scan[t] = v;
      sync_threads();
      detail::block_scan_256(scan, t);
      if (k < chunks) p.counts[k] = carry + scan[t] - v;
      carry += scan[255];
      sync_threads();  // (every thread has read scan[255] before the next round writes)
    }
    return;
  }
  const std::int64_t start = static_cast<std::int64_t>(block_idx().x) * select_chunk;
  const std::int64_t end = start + select_chunk < p.n ? start + select_chunk : p.n;
  // (the next output row, or the next source element)
  std::int64_t placed = p.kind == select_kind::count || start >= p.n ? 0 : p.offsets[block_idx().x];
  for (std::int64_t round = start; round < end; round += 256) {
    const std::int64_t i = round + t;
    std::int64_t src = 0;
    const bool flag = i < end && detail::select_flag(p, i, src);
    scan[t] = flag ? 1 : 0;
    sync_threads();
    detail::block_scan_256(scan, t);
    const std::int64_t total = scan[255];
    if (p.kind == select_kind::write && flag) {
      const std::int64_t row = placed + scan[t] - 1;
      if (p.coords) {
        std::int64_t* out = static_cast<std::int64_t*>(p.out) + row * p.rank;
        std::int64_t rest = i;
        for (int d = p.rank - 1; d >= 0; --d) {
          out[d] = rest % p.extent[d];
          rest /= p.extent[d];
        }
      } else {
        static_cast<Item*>(p.out)[row] = static_cast<const Item*>(p.src)[src];
      }
    } else if (p.kind == select_kind::scatter && i < end) {
      Item v = Item{};
      if (!flag) {
        v = static_cast<const Item*>(p.src)[src];
      } else if (const std::int64_t at = placed + scan[t] - 1; at < p.source_n) {
        v = static_cast<const Item*>(p.source)[at];
      } else {
        atomic_max(p.error, p.code);  // (source is shorter than the mask's count: nothing read past it)
      }
      static_cast<Item*>(p.out)[i] = v;
    }
    placed += total;
    sync_threads();  // (every thread has read scan[255] and its own count before the next round writes)
  }
  if (p.kind == select_kind::count && t == 0) p.counts[block_idx().x] = placed;
}

}  // inline namespace TYPEX_CUDA_ABI
}  // namespace typex::cuda::kernels
