// typex/backend/cuda/kernels/pool.cuh — 2-D pooling of f32 planes: max, average and adaptive
// average, one thread per output element (grid-stride), the window read straight from the input.
#pragma once

#include <typex/backend/cuda/kernel_api.cuh>
#include <typex/backend/cuda/launch.hpp>

#include <cstdint>
#include <limits>
#include <type_traits>

namespace typex::cuda::kernels {
inline namespace TYPEX_CUDA_ABI {  // (kernel_api.cuh: native or emulated)

// Launch geometry: pool_launch (elementwise over planes x oh x ow).
template <class T>
TYPEX_GLOBAL void pool2d_kernel(const TYPEX_GRID_CONSTANT pool_params p) {
  static_assert(std::is_same_v<T, float>, "typex::cuda: pool2d_kernel pools f32 planes");
  const std::int64_t n = p.planes * p.oh * p.ow;
  const std::int64_t step = static_cast<std::int64_t>(block_dim().x) * grid_dim().x;
  for (std::int64_t i = static_cast<std::int64_t>(block_idx().x) * block_dim().x + thread_idx().x; i < n; i += step) {
    const std::int64_t ox = i % p.ow, oy = i / p.ow % p.oh, plane = i / (p.ow * p.oh);
    const float* x = p.in + plane * p.h * p.w;
    std::int64_t y0, y1, x0, x1;  // the window [y0, y1) x [x0, x1), before clipping to the image
    if (p.kind == pool_kind::adaptive_avg) {
      y0 = oy * p.h / p.oh, y1 = ((oy + 1) * p.h + p.oh - 1) / p.oh;
      x0 = ox * p.w / p.ow, x1 = ((ox + 1) * p.w + p.ow - 1) / p.ow;
    } else {
      y0 = oy * p.stride[0] - p.pad[0], y1 = y0 + (p.k[0] - 1) * p.dil[0] + 1;
      x0 = ox * p.stride[1] - p.pad[1], x1 = x0 + (p.k[1] - 1) * p.dil[1] + 1;
    }
    float v;
    if (p.kind == pool_kind::max) {
      v = -std::numeric_limits<float>::infinity();
      for (std::int64_t yy = y0; yy < y1; yy += p.dil[0]) {
        if (yy < 0 || yy >= p.h) continue;
        for (std::int64_t xx = x0; xx < x1; xx += p.dil[1]) {
          if (xx < 0 || xx >= p.w) continue;
          const float e = x[yy * p.w + xx];
          v = e > v || e != e ? e : v;  // (a NaN wins and stays: e > NaN is false)
          if (v != v) break;
        }
      }
    } else {
      float s = 0.0f;
      const std::int64_t cy0 = y0 < 0 ? 0 : y0, cy1 = y1 > p.h ? p.h : y1;
      const std::int64_t cx0 = x0 < 0 ? 0 : x0, cx1 = x1 > p.w ? p.w : x1;
      for (std::int64_t yy = cy0; yy < cy1; ++yy)
        for (std::int64_t xx = cx0; xx < cx1; ++xx) s += x[yy * p.w + xx];
      std::int64_t count;
      if (p.kind == pool_kind::adaptive_avg) {
        count = (y1 - y0) * (x1 - x0);
      } else if (p.divisor != 0) {
        count = p.divisor;
      } else if (p.include_pad) {  // (the window clipped to the padded image, as torch)
        const std::int64_t py1 = y1 > p.h + p.pad[0] ? p.h + p.pad[0] : y1, px1 = x1 > p.w + p.pad[1] ? p.w + p.pad[1] : x1;
        count = (py1 - y0) * (px1 - x0);
      } else {
        count = (cy1 - cy0) * (cx1 - cx0);
      }
      v = s / static_cast<float>(count);
    }
    p.out[i] = v;
  }
}

}  // inline namespace TYPEX_CUDA_ABI
}  // namespace typex::cuda::kernels
