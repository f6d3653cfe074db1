// typex/backend/eigen/kernels/conv_winograd.hpp — the Eigen backend: 3x3 convolutions by Winograd's
// minimal filtering F(2x2, 3x3).
//
// Part of the convolution family (conv.hpp includes it after the geometry). Each 2x2 block of
// output pixels (a tile) of a stride-1, undilated 3x3 convolution is computed from the 4x4 input
// patch under it as  Y = A^T [ (G g G^T) (.) (B^T d B) ] A:  16 products per tile and input
// channel instead of 36, so that the convolution becomes 16 GEMMs
//     M_xi [oc x tiles] = U_xi [oc x ic] * V_xi [ic x tiles]     (xi = one of the 4x4 positions)
// with U = G g G^T (the weights, transformed and packed once per plan when they are constant) and
// V = B^T d B (the input, transformed straight into the GEMM's packed right-hand-side layout), then
// the output transform, the bias and the activation per tile. 2.25x fewer multiply-adds than
// im2col + GEMM; the transforms add ~5 % (adds only, with the coefficients 1 and 1/2, so the
// rounding error stays at the level of a reordered sum: within 1e-5 of PyTorch in f32).
//
// Tiles are taken in chunks whose V and M (16 x (ic + oc) x chunk values) stay in L2 while the 16
// products and the output transform read them. A chunk is the unit of work of a thread: batch-1
// programs split one image's tiles over the threads (no image-level parallelism to use).
#pragma once

#ifndef TYPEX_EIGEN_KERNEL_FAMILIES
#error "typex: backend/eigen/kernels/*.hpp are parts of kernels_impl.hpp (in its order); include <typex/backend/eigen.hpp>"
#endif

namespace typex::eigen::detail {

// Whether a convolution takes the Winograd path: 3x3, stride 1, no dilation, one group, padding of
// at most 2, and enough channels for the 16 products to be real GEMMs (with few input channels the
// transforms cost more than they save: a 1-channel first layer stays on im2col).
inline bool winograd_fits(const conv_geometry& g) {
  return g.kh == 3 && g.kw == 3 && g.stride[0] == 1 && g.stride[1] == 1 && g.dil[0] == 1 && g.dil[1] == 1 && g.groups == 1 &&
         g.pad[0] <= 2 && g.pad[1] <= 2 && g.icg >= 8 && g.oc >= 16;
}

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
  std::size_t v_size() const noexcept { return packed_rhs<T>::size_for(ic, chunk); }  // one position's packed V
  std::size_t m_size() const noexcept { return static_cast<std::size_t>(oc * chunk); }
  std::size_t rows_size() const noexcept { return static_cast<std::size_t>(4 * (2 * tw + 4) + 16 * tw); }
  // scratch of one thread: 16 V, 16 M, the padded input rows and the row-transformed rows
  std::size_t scratch() const noexcept { return 16 * (v_size() + m_size()) + rows_size(); }
  // the weights: 16 packed [oc x ic] matrices
  std::size_t u_size() const noexcept { return packed_lhs<T>::size_for(oc, ic); }
  std::size_t weights() const noexcept { return 16 * u_size(); }
};

// U_xi = (G g G^T)_xi for every (out channel, in channel), packed as 16 GEMM left-hand sides.
template <class T>
void winograd_pack_weights(const conv_geometry& g, const T* w, T* out) {
  const winograd_layout<T> L(g);
  std::vector<T> u(static_cast<std::size_t>(16 * L.oc * L.ic));  // (at planning time: one allocation)
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
    packed_lhs<T>::pack({u.data() + xi * L.oc * L.ic, L.ic, 1}, L.oc, L.ic, out + xi * static_cast<index_t>(L.u_size()));
}

// Writes src[0, len) as the packed right-hand side's row c, columns [col, col + len) (split where
// the columns cross a panel).
template <class T>
inline void winograd_put_row(const packed_rhs<T>& v, index_t c, index_t col, const T* src, index_t len) {
  constexpr int nr = gemm_traits<T>::nr;
  const index_t p0 = c / v.kc * v.kc;
  while (len > 0) {
    const index_t j0 = col / nr * nr, n = std::min(len, j0 + nr - col);
    T* dst = const_cast<T*>(v.panel(p0, j0)) + (c - p0) * nr + (col - j0);
    for (index_t q = 0; q < n; ++q) dst[q] = src[q];
    col += n, src += n, len -= n;
  }
}

// The tiles [t0, t1) of one image: x its input [ic, H, W], u the packed weights, out its output
// [oc, oh, ow] (bias and activation applied), sc this thread's scratch (winograd_layout::scratch()).
template <class T>
void winograd_tiles(const conv_geometry& g, const winograd_layout<T>& L, const T* x, const T* u, const T* bias, activation act, T* out,
                    T* sc, index_t t0, index_t t1) {
  constexpr int nr = gemm_traits<T>::nr;
  const index_t H = g.s.h, W = g.s.w, oh = g.oh, ow = g.ow, tw = L.tw, pw = 2 * tw + 4;
  T* vbase = sc;
  T* mbase = vbase + 16 * L.v_size();
  T* prow = mbase + 16 * L.m_size();  // 4 padded input rows of 2 tw + 4
  T* rt = prow + 4 * pw;              // row-transformed: [4 rows][4 columns][tw]
  for (index_t c0 = t0; c0 < t1; c0 += L.chunk) {
    const index_t c1 = std::min(t1, c0 + L.chunk), n = c1 - c0;
    std::array<packed_rhs<T>, 16> v;
    for (index_t xi = 0; xi < 16; ++xi) v[xi] = packed_rhs<T>{L.ic, n, vbase + xi * static_cast<index_t>(L.v_size())};
    // input transform: V_xi(c, t) = (B^T d B)_xi for tile t's 4x4 patch d of channel c
    if (n % nr != 0)  // (the last panel's padding columns: zeros, as the GEMM reads them)
      for (index_t xi = 0; xi < 16; ++xi)
        for (index_t c = 0; c < L.ic; ++c) {
          const index_t p0 = c / v[xi].kc * v[xi].kc, j0 = n / nr * nr;
          T* dst = const_cast<T*>(v[xi].panel(p0, j0)) + (c - p0) * nr;
          std::fill(dst + (n - j0), dst + nr, T(0));
        }
    for (index_t c = 0; c < L.ic; ++c) {
      const T* plane = x + c * H * W;
      for (index_t ty = c0 / tw; ty * tw < c1; ++ty) {
        const index_t a = std::max(c0, ty * tw) - ty * tw, b = std::min(c1, (ty + 1) * tw) - ty * tw;  // tile columns [a, b)
        // the padded rows 2 ty - pad + r, columns [2a, 2b + 2) (input column = padded column - pad)
        for (index_t r = 0; r < 4; ++r) {
          T* pr = prow + r * pw;
          const index_t iy = 2 * ty - g.pad[0] + r;
          const index_t x0 = 2 * a, x1 = 2 * b + 2;
          if (iy < 0 || iy >= H) {
            std::fill(pr + x0, pr + x1, T(0));
            continue;
          }
          const T* in = plane + iy * W - g.pad[1];
          const index_t lo = std::clamp<index_t>(g.pad[1], x0, x1), hi = std::clamp<index_t>(W + g.pad[1], lo, x1);
          std::fill(pr + x0, pr + lo, T(0));
          std::copy(in + lo, in + hi, pr + lo);
          std::fill(pr + hi, pr + x1, T(0));
        }
        // B^T along each row (d0 - d2, d1 + d2, d2 - d1, d1 - d3), then along the columns
        for (index_t r = 0; r < 4; ++r) {
          const T* pr = prow + r * pw;
          T *q0 = rt + (r * 4 + 0) * tw, *q1 = rt + (r * 4 + 1) * tw, *q2 = rt + (r * 4 + 2) * tw, *q3 = rt + (r * 4 + 3) * tw;
          for (index_t t = a; t < b; ++t) {
            const T d0 = pr[2 * t], d1 = pr[2 * t + 1], d2 = pr[2 * t + 2], d3 = pr[2 * t + 3];
            q0[t] = d0 - d2, q1[t] = d1 + d2, q2[t] = d2 - d1, q3[t] = d1 - d3;
          }
        }
        const index_t col = ty * tw + a - c0, len = b - a;
        T tmp[4][64];
        for (index_t s = 0; s < len; s += 64) {
          const index_t m = std::min<index_t>(64, len - s);
          for (index_t j = 0; j < 4; ++j) {
            const T *r0 = rt + (0 * 4 + j) * tw + a + s, *r1 = rt + (1 * 4 + j) * tw + a + s, *r2 = rt + (2 * 4 + j) * tw + a + s,
                    *r3 = rt + (3 * 4 + j) * tw + a + s;
            for (index_t t = 0; t < m; ++t) {
              tmp[0][t] = r0[t] - r2[t], tmp[1][t] = r1[t] + r2[t], tmp[2][t] = r2[t] - r1[t], tmp[3][t] = r1[t] - r3[t];
            }
            for (index_t i = 0; i < 4; ++i) winograd_put_row(v[i * 4 + j], c, col + s, tmp[i], m);
          }
        }
      }
    }
    // the 16 products M_xi = U_xi V_xi
    T* m = mbase;
    for (index_t xi = 0; xi < 16; ++xi) {
      const packed_lhs<T> uxi{L.oc, L.ic, u + xi * static_cast<index_t>(L.u_size())};
      gemm<T>(uxi, v[xi], m + xi * L.oc * n, n, gemm_epilogue<T>{}, 1);
    }
    // output transform: Y = A^T M A (rows m0 + m1 + m2, m1 - m2 - m3; then the same along columns)
    for (index_t o = 0; o < L.oc; ++o) {
      const T bo = bias != nullptr ? bias[o] : T(0);
      T* plane = out + o * oh * ow;
      for (index_t ty = c0 / tw; ty * tw < c1; ++ty) {
        const index_t a = std::max(c0, ty * tw) - ty * tw, b = std::min(c1, (ty + 1) * tw) - ty * tw;
        const index_t col = ty * tw + a - c0;
        const T* mx[16];
        for (index_t xi = 0; xi < 16; ++xi) mx[xi] = m + (xi * L.oc + o) * n + col;
        T* y0 = plane + 2 * ty * ow;
        T* y1 = 2 * ty + 1 < oh ? y0 + ow : nullptr;
        T y[4][64];  // the tiles' four pixels, 64 tiles at a time (vectorised over the tiles)
        for (index_t s = 0; s < b - a; s += 64) {
          const index_t len = std::min<index_t>(64, b - a - s);
          for (index_t q = 0; q < len; ++q) {
            const index_t e = s + q;
            T s0[4], s1[4];
            for (int j = 0; j < 4; ++j) {
              s0[j] = mx[j][e] + mx[4 + j][e] + mx[8 + j][e];
              s1[j] = mx[4 + j][e] - mx[8 + j][e] - mx[12 + j][e];
            }
            y[0][q] = s0[0] + s0[1] + s0[2] + bo, y[1][q] = s0[1] - s0[2] - s0[3] + bo;
            y[2][q] = s1[0] + s1[1] + s1[2] + bo, y[3][q] = s1[1] - s1[2] - s1[3] + bo;
          }
          // tiles [t, t + len): output columns [2t, 2t + 2 len), the last one cut at an odd width
          const index_t t = a + s, whole = std::min(len, ow / 2 - t);
          for (index_t q = 0; q < whole; ++q) y0[2 * (t + q)] = y[0][q], y0[2 * (t + q) + 1] = y[1][q];
          if (y1 != nullptr)
            for (index_t q = 0; q < whole; ++q) y1[2 * (t + q)] = y[2][q], y1[2 * (t + q) + 1] = y[3][q];
          if (whole < len) {
            y0[2 * (t + whole)] = y[0][whole];
            if (y1 != nullptr) y1[2 * (t + whole)] = y[2][whole];
          }
        }
        if (act) {
          const index_t x0 = 2 * a, x1 = std::min(ow, 2 * b);
          activate(y0 + x0, x1 - x0, act);
          if (y1 != nullptr) activate(y1 + x0, x1 - x0, act);
        }
      }
    }
  }
}

}  // namespace typex::eigen::detail
