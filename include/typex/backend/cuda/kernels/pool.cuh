// typex/backend/cuda/kernels/pool.cuh — 2-D pooling of f32 and f64 planes: max, average and adaptive
// average, one thread per output element (grid-stride), the window read straight from the input.
#pragma once

#include <typex/backend/cuda/kernel_api.cuh>
#include <typex/backend/cuda/launch.hpp>

#include <cstdint>
#include <limits>
#include <type_traits>

namespace typex::cuda::kernels {
inline namespace TYPEX_CUDA_ABI {  // (kernel_api.cuh: native or emulated)

namespace detail {
// The window of output (oy, ox): [y0, y1) x [x0, x1) before clipping to the image.
TYPEX_DEVICE void pool_window(const pool_params& p, std::int64_t oy, std::int64_t ox, std::int64_t& y0, std::int64_t& y1, std::int64_t& x0,
                              std::int64_t& x1) {
  if (p.kind == pool_kind::adaptive_avg || p.kind == pool_kind::adaptive_avg_backward) {
    y0 = oy * p.h / p.oh, y1 = ((oy + 1) * p.h + p.oh - 1) / p.oh;
    x0 = ox * p.w / p.ow, x1 = ((ox + 1) * p.w + p.ow - 1) / p.ow;
  } else {
    y0 = oy * p.stride[0] - p.pad[0], y1 = y0 + (p.k[0] - 1) * p.dil[0] + 1;
    x0 = ox * p.stride[1] - p.pad[1], x1 = x0 + (p.k[1] - 1) * p.dil[1] + 1;
  }
}
// avg_pool2d's divisor for the window (count_include_pad, divisor_override), or the adaptive window's size.
TYPEX_DEVICE std::int64_t pool_count(const pool_params& p, std::int64_t y0, std::int64_t y1, std::int64_t x0, std::int64_t x1) {
  if (p.kind == pool_kind::adaptive_avg || p.kind == pool_kind::adaptive_avg_backward) return (y1 - y0) * (x1 - x0);
  if (p.divisor != 0) return p.divisor;
  if (p.include_pad) {  // (the window clipped to the padded image, as torch)
    const std::int64_t py1 = y1 > p.h + p.pad[0] ? p.h + p.pad[0] : y1, px1 = x1 > p.w + p.pad[1] ? p.w + p.pad[1] : x1;
    return (py1 - y0) * (px1 - x0);
  }
  const std::int64_t cy0 = y0 < 0 ? 0 : y0, cy1 = y1 > p.h ? p.h : y1, cx0 = x0 < 0 ? 0 : x0, cx1 = x1 > p.w ? p.w : x1;
  return (cy1 - cy0) * (cx1 - cx0);
}
// The flat position in its plane of window (oy, ox)'s maximum: the first of equal numbers, the last
// NaN where there is one (torch's and the Eigen backend's rule); -1 if the window is empty.
template <class T>
TYPEX_DEVICE std::int64_t window_argmax(const pool_params& p, const T* x, std::int64_t oy, std::int64_t ox) {
  std::int64_t y0, y1, x0, x1;
  pool_window(p, oy, ox, y0, y1, x0, x1);
  T v = -std::numeric_limits<T>::infinity();
  std::int64_t at = -1;
  for (std::int64_t yy = y0; yy < y1; yy += p.dil[0]) {
    if (yy < 0 || yy >= p.h) continue;
    for (std::int64_t xx = x0; xx < x1; xx += p.dil[1]) {
      if (xx < 0 || xx >= p.w) continue;
      const T e = x[yy * p.w + xx];
      if (at < 0 || e > v || e != e) v = e, at = yy * p.w + xx;  // (every NaN takes it: the last NaN wins, as torch's)
    }
  }
  return at;
}

// The gradient of one input element: the sum over the windows that hold it.
template <class T>
TYPEX_DEVICE T pool_backward_at(const pool_params& p, std::int64_t plane, std::int64_t iy, std::int64_t ix) {
  const T* g = static_cast<const T*>(p.grad) + plane * p.oh * p.ow;
  T s = T(0);
  if (p.kind == pool_kind::adaptive_avg_backward) {
    for (std::int64_t oy = 0; oy < p.oh; ++oy) {
      const std::int64_t y0 = oy * p.h / p.oh, y1 = ((oy + 1) * p.h + p.oh - 1) / p.oh;
      if (iy < y0 || iy >= y1) continue;
      for (std::int64_t ox = 0; ox < p.ow; ++ox) {
        const std::int64_t x0 = ox * p.w / p.ow, x1 = ((ox + 1) * p.w + p.ow - 1) / p.ow;
        if (ix >= x0 && ix < x1) s += g[oy * p.ow + ox] / static_cast<T>((y1 - y0) * (x1 - x0));
      }
    }
    return s;
  }
  // windows oy with oy stride - pad <= iy <= oy stride - pad + (k - 1) dil
  const std::int64_t reach_y = (p.k[0] - 1) * p.dil[0], reach_x = (p.k[1] - 1) * p.dil[1];
  std::int64_t oy0 = iy + p.pad[0] - reach_y, ox0 = ix + p.pad[1] - reach_x;
  oy0 = oy0 <= 0 ? 0 : (oy0 + p.stride[0] - 1) / p.stride[0];
  ox0 = ox0 <= 0 ? 0 : (ox0 + p.stride[1] - 1) / p.stride[1];
  const std::int64_t oy1 = (iy + p.pad[0]) / p.stride[0], ox1 = (ix + p.pad[1]) / p.stride[1];
  const T* x = static_cast<const T*>(p.in) + plane * p.h * p.w;
  for (std::int64_t oy = oy0; oy <= oy1 && oy < p.oh; ++oy) {
    if ((iy + p.pad[0] - oy * p.stride[0]) % p.dil[0] != 0) continue;
    for (std::int64_t ox = ox0; ox <= ox1 && ox < p.ow; ++ox) {
      if ((ix + p.pad[1] - ox * p.stride[1]) % p.dil[1] != 0) continue;
      if (p.kind == pool_kind::max_backward) {
        if (window_argmax(p, x, oy, ox) == iy * p.w + ix) s += g[oy * p.ow + ox];
      } else {
        std::int64_t y0, y1, x0, x1;
        pool_window(p, oy, ox, y0, y1, x0, x1);
        s += g[oy * p.ow + ox] / static_cast<T>(pool_count(p, y0, y1, x0, x1));
      }
    }
  }
  return s;
}
}  // namespace detail

// Launch geometry: pool_launch (elementwise over planes x oh x ow; the backward kinds over planes x
// h x w).
template <class T>
TYPEX_GLOBAL void pool2d_kernel(const TYPEX_GRID_CONSTANT pool_params p) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "typex::cuda: pool2d_kernel pools f32 or f64 planes");
  T* const out = static_cast<T*>(p.out);
  if (p.kind == pool_kind::max_backward || p.kind == pool_kind::avg_backward || p.kind == pool_kind::adaptive_avg_backward) {
    const std::int64_t n = p.planes * p.h * p.w;
    const std::int64_t step = static_cast<std::int64_t>(block_dim().x) * grid_dim().x;
    for (std::int64_t i = static_cast<std::int64_t>(block_idx().x) * block_dim().x + thread_idx().x; i < n; i += step)
      out[i] = detail::pool_backward_at<T>(p, i / (p.h * p.w), i / p.w % p.h, i % p.w);
    return;
  }
  const std::int64_t n = p.planes * p.oh * p.ow;
  const std::int64_t step = static_cast<std::int64_t>(block_dim().x) * grid_dim().x;
  for (std::int64_t i = static_cast<std::int64_t>(block_idx().x) * block_dim().x + thread_idx().x; i < n; i += step) {
    const std::int64_t ox = i % p.ow, oy = i / p.ow % p.oh, plane = i / (p.ow * p.oh);
    const T* x = static_cast<const T*>(p.in) + plane * p.h * p.w;
    std::int64_t y0, y1, x0, x1;  // the window [y0, y1) x [x0, x1), before clipping to the image
    detail::pool_window(p, oy, ox, y0, y1, x0, x1);
    T v;
    if (p.kind == pool_kind::max) {
      v = -std::numeric_limits<T>::infinity();
      for (std::int64_t yy = y0; yy < y1; yy += p.dil[0]) {
        if (yy < 0 || yy >= p.h) continue;
        for (std::int64_t xx = x0; xx < x1; xx += p.dil[1]) {
          if (xx < 0 || xx >= p.w) continue;
          const T e = x[yy * p.w + xx];
          v = e > v || e != e ? e : v;  // (a NaN wins and stays: e > NaN is false)
          if (v != v) break;
        }
      }
    } else {
      T s = T(0);
      const std::int64_t cy0 = y0 < 0 ? 0 : y0, cy1 = y1 > p.h ? p.h : y1;
      const std::int64_t cx0 = x0 < 0 ? 0 : x0, cx1 = x1 > p.w ? p.w : x1;
      for (std::int64_t yy = cy0; yy < cy1; ++yy)
        for (std::int64_t xx = cx0; xx < cx1; ++xx) s += x[yy * p.w + xx];
      const std::int64_t count = detail::pool_count(p, y0, y1, x0, x1);
      v = s / static_cast<T>(count);
    }
    out[i] = v;
  }
}

}  // inline namespace TYPEX_CUDA_ABI
}  // namespace typex::cuda::kernels
