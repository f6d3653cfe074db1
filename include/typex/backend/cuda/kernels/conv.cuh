// typex/backend/cuda/kernels/conv.cuh — conv2d as an implicit GEMM: the im2col matrix is never
// written; each block gathers its tile of it straight from the input into shared memory.
//
// The product: out[pixel, channel] = sum_k A[pixel, k] B[k, channel] per group, where a pixel is
// (image, oh, ow) (M = n oh ow of them), a channel one of the group's oc / groups (N), and k = (ci,
// r, s) one of the group's c / groups input channels times the kh x kw window (K). A[pixel, k] is
// the input at (image, group's ci, oh stride - pad + r dil, ow stride - pad + s dil), zero outside
// the image; B[k, channel] is the weight [oc, c / groups, kh, kw] read as [oc, K] (its own layout).
//
// A block of 16 x 16 threads computes a conv_tile_m x conv_tile_n tile (4 x 4 per thread, in
// registers) of one group (blockIdx.z), stepping through K conv_tile_k at a time: every thread
// stages 4 elements of A's and 4 of B's slab into shared memory, a barrier, 16 rank-1 updates from
// shared memory, a barrier. A thread's pixels are tx, tx + 16, ...: consecutive threads write
// consecutive output addresses (an output plane is contiguous in its pixels). Bias and the
// activation (a chain link: the registry op's own math) are applied as the tile is stored.
#pragma once

#include <typex/backend/cuda/kernel_api.cuh>
#include <typex/backend/cuda/kernels/pointwise.cuh>
#include <typex/backend/cuda/launch.hpp>

#include <cstdint>
#include <type_traits>

namespace typex::cuda::kernels {
inline namespace TYPEX_CUDA_ABI {  // (kernel_api.cuh: native or emulated)

// Launch geometry: conv_launch (grid: M tiles, N tiles, groups; 16 x 16 threads; shared memory for
// one K slab of A and of B).
template <class T>
TYPEX_GLOBAL void conv2d_kernel(const TYPEX_GRID_CONSTANT conv_params p) {
  static_assert(std::is_same_v<T, float>, "typex::cuda: conv2d_kernel convolves f32 tensors");
  constexpr int TM = conv_tile_m, TN = conv_tile_n, TK = conv_tile_k;
  float* a_tile = TYPEX_SHARED(float);  // [TK][TM]
  float* b_tile = a_tile + TK * TM;     // [TK][TN]
  const int tx = static_cast<int>(thread_idx().x), ty = static_cast<int>(thread_idx().y);
  const int t = ty * 16 + tx;
  const std::int64_t group = block_idx().z;
  const std::int64_t icg = p.c / p.groups, ocg = p.oc / p.groups;
  const std::int64_t window = p.kh * p.kw, k_total = icg * window;
  const std::int64_t planes = p.oh * p.ow, m_total = p.n * planes;
  const std::int64_t m0 = static_cast<std::int64_t>(block_idx().x) * TM, n0 = static_cast<std::int64_t>(block_idx().y) * TN;
  float acc[4][4] = {};
  for (std::int64_t k0 = 0; k0 < k_total; k0 += TK) {
    // stage A's slab: element e = t + 256 j is (kk = e / TM, mm = e % TM)
    TYPEX_DEVICE_UNROLL
    for (int j = 0; j < 4; ++j) {
      const int e = t + 256 * j, kk = e / TM, mm = e % TM;
      const std::int64_t k = k0 + kk, m = m0 + mm;
      float v = 0.0f;
      if (k < k_total && m < m_total) {
        const std::int64_t ci = k / window, rs = k % window, r = rs / p.kw, s = rs % p.kw;
        const std::int64_t img = m / planes, pix = m % planes, oy = pix / p.ow, ox = pix % p.ow;
        const std::int64_t iy = oy * p.stride[0] - p.pad[0] + r * p.dil[0];
        const std::int64_t ix = ox * p.stride[1] - p.pad[1] + s * p.dil[1];
        if (iy >= 0 && iy < p.h && ix >= 0 && ix < p.w) v = p.in[((img * p.c + group * icg + ci) * p.h + iy) * p.w + ix];
      }
      a_tile[kk * TM + mm] = v;
    }
    // stage B's slab: element e is (kk = e % TK, nn = e / TK): consecutive threads read along k
    TYPEX_DEVICE_UNROLL
    for (int j = 0; j < 4; ++j) {
      const int e = t + 256 * j, kk = e % TK, nn = e / TK;
      const std::int64_t k = k0 + kk, ch = n0 + nn;
      b_tile[kk * TN + nn] = k < k_total && ch < ocg ? p.weight[(group * ocg + ch) * k_total + k] : 0.0f;
    }
    sync_threads();
    TYPEX_DEVICE_UNROLL
    for (int kk = 0; kk < TK; ++kk) {
      float a[4], b[4];
      TYPEX_DEVICE_UNROLL
      for (int i = 0; i < 4; ++i) a[i] = a_tile[kk * TM + tx + 16 * i];
      TYPEX_DEVICE_UNROLL
      for (int j = 0; j < 4; ++j) b[j] = b_tile[kk * TN + ty + 16 * j];
      TYPEX_DEVICE_UNROLL
      for (int i = 0; i < 4; ++i) {
        TYPEX_DEVICE_UNROLL
        for (int j = 0; j < 4; ++j) acc[i][j] += a[i] * b[j];
      }
    }
    sync_threads();  // (the next slab overwrites the tiles)
  }
  TYPEX_DEVICE_UNROLL
  for (int j = 0; j < 4; ++j) {
    const std::int64_t ch = n0 + ty + 16 * j;
    if (ch >= ocg) continue;
    const std::int64_t o = group * ocg + ch;
    const float bias = p.bias != nullptr ? p.bias[o] : 0.0f;
    TYPEX_DEVICE_UNROLL
    for (int i = 0; i < 4; ++i) {
      const std::int64_t m = m0 + tx + 16 * i;
      if (m >= m_total) continue;
      float v = acc[i][j] + bias;
      if (p.has_act) v = detail::apply_unary<float>(chain_unary_ops{}, p.act.code, p.act.op, v);
      const std::int64_t img = m / planes, pix = m % planes;
      p.out[(img * p.oc + o) * planes + pix] = v;
    }
  }
}

}  // inline namespace TYPEX_CUDA_ABI
}  // namespace typex::cuda::kernels
