// typex/backend/eigen/kernels/conv_winograd.hpp — the Eigen backend: 3x3 convolutions by Winograd's
// minimal filtering F(2x2, 3x3).
//
// Part of the convolution family (conv.hpp includes it after im2col; winograd_fits, the choice, is
// in conv.hpp with the geometry). Each 2x2 block of output pixels (a tile) of a stride-1,
// undilated 3x3 convolution is computed from the 4x4 input patch under it as
//     Y = A^T [ (G g G^T) (.) (B^T d B) ] A:
// 16 products per tile and input channel instead of 36, so that the convolution becomes 16 GEMMs
//     M_xi [oc x tiles] = U_xi [oc x ic] * V_xi [ic x tiles]     (xi = one of the 4x4 positions)
// with U = G g G^T (the weights, transformed and packed once per plan when they are constant) and
// V = B^T d B (the input, transformed straight into the GEMM's packed right-hand-side layout), then
// the output transform, the bias and the activation per tile. 2.25x fewer multiply-adds than
// im2col + GEMM; the transforms are adds only, with the coefficients 1 and 1/2, so the rounding
// error stays at the level of a reordered sum (3.6e-7 against a float64 reference for 32 channels,
// as direct f32 convolution's 1.9e-7). They are not free: on the reference CNN (32 -> 64 channels,
// K = 32 per product) they take ~35 % of the convolution's samples in perf, the products the rest;
// the whole CNN takes 0.78-0.90x the im2col path's time (benchmarks/README.md).
//
// Tiles are taken in chunks whose V and M (16 x (ic + oc) x chunk values) stay in L2 while the 16
// products and the output transform read them. A chunk is the unit of work of a thread: batch-1
// programs split one image's tiles over the threads (no image-level parallelism to use).
#pragma once

#ifndef TYPEX_EIGEN_KERNEL_FAMILIES
#error "typex: backend/eigen/kernels/*.hpp are parts of kernels_impl.hpp (in its order); include <typex/backend/eigen.hpp>"
#endif

namespace typex::eigen::detail {

template <class T>
struct winograd_layout {
  index_t th, tw, tiles;  // tile rows, tile columns, tiles per image
  index_t chunk;          // tiles per round of 16 products
  index_t ic, oc;

  explicit winograd_layout(const conv_geometry& g) : th((g.oh + 1) / 2), tw((g.ow + 1) / 2), ic(g.icg), oc(g.oc) {
    constexpr int nr = gemm_traits<T>::nr;
    tiles = th * tw;
    // V and M of one chunk in ~256 KiB (L2), in whole column panels
    const index_t fit = (index_t{256} * 1024 / static_cast<index_t>(sizeof(T))) / (16 * (ic + oc));
    chunk = std::min(std::max<index_t>(nr, fit / nr * nr), tiles);
  }
  // one position's packed V, one position's M, each followed by a cache line of skew: the 16
  // positions' arrays, read or written together by the transforms, would otherwise lie a power of
  // two apart (4 or 8 KiB on the reference CNN) and compete for one set of the L1 cache
  std::size_t v_size() const noexcept { return packed_rhs<T>::size_for(ic, chunk) + skew; }
  std::size_t m_size() const noexcept { return static_cast<std::size_t>(oc * chunk) + skew; }
  static constexpr std::size_t skew = 64 / sizeof(T);
  std::size_t rows_size() const noexcept { return static_cast<std::size_t>(ic * (2 * th + 2) * (2 * tw + 2)); }
  // scratch of one thread: 16 V, 16 M, the zero-padded input (rows_size)
  std::size_t scratch() const noexcept { return 16 * (v_size() + m_size()) + rows_size(); }
  // the weights: 16 packed [oc x ic] matrices
  std::size_t u_size() const noexcept { return packed_lhs<T>::size_for(oc, ic); }
  std::size_t weights() const noexcept { return 16 * u_size(); }
};

// U_xi = (G g G^T)_xi for every (out channel, in channel), packed as 16 GEMM left-hand sides.
template <class T>
void winograd_pack_weights(const conv_geometry& g, const T* w, T* out) {
  const winograd_layout<T> L(g);
  // (per-thread scratch: weights that are not constants are packed on every call, without allocating)
  static thread_local grow_buffer<T> transformed;
  T* u = transformed.get(static_cast<std::size_t>(16 * L.oc * L.ic));
  const T h = T(0.5);
  for (index_t o = 0; o < L.oc; ++o)
    for (index_t c = 0; c < L.ic; ++c) {
      const T* k = w + (o * L.ic + c) * 9;
      T t[4][3];  // G g
      for (int j = 0; j < 3; ++j) {
        t[0][j] = k[j];
        t[1][j] = h * (k[j] + k[3 + j] + k[6 + j]);
        t[2][j] = h * (k[j] - k[3 + j] + k[6 + j]);
        t[3][j] = k[6 + j];
      }
      for (int i = 0; i < 4; ++i) {  // (G g) G^T
        const T r[4] = {t[i][0], h * (t[i][0] + t[i][1] + t[i][2]), h * (t[i][0] - t[i][1] + t[i][2]), t[i][2]};
        for (int j = 0; j < 4; ++j) u[static_cast<std::size_t>(((i * 4 + j) * L.oc + o) * L.ic + c)] = r[j];
      }
    }
  for (index_t xi = 0; xi < 16; ++xi)
    packed_lhs<T>::pack({u + xi * L.oc * L.ic, L.ic, 1}, L.oc, L.ic, out + xi * static_cast<index_t>(L.u_size()));
}

// A 2x2 max-pool of stride 2 whose windows are all inside the convolution's output: each window
// is one Winograd tile, so the output transform pools it while the tile is in registers (no
// convolution output is written, no pass over it). out: [oc, oh, ow] with oh = conv oh / 2 (a
// half tile at an odd edge is dropped, as the pool's floor does).
template <class T>
struct winograd_pool {
  T* out = nullptr;
  index_t oh = 0, ow = 0;
};
inline bool winograd_pool_fits(const pool_geometry& p) {
  return p.k[0] == 2 && p.k[1] == 2 && p.stride[0] == 2 && p.stride[1] == 2 && max_pool_direct(p);
}

// The tiles a participant takes at a time when one image's tiles are shared by t threads: at most
// a chunk (the one-thread path's rounds), at least t pieces where the image has that many panels
// (an image of one or two chunks would otherwise run on one or two threads), in whole panels of nr
// tiles (a partial panel is computed as a whole one). The reference CNN's 144 tiles on 2 threads:
// pieces of 32, the chunk.
template <class T>
index_t winograd_piece(const winograd_layout<T>& L, int t) {
  constexpr index_t nr = gemm_traits<T>::nr;
  const index_t threads = std::max(t, 1), per_thread = (L.tiles + threads - 1) / threads;
  const index_t chunk = std::max<index_t>(L.chunk, 1), rounds = (per_thread + chunk - 1) / chunk;
  const index_t even = (L.tiles + threads * rounds - 1) / (threads * rounds);  // (tiles over threads x rounds pieces)
  return std::clamp<index_t>((even + nr - 1) / nr * nr, 1, chunk);
}

// The tiles [t0, t1) of one image: x its input [ic, H, W], u the packed weights, out its output
// [oc, oh, ow] (bias and activation applied) or, when pool.out is set, that output max-pooled
// (winograd_pool), sc this thread's scratch (winograd_layout::scratch()).
template <class T>
void winograd_tiles(const conv_geometry& g, const winograd_layout<T>& L, const T* x, const T* u, const T* bias, activation act, T* out,
                    T* sc, index_t t0, index_t t1, winograd_pool<T> pool = {}) {
  constexpr int nr = gemm_traits<T>::nr;
  const index_t H = g.s.h, W = g.s.w, oh = g.oh, ow = g.ow, tw = L.tw, pw = 2 * tw + 2;
  T* vbase = sc;
  T* mbase = vbase + 16 * L.v_size();
  // the zero-padded input rows that tiles [t0, t1) read: padded rows [py0, py1) of 2 tw + 2 columns
  // (padded (y, x) = input (y - pad, x - pad)), every channel, each row stored de-interleaved: its
  // tw + 1 even columns, then its tw + 1 odd ones. A tile's 4 columns are then evens tx, tx + 1 and
  // odds tx, tx + 1: the transform reads unit-stride runs over the tiles (no bounds checks, no
  // shuffles in the transform)
  const index_t ty0 = t0 / tw, py0 = 2 * ty0, py1 = t1 > t0 ? 2 * ((t1 - 1) / tw) + 4 : py0, prows = py1 - py0, half = tw + 1;
  T* padded = mbase + 16 * L.m_size();
  for (index_t c = 0; c < L.ic; ++c)
    for (index_t y = py0; y < py1; ++y) {
      T* pe = padded + (c * prows + (y - py0)) * pw;
      T* po = pe + half;
      std::fill(pe, pe + pw, T(0));
      const index_t iy = y - g.pad[0];
      const index_t lo = std::min(g.pad[1], pw), hi = std::min(W + g.pad[1], pw);  // padded columns that hold input
      if (iy < 0 || iy >= H || lo >= hi) continue;
      const T* src = x + (c * H + iy) * W;
      // padded columns [lo, hi) hold input column px - pad: the even ones to pe, the odd ones to po
      // (one loop over the whole pairs, which the compiler vectorises as a de-interleave; the odd
      // column before the first pair and the even one after the last, if any, on their own)
      const index_t p = g.pad[1], k0 = (lo + 1) / 2, k1 = hi / 2;  // pairs (2k, 2k + 1) inside [lo, hi)
      if (lo % 2 == 1) po[lo / 2] = src[lo - p];
      for (index_t k = k0; k < k1; ++k) pe[k] = src[2 * k - p], po[k] = src[2 * k + 1 - p];
      if (hi % 2 == 1) pe[hi / 2] = src[hi - 1 - p];
    }
  for (index_t c0 = t0; c0 < t1; c0 += L.chunk) {
    const index_t c1 = std::min(t1, c0 + L.chunk), n = c1 - c0;
    const index_t np = packed_rhs<T>::padded_n(n), kc = gemm_traits<T>::kc_for(L.ic);
    // input transform, panel by panel (nr tiles: each of the 16 results of a channel is one run of
    // nr values in its V, stored as whole packets; the last panel's missing tiles are zeros): the
    // panel's tiles in segments along tile rows, and per segment and input row the 4x4 patches' B^T
    // along the row from the row's even and odd columns (d0 - d2, d1 + d2, d2 - d1, d1 - d3), then
    // B^T along the columns — vectorised over the tiles, in local arrays
    for (index_t j0 = 0; j0 < n; j0 += nr) {
      const index_t w = std::min<index_t>(nr, n - j0);
      struct segment { index_t row, lane, len; };  // offset of the first tile's evens (padded row, tx), its lane, tiles
      std::array<segment, nr> segs{};
      std::size_t nseg = 0;
      for (index_t l = 0; l < w;) {
        const index_t t = c0 + j0 + l, ty = t / tw, tx = t % tw, len = std::min(w - l, tw - tx);
        segs[nseg++] = {(2 * ty - py0) * pw + tx, l, len};
        l += len;
      }
      for (index_t c = 0; c < L.ic; ++c) {
        const T* pc = padded + c * prows * pw;
        alignas(64) T out[16][nr];
        if (w < nr)
          for (auto& o : out) std::fill(o + w, o + nr, T(0));
        for (std::size_t sg = 0; sg < nseg; ++sg) {
          const segment& q = segs[sg];
          const T* e[4];
          const T* od[4];
          for (int r = 0; r < 4; ++r) e[r] = pc + q.row + r * pw, od[r] = e[r] + half;
          for (index_t l = 0; l < q.len; ++l) {
            T h[4][4];  // [input row][B^T along the row]: d0 - d2, d1 + d2, d2 - d1, d1 - d3
            for (int r = 0; r < 4; ++r) {
              const T d0 = e[r][l], d1 = od[r][l], d2 = e[r][l + 1], d3 = od[r][l + 1];
              h[r][0] = d0 - d2, h[r][1] = d1 + d2, h[r][2] = d2 - d1, h[r][3] = d1 - d3;
            }
            for (int j = 0; j < 4; ++j) {  // B^T along the columns
              out[j][q.lane + l] = h[0][j] - h[2][j];
              out[4 + j][q.lane + l] = h[1][j] + h[2][j];
              out[8 + j][q.lane + l] = h[2][j] - h[1][j];
              out[12 + j][q.lane + l] = h[1][j] - h[3][j];
            }
          }
        }
        const index_t p0 = c / kc * kc, kcp = std::min(kc, L.ic - p0);
        const index_t at = p0 * np + j0 * kcp + (c - p0) * nr;  // row c of panel j0, in every V
        for (index_t xi = 0; xi < 16; ++xi) copy_run(out[xi], vbase + xi * static_cast<index_t>(L.v_size()) + at, index_t{nr});
      }
    }
    // the 16 products M_xi = U_xi V_xi
    T* m = mbase;
    for (index_t xi = 0; xi < 16; ++xi) {
      const packed_lhs<T> uxi{L.oc, L.ic, u + xi * static_cast<index_t>(L.u_size())};
      const packed_rhs<T> vxi{L.ic, n, vbase + xi * static_cast<index_t>(L.v_size())};
      gemm<T>(uxi, vxi, m + xi * static_cast<index_t>(L.m_size()), n, gemm_epilogue<T>{}, 1);
    }
    // output transform: Y = A^T M A (rows m0 + m1 + m2, m1 - m2 - m3; then the same along the
    // columns) plus the bias, over the chunk's tiles in one vectorised pass (they are contiguous in
    // M), then the 2x2 pixels of each tile to their rows, tile row by tile row; the activation on
    // the rows written. Pooled: the activation on the tiles, their maximum to the pooled plane
    const bool relu = act.is_relu();
    for (index_t o = 0; o < L.oc; ++o) {
      const T bo = bias != nullptr ? bias[o] : T(0);
      T* plane = pool.out != nullptr ? pool.out + o * pool.oh * pool.ow : out + o * oh * ow;
      const T* mx[16];
      for (index_t xi = 0; xi < 16; ++xi) mx[xi] = m + xi * static_cast<index_t>(L.m_size()) + o * n;
      for (index_t s0 = 0; s0 < n; s0 += 128) {
        const index_t len = std::min<index_t>(128, n - s0);
        alignas(64) T y[4][128];
        for (index_t q = s0; q < s0 + len; ++q) {
          T s0r[4], s1r[4];
          for (int j = 0; j < 4; ++j) {
            s0r[j] = mx[j][q] + mx[4 + j][q] + mx[8 + j][q];
            s1r[j] = mx[4 + j][q] - mx[8 + j][q] - mx[12 + j][q];
          }
          y[0][q - s0] = s0r[0] + s0r[1] + s0r[2] + bo, y[1][q - s0] = s0r[1] - s0r[2] - s0r[3] + bo;
          y[2][q - s0] = s1r[0] + s1r[1] + s1r[2] + bo, y[3][q - s0] = s1r[1] - s1r[2] - s1r[3] + bo;
        }
        if (relu)  // (std::max(v, 0) keeps a NaN v, as activate() does)
          for (auto& r : y)
            for (index_t q = 0; q < len; ++q) r[q] = std::max(r[q], T(0));
        const index_t f0 = c0 + s0, f1 = f0 + len;  // the image's tiles [f0, f1)
        if (pool.out != nullptr) {
          if (act && !relu)
            for (auto& r : y) activate(r, len, act);
          // max_pool_plane's order and NaN rule: down the window's columns, then across
          for (index_t q = 0; q < len; ++q) y[0][q] = nan_max(nan_max(y[0][q], y[2][q]), nan_max(y[1][q], y[3][q]));
          for (index_t ty = f0 / tw; ty * tw < f1 && ty < pool.oh; ++ty) {
            const index_t a = std::max(f0, ty * tw) - ty * tw, b = std::min({f1 - ty * tw, tw, pool.ow});  // pooled columns
            if (a < b) copy_run(y[0] + (ty * tw + a - f0), plane + ty * pool.ow + a, b - a);
          }
          continue;
        }
        for (index_t ty = f0 / tw; ty * tw < f1; ++ty) {
          const index_t a = std::max(f0, ty * tw) - ty * tw, b = std::min(f1, (ty + 1) * tw) - ty * tw;  // tile columns
          const index_t e = ty * tw + a - f0;                                                         // their first in y
          T* y0 = plane + 2 * ty * ow;
          T* y1 = 2 * ty + 1 < oh ? y0 + ow : nullptr;
          const index_t whole = std::max<index_t>(0, std::min(b, ow / 2) - a);  // tiles with both columns inside
          for (index_t q = 0; q < whole; ++q) y0[2 * (a + q)] = y[0][e + q], y0[2 * (a + q) + 1] = y[1][e + q];
          if (y1 != nullptr)
            for (index_t q = 0; q < whole; ++q) y1[2 * (a + q)] = y[2][e + q], y1[2 * (a + q) + 1] = y[3][e + q];
          if (a + whole < b) {  // the last tile of an odd width: its left column only
            y0[2 * (a + whole)] = y[0][e + whole];
            if (y1 != nullptr) y1[2 * (a + whole)] = y[2][e + whole];
          }
          if (act && !relu) {
            const index_t x0 = 2 * a, x1 = std::min(ow, 2 * b);
            activate(y0 + x0, x1 - x0, act);
            if (y1 != nullptr) activate(y1 + x0, x1 - x0, act);
          }
        }
      }
    }
  }
}

}  // namespace typex::eigen::detail
