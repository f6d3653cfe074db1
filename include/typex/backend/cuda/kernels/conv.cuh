// typex/backend/cuda/kernels/conv.cuh — conv2d (f32 or f64) as an implicit GEMM: the im2col matrix is never
// written; each block gathers its tile of it straight from the input into shared memory.
//
// The product: out[pixel, channel] = sum_k A[pixel, k] B[k, channel] per group, where a pixel is
// (image, oh, ow) (M = n oh ow of them), a channel one of the group's oc / groups (N), and k = (ci,
// r, s) one of the group's c / groups input channels times the kh x kw window (K). A[pixel, k] is
// the input at (image, group's ci, oh stride - pad + r dil, ow stride - pad + s dil), zero outside
// the image; B[k, channel] is the weight [oc, c / groups, kh, kw] read as [oc, K] (its own layout).
//
// A block of 256 threads computes a conv_tile_m x conv_tile_n tile (8 x 4 per thread, in registers)
// of one group (blockIdx.z), stepping through K conv_tile_k at a time. Per slab: every thread stores
// the 8 elements of A's slab and 4 of B's it read into registers during the slab before (no
// division: the window offsets are read back from shared memory, where 16 threads decomposed the
// slab's k), 16 threads decompose the next slab's k, a barrier, every thread starts reading its
// elements of the next slab from global memory, 16 rank-1 updates from shared memory, a barrier. A thread's pixels are tx, tx + 16, ...: consecutive threads write consecutive
// output addresses (an output plane is contiguous in its pixels). Bias and the activation (a chain
// link: the registry op's own math) are applied as the tile is stored.
//
// Split K (conv_params::k_splits > 1, launch.hpp: conv_k_splits): blockIdx.z is (split, group); each
// block sums its stretch of the group's K (a whole number of slabs) and stores its raw sums into
// partial[split]; the `finish` launch, one thread per output element, adds the stretches in split
// order, then the bias and the activation.
#pragma once

#include <typex/backend/cuda/kernel_api.cuh>
#include <typex/backend/cuda/kernels/pointwise.cuh>
#include <typex/backend/cuda/launch.hpp>

#include <cstdint>
#include <type_traits>

namespace typex::cuda::kernels {
inline namespace TYPEX_CUDA_ABI {  // (kernel_api.cuh: native or emulated)

// Launch geometry: conv_launch (grid: M tiles, N tiles, groups; 256 threads; shared memory for one
// K slab of A and of B).
//
// Thread t computes pixels m0 + t % 16 + 16 i (i < 8) by channels n0 + t / 16 + 16 j (j < 4): 32
// results from 12 shared-memory reads per step of k. It stages A's column t % 128 (rows t / 128 + 2 j,
// j < 8: the same pixel at every step, so the pixel's coordinates are computed once) and B's row
// t % 16 (channels t / 16 + 16 j, j < 4: consecutive threads read consecutive weights).
template <class T>
TYPEX_GLOBAL void conv2d_kernel(const TYPEX_GRID_CONSTANT conv_params p) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "typex::cuda: conv2d_kernel convolves f32 or f64 tensors");
  constexpr int TM = conv_tile_m, TN = conv_tile_n, TK = conv_tile_k;
  const T* const bias = static_cast<const T*>(p.bias);
  T* const out = static_cast<T*>(p.out);
  T* const partial = static_cast<T*>(p.partial);
  if (p.finish) {  // (split K: the stretches' sums added in order, then the bias and the activation)
    const std::int64_t total = p.n * p.oc * p.oh * p.ow, planes = p.oh * p.ow;
    const std::int64_t step = static_cast<std::int64_t>(block_dim().x) * grid_dim().x;
    for (std::int64_t i = static_cast<std::int64_t>(block_idx().x) * block_dim().x + thread_idx().x; i < total; i += step) {
      T v = T(0);
      for (int sp = 0; sp < p.k_splits; ++sp) v += partial[sp * total + i];
      if (bias != nullptr) v += bias[i / planes % p.oc];
      if (p.has_act) v = detail::apply_unary<T>(chain_unary_ops{}, p.act.code, p.act.op, v);
      out[i] = v;
    }
    return;
  }
  static_assert(TM == 128 && TN == 64 && TK == 16, "typex::cuda: conv2d_kernel's thread mapping is written for 128 x 64 x 16 tiles");
  T* a_tile = TYPEX_SHARED(T);      // [TK][TM]
  T* b_tile = a_tile + TK * TM;     // [TK][TN]
  // each slab's k decomposition, computed once by TK threads rather than by every thread for each
  // element it stages: k's offset in the image's channels (ci h w + r dil w + s dil) and its window
  // offsets (r dil, s dil); k past the end: dy = -2^30 (never inside the image). Two buffers: the
  // next slab's is written while the current one's is read.
  std::int64_t* k_offset = reinterpret_cast<std::int64_t*>(b_tile + TK * TN);  // [2][TK]
  int* k_dy = reinterpret_cast<int*>(k_offset + 2 * TK);                     // [2][TK]
  int* k_dx = k_dy + 2 * TK;                                                  // [2][TK]
  const int t = static_cast<int>(thread_idx().x);
  const int tx = t % 16, ty = t / 16;
  const std::int64_t group = block_idx().z % p.groups, split = block_idx().z / p.groups;
  const std::int64_t icg = p.c / p.groups, ocg = p.oc / p.groups;
  const int kw = static_cast<int>(p.kw), window = static_cast<int>(p.kh * p.kw);
  const int k_total = static_cast<int>(icg) * window;  // (conv_launch: within int32)
  // this block's stretch of K, [k_begin, k_end): whole slabs (all of K without a split)
  // (in 64 bits: a stretch's end may pass k_total, which may be near 2^31)
  const std::int64_t slabs = (k_total + TK - 1) / TK, per_split = (slabs + p.k_splits - 1) / p.k_splits;
  const std::int64_t kb = split * per_split * TK, ke = kb + per_split * TK;
  const int k_begin = static_cast<int>(kb < k_total ? kb : k_total), k_end = static_cast<int>(ke < k_total ? ke : k_total);
  const std::int64_t planes = p.oh * p.ow, m_total = p.n * planes;
  const std::int64_t m0 = static_cast<std::int64_t>(block_idx().x) * TM, n0 = static_cast<std::int64_t>(block_idx().y) * TN;
  // the pixel this thread stages, once: its image's first channel, and its window's corner
  const int a_col = t % TM, a_row = t / TM;
  const std::int64_t am = m0 + a_col;
  const bool a_live = am < m_total;
  const std::int64_t a_img = a_live ? am / planes : 0, a_pix = a_live ? am % planes : 0;
  const std::int64_t y_top = a_pix / p.ow * p.stride[0] - p.pad[0], x_left = a_pix % p.ow * p.stride[1] - p.pad[1];
  const T* a_base = static_cast<const T*>(p.in) + (a_img * p.c + group * icg) * p.h * p.w;
  const std::int64_t a_corner = y_top * p.w + x_left;  // (the window's corner in the plane; may be outside it)
  // the weights this thread stages: row b_k of channels n0 + b_n + 16 j
  const int b_k = t % TK, b_n = t / TK;
  const T* b_base = static_cast<const T*>(p.weight) + (group * ocg + n0 + b_n) * k_total;
  const auto decompose = [&](int k0, int buffer) {  // (threads t < TK)
    const int k = k0 + t, at = buffer * TK + t;
    if (k < k_total) {
      const int ci = k / window, rs = k - ci * window, r = rs / kw, s = rs - r * kw;
      k_dy[at] = r * static_cast<int>(p.dil[0]);
      k_dx[at] = s * static_cast<int>(p.dil[1]);
      k_offset[at] = ci * p.h * p.w + k_dy[at] * p.w + k_dx[at];
    } else {
      k_dy[at] = -(1 << 30), k_dx[at] = 0, k_offset[at] = 0;
    }
  };
  // the slab's elements this thread stages, read from global memory into registers one slab ahead
  // (their latency hidden behind the current slab's products)
  T a_next[8], b_next[4];
  const auto load = [&](int k0, int buffer) {
    TYPEX_DEVICE_UNROLL
    for (int j = 0; j < 8; ++j) {
      const int at = buffer * TK + a_row + 2 * j;
      const std::int64_t iy = y_top + k_dy[at], ix = x_left + k_dx[at];
      a_next[j] = a_live && iy >= 0 && iy < p.h && ix >= 0 && ix < p.w ? a_base[a_corner + k_offset[at]] : T(0);
    }
    TYPEX_DEVICE_UNROLL
    for (int j = 0; j < 4; ++j) {
      const int k = k0 + b_k;
      const std::int64_t ch = n0 + b_n + 16 * j;
      b_next[j] = k < k_total && ch < ocg ? b_base[std::int64_t{16} * j * k_total + k] : T(0);
    }
  };
  T acc[8][4] = {};
  if (t < TK) decompose(k_begin, 0);
  sync_threads();
  load(k_begin, 0);
  int buffer = 0;
  for (int k0 = k_begin; k0 < k_end; k0 += TK) {
    TYPEX_DEVICE_UNROLL
    for (int j = 0; j < 8; ++j) a_tile[(a_row + 2 * j) * TM + a_col] = a_next[j];
    TYPEX_DEVICE_UNROLL
    for (int j = 0; j < 4; ++j) b_tile[b_k * TN + b_n + 16 * j] = b_next[j];
    const bool more = k0 + TK < k_end;
    if (more && t < TK) decompose(k0 + TK, buffer ^ 1);
    sync_threads();
    if (more) load(k0 + TK, buffer ^ 1);
    TYPEX_DEVICE_UNROLL
    for (int kk = 0; kk < TK; ++kk) {
      T a[8], b[4];
      TYPEX_DEVICE_UNROLL
      for (int i = 0; i < 8; ++i) a[i] = a_tile[kk * TM + tx + 16 * i];
      TYPEX_DEVICE_UNROLL
      for (int j = 0; j < 4; ++j) b[j] = b_tile[kk * TN + ty + 16 * j];
      TYPEX_DEVICE_UNROLL
      for (int i = 0; i < 8; ++i) {
        TYPEX_DEVICE_UNROLL
        for (int j = 0; j < 4; ++j) acc[i][j] += a[i] * b[j];
      }
    }
    buffer ^= 1;
    sync_threads();  // (the next slab overwrites the tiles)
  }
  TYPEX_DEVICE_UNROLL
  for (int i = 0; i < 8; ++i) {
    const std::int64_t m = m0 + tx + 16 * i;
    if (m >= m_total) continue;
    const std::int64_t img = m / planes, pix = m % planes;
    TYPEX_DEVICE_UNROLL
    for (int j = 0; j < 4; ++j) {
      const std::int64_t ch = n0 + ty + 16 * j;
      if (ch >= ocg) continue;
      const std::int64_t o = group * ocg + ch;
      if (p.k_splits > 1) {  // (the raw sums: finish adds the bias and the activation)
        partial[(split * p.n + img) * p.oc * planes + o * planes + pix] = acc[i][j];
        continue;
      }
      T v = acc[i][j] + (bias != nullptr ? bias[o] : T(0));
      if (p.has_act) v = detail::apply_unary<T>(chain_unary_ops{}, p.act.code, p.act.op, v);
      out[(img * p.oc + o) * planes + pix] = v;
    }
  }
}

}  // inline namespace TYPEX_CUDA_ABI
}  // namespace typex::cuda::kernels
