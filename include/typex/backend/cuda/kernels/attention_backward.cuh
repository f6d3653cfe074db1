// typex/backend/cuda/kernels/attention_backward.cuh — attention's backward, fused and tiled (the
// FlashAttention-2 passes): the [L, S] scores and weights are recomputed tile by tile from the
// query, the key and each query row's statistics (typex.attention_stats: L_i, the logsumexp of the
// row's scores, and D_i = grad_i . out_i, from attention.cuh's statistics pass), never stored:
//   p_ij = exp(s_ij - L_i),  ds_ij = p_ij (grad_i . v_j - D_i)
//   dq_i = scale sum_j ds_ij k_j     (attention_grad_query_kernel: a block per 32 query rows,
//                                      walking the key tiles)
//   dk_j = scale sum_i ds_ij q_i     (attention_grad_kv_kernel: a block per 32 keys, walking
//   dv_j = sum_i p_ij grad_i          the query tiles; the key's, the value's, or both in one
//                                      pass that recomputes the weights once for the two)
// Each block keeps its 32 rows' sums in registers: warp w owns rows 8w .. 8w + 7, lane t the head
// columns 2t and 2t + 1 (head dims up to attention_backward_max_head = 64). A tile's scores are one
// per (row, lane): the lane is the other side's row (a key for the query's gradient, a query for
// the key's and value's), read from a shared tile padded to an odd row stride (a lane per row: no
// bank conflict), the owned rows' operands read as broadcasts. The weights of a tile go through
// shared memory, read back by the warp that wrote them, and the sums run over the tile's rows in
// order (deterministic: no atomics).
// Excluded keys (the mask, causality, the end of the keys) weigh 0; a row whose every key is
// excluded (L_i = -inf), or that holds a NaN score (L_i = NaN), weighs NaN everywhere, as the math
// path's softmax makes it.
#pragma once

#include <typex/backend/cuda/kernel_api.cuh>
#include <typex/backend/cuda/kernels/attention.cuh>  // (attention_batch_offsets)
#include <typex/backend/cuda/launch.hpp>

#include <cstdint>
#include <limits>
#include <type_traits>

namespace typex::cuda::kernels {
inline namespace TYPEX_CUDA_ABI {  // (kernel_api.cuh: native or emulated)

namespace detail {
// The weight p_ij of query i and key j from the raw product q_i . k_j: 0 for an excluded key, NaN
// for any key of a row that excludes every one (lse = -inf).
TYPEX_DEVICE float attention_weight(const attention_params& p, std::int64_t mask_at, std::int64_t i, std::int64_t j, float dot, float lse) {
  constexpr float neg_inf = -std::numeric_limits<float>::infinity();
  if (!(lse > neg_inf)) return std::numeric_limits<float>::quiet_NaN();  // (-inf: every key excluded; NaN: a NaN score)
  bool keep = j < p.s && !(p.causal && j > i);
  float v = dot * p.scale;
  if (keep && p.mask_kind == attention_mask::boolean) keep = static_cast<const bool*>(p.mask)[mask_at + i * p.mask_row_stride + j * p.mask_col_stride];
  if (keep && p.mask_kind == attention_mask::additive)
    v += static_cast<const float*>(p.mask)[mask_at + i * p.mask_row_stride + j * p.mask_col_stride];
  return keep ? math::exp(v - lse) : 0.0f;
}
// A gradient block's place: its thread, lane and warp, its batch entry b and first row r0 (of the
// `rows` the grid tiles by 32: queries for dq, keys for dk and dv), and b's operand offsets.
struct attention_block {
  int t, lane, warp;
  std::int64_t b, r0;
  attention_offsets off;
};
TYPEX_DEVICE attention_block attention_block_of(const attention_params& p, std::int64_t rows) {
  const std::int64_t tiles = (rows + attention_tile - 1) / attention_tile;
  attention_block k;
  k.t = static_cast<int>(thread_idx().x), k.lane = k.t % 32, k.warp = k.t / 32;
  k.b = block_idx().x / tiles, k.r0 = block_idx().x % tiles * attention_tile;
  k.off = attention_batch_offsets(p, k.b);
  return k;
}

// The gradient kernels' shared memory (attention_backward_shared_bytes): the block's own 32 rows
// of the two operands it reads as broadcasts (e and ev wide), the other side's tile of the two it
// reads a row per lane (odd strides e + 1 and ev + 1), and the tile's weights [32][33].
struct attention_backward_tiles {
  float *own_e, *own_ev, *other_e, *other_ev, *w;
};
TYPEX_DEVICE attention_backward_tiles attention_backward_tiles_of(float* shared, int e, int ev) {
  constexpr int B = static_cast<int>(attention_tile);
  attention_backward_tiles k;
  k.own_e = shared, k.own_ev = k.own_e + B * e, k.other_e = k.own_ev + B * ev, k.other_ev = k.other_e + B * (e + 1);
  k.w = k.other_ev + B * (ev + 1);
  return k;
}

// Rows r0 .. r0 + 31 of a [rows, width] matrix at src into a shared tile with row stride `stride`
// (zeros past the last row), by the block's threads.
TYPEX_DEVICE void load_attention_rows(float* tile, int stride, const float* src, std::int64_t r0, std::int64_t rows, int width, int t) {
  for (int x = t; x < static_cast<int>(attention_tile) * width; x += static_cast<int>(attention_threads)) {
    const int c = x / width, col = x - c * width;
    tile[c * stride + col] = r0 + c < rows ? src[(r0 + c) * width + col] : 0.0f;
  }
}

// A gradient block's sums over one tile: for each of the warp's rows r, acc[r] += weights[r][c] times
// the lane's two columns (2 lane, 2 lane + 1 of `width`) of the tile's row c (`side`, row stride
// sp), for the tile's `count` rows in order.
template <int RW>
TYPEX_DEVICE void accumulate_attention_tile(float (&acc)[RW][2], const float* weights, const float* side, int sp, int width, int count,
                                            int warp, int lane) {
  constexpr int B = static_cast<int>(attention_tile);
  for (int c = 0; c < count; ++c) {
    const float x0 = 2 * lane < width ? side[c * sp + 2 * lane] : 0.0f, x1 = 2 * lane + 1 < width ? side[c * sp + 2 * lane + 1] : 0.0f;
    TYPEX_DEVICE_UNROLL
    for (int r = 0; r < RW; ++r) {
      const float w = weights[(warp * RW + r) * (B + 1) + c];
      acc[r][0] += w * x0;
      acc[r][1] += w * x1;
    }
  }
}

// A gradient block's sums, rows r0 + RW warp + r of `rows`, head columns 2 lane and 2 lane + 1 of
// `width`, times `factor`, into out [b, rows, width].
template <int RW>
TYPEX_DEVICE void store_attention_rows(float* out, const float (&acc)[RW][2], std::int64_t b, std::int64_t rows, std::int64_t r0, int warp,
                                       int lane, int width, float factor) {
  TYPEX_DEVICE_UNROLL
  for (int r = 0; r < RW; ++r) {
    const std::int64_t row = r0 + warp * RW + r;
    if (row >= rows) continue;
    float* o = out + (b * rows + row) * width;
    if (2 * lane < width) o[2 * lane] = acc[r][0] * factor;
    if (2 * lane + 1 < width) o[2 * lane + 1] = acc[r][1] * factor;
  }
}
}  // namespace detail

// Launch geometry: attention_backward_launch (block x: batch entry x 32-row tile of the output's
// rows; 128 threads; shared memory attention_backward_shared_bytes).
template <class T>
TYPEX_GLOBAL void attention_grad_query_kernel(const TYPEX_GRID_CONSTANT attention_params p) {
  static_assert(std::is_same_v<T, float>, "typex::cuda: attention_grad_query_kernel computes f32 gradients");
  constexpr int B = static_cast<int>(attention_tile), RW = B / 4;
  const detail::attention_block blk = detail::attention_block_of(p, p.l);
  const int t = blk.t, lane = blk.lane, warp = blk.warp;
  const std::int64_t b = blk.b, i0 = blk.r0;
  const detail::attention_offsets off = blk.off;
  const int e = static_cast<int>(p.e), ev = static_cast<int>(p.ev), ep = e + 1, evp = ev + 1;
  const detail::attention_backward_tiles tiles = detail::attention_backward_tiles_of(TYPEX_SHARED(float), e, ev);
  float* q_tile = tiles.own_e;     // this block's query rows
  float* g_tile = tiles.own_ev;    // their output gradients
  float* k_tile = tiles.other_e;   // the key tile
  float* v_tile = tiles.other_ev;  // the value tile
  float* w_tile = tiles.w;         // the tile's ds
  const float* grad = p.grad + b * p.l * ev;
  detail::load_attention_rows(q_tile, e, p.q + off.q, i0, p.l, e, t);
  detail::load_attention_rows(g_tile, ev, grad, i0, p.l, ev, t);
  float lse[RW], dsum[RW], acc[RW][2];
  TYPEX_DEVICE_UNROLL
  for (int r = 0; r < RW; ++r) {
    const std::int64_t i = i0 + warp * RW + r;
    lse[r] = i < p.l ? p.stats[(b * p.l + i) * 2] : 0.0f;
    dsum[r] = i < p.l ? p.stats[(b * p.l + i) * 2 + 1] : 0.0f;
    acc[r][0] = acc[r][1] = 0.0f;
  }
  const std::int64_t last_row = i0 + B < p.l ? i0 + B : p.l;
  const std::int64_t s_end = p.causal && last_row < p.s ? last_row : p.s;
  for (std::int64_t j0 = 0; j0 < s_end; j0 += B) {
    sync_threads();  // (the query tile stored; the previous key and value tiles read)
    detail::load_attention_rows(k_tile, ep, p.k + off.k, j0, p.s, e, t);
    detail::load_attention_rows(v_tile, evp, p.v + off.v, j0, p.s, ev, t);
    sync_threads();
    float dot[RW], dp[RW];
    TYPEX_DEVICE_UNROLL
    for (int r = 0; r < RW; ++r) dot[r] = dp[r] = 0.0f;
    for (int x = 0; x < e; ++x) {
      const float kx = k_tile[lane * ep + x];
      TYPEX_DEVICE_UNROLL
      for (int r = 0; r < RW; ++r) dot[r] += q_tile[(warp * RW + r) * e + x] * kx;
    }
    for (int x = 0; x < ev; ++x) {
      const float vx = v_tile[lane * evp + x];
      TYPEX_DEVICE_UNROLL
      for (int r = 0; r < RW; ++r) dp[r] += g_tile[(warp * RW + r) * ev + x] * vx;
    }
    const std::int64_t j = j0 + lane;
    TYPEX_DEVICE_UNROLL
    for (int r = 0; r < RW; ++r) {
      const std::int64_t i = i0 + warp * RW + r;
      const float w = i < p.l ? detail::attention_weight(p, off.mask, i, j, dot[r], lse[r]) : 0.0f;
      w_tile[(warp * RW + r) * (B + 1) + lane] = w * (dp[r] - dsum[r]);
    }
    sync_warp(full_mask);
    const int keys = s_end - j0 < B ? static_cast<int>(s_end - j0) : B;
    detail::accumulate_attention_tile(acc, w_tile, k_tile, ep, e, keys, warp, lane);
  }
  detail::store_attention_rows(p.out, acc, b, p.l, i0, warp, lane, e, p.scale);
}

// Which gradients a key block sums (attention_grad_kv_kernel's Grads, a bit set).
inline constexpr int attention_grad_key = 1;    // scale sum_i ds_ij q_i, to out
inline constexpr int attention_grad_value = 2;  // sum_i p_ij grad_i, to out (to out2 beside the key's)

// The key's gradient, the value's, or both in one walk over the query tiles (Grads): both share the
// scores and the weights p, recomputed once; ds needs grad_i . v_j too.
template <class T, int Grads>
TYPEX_GLOBAL void attention_grad_kv_kernel(const TYPEX_GRID_CONSTANT attention_params p) {
  static_assert(std::is_same_v<T, float>, "typex::cuda: attention_grad_kv_kernel computes f32 gradients");
  static_assert(Grads >= 1 && Grads <= 3, "typex::cuda: attention_grad_kv_kernel sums the key's gradient, the value's or both");
  constexpr bool Key = (Grads & attention_grad_key) != 0, Value = (Grads & attention_grad_value) != 0;
  constexpr int B = static_cast<int>(attention_tile), RW = B / 4;
  const detail::attention_block blk = detail::attention_block_of(p, p.s);
  const int t = blk.t, lane = blk.lane, warp = blk.warp;
  const std::int64_t b = blk.b, j0 = blk.r0;
  const detail::attention_offsets off = blk.off;
  const int e = static_cast<int>(p.e), ev = static_cast<int>(p.ev), ep = e + 1, evp = ev + 1;
  const detail::attention_backward_tiles tiles = detail::attention_backward_tiles_of(TYPEX_SHARED(float), e, ev);
  float* k_tile = tiles.own_e;     // this block's keys
  float* v_tile = tiles.own_ev;    // their values
  float* q_tile = tiles.other_e;   // the query tile
  float* g_tile = tiles.other_ev;  // its output gradients
  float* p_tile = tiles.w;         // the tile's weights p, [key][query] (the value's gradient)
  float* ds_tile = Key && Value ? tiles.w + B * (B + 1) : tiles.w;  // and ds (the key's)
  const float* grad = p.grad + b * p.l * ev;
  detail::load_attention_rows(k_tile, e, p.k + off.k, j0, p.s, e, t);
  if constexpr (Key) detail::load_attention_rows(v_tile, ev, p.v + off.v, j0, p.s, ev, t);
  float acc_k[RW][2], acc_v[RW][2];
  TYPEX_DEVICE_UNROLL
  for (int r = 0; r < RW; ++r) acc_k[r][0] = acc_k[r][1] = acc_v[r][0] = acc_v[r][1] = 0.0f;
  // (causal: the queries from the block's first key on; the tiles before it exclude every key)
  for (std::int64_t i0 = p.causal ? j0 / B * B : 0; i0 < p.l; i0 += B) {
    sync_threads();  // (the key and value tiles stored; the previous query tile read)
    detail::load_attention_rows(q_tile, ep, p.q + off.q, i0, p.l, e, t);
    detail::load_attention_rows(g_tile, evp, grad, i0, p.l, ev, t);
    const std::int64_t i = i0 + lane;  // (this lane's query)
    const float lse = i < p.l ? p.stats[(b * p.l + i) * 2] : 0.0f, dsum = i < p.l ? p.stats[(b * p.l + i) * 2 + 1] : 0.0f;
    sync_threads();
    float dot[RW], dp[RW];
    TYPEX_DEVICE_UNROLL
    for (int r = 0; r < RW; ++r) dot[r] = dp[r] = 0.0f;
    for (int x = 0; x < e; ++x) {
      const float qx = q_tile[lane * ep + x];
      TYPEX_DEVICE_UNROLL
      for (int r = 0; r < RW; ++r) dot[r] += k_tile[(warp * RW + r) * e + x] * qx;
    }
    if constexpr (Key) {
      for (int x = 0; x < ev; ++x) {
        const float gx = g_tile[lane * evp + x];
        TYPEX_DEVICE_UNROLL
        for (int r = 0; r < RW; ++r) dp[r] += v_tile[(warp * RW + r) * ev + x] * gx;
      }
    }
    TYPEX_DEVICE_UNROLL
    for (int r = 0; r < RW; ++r) {
      const std::int64_t j = j0 + warp * RW + r;
      const float w = i < p.l ? detail::attention_weight(p, off.mask, i, j, dot[r], lse) : 0.0f;
      if constexpr (Value) p_tile[(warp * RW + r) * (B + 1) + lane] = w;
      if constexpr (Key) ds_tile[(warp * RW + r) * (B + 1) + lane] = w * (dp[r] - dsum);
    }
    sync_warp(full_mask);
    const int queries = p.l - i0 < B ? static_cast<int>(p.l - i0) : B;
    if constexpr (Key) detail::accumulate_attention_tile(acc_k, ds_tile, q_tile, ep, e, queries, warp, lane);    // (the queries, by ds)
    if constexpr (Value) detail::accumulate_attention_tile(acc_v, p_tile, g_tile, evp, ev, queries, warp, lane);  // (grad's rows, by p)
  }
  if constexpr (Key) detail::store_attention_rows(p.out, acc_k, b, p.s, j0, warp, lane, e, p.scale);
  if constexpr (Value) detail::store_attention_rows(Key ? p.out2 : p.out, acc_v, b, p.s, j0, warp, lane, ev, 1.0f);
}

}  // inline namespace TYPEX_CUDA_ABI
}  // namespace typex::cuda::kernels
