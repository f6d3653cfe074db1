// typex/backend/cuda/dnn_reference.hpp — the emulated device's model of cuDNN's forward convolution.
//
// The emulated device runs a dnn_convolution (dnn.hpp) by this reference instead of the library. As
// lt_reference.hpp does for cuBLASLt, the model knows nothing of how dnn.hpp built the convolution:
// it reads every fact it depends on back from the real cuDNN descriptors (cudnnGetTensor4dDescriptor
// with the strides, cudnnGetFilter4dDescriptor, cudnnGetConvolution2dDescriptor, the group count and
// the math type) and computes, with products summed in double,
//
//     y[n, o, i, j] = sum over c in o's group, r, s of x[n, c, i·u - p + r·d, j·v - q + s·d'] · w[o, c', r, s]
//
// (torch's conv2d: cross-correlation, zero padding). A wrong padding, stride, dilation, group count,
// stride of a tensor or layout in a descriptor therefore changes the result here as it would on a GPU
// (tests/unit/cuda/cudnn.cpp plants them). Under CUDNN_DEFAULT_MATH (TF32 allowed) an f32 operand is
// read rounded to nearest TF32 (11 significant bits, lt_reference.hpp's operand_rounding), one
// rounding a GPU may make (it may also truncate: the GPU test's bound allows for that); under
// CUDNN_FMA_MATH it is read whole.
//
// Like cuDNN, the model refuses inconsistent descriptors (channels that do not match the filter's
// times the groups, an output whose extents are not the convolution's, types that differ) with the
// device_error cuDNN's CUDNN_STATUS_BAD_PARAM would give, and refuses what it does not model rather
// than guess: convolution mode (true convolution), a filter format other than NCHW, data types other
// than f32 / f64, a compute type other than the data's.
//
// The device's side of the contract is checked too: a convolution must have been chosen
// (choose_convolution) before it runs, and the call must bring at least the workspace the choice asked
// for. The model's choice asks for one image's im2col matrix of workspace (the size a GEMM algorithm
// would take), and after each call it fills the workspace with NaN bytes, as a GPU leaves it holding
// garbage: nothing may rely on the workspace between calls.
//
// Host C++ only; the addresses are host addresses on the emulated device.
#pragma once

#include <typex/backend/cuda/device.hpp>
#include <typex/backend/cuda/dnn.hpp>
#include <typex/backend/cuda/lt_reference.hpp>
#include <typex/core/error.hpp>

#include <cudnn.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

namespace typex::cuda {

namespace detail {

[[noreturn]] inline void dnn_model_error(const dnn_convolution& c, const std::string& why) {
  typex::detail::raise_message<device_error>("emulated cudnnConvolutionForward (" + c.label + "): " + why);
}

// The descriptors' facts, as cuDNN gives them back.
struct dnn_read_back {
  cudnnDataType_t x_type{}, w_type{}, y_type{}, compute{};
  int n = 0, c = 0, h = 0, w = 0, xs[4] = {};
  int k = 0, wc = 0, kh = 0, kw = 0;
  cudnnTensorFormat_t w_format{};
  int yn = 0, yc = 0, yh = 0, yw = 0, ys[4] = {};
  int pad[2] = {}, stride[2] = {}, dil[2] = {}, groups = 0;
  cudnnConvolutionMode_t mode{};
  cudnnMathType_t math{};
};

inline dnn_read_back dnn_read(const dnn_convolution& c) {
  dnn_read_back r;
  check_dnn(cudnnGetTensor4dDescriptor(c.x_desc(), &r.x_type, &r.n, &r.c, &r.h, &r.w, &r.xs[0], &r.xs[1], &r.xs[2], &r.xs[3]),
            "cudnnGetTensor4dDescriptor(x)", c.label);
  check_dnn(cudnnGetFilter4dDescriptor(c.w_desc(), &r.w_type, &r.w_format, &r.k, &r.wc, &r.kh, &r.kw),
            "cudnnGetFilter4dDescriptor", c.label);
  check_dnn(cudnnGetTensor4dDescriptor(c.y_desc(), &r.y_type, &r.yn, &r.yc, &r.yh, &r.yw, &r.ys[0], &r.ys[1], &r.ys[2], &r.ys[3]),
            "cudnnGetTensor4dDescriptor(y)", c.label);
  check_dnn(cudnnGetConvolution2dDescriptor(c.conv_desc(), &r.pad[0], &r.pad[1], &r.stride[0], &r.stride[1], &r.dil[0], &r.dil[1],
                                            &r.mode, &r.compute),
            "cudnnGetConvolution2dDescriptor", c.label);
  check_dnn(cudnnGetConvolutionGroupCount(c.conv_desc(), &r.groups), "cudnnGetConvolutionGroupCount", c.label);
  check_dnn(cudnnGetConvolutionMathType(c.conv_desc(), &r.math), "cudnnGetConvolutionMathType", c.label);
  return r;
}

template <class T>
void dnn_convolve(const dnn_read_back& d, const T* x, const T* w, T* y, bool tf32) {
  const operand_rounding round{tf32 ? 11 : 24, false};
  const auto read = [&](T v) -> double {
    if constexpr (std::is_same_v<T, float>) return round(v);
    else return v;
  };
  const int cg = d.wc, og = d.k / d.groups;
  for (int n = 0; n < d.yn; ++n)
    for (int o = 0; o < d.yc; ++o) {
      const int g = o / og;
      for (int i = 0; i < d.yh; ++i)
        for (int j = 0; j < d.yw; ++j) {
          double acc = 0.0;
          for (int ci = 0; ci < cg; ++ci) {
            const int cin = g * cg + ci;
            for (int r = 0; r < d.kh; ++r) {
              const long long hi = static_cast<long long>(i) * d.stride[0] - d.pad[0] + static_cast<long long>(r) * d.dil[0];
              if (hi < 0 || hi >= d.h) continue;
              for (int s = 0; s < d.kw; ++s) {
                const long long wi = static_cast<long long>(j) * d.stride[1] - d.pad[1] + static_cast<long long>(s) * d.dil[1];
                if (wi < 0 || wi >= d.w) continue;
                const T xv = x[static_cast<std::int64_t>(n) * d.xs[0] + static_cast<std::int64_t>(cin) * d.xs[1] + hi * d.xs[2] + wi * d.xs[3]];
                const T wv = w[((static_cast<std::int64_t>(o) * cg + ci) * d.kh + r) * d.kw + s];
                acc += read(xv) * read(wv);
              }
            }
          }
          y[static_cast<std::int64_t>(n) * d.ys[0] + static_cast<std::int64_t>(o) * d.ys[1] + static_cast<std::int64_t>(i) * d.ys[2] +
            static_cast<std::int64_t>(j) * d.ys[3]] = static_cast<T>(acc);
        }
    }
}

}  // namespace detail

// The model's choice for a convolution: the implicit-precomputed GEMM under the math the descriptor
// allows, with one image's im2col matrix of workspace (at most dnn_workspace_limit).
inline dnn_algorithm reference_choice(const dnn_convolution& c) {
  const conv_geometry& g = c.geometry;
  const std::size_t elem = c.type == typex::dtype::f64 ? 8 : 4;
  const std::size_t im2col = static_cast<std::size_t>(g.c) * static_cast<std::size_t>(g.kh * g.kw) *
                             static_cast<std::size_t>(g.oh * g.ow) * elem;
  return {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, c.allow_tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH,
          std::min(im2col, dnn_workspace_limit)};
}

// Runs `c` on host memory (the emulated device's convolution).
inline void reference_convolution(const dnn_convolution& c, const convolution_args& a) {
  using detail::dnn_model_error;
  if (!c) dnn_model_error(c, "the dnn_convolution has no descriptors (moved from?)");
  if (!c.choice) dnn_model_error(c, "no algorithm was chosen for it (choose_convolution runs at plan time, before the call)");
  if (a.workspace_bytes < c.choice->workspace_bytes || (c.choice->workspace_bytes > 0 && a.workspace == nullptr)) {
    dnn_model_error(c, "the call brings " + std::to_string(a.workspace_bytes) + " bytes of workspace, the algorithm chosen needs " +
                           std::to_string(c.choice->workspace_bytes));
  }
  const detail::dnn_read_back d = detail::dnn_read(c);
  const std::string bad = "cuDNN would return CUDNN_STATUS_BAD_PARAM: ";
  if (d.mode != CUDNN_CROSS_CORRELATION) dnn_model_error(c, "not modelled: CUDNN_CONVOLUTION (a flipped kernel); torch's conv2d is CUDNN_CROSS_CORRELATION");
  if (d.w_format != CUDNN_TENSOR_NCHW) dnn_model_error(c, "not modelled: a filter format other than NCHW");
  if (d.x_type != d.w_type || d.x_type != d.y_type || d.compute != d.x_type) dnn_model_error(c, bad + "the data and compute types differ");
  if (d.x_type != CUDNN_DATA_FLOAT && d.x_type != CUDNN_DATA_DOUBLE) dnn_model_error(c, "not modelled: a data type other than float and double");
  if (d.groups < 1 || d.c != d.wc * d.groups || d.k % d.groups != 0)
    dnn_model_error(c, bad + std::to_string(d.c) + " input channels are not the filter's " + std::to_string(d.wc) + " times " +
                           std::to_string(d.groups) + " groups, or the " + std::to_string(d.k) + " filters do not split into them");
  const auto out_extent = [](int in, int pad, int dil, int k, int stride) {
    return static_cast<int>((static_cast<long long>(in) + 2LL * pad - static_cast<long long>(dil) * (k - 1) - 1) / stride + 1);
  };
  if (d.yn != d.n || d.yc != d.k || d.yh != out_extent(d.h, d.pad[0], d.dil[0], d.kh, d.stride[0]) ||
      d.yw != out_extent(d.w, d.pad[1], d.dil[1], d.kw, d.stride[1]))
    dnn_model_error(c, bad + "the output descriptor's extents are not the convolution's");
  if (a.x == nullptr || a.w == nullptr || a.y == nullptr) dnn_model_error(c, bad + "a null operand");
  const bool tf32 = d.math != CUDNN_FMA_MATH;
  if (d.x_type == CUDNN_DATA_FLOAT) {
    detail::dnn_convolve(d, static_cast<const float*>(a.x), static_cast<const float*>(a.w), static_cast<float*>(a.y), tf32);
  } else {
    detail::dnn_convolve(d, static_cast<const double*>(a.x), static_cast<const double*>(a.w), static_cast<double*>(a.y), false);
  }
  if (a.workspace != nullptr && a.workspace_bytes != 0) std::memset(a.workspace, 0xFF, a.workspace_bytes);
}

}  // namespace typex::cuda
