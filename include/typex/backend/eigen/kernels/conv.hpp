// typex/backend/eigen/kernels/conv.hpp — the Eigen backend: convolution and pooling: conv2d (im2col + the blocked GEMM), max/avg pool, adaptive avg pool.
//
// One family of the kernel definitions: kernels_impl.hpp includes the families in order (each uses
// the ones before it); kernels.hpp declares the kernels.
#pragma once

#ifndef TYPEX_EIGEN_KERNEL_FAMILIES
#error "typex: backend/eigen/kernels/*.hpp are parts of kernels_impl.hpp (in its order); include <typex/backend/eigen.hpp>"
#endif

namespace typex::eigen::detail {

// convolution and pooling ([N, C, H, W], or [C, H, W] as N = 1)

struct nchw {
  index_t n, c, h, w;
  bool batched;
};
inline nchw nchw_of(std::string_view op, tensor_shape x) {
  const auto& e = x.extents;
  if (e.size() == 4) return {e[0], e[1], e[2], e[3], true};
  if (e.size() == 3) return {1, e[0], e[1], e[2], false};
  rank_error(op, "input", x, "[N, C, H, W] or [C, H, W]");
}
inline std::vector<index_t> nchw_extents(const nchw& s, index_t c, index_t h, index_t w) {
  if (s.batched) return {s.n, c, h, w};
  return {c, h, w};
}
inline std::array<index_t, 2> pair_of(const kernel_args& a, arg_name n, std::array<index_t, 2> fallback) {
  if (!a.has(n)) return fallback;
  if (a.is_integer(n)) return {a.integer(n), a.integer(n)};  // (int[2] stride=1: one int for both)
  const auto v = a.ints(n);
  if (v.size() == 1) return {v[0], v[0]};
  if (v.size() != 2) a.fail_text(n, "should hold one or two values");
  return {v[0], v[1]};
}
inline index_t window_extent(const kernel_args& a, index_t in, index_t k, index_t s, index_t p, index_t d, bool ceil) {
  if (k < 1 || s < 1 || d < 1 || p < 0) a.fail_text(1, "has a kernel, stride or dilation below 1 or a negative padding");
  const index_t o = ceil ? typex::detail::ceil_window_out(in, k, s, p, d) : (in + 2 * p - d * (k - 1) - 1) / s + 1;
  if (in + 2 * p - d * (k - 1) - 1 < 0 || o < 1) {
    raise<shape_error>([&](auto& w) {
      w.put(a.target()); w.put(": an input extent of "); w.put_int(in); w.put(" is too small for a window of "); w.put_int(k);
    });
  }
  return o;
}

// A convolution's sizes, read and checked from (input, weight, bias, stride, padding, dilation, groups).
struct conv_geometry {
  nchw s;
  index_t oc, icg, kh, kw, oh, ow, groups;
  std::array<index_t, 2> stride, pad, dil;
  bool winograd = false;  // computed by Winograd's F(2x2, 3x3) (conv_winograd.hpp), else im2col + GEMM
  // A kernel larger than its output (a weight gradient's convolution, whose kernel is the output
  // gradient and whose output has the weight's extent; a convolution that covers its whole image):
  // computed as one GEMM for all images, conv_large_kernel, instead of one per image whose few
  // output pixels leave the GEMM's columns empty.
  bool large_kernel = false;
  index_t krows() const noexcept { return icg * kh * kw; }
  index_t cols() const noexcept { return oh * ow; }
};

// Whether a convolution takes the Winograd path: 3x3, stride 1, no dilation, one group, padding of
// at most 2, and enough channels for the 16 products to be real GEMMs (with few input channels the
// transforms cost more than they save: a 1-channel first layer stays on im2col).
inline bool winograd_fits(const conv_geometry& g) {
  return g.kh == 3 && g.kw == 3 && g.stride[0] == 1 && g.stride[1] == 1 && g.dil[0] == 1 && g.dil[1] == 1 && g.groups == 1 &&
         g.pad[0] <= 2 && g.pad[1] <= 2 && g.icg >= 8 && g.oc >= 16;
}

// x, w: the input's and weight's shapes; bias: the bias' element count, if it has one.
inline conv_geometry conv_geometry_of(const kernel_args& a, tensor_shape x, tensor_shape w, std::optional<index_t> bias) {
  conv_geometry g{};
  g.s = nchw_of(a.target(), x);
  if (w.extents.size() != 4) rank_error(a.target(), "weight", w, "[out_channels, in_channels / groups, kH, kW]");
  g.stride = pair_of(a, "stride", {1, 1});
  g.pad = pair_of(a, "padding", {0, 0});
  g.dil = pair_of(a, "dilation", {1, 1});
  g.groups = a.integer_or_default("groups");
  g.oc = w.extents[0], g.icg = w.extents[1], g.kh = w.extents[2], g.kw = w.extents[3];
  if (g.groups < 1 || g.s.c != g.icg * g.groups || g.oc % g.groups != 0) {
    raise<shape_error>([&](auto& o) {
      o.put(a.target()); o.put(": input "); o.put(x.to_string()); o.put(" does not fit weight "); o.put(w.to_string());
      o.put(" with groups="); o.put_int(g.groups);
    });
  }
  if (bias && *bias != g.oc) {
    raise<shape_error>([&](auto& o) {
      o.put(a.target()); o.put(": bias should hold "); o.put_int(g.oc); o.put(" elements, not "); o.put_int(*bias);
    });
  }
  g.oh = window_extent(a, g.s.h, g.kh, g.stride[0], g.pad[0], g.dil[0], false);
  g.ow = window_extent(a, g.s.w, g.kw, g.stride[1], g.pad[1], g.dil[1], false);
  g.winograd = winograd_fits(g);
  g.large_kernel = !g.winograd && g.groups == 1 && g.kh * g.kw > g.oh * g.ow;
  return g;
}

struct pool_geometry {
  nchw s;
  std::array<index_t, 2> k, stride, pad, dil;
  index_t oh, ow;
  bool include_pad;
  index_t divisor;  // avg_pool2d's divisor_override; 0: none (the window's count)
};

template <bool Max>
pool_geometry pool_geometry_of(const kernel_args& a, tensor_shape x) {
  pool_geometry g{};
  g.s = nchw_of(a.target(), x);
  g.k = pair_of(a, "kernel_size", {1, 1});
  g.stride = a.has("stride") && (a.is_integer("stride") || !a.ints("stride").empty()) ? pair_of(a, "stride", g.k) : g.k;  // ([]: the kernel)
  g.pad = pair_of(a, "padding", {0, 0});
  g.dil = Max ? pair_of(a, "dilation", {1, 1}) : std::array<index_t, 2>{1, 1};
  const bool ceil = a.flag_or_default("ceil_mode");
  g.include_pad = Max || a.flag_or_default("count_include_pad");
  g.divisor = !Max && a.has("divisor_override") ? a.integer("divisor_override") : 0;
  if (!Max && a.has("divisor_override") && g.divisor == 0) a.fail_text("divisor_override", "must not be zero");
  if (2 * g.pad[0] > g.k[0] || 2 * g.pad[1] > g.k[1]) a.fail_text("padding", "should be at most half the kernel size");
  g.oh = window_extent(a, g.s.h, g.k[0], g.stride[0], g.pad[0], g.dil[0], ceil);
  g.ow = window_extent(a, g.s.w, g.k[1], g.stride[1], g.pad[1], g.dil[1], ceil);
  return g;
}

// Whether every window is inside the image (no padding, no dilation, and ceil_mode added no
// partial window): max_pool_plane's case.
inline bool max_pool_direct(const pool_geometry& g) {
  return g.pad[0] == 0 && g.pad[1] == 0 && g.dil[0] == 1 && g.dil[1] == 1 && (g.oh - 1) * g.stride[0] + g.k[0] <= g.s.h &&
         (g.ow - 1) * g.stride[1] + g.k[1] <= g.s.w;
}

// max(a, b) that returns b when b is NaN (a NaN a stays: b > a is false), so that a NaN anywhere
// in a window propagates, as in PyTorch: a select, no branch, vectorisable. Every max-pool here
// (and the one in Winograd's output transform) takes its maxima this way, in the same order.
template <class T>
inline T nan_max(T a, T b) noexcept {
  return (b > a || b != b) ? b : a;
}

// Max pooling of one [H, W] plane when max_pool_direct(g); rows: oh * W scratch elements.
// NaN propagates, as in PyTorch (a select, no branch).
template <class T>
void max_pool_plane(const pool_geometry& g, const T* img, T* o, T* rows) {
  const index_t w = g.s.w, oh = g.oh, ow = g.ow, kh = g.k[0], kw = g.k[1], sh = g.stride[0], sw = g.stride[1];
  for (index_t y = 0; y < oh; ++y) {
    T* v = rows + y * w;
    const T* r = img + y * sh * w;
    std::copy(r, r + w, v);
    for (index_t i = 1; i < kh; ++i) {
      r += w;
      for (index_t x = 0; x < w; ++x) v[x] = nan_max(v[x], r[x]);
    }
  }
  auto columns = [&](const T* v, T* out, index_t n) {
    if (kw == 2 && sw == 2) {  // max_pool2d(2): constant strides, so that the compiler vectorises it
      for (index_t q = 0; q < n; ++q) {
        out[q] = nan_max(v[2 * q], v[2 * q + 1]);
      }
      return;
    }
    for (index_t q = 0; q < n; ++q) {
      T best = v[q * sw];
      for (index_t j = 1; j < kw; ++j) {
        const T c = v[q * sw + j];
        best = nan_max(best, c);
      }
      out[q] = best;
    }
  };
  if (w == ow * sw) columns(rows, o, oh * ow);  // row y's windows start at y * w = y * ow * sw: one pass
  else for (index_t y = 0; y < oh; ++y) columns(rows + y * w, o + y * ow, ow);
}

template <class T>
grow_buffer<T>& pool_scratch() {
  static thread_local grow_buffer<T> b;
  return b;
}

// out[0, n) = in[0, n) for short runs (an im2col row segment: a dozen or two elements), in packets
// (the last one overlapping the one before) instead of a call to memmove per run.
template <class T>
inline void copy_run(const T* in, T* out, index_t n) {
  using P = typename gemm_traits<T>::packet;
  using H = typename Eigen::internal::packet_traits<T>::half;
  // (no unpacket_traits<H>: a vector type as a class template's argument warns with g++)
  constexpr int L = gemm_traits<T>::lanes, LH = Eigen::internal::packet_traits<T>::HasHalfPacket ? L / 2 : L;
  using Eigen::internal::ploadu;
  using Eigen::internal::pstoreu;
  if (n >= L) {
    index_t q = 0;
    for (; q + L <= n; q += L) pstoreu(out + q, ploadu<P>(in + q));
    if (q < n) pstoreu(out + n - L, ploadu<P>(in + n - L));
  } else if (LH < L && n >= LH) {
    pstoreu(out, ploadu<H>(in));
    pstoreu(out + n - LH, ploadu<H>(in + n - LH));
  } else {
    for (index_t q = 0; q < n; ++q) out[q] = in[q];
  }
}

// Output pixels [jb, je) of one image's group as the GEMM's packed right-hand side: the im2col
// matrix col[(ci, i, j)][(y, x)] (zero where the window is in the padding) written straight into
// packed_rhs's layout (nr-column panels, kc rows at a time) — im2col and packing in one copy.
// A panel's nr pixels are runs along output rows, the same for every kernel row of the panel.
template <class T>
packed_rhs<T> im2col_packed(const conv_geometry& g, const T* img, T* out, index_t jb, index_t je) {
  constexpr int nr = gemm_traits<T>::nr;
  const index_t k = g.krows(), n = je - jb;
  const index_t kc = gemm_traits<T>::kc_for(k), np = packed_rhs<T>::padded_n(n);
  const index_t sy = g.stride[0], sx = g.stride[1];
  // output row y, columns [x, x + len), at panel column `at`; src: the input offset of (y, x)
  struct run { index_t y, x, len, at, src; };
  std::array<run, nr> runs{};
  std::size_t nruns = 0;
  const bool direct = g.pad[0] == 0 && g.pad[1] == 0 && sx == 1;
  // kernel row (ci, i, j) of the current runs, with padding and strides
  const auto general = [&](T* row, index_t ci, index_t i, index_t j) {
    // the output columns whose input column is inside the image: [lo, hi)
    const index_t x0 = j * g.dil[1] - g.pad[1];
    const index_t lo = std::min(g.ow, x0 >= 0 ? 0 : (-x0 + sx - 1) / sx);
    const index_t hi = std::max(lo, std::min(g.ow, g.s.w - x0 <= 0 ? 0 : (g.s.w - x0 + sx - 1) / sx));
    const T* plane = img + ci * g.s.h * g.s.w;
    for (std::size_t r = 0; r < nruns; ++r) {
      const run& u = runs[r];
      T* o = row + u.at;
      const index_t iy = u.y * sy - g.pad[0] + i * g.dil[0];
      const index_t a = std::clamp(lo, u.x, u.x + u.len), b = std::clamp(hi, a, u.x + u.len);
      if (iy < 0 || iy >= g.s.h) {
        std::fill(o, o + u.len, T(0));
        continue;
      }
      const T* in = plane + iy * g.s.w + x0;
      std::fill(o, o + (a - u.x), T(0));
      if (sx == 1) copy_run(in + a, o + (a - u.x), b - a);
      else for (index_t xx = a; xx < b; ++xx) o[xx - u.x] = in[xx * sx];
      std::fill(o + (b - u.x), o + u.len, T(0));
    }
  };
  for (index_t j0 = 0; j0 < n; j0 += nr) {
    const index_t w = std::min<index_t>(nr, n - j0);
    nruns = 0;
    for (index_t p = jb + j0; p < jb + j0 + w;) {
      const index_t y = p / g.ow, x = p % g.ow, len = std::min(g.ow - x, jb + j0 + w - p);
      runs[nruns++] = {y, x, len, p - jb - j0, y * sy * g.s.w + x};
      p += len;
    }
    for (index_t p0 = 0; p0 < k; p0 += kc) {
      const index_t kcp = std::min(kc, k - p0);
      T* panel = out + p0 * np + j0 * kcp;
      index_t ci = p0 / (g.kh * g.kw), i = p0 / g.kw % g.kh, j = p0 % g.kw;
      for (index_t kk = 0; kk < kcp; ++kk) {
        T* row = panel + kk * nr;
        if (w < nr) std::fill(row + w, row + nr, T(0));
        if (direct) {  // every window inside the image, stride 1 along rows: one packet copy per run
          const T* in = img + ci * g.s.h * g.s.w + i * g.dil[0] * g.s.w + j * g.dil[1];
          for (std::size_t r = 0; r < nruns; ++r) copy_run(in + runs[r].src, row + runs[r].at, runs[r].len);
        } else {
          general(row, ci, i, j);
        }
        if (++j == g.kw) {
          j = 0;
          if (++i == g.kh) i = 0, ++ci;
        }
      }
    }
  }
  return packed_rhs<T>{k, n, out, kc};
}

// A large-kernel convolution (conv_geometry::large_kernel) as one GEMM over every image:
//   R[o, (n, y, x)] = sum over (c, i, j) of w[o, (c, i, j)] * x[n, c, y sy - py + i dy, x sx - px + j dx]
// The weights [oc, C kh kw] are the left-hand side, read in place (a weight gradient's kernel is
// the output gradient: nothing to pack once per plan); the right-hand side is gathered from the
// input (zero in the padding) into the packed layout a block of kernel rows and columns at a time.
// The products of the kernel-row blocks are summed: each thread takes blocks of that reduction
// (the long side of a weight gradient, the batch times the image) into its own accumulator R,
// and the last pass adds the threads' R, the bias and the activation into [n, oc, oh, ow].
// For the reference CNN's second layer at batch 32 the GEMM is 64 x 288 x 18432 where the per-image
// im2col made 32 GEMMs of 64 x 9 x 18432: 9 of each 16-column panel real.
template <class T>
struct large_kernel_blocks {
  index_t columns, kb, chunk, k_blocks, chunks;  // (n oh ow); kernel rows per block; columns per chunk
  explicit large_kernel_blocks(const conv_geometry& g) {
    constexpr index_t nr = gemm_traits<T>::nr;
    // a packed block (kb x chunk) of at most ~384 KiB stays in L2 beside A's block while the product reads it
    constexpr index_t budget = index_t{384} * 1024 / static_cast<index_t>(sizeof(T));
    const index_t k = std::max<index_t>(g.krows(), 1);
    columns = g.s.n * g.cols();
    const index_t padded = packed_rhs<T>::padded_n(columns);
    // (kb <= max_kc: one k block per product, kc_for(kb) == kb; fewer rows rather than a second
    // chunk, down to 64, below which the micro-kernel's fixed cost per call shows)
    kb = std::min({k, gemm_traits<T>::max_kc, std::max<index_t>(64, budget / std::max<index_t>(padded, 1))});
    chunk = std::max<index_t>(1, std::min(columns, std::max(nr, budget / kb / nr * nr)));  // (no images: 1, no work)
    k_blocks = (k + kb - 1) / kb;
    chunks = std::max<index_t>(1, (columns + chunk - 1) / chunk);
  }
  index_t packed() const noexcept { return kb * packed_rhs<T>::padded_n(chunk); }
  index_t per_thread(const conv_geometry& g) const noexcept { return packed() + g.oc * columns; }
  // The threads that take blocks: at most one per block, and accumulators of at most ~64 MiB in
  // all (each thread's is the size of the output: a 512 x 512 x 3 x 3 weight gradient's on 16
  // threads would be 150 MB)
  int threads_for(const conv_geometry& g, int threads) const noexcept {
    const index_t cap = std::max<index_t>(1, (index_t{64} << 20) / static_cast<index_t>(sizeof(T)) / std::max<index_t>(1, g.oc * columns));
    return static_cast<int>(std::clamp<index_t>(std::min<index_t>({threads, k_blocks * chunks, cap}), 1, std::max(threads, 1)));
  }
};

// Kernel rows [k0, k0 + kbp) x columns [j_lo, j_hi) of the gathered right-hand side, in
// packed_rhs's layout (one k block: nr-column panels of kbp rows). A column is an output pixel of
// one image (its offset in x and its window's corner precomputed per panel); a row a (channel,
// kernel row, kernel column), whose offset is added to every column's.
template <class T>
void large_kernel_pack(const conv_geometry& g, const T* x, index_t k0, index_t kbp, index_t j_lo, index_t j_hi, T* out) {
  constexpr int nr = gemm_traits<T>::nr;
  const index_t hw = g.s.h * g.s.w, chw = g.s.c * hw, cols = g.cols();
  const bool padded = g.pad[0] > 0 || g.pad[1] > 0;
  std::array<index_t, nr> off{}, oy{}, ox{};
  for (index_t j0 = j_lo; j0 < j_hi; j0 += nr) {
    const index_t w = std::min<index_t>(nr, j_hi - j0);
    T* panel = out + (j0 - j_lo) * kbp;
    for (index_t jj = 0; jj < w; ++jj) {
      const index_t q = j0 + jj, n = q / cols, r = q % cols;
      oy[static_cast<std::size_t>(jj)] = r / g.ow * g.stride[0] - g.pad[0];
      ox[static_cast<std::size_t>(jj)] = r % g.ow * g.stride[1] - g.pad[1];
      off[static_cast<std::size_t>(jj)] = n * chw + oy[static_cast<std::size_t>(jj)] * g.s.w + ox[static_cast<std::size_t>(jj)];
    }
    index_t ci = k0 / (g.kh * g.kw), i = k0 / g.kw % g.kh, j = k0 % g.kw;
    for (index_t kk = 0; kk < kbp; ++kk) {
      T* row = panel + kk * nr;
      const index_t dy = i * g.dil[0], dx = j * g.dil[1];
      const T* src = x + ci * hw;
      const index_t d = dy * g.s.w + dx;
      if (!padded) {  // (every window inside the image: window_extent)
        for (index_t jj = 0; jj < w; ++jj) row[jj] = src[off[static_cast<std::size_t>(jj)] + d];
      } else {
        for (index_t jj = 0; jj < w; ++jj) {
          const auto u = static_cast<std::size_t>(jj);
          const index_t yy = oy[u] + dy, xx = ox[u] + dx;
          row[jj] = yy >= 0 && yy < g.s.h && xx >= 0 && xx < g.s.w ? src[off[u] + d] : T(0);
        }
      }
      std::fill(row + w, row + nr, T(0));
      if (++j == g.kw) {
        j = 0;
        if (++i == g.kh) i = 0, ++ci;
      }
    }
  }
}

// out = act(conv(x, w) + bias) for a large-kernel convolution (above). scratch:
// large_kernel_blocks<T>(g).per_thread(g) elements per thread.
template <class T>
void conv_large_kernel(const conv_geometry& g, const T* x, const T* w, const T* bias, activation act, T* out, T* scratch,
                       int threads) {
  const large_kernel_blocks<T> b(g);
  if (b.columns == 0 || g.oc == 0) return;  // (no images, no channels: an empty output)
  const index_t per = b.per_thread(g), k = g.krows(), tasks = b.k_blocks * b.chunks;
  const int t = b.threads_for(g, threads);
  for (int p = 0; p < t; ++p) std::fill_n(scratch + p * per + b.packed(), g.oc * b.columns, T(0));
  gemm_epilogue<T> ep;
  ep.beta = T(1);  // (each block's product added to the thread's R)
  auto task = [&](index_t q, int p) {
    const index_t k0 = q / b.chunks * b.kb, kbp = std::min(b.kb, k - k0);
    const index_t j_lo = q % b.chunks * b.chunk, j_hi = std::min(b.columns, j_lo + b.chunk);
    T* sc = scratch + p * per;
    large_kernel_pack(g, x, k0, kbp, j_lo, j_hi, sc);
    const packed_rhs<T> pb{kbp, j_hi - j_lo, sc, kbp};
    gemm_range<T>(0, g.oc, 0, j_hi - j_lo, matrix_ref<T>{w + k0, k, 1}, nullptr, pb, sc + b.packed() + j_lo, b.columns, ep);
  };
  if (t > 1) thread_pool::instance().run_dynamic(t, tasks, task);
  else for (index_t q = 0; q < tasks; ++q) task(q, 0);
  // R[o, (n, pixel)] summed over the threads -> out[n, o, pixel], + bias, activation
  const index_t cols = g.cols();
  parallel_for(g.s.n * g.oc, cols * t, threads, [&](index_t r0, index_t r1) {
    using row = Eigen::Array<T, 1, Eigen::Dynamic>;
    for (index_t r = r0; r < r1; ++r) {
      const index_t n = r / g.oc, o = r % g.oc;
      Eigen::Map<row> dst(out + r * cols, cols);
      const auto part = [&](int p) { return Eigen::Map<const row>(scratch + p * per + b.packed() + o * b.columns + n * cols, cols); };
      dst = part(0);
      for (int p = 1; p < t; ++p) dst += part(p);
      if (bias != nullptr) dst += bias[o];
      if (act) activate(dst.data(), cols, act);
    }
  });
}

}  // namespace typex::eigen::detail

#include <typex/backend/eigen/kernels/conv_winograd.hpp>

namespace typex::eigen::detail {

// The weights [oc, icg * kh * kw] as the GEMM's packed left-hand side, group after group
// (conv_packed_weights<T>(g) elements, with the packing's slack): packed once per plan when they
// are constant.
template <class T>
index_t conv_packed_weights(const conv_geometry& g) {
  if (g.large_kernel) return 0;  // (read in place: conv_large_kernel)
  if (g.winograd) return static_cast<index_t>(winograd_layout<T>(g).weights());
  return g.oc * g.krows() + gemm_traits<T>::lanes;
}
template <class T>
void conv_pack_weights(const conv_geometry& g, const T* w, T* out) {
  if (g.large_kernel) return;
  if (g.winograd) return winograd_pack_weights(g, w, out);
  const index_t ocg = g.oc / g.groups, k = g.krows();
  for (index_t gi = 0; gi < g.groups; ++gi) packed_lhs<T>::pack({w + gi * ocg * k, k, 1}, ocg, k, out + gi * ocg * k);
}

// out = act(conv(x, w) + bias), or max_pool2d of it when `pool` is given (a pool whose windows are
// all inside the image: max_pool_direct): per image and group, im2col_packed and one GEMM with the
// packed weights, the bias and the activation in the GEMM's epilogue; a fused pool reads the
// image's convolution from per-thread scratch while it is in cache, instead of from memory in
// another pass. scratch: conv_scratch(g, threads, pooled) elements. Parallel over images when
// there are enough, otherwise inside each product.
// The output pixels per product: a block of packed columns that stays in L2 (~192 KiB) while the
// product reads it, instead of the whole image's (664 KiB for 288 kernel rows x 24 x 24 pixels;
// 115 MiB for 576 x 224 x 224): the scratch stays small for large images (same speed on the CNN).
template <class T>
index_t conv_chunk(const conv_geometry& g) {
  constexpr int nr = gemm_traits<T>::nr;
  const index_t panels = std::max<index_t>(1, (index_t{192} * 1024 / static_cast<index_t>(sizeof(T))) / (g.krows() * nr));
  return std::min(panels * nr, g.cols());
}
template <class T>
index_t conv_scratch(const conv_geometry& g, int threads, bool pooled = false) {
  if (g.large_kernel) {  // (never pooled: fast_step)
    const large_kernel_blocks<T> b(g);
    return b.per_thread(g) * b.threads_for(g, threads);
  }
  const index_t packed =
      g.winograd ? static_cast<index_t>(winograd_layout<T>(g).scratch()) : g.krows() * packed_rhs<T>::padded_n(conv_chunk<T>(g));
  // pooled: the convolution's output (oc x cols) and the pool's row buffer follow each thread's work
  // area (oh * W <= cols: a fused pool is max_pool_direct, its windows inside the convolution's rows)
  return (packed + (pooled ? (g.oc + 1) * g.cols() : 0)) * std::max(threads, 1);
}
// wpacked: conv_pack_weights's layout, or the weights as they are for a large kernel (which is never pooled)
template <class T>
void conv2d_into(const conv_geometry& g, const T* x, const T* wpacked, const T* bias, activation act, T* out, T* scratch,
                 int threads, const pool_geometry* pool = nullptr) {
  if (g.large_kernel) {
    if (pool != nullptr) throw std::logic_error("typex: a large-kernel convolution takes no fused pool");
    return conv_large_kernel(g, x, wpacked, bias, act, out, scratch, threads);
  }
  const index_t ocg = g.oc / g.groups, krows = g.krows(), cols = g.cols();
  const index_t per_thread = conv_scratch<T>(g, 1, pool != nullptr), chunk = conv_chunk<T>(g);
  const std::optional<winograd_layout<T>> wl = g.winograd ? std::optional<winograd_layout<T>>(g) : std::nullopt;
  // image n's convolution into conv_out: by Winograd's tiles, or im2col + GEMM (t threads inside
  // each product). Over t threads, one image's tiles are handed out from a counter in pieces of
  // whole panels (winograd_piece), each participant in its own scratch slice, scratch + p *
  // per_thread. Against static halves on the CNN at batch 1 on 2 threads (benchmarks/paired.py):
  // 1.036 / 1.171 (31 / 15 pairs), quartiles across 1.0: within the noise.
  // (a 2x2 / stride 2 pool on Winograd's tiles is done by the output transform: winograd_pool)
  const bool tile_pool = wl && pool != nullptr && winograd_pool_fits(*pool);
  auto convolve = [&](index_t n, T* conv_out, T* sc, int t) {
    const T* img = x + n * g.s.c * g.s.h * g.s.w;
    if (wl) {
      const winograd_pool<T> wp = tile_pool ? winograd_pool<T>{out + n * g.oc * pool->oh * pool->ow, pool->oh, pool->ow} : winograd_pool<T>{};
      if (t <= 1) return winograd_tiles(g, *wl, img, wpacked, bias, act, conv_out, sc, 0, wl->tiles, wp);
      const index_t piece = winograd_piece(*wl, t), pieces = (wl->tiles + piece - 1) / piece;
      auto task = [&](std::int64_t i, int p) {
        const index_t t0 = static_cast<index_t>(i) * piece;
        winograd_tiles(g, *wl, img, wpacked, bias, act, conv_out, sc + p * per_thread, t0, std::min(wl->tiles, t0 + piece), wp);
      };
      return thread_pool::instance().run_dynamic(t, pieces, task);
    }
    for (index_t gi = 0; gi < g.groups; ++gi) {
      gemm_epilogue<T> ep;
      ep.bias = bias != nullptr ? bias + gi * ocg : nullptr;
      ep.bias_per_row = true;
      ep.act = act;
      const packed_lhs<T> w{ocg, krows, wpacked + gi * ocg * krows};
      for (index_t j0 = 0; j0 < cols; j0 += chunk) {
        const packed_rhs<T> col = im2col_packed(g, img + gi * g.icg * g.s.h * g.s.w, sc, j0, std::min(cols, j0 + chunk));
        gemm<T>(w, col, conv_out + gi * ocg * cols + j0, cols, ep, t);
      }
    }
  };
  // the max-pool of image n's convolution (in cache), over t threads by channel; on one thread in
  // `rows` (the slice's own: which thread takes which image changes from call to call, and a
  // thread's own buffer, grown the first time that thread pooled, allocated in a later call)
  auto pool_image = [&](index_t n, const T* conv_out, int t, T* rows) {
    const index_t plane = pool->oh * pool->ow;
    if (t <= 1) {
      for (index_t c = 0; c < g.oc; ++c) max_pool_plane(*pool, conv_out + c * cols, out + (n * g.oc + c) * plane, rows);
      return;
    }
    parallel_for(g.oc, cols, t, [&](index_t c0, index_t c1) {
      T* own = pool_scratch<T>().get(static_cast<std::size_t>(pool->oh * pool->s.w));
      for (index_t c = c0; c < c1; ++c) max_pool_plane(*pool, conv_out + c * cols, out + (n * g.oc + c) * plane, own);
    });
  };
  auto image = [&](index_t n, T* sc, int t) {
    // (pooled: the convolution goes to the end of the first scratch slice, past every thread's work
    // area, and the pool's rows just before it)
    T* conv_out = pool != nullptr ? sc + (per_thread - g.oc * cols) : out + n * g.oc * cols;
    convolve(n, conv_out, sc, t);
    if (pool != nullptr && !tile_pool) pool_image(n, conv_out, t, conv_out - cols);
  };
  if (threads > 1 && g.s.n >= threads) {
    // (images handed out one at a time: on a shared machine a thread that loses its CPU for a
    // while no longer holds up the others with the rest of a static half — the CNN's 2-thread
    // speed-up at batch 32 / 256 was 1.45x / 1.26x with static halves where ONNX Runtime got 1.8x)
    auto task = [&](index_t n, int p) { image(n, scratch + p * per_thread, 1); };
    thread_pool::instance().run_dynamic(threads, g.s.n, task);
  } else {
    for (index_t n = 0; n < g.s.n; ++n) image(n, scratch, threads);
  }
}

inline any_tensor conv2d(const kernel_args& a) {
  const any_tensor& x = a.tensor("input");
  const any_tensor& w = a.tensor("weight");
  const any_tensor* b = a.optional_tensor("bias");
  const conv_geometry g = conv_geometry_of(a, x, w, b ? std::optional<index_t>(b->numel()) : std::nullopt);
  const dtype d = promote_types(x.scalar_type(), w.scalar_type());
  any_tensor out = a.result(d, nchw_extents(g.s, g.oc, g.oh, g.ow));
  dispatch_gemm(d, a.target(), [&](auto tag) {
    using T = decltype(tag);
    const any_tensor X = to_dtype(x, d), W = to_dtype(w, d);
    const any_tensor B = b != nullptr ? to_dtype(*b, d) : any_tensor();
    const int threads = num_threads();
    std::vector<T> scratch(static_cast<std::size_t>(conv_scratch<T>(g, threads)));
    std::vector<T> wpacked(static_cast<std::size_t>(conv_packed_weights<T>(g)));
    conv_pack_weights(g, W.data<T>(), wpacked.data());
    conv2d_into<T>(g, X.data<T>(), g.large_kernel ? W.data<T>() : wpacked.data(), b != nullptr ? B.data<T>() : nullptr,
                   activation{}, out.data<T>(), scratch.data(), threads);
  });
  return out;
}

template <bool Max, class T>
void pool2d_into(const pool_geometry& g, const T* px, T* po, int threads) {
  using C = compute_t<T>;
  const auto& s = g.s;
  const auto& k = g.k;
  const auto& stride = g.stride;
  const auto& pad = g.pad;
  const auto& dil = g.dil;
  const index_t oh = g.oh, ow = g.ow;
  if constexpr (Max && std::is_floating_point_v<T>) {
    if (max_pool_direct(g)) {
      // every window inside the image (the common case). Per plane, the
      // max over the window's rows first (contiguous rows: vectorised), then over its columns —
      // one flat strided pass over the plane when the rows hold no leftover columns (so that a
      // 12-wide output row does not run as scalar code). ~8x the general loop below.
      parallel_for(s.n * s.c, oh * ow * k[0] * k[1], threads, [&](index_t p0, index_t p1) {
        T* rows = pool_scratch<T>().get(static_cast<std::size_t>(oh * s.w));
        for (index_t plane = p0; plane < p1; ++plane) max_pool_plane(g, px + plane * s.h * s.w, po + plane * oh * ow, rows);
      });
      return;
    }
  }
  parallel_for(s.n * s.c, oh * ow * k[0] * k[1], threads, [&](index_t p0, index_t p1) {
    for (index_t plane = p0; plane < p1; ++plane) {
      const T* img = px + plane * s.h * s.w;
      T* o = po + plane * oh * ow;
      for (index_t y = 0; y < oh; ++y)
        for (index_t xx = 0; xx < ow; ++xx) {
          const index_t y0 = y * stride[0] - pad[0], x0 = xx * stride[1] - pad[1];
          if constexpr (Max) {
            C best = std::numeric_limits<C>::lowest();
            if constexpr (std::is_floating_point_v<C>) best = -std::numeric_limits<C>::infinity();
            const bool inside = y0 >= 0 && x0 >= 0 && y0 + (k[0] - 1) * dil[0] < s.h && x0 + (k[1] - 1) * dil[1] < s.w;
            for (index_t i = 0; i < k[0]; ++i)
              for (index_t j = 0; j < k[1]; ++j) {
                const index_t iy = y0 + i * dil[0], ix = x0 + j * dil[1];
                if (!inside && (iy < 0 || iy >= s.h || ix < 0 || ix >= s.w)) continue;
                const C v = convert<C>(img[iy * s.w + ix]);
                best = nan_max(best, v);  // (NaN propagates, as in PyTorch)
              }
            o[y * ow + xx] = convert<T>(best);
          } else {
            const index_t y1 = std::min(y0 + k[0], s.h + pad[0]), x1 = std::min(x0 + k[1], s.w + pad[1]);
            const index_t pool = (y1 - y0) * (x1 - x0);
            const index_t ya = std::max<index_t>(y0, 0), xa = std::max<index_t>(x0, 0);
            const index_t yb = std::min(y1, s.h), xb = std::min(x1, s.w);
            C sum = 0;
            for (index_t iy = ya; iy < yb; ++iy)
              for (index_t ix = xa; ix < xb; ++ix) sum += convert<C>(img[iy * s.w + ix]);
            const index_t div = g.divisor != 0 ? g.divisor : g.include_pad ? pool : (yb - ya) * (xb - xa);
            o[y * ow + xx] = convert<T>(sum / static_cast<C>(div));
          }
        }
    }
  });
}

// max_pool2d: (self, kernel_size, stride, padding, dilation, ceil_mode)
// avg_pool2d: (self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)
template <bool Max>
any_tensor pool2d(const kernel_args& a) {
  const any_tensor& x = a.tensor("self");
  const pool_geometry g = pool_geometry_of<Max>(a, x);
  any_tensor out = a.result(x.scalar_type(), nchw_extents(g.s, g.s.c, g.oh, g.ow));
  dispatch<Max ? false : true>(x.scalar_type(), a.target(), [&](auto tag) {
    using T = decltype(tag);
    pool2d_into<Max, T>(g, x.data<T>(), out.data<T>(), num_threads());
  });
  return out;
}

inline any_tensor adaptive_avg_pool2d(const kernel_args& a) {
  const any_tensor& x = a.tensor("self");
  const nchw s = nchw_of(a.target(), x);
  const auto size = pair_of(a, "output_size", {1, 1});
  if (size[0] < 1 || size[1] < 1) a.fail_text("output_size", "should be at least 1x1");
  const index_t oh = size[0], ow = size[1];
  any_tensor out = a.result(x.scalar_type(), nchw_extents(s, s.c, oh, ow));
  dispatch<true>(x.scalar_type(), a.target(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const T* px = x.data<T>();
    T* po = out.data<T>();
    for (index_t plane = 0; plane < s.n * s.c; ++plane) {
      const T* img = px + plane * s.h * s.w;
      for (index_t y = 0; y < oh; ++y) {
        const index_t ya = y * s.h / oh, yb = ((y + 1) * s.h + oh - 1) / oh;
        for (index_t xx = 0; xx < ow; ++xx) {
          const index_t xa = xx * s.w / ow, xb = ((xx + 1) * s.w + ow - 1) / ow;
          C sum = 0;
          for (index_t iy = ya; iy < yb; ++iy)
            for (index_t ix = xa; ix < xb; ++ix) sum += convert<C>(img[iy * s.w + ix]);
          po[(plane * oh + y) * ow + xx] = convert<T>(sum / static_cast<C>((yb - ya) * (xb - xa)));
        }
      }
    }
  });
  return out;
}

// The gradients of the pools, for the backward programs: (grad_output, self, then the forward's
// arguments). Each output element's gradient goes back over its window: to the window's maximum
// (the first one in the forward's scan, or its last NaN: the element max_pool2d returned), or
// spread over the window as the average divided it.
template <bool Max>
any_tensor pool2d_backward(const kernel_args& a) {
  const any_tensor& x = a.tensor("self");
  const any_tensor& go = a.tensor("grad_output");
  const pool_geometry g = pool_geometry_of<Max>(a, x);
  if (go.extents() != nchw_extents(g.s, g.s.c, g.oh, g.ow) || go.scalar_type() != x.scalar_type())
    rank_error(a.target(), "grad_output", go, "the pool's output shape and the input's dtype");
  any_tensor out = a.result(x.scalar_type(), x.extents(), false);  // (both paths write every element)
  dispatch<true>(x.scalar_type(), a.target(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const auto& s = g.s;
    const index_t oh = g.oh, ow = g.ow;
    if constexpr (Max && std::is_same_v<C, T>) {
      if (max_pool_direct(g)) {  // (every window inside the image: no bounds to check, the sums in place)
        parallel_for(s.n * s.c, s.h * s.w + oh * ow * g.k[0] * g.k[1], num_threads(), [&](index_t p0, index_t p1) {
          for (index_t plane = p0; plane < p1; ++plane) {
            const T* img = x.data<T>() + plane * s.h * s.w;
            const T* gp = go.data<T>() + plane * oh * ow;
            T* o = out.data<T>() + plane * s.h * s.w;
            std::fill(o, o + s.h * s.w, T(0));
            for (index_t y = 0; y < oh; ++y)
              for (index_t xx = 0; xx < ow; ++xx) {
                const index_t base = y * g.stride[0] * s.w + xx * g.stride[1];
                T best = -std::numeric_limits<T>::infinity();
                index_t at = base;  // (the forward's choice, as below)
                // (bit masks, not branches: on real activations which element wins is a coin toss,
                // and a mispredicted branch per comparison made this pass 9 % of the CNN's step)
                using U = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
                for (index_t i = 0; i < g.k[0]; ++i)
                  for (index_t j = 0; j < g.k[1]; ++j) {
                    const index_t k = base + i * s.w + j;
                    const T v = img[k];
                    const bool take = (v > best) | (v != v);
                    const U m = U(0) - U(take);
                    best = std::bit_cast<T>((std::bit_cast<U>(v) & m) | (std::bit_cast<U>(best) & ~m));
                    const index_t mi = -static_cast<index_t>(take);
                    at = (k & mi) | (at & ~mi);
                  }
                o[at] += gp[y * ow + xx];
              }
          }
        });
        return;
      }
    }
    parallel_for(s.n * s.c, s.h * s.w + oh * ow * g.k[0] * g.k[1], num_threads(), [&](index_t p0, index_t p1) {
      std::vector<C> acc(static_cast<std::size_t>(s.h * s.w));
      for (index_t plane = p0; plane < p1; ++plane) {
        const T* img = x.data<T>() + plane * s.h * s.w;
        const T* gp = go.data<T>() + plane * oh * ow;
        std::fill(acc.begin(), acc.end(), C(0));
        for (index_t y = 0; y < oh; ++y)
          for (index_t xx = 0; xx < ow; ++xx) {
            const index_t y0 = y * g.stride[0] - g.pad[0], x0 = xx * g.stride[1] - g.pad[1];
            const C grad = convert<C>(gp[y * ow + xx]);
            if constexpr (Max) {
              // the forward's choice (nan_max from -inf): the first maximum, a later NaN over
              // anything; a window of -inf gives its first element (as torch's index)
              C best = -std::numeric_limits<C>::infinity();
              index_t at = -1;
              for (index_t i = 0; i < g.k[0]; ++i)
                for (index_t j = 0; j < g.k[1]; ++j) {
                  const index_t iy = y0 + i * g.dil[0], ix = x0 + j * g.dil[1];
                  if (iy < 0 || iy >= s.h || ix < 0 || ix >= s.w) continue;
                  const C v = convert<C>(img[iy * s.w + ix]);
                  if (at < 0) at = iy * s.w + ix;
                  if (v > best || v != v) {
                    best = v;
                    at = iy * s.w + ix;
                  }
                }
              if (at >= 0) acc[static_cast<std::size_t>(at)] += grad;
            } else {
              const index_t y1 = std::min(y0 + g.k[0], s.h + g.pad[0]), x1 = std::min(x0 + g.k[1], s.w + g.pad[1]);
              const index_t ya = std::max<index_t>(y0, 0), xa = std::max<index_t>(x0, 0);
              const index_t yb = std::min(y1, s.h), xb = std::min(x1, s.w);
              const index_t div = g.divisor != 0 ? g.divisor : g.include_pad ? (y1 - y0) * (x1 - x0) : (yb - ya) * (xb - xa);
              const C share = grad / static_cast<C>(div);
              for (index_t iy = ya; iy < yb; ++iy)
                for (index_t ix = xa; ix < xb; ++ix) acc[static_cast<std::size_t>(iy * s.w + ix)] += share;
            }
          }
        T* o = out.data<T>() + plane * s.h * s.w;
        for (index_t i = 0; i < s.h * s.w; ++i) o[i] = convert<T>(acc[static_cast<std::size_t>(i)]);
      }
    });
  });
  return out;
}

// (grad_output, self): adaptive_avg_pool2d's windows, each output's gradient spread over its own.
inline any_tensor adaptive_avg_pool2d_backward(const kernel_args& a) {
  const any_tensor& x = a.tensor("self");
  const any_tensor& go = a.tensor("grad_output");
  const nchw s = nchw_of(a.target(), x);
  if (go.rank() != x.rank() || go.scalar_type() != x.scalar_type())
    rank_error(a.target(), "grad_output", go, "of the input's rank and dtype");
  const index_t oh = go.extents()[go.rank() - 2], ow = go.extents()[go.rank() - 1];
  any_tensor out = a.result(x.scalar_type(), x.extents());
  dispatch<true>(x.scalar_type(), a.target(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    std::vector<C> acc(static_cast<std::size_t>(s.h * s.w));
    for (index_t plane = 0; plane < s.n * s.c; ++plane) {
      std::fill(acc.begin(), acc.end(), C(0));
      const T* gp = go.data<T>() + plane * oh * ow;
      for (index_t y = 0; y < oh; ++y) {
        const index_t ya = y * s.h / oh, yb = ((y + 1) * s.h + oh - 1) / oh;
        for (index_t xx = 0; xx < ow; ++xx) {
          const index_t xa = xx * s.w / ow, xb = ((xx + 1) * s.w + ow - 1) / ow;
          const C share = convert<C>(gp[y * ow + xx]) / static_cast<C>((yb - ya) * (xb - xa));
          for (index_t iy = ya; iy < yb; ++iy)
            for (index_t ix = xa; ix < xb; ++ix) acc[static_cast<std::size_t>(iy * s.w + ix)] += share;
        }
      }
      T* o = out.data<T>() + plane * s.h * s.w;
      for (index_t i = 0; i < s.h * s.w; ++i) o[i] = convert<T>(acc[static_cast<std::size_t>(i)]);
    }
  });
  return out;
}

// (grad_output [*, D], indices [*], num_weights, padding_idx, scale_grad_by_freq): the rows of
// grad_output summed into the rows their indices name (none into padding_idx); with
// scale_grad_by_freq each row divided by how often its index occurs.
inline any_tensor embedding_dense_backward(const kernel_args& a) {
  const any_tensor& go = a.tensor("grad_output");
  const any_tensor& idx = a.tensor("indices");
  if (!(idx.scalar_type() == dtype::i64 || idx.scalar_type() == dtype::i32))
    rank_error(a.target(), "indices", idx, "an i64 or i32 tensor");
  const any_tensor I = to_dtype(idx, dtype::i64);
  const index_t rows = a.integer("num_weights"), n = I.numel();
  const std::int64_t padding = a.integer("padding_idx");
  const bool by_freq = a.flag("scale_grad_by_freq");
  if (go.rank() != I.rank() + 1 || !std::equal(I.extents().begin(), I.extents().end(), go.extents().begin()))
    rank_error(a.target(), "grad_output", go, "the indices' shape and one more dim");
  const index_t dim = go.extents().back();
  any_tensor out = a.result(go.scalar_type(), {rows, dim});
  const std::int64_t* pi = I.data<std::int64_t>();
  std::vector<index_t> freq(by_freq ? static_cast<std::size_t>(rows) : 0);
  for (index_t i = 0; i < n; ++i) {
    if (pi[i] < 0 || pi[i] >= rows) {
      raise<argument_error>([&](auto& o) {
        o.put(a.target()); o.put(": index "); o.put_int(pi[i]); o.put(" is out of range for "); o.put_int(rows); o.put(" embeddings");
      });
    }
    if (by_freq) ++freq[static_cast<std::size_t>(pi[i])];
  }
  dispatch<true>(go.scalar_type(), a.target(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    std::vector<C> acc(static_cast<std::size_t>(rows * dim), C(0));
    const T* g = go.data<T>();
    for (index_t i = 0; i < n; ++i) {
      if (pi[i] == padding) continue;
      const C scale = by_freq ? C(1) / static_cast<C>(freq[static_cast<std::size_t>(pi[i])]) : C(1);
      C* dst = acc.data() + pi[i] * dim;
      for (index_t j = 0; j < dim; ++j) dst[j] += scale * convert<C>(g[i * dim + j]);
    }
    T* o = out.data<T>();
    for (index_t i = 0; i < rows * dim; ++i) o[i] = convert<T>(acc[static_cast<std::size_t>(i)]);
  });
  return out;
}

inline any_tensor embedding(const kernel_args& a) {
  const any_tensor& w = a.tensor("weight");
  const any_tensor& idx = a.tensor("indices");
  if (w.rank() != 2) rank_error(a.target(), "weight", w, "[num_embeddings, embedding_dim]");
  const index_t rows = w.extents()[0], dim = w.extents()[1];
  std::vector<index_t> oe = idx.extents();
  oe.push_back(dim);
  any_tensor out = a.result(w.scalar_type(), oe);
  const std::size_t row_bytes = static_cast<std::size_t>(dim) * itemsize(w.scalar_type());
  const any_tensor I = to_dtype(idx, dtype::i64);
  if (!(idx.scalar_type() == dtype::i64 || idx.scalar_type() == dtype::i32))
    rank_error(a.target(), "indices", idx, "an i64 or i32 tensor");
  const std::int64_t* pi = I.data<std::int64_t>();
  for (index_t i = 0, n = idx.numel(); i < n; ++i) {
    if (pi[i] < 0 || pi[i] >= rows) {
      raise<argument_error>([&](auto& o) {
        o.put(a.target()); o.put(": index "); o.put_int(pi[i]); o.put(" is out of range for "); o.put_int(rows);
        o.put(" embeddings");
      });
    }
    std::memcpy(out.raw_data() + static_cast<std::size_t>(i) * row_bytes, w.raw_data() + static_cast<std::size_t>(pi[i]) * row_bytes,
                row_bytes);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------

}  // namespace typex::eigen::detail

// The kernels of this family's ops (kernels_impl.hpp builds the table from the registry).
namespace typex::eigen {
TYPEX_EIGEN_KERNEL(aten::conv2d, detail::conv2d);
TYPEX_EIGEN_KERNEL(aten::max_pool2d, detail::pool2d<true>);
TYPEX_EIGEN_KERNEL(aten::avg_pool2d, detail::pool2d<false>);
TYPEX_EIGEN_KERNEL(aten::adaptive_avg_pool2d, detail::adaptive_avg_pool2d);
TYPEX_EIGEN_KERNEL(embedding_op, detail::embedding);
TYPEX_EIGEN_KERNEL(max_pool2d_backward_op, detail::pool2d_backward<true>);
TYPEX_EIGEN_KERNEL(aten::avg_pool2d_backward, detail::pool2d_backward<false>);
TYPEX_EIGEN_KERNEL(aten::_adaptive_avg_pool2d_backward, detail::adaptive_avg_pool2d_backward);
TYPEX_EIGEN_KERNEL(aten::embedding_dense_backward, detail::embedding_dense_backward);
}  // namespace typex::eigen
