// typex/backend/cuda/kernels/attention.cuh — scaled_dot_product_attention fused and tiled (the
// flash-attention scheme): each block keeps 32 query rows and walks the keys 32 at a time, holding
// a running maximum, a running sum and the output rows in registers; the [L, S] scores are never
// stored, and one launch replaces the math path's five (two products, the scale, the mask, softmax).
//
// Per key tile, warp w owns query rows 8w .. 8w + 7 and its lane j the tile's key j:
//   scores     s = scale q_i . k_j (+ the additive mask; -inf where the mask, causality or the end
//              of the keys excludes the key), one per (row, lane), the dot products read four
//              elements at a time from the shared query tile (a broadcast: every lane reads the same
//              row) and key tile (a row per lane, its groups of four swizzled so that each quarter
//              warp's 16-byte reads hit distinct banks);
//   softmax    m' = max(m, max_j s) over the warp (a butterfly), p_j = exp(s - m'), the row's sum
//              l' = l exp(m - m') + sum_j p_j, the output rows scaled by exp(m - m');
//   product    o_i += sum_j p_j v_j: lane t owns the value columns t CW .. t CW + CW - 1 (CW = 2 up
//              to head dim 64, 4 up to 128); the warp's p go through shared memory (the key tile's,
//              once every warp has read the keys: one barrier, no shuffle per key), read four keys
//              at a time, v_j from the shared value tile.
// Sums run in element and key order, whatever the width of the shared accesses.
// At the end o_i / l_i is stored. Excluded keys give p = 0 exactly (not exp(-inf - m')), so a row
// that has seen only excluded keys keeps m = -inf, l = 0 and o = 0: every key excluded gives
// 0 / 0 = NaN, the math path's softmax over -inf; no keys at all (s = 0) gives zeros, its empty
// product. A NaN score makes its row NaN, as softmax does.
#pragma once

#include <typex/backend/cuda/kernel_api.cuh>
#include <typex/backend/cuda/launch.hpp>

#include <cstdint>
#include <limits>
#include <type_traits>

namespace typex::cuda::kernels {
inline namespace TYPEX_CUDA_ABI {  // (kernel_api.cuh: native or emulated)

namespace detail {
// Batch entry b's offsets into the query, key, value and mask (its index in the output's batch
// dims, row-major; a broadcast dim's stride is 0).
struct attention_offsets {
  std::int64_t q = 0, k = 0, v = 0, mask = 0;
};
TYPEX_DEVICE attention_offsets attention_batch_offsets(const attention_params& p, std::int64_t b) {
  attention_offsets o;
  for (std::int64_t d = p.batch_rank - 1, rest = b; d >= 0; --d) {
    const std::int64_t at = rest % p.batch_extent[d];
    rest /= p.batch_extent[d];
    o.q += at * p.q_batch_stride[d], o.k += at * p.k_batch_stride[d], o.v += at * p.v_batch_stride[d];
    o.mask += at * p.mask_batch_stride[d];
  }
  return o;
}
}  // namespace detail

// Launch geometry: attention_launch (block x: batch entry x query tile; 128 threads; shared memory
// for the query, key and value tiles, attention_shared_bytes). CW: the value columns each lane owns
// (attention_value_columns: 2 up to head dim 64, 4 up to 128), contiguous, lane t's at t CW.
// Stats: the statistics pass of the backward (typex.attention_stats) instead: the same walk over
// the keys without the values, then out[b, i] = (m_i + log l_i, grad_i . fwd_out_i) ([.., L, 2]).
template <class T, int CW, bool Stats = false>
TYPEX_GLOBAL void attention_kernel(const TYPEX_GRID_CONSTANT attention_params p) {
  static_assert(std::is_same_v<T, float>, "typex::cuda: attention_kernel attends over f32 tensors");
  constexpr int BR = static_cast<int>(attention_tile), BC = static_cast<int>(attention_tile), RW = BR / 4;
  static_assert(BC == 32 && BR == 32 && attention_threads == 128 && (CW == 2 || CW == 4) && attention_max_head <= 32 * 4,
                "typex::cuda: attention_kernel's thread mapping is written for 32 x 32 tiles, 4 warps and head dims up to 128");
  constexpr float neg_inf = -std::numeric_limits<float>::infinity();
  const int t = static_cast<int>(thread_idx().x), lane = t % 32, warp = t / 32;
  const std::int64_t tiles = (p.l + BR - 1) / BR;
  const std::int64_t b = block_idx().x / tiles, i0 = block_idx().x % tiles * BR;
  const detail::attention_offsets off = detail::attention_batch_offsets(p, b);
  const std::int64_t qo = off.q, ko = off.k, vo = off.v, mo = off.mask;
  const int e = static_cast<int>(p.e), ev = static_cast<int>(p.ev);
  const attention_layout at = attention_tiles(p.e, p.ev);
  // (vs = 32 CW: attention_tiles, which sized the block's shared memory, and the dispatch's choice of
  // CW both follow attention_value_columns(ev))
  const int qs = at.q_stride, ks = at.k_stride, vs = at.v_stride, groups = qs / 4, swizzle = ks / 4 - 1;
  float* q_tile = TYPEX_SHARED(float);    // [BR][qs], zero past e
  float* k_tile = q_tile + BR * qs;        // [BC][ks]: key c's group of 4 elements g (x = 4g .. 4g + 3) at
                                           // c ks + 4 (g ^ (c & swizzle)), zero past e; then the tile's
                                           // weights p, [BR][BC]
  float* v_tile = k_tile + BC * ks;        // [BC][vs], zero past ev
  for (int x = t; x < BR * qs; x += static_cast<int>(attention_threads)) {
    const std::int64_t i = i0 + x / qs;
    const int col = x % qs;
    q_tile[x] = i < p.l && col < e ? p.q[qo + i * e + col] : 0.0f;
  }
  float m[RW], sum[RW], acc[RW][CW];
  TYPEX_DEVICE_UNROLL
  for (int r = 0; r < RW; ++r) {
    m[r] = neg_inf, sum[r] = 0.0f;
    TYPEX_DEVICE_UNROLL
    for (int c = 0; c < CW; ++c) acc[r][c] = 0.0f;
  }
  // (causal: the keys up to the tile's last query row)
  const std::int64_t last_row = i0 + BR < p.l ? i0 + BR : p.l;
  const std::int64_t s_end = p.causal && last_row < p.s ? last_row : p.s;
  const bool* mask_b = p.mask_kind == attention_mask::boolean ? static_cast<const bool*>(p.mask) : nullptr;
  const float* mask_f = p.mask_kind == attention_mask::additive ? static_cast<const float*>(p.mask) : nullptr;
  for (std::int64_t j0 = 0; j0 < s_end; j0 += BC) {
    sync_threads();  // (the query tile stored; the previous key and value tiles read)
    for (int x = t; x < BC * qs; x += static_cast<int>(attention_threads)) {
      const int c = x / qs, col = x - c * qs;
      const std::int64_t j = j0 + c;
      k_tile[c * ks + (((col >> 2) ^ (c & swizzle)) << 2) + (col & 3)] = j < p.s && col < e ? p.k[ko + j * e + col] : 0.0f;
    }
    if constexpr (!Stats) {
      for (int x = t; x < BC * vs; x += static_cast<int>(attention_threads)) {
        const int c = x / vs, col = x - c * vs;
        const std::int64_t j = j0 + c;
        v_tile[x] = j < p.s && col < ev ? p.v[vo + j * ev + col] : 0.0f;
      }
    }
    sync_threads();
    // scores: lane = key; four elements of the key and of each query row per shared access (the
    // query rows a broadcast), summed in element order
    float s[RW];
    TYPEX_DEVICE_UNROLL
    for (int r = 0; r < RW; ++r) s[r] = 0.0f;
    for (int g = 0; g < groups; ++g) {
      const vec4 kv = load_vec4(k_tile + lane * ks + ((g ^ (lane & swizzle)) << 2));
      TYPEX_DEVICE_UNROLL
      for (int r = 0; r < RW; ++r) {
        const vec4 qv = load_vec4(q_tile + (warp * RW + r) * qs + 4 * g);
        s[r] += qv.x * kv.x;
        s[r] += qv.y * kv.y;
        s[r] += qv.z * kv.z;
        s[r] += qv.w * kv.w;
      }
    }
    const std::int64_t j = j0 + lane;
    TYPEX_DEVICE_UNROLL
    for (int r = 0; r < RW; ++r) {
      const std::int64_t i = i0 + warp * RW + r;
      float v = s[r] * p.scale;
      bool keep = j < p.s && !(p.causal && j > i) && i < p.l;
      if (keep && mask_b != nullptr) keep = mask_b[mo + i * p.mask_row_stride + j * p.mask_col_stride];
      if (keep && mask_f != nullptr) v += mask_f[mo + i * p.mask_row_stride + j * p.mask_col_stride];
      v = keep ? v : neg_inf;
      const float tile_max = warp_max(v);
      const float m_new = tile_max > m[r] ? tile_max : m[r];
      const float pv = v == neg_inf ? 0.0f : math::exp(v - m_new);
      const float alpha = m_new == neg_inf ? 1.0f : math::exp(m[r] - m_new);
      sum[r] = sum[r] * alpha + warp_sum(pv);
      m[r] = m_new;
      TYPEX_DEVICE_UNROLL
      for (int c = 0; c < CW; ++c) acc[r][c] *= alpha;
      s[r] = pv;
    }
    if constexpr (Stats) continue;  // (the statistics need no values)
    // the weights p into the key tile's memory (every warp is done with the keys), each warp's rows
    // read back by that warp only
    sync_threads();
    float* p_tile = k_tile;  // [BR][BC]
    TYPEX_DEVICE_UNROLL
    for (int r = 0; r < RW; ++r) p_tile[(warp * RW + r) * BC + lane] = s[r];
    sync_warp(full_mask);
    // o_i += sum_c p_ic v_c, keys in order: four keys' weights per shared access (a broadcast), the
    // lane's CW value columns of a key per access
    const int keys = s_end - j0 < BC ? static_cast<int>(s_end - j0) : BC;
    const auto value_row = [&](int c, float (&vv)[CW]) {
      if constexpr (CW == 4) {
        const vec4 w = load_vec4(v_tile + c * vs + lane * 4);
        vv[0] = w.x, vv[1] = w.y, vv[2] = w.z, vv[3] = w.w;
      } else {
        const vec2 w = load_vec2(v_tile + c * vs + lane * 2);
        vv[0] = w.x, vv[1] = w.y;
      }
    };
    int c = 0;
    for (; c + 4 <= keys; c += 4) {
      float v0[CW], v1[CW], v2[CW], v3[CW];
      value_row(c, v0), value_row(c + 1, v1), value_row(c + 2, v2), value_row(c + 3, v3);
      TYPEX_DEVICE_UNROLL
      for (int r = 0; r < RW; ++r) {
        const vec4 pw = load_vec4(p_tile + (warp * RW + r) * BC + c);
        TYPEX_DEVICE_UNROLL
        for (int k = 0; k < CW; ++k) {
          acc[r][k] += pw.x * v0[k];
          acc[r][k] += pw.y * v1[k];
          acc[r][k] += pw.z * v2[k];
          acc[r][k] += pw.w * v3[k];
        }
      }
    }
    for (; c < keys; ++c) {
      float vv[CW];
      value_row(c, vv);
      TYPEX_DEVICE_UNROLL
      for (int r = 0; r < RW; ++r) {
        const float pc = p_tile[(warp * RW + r) * BC + c];
        TYPEX_DEVICE_UNROLL
        for (int k = 0; k < CW; ++k) acc[r][k] += pc * vv[k];
      }
    }
  }
  if constexpr (Stats) {
    TYPEX_DEVICE_UNROLL
    for (int r = 0; r < RW; ++r) {
      const std::int64_t i = i0 + warp * RW + r;
      const std::int64_t row = (b * p.l + (i < p.l ? i : 0)) * ev;
      float d = 0.0f;
      TYPEX_DEVICE_UNROLL
      for (int k = 0; k < CW; ++k)
        if (i < p.l && lane * CW + k < ev) d += p.grad[row + lane * CW + k] * p.fwd_out[row + lane * CW + k];
      d = warp_sum(d);
      if (i < p.l && lane == 0) {
        p.out[(b * p.l + i) * 2] = m[r] == neg_inf ? neg_inf : m[r] + math::log(sum[r]);
        p.out[(b * p.l + i) * 2 + 1] = d;
      }
    }
  } else {
    TYPEX_DEVICE_UNROLL
    for (int r = 0; r < RW; ++r) {
      const std::int64_t i = i0 + warp * RW + r;
      if (i >= p.l) continue;
      float* o = p.out + (b * p.l + i) * ev;
      TYPEX_DEVICE_UNROLL
      for (int k = 0; k < CW; ++k) {
        if (lane * CW + k < ev) o[lane * CW + k] = p.s == 0 ? 0.0f : acc[r][k] / sum[r];
      }
    }
  }
}

}  // inline namespace TYPEX_CUDA_ABI
}  // namespace typex::cuda::kernels
