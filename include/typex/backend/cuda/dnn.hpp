// typex/backend/cuda/dnn.hpp — one conv2d through cuDNN: its descriptors, built with the real library
// at plan time (compile_options::convolutions = conv_engine::cudnn; the build's TYPEX_CUDNN).
//
// A dnn_convolution owns (RAII, move-only) the four legacy-API descriptors of a forward convolution:
// the input's and the output's cudnnTensorDescriptor_t (NCHW, with their strides), the weights'
// cudnnFilterDescriptor_t ([O, C / G, KH, KW], NCHW) and the cudnnConvolutionDescriptor_t (padding,
// stride, dilation, cross-correlation as torch's conv2d, the group count, the math type). As with
// cuBLASLt's (lt.hpp), creating and setting these needs no GPU and no driver, so the CPU build makes
// exactly the objects a GPU run hands to cudnnConvolutionForward, and the emulated device's model
// (dnn_reference.hpp) reads them back with cuDNN's own getters.
//
// What needs a GPU, the cudnnHandle_t and the algorithm, is the device's business
// (device_runtime::choose_convolution): the native device asks cuDNN to time every algorithm once
// per shape (cudnnFindConvolutionForwardAlgorithmEx, at plan time, never during a graph capture),
// keeps the fastest deterministic GEMM (implicit, precomputed implicit or explicit: not FFT or
// Winograd, which transform the operands and round more than a sum of products) whose workspace
// fits dnn_workspace_limit, and caches it for the process (dnn_algorithm_cache): a second plan,
// engine or module with the same shape times nothing. The choice is written into the descriptor
// (its math type) and into `choice` below.
//
// Math: f32 convolutions are exact f32 (CUDNN_FMA_MATH: FMA kernels only, no TF32) unless
// `allow_tf32` (a matmul_precision other than f32), which sets CUDNN_DEFAULT_MATH: on Ampere and
// later cuDNN may then read the operands as TF32 (torch.backends.cudnn.allow_tf32's default is
// True; typex's is False). f64 convolutions are f64.
//
// cuDNN 9 marks this API deprecated (the graph API is its successor); it is supported through 9.x,
// and it is what this header uses: one descriptor per operand, one call per convolution.
//
// Host C++ only; it includes <cudnn.h>. Users link -lcudnn (typex::cuda does where TYPEX_CUDNN).
#pragma once

#include <typex/backend/cuda/device.hpp>
#include <typex/core/dtype.hpp>
#include <typex/core/error.hpp>

#include <cudnn.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace typex::cuda {

// The most workspace one convolution's algorithm may use (a faster one that needs more is passed
// over). The plan holds one workspace, the largest its convolutions chose, outside the arena.
inline constexpr std::size_t dnn_workspace_limit = std::size_t{256} << 20;

// The shape of torch's conv2d over [n, c, h, w] with weights [oc, c / groups, kh, kw], giving
// [n, oc, oh, ow] (an unbatched input is n = 1).
struct conv_geometry {
  std::int64_t n = 1, c = 0, h = 0, w = 0;
  std::int64_t oc = 0, kh = 0, kw = 0;
  std::int64_t oh = 0, ow = 0;
  std::int64_t stride[2] = {1, 1}, pad[2] = {0, 0}, dil[2] = {1, 1};
  std::int64_t groups = 1;
};

// What a device chose for a convolution: cuDNN's algorithm, the math type it runs under and the
// workspace it needs.
struct dnn_algorithm {
  cudnnConvolutionFwdAlgo_t algorithm = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  cudnnMathType_t math = CUDNN_FMA_MATH;
  std::size_t workspace_bytes = 0;
};

namespace detail {

// Throws device_error naming the cuDNN call, the status and what was being built, unless `s` is
// CUDNN_STATUS_SUCCESS. (cudnnGetErrorString is a host-only table lookup.)
inline void check_dnn(cudnnStatus_t s, std::string_view call, std::string_view what) {
  if (s == CUDNN_STATUS_SUCCESS) [[likely]] return;
  std::string message = "cuDNN: ";
  message.append(call).append(" failed with ").append(cudnnGetErrorString(s));
  message.append(" (status ").append(std::to_string(static_cast<int>(s))).append(")");
  if (!what.empty()) message.append(" while building ").append(what);
  typex::detail::raise_message<device_error>(std::move(message));
}

// cuDNN's data type of a typex dtype (f32 and f64; others refused).
inline cudnnDataType_t dnn_type_of(typex::dtype t, std::string_view what) {
  if (t == typex::dtype::f32) return CUDNN_DATA_FLOAT;
  if (t == typex::dtype::f64) return CUDNN_DATA_DOUBLE;
  std::string message = "cuDNN convolution ";
  message.append(what).append(": dtype ").append(name(t)).append(" is not supported by typex's cuDNN path (f32 and f64 are)");
  typex::detail::raise_message<unsupported_error>(std::move(message));
}

}  // namespace detail

// The descriptors of one forward convolution (see the header comment). Move-only; destroying it
// destroys the descriptors. The model and the native device read everything from the handles; the
// C++ fields below describe (messages, the cache's key).
struct dnn_convolution {
  dnn_convolution() = default;
  dnn_convolution(const dnn_convolution&) = delete;
  dnn_convolution& operator=(const dnn_convolution&) = delete;
  dnn_convolution(dnn_convolution&& o) noexcept { swap(o); }
  dnn_convolution& operator=(dnn_convolution&& o) noexcept {
    if (this != &o) {
      dnn_convolution gone(std::move(o));
      swap(gone);
    }
    return *this;
  }
  ~dnn_convolution() { release(); }

  cudnnTensorDescriptor_t x_desc() const noexcept { return x_; }
  cudnnFilterDescriptor_t w_desc() const noexcept { return w_; }
  cudnnConvolutionDescriptor_t conv_desc() const noexcept { return conv_; }
  cudnnTensorDescriptor_t y_desc() const noexcept { return y_; }
  explicit operator bool() const noexcept { return conv_ != nullptr; }

  // Builds the descriptors; every extent is checked (cuDNN's 4-d descriptors take int), and the
  // output extents cuDNN computes from them must be the graph's.
  // `label` names it in messages (empty: its geometry, detail::conv_label).
  static dnn_convolution build(const conv_geometry& g, typex::dtype t, bool allow_tf32, std::string label);

  // Records a device's choice: the descriptor's math type becomes the algorithm's.
  void choose(const dnn_algorithm& a) {
    detail::check_dnn(cudnnSetConvolutionMathType(conv_, a.math), "cudnnSetConvolutionMathType", label);
    choice = a;
  }

  // What the algorithm cache keys on: the geometry, the dtype and the math allowed.
  std::string key() const {
    std::string k;
    const std::int64_t v[] = {geometry.n, geometry.c, geometry.h, geometry.w, geometry.oc, geometry.kh, geometry.kw,
                              geometry.oh, geometry.ow, geometry.stride[0], geometry.stride[1], geometry.pad[0],
                              geometry.pad[1], geometry.dil[0], geometry.dil[1], geometry.groups};
    for (const std::int64_t e : v) k.append(std::to_string(e)).push_back(',');
    k.append(name(type)).append(allow_tf32 ? ",tf32" : ",exact");
    return k;
  }

  typex::dtype type = typex::dtype::f32;
  conv_geometry geometry{};
  bool allow_tf32 = false;
  // The device's choice (choose_convolution), made at plan time; empty until then.
  std::optional<dnn_algorithm> choice;
  // What the convolution is, for messages: "conv2d n=8 c=3 h=32 w=32 oc=16 k=3x3 f32".
  std::string label;

 private:
  void swap(dnn_convolution& o) noexcept {
    std::swap(x_, o.x_);
    std::swap(w_, o.w_);
    std::swap(conv_, o.conv_);
    std::swap(y_, o.y_);
    std::swap(type, o.type);
    std::swap(geometry, o.geometry);
    std::swap(allow_tf32, o.allow_tf32);
    std::swap(choice, o.choice);
    std::swap(label, o.label);
  }
  // (Destroy cannot fail for a descriptor that Create gave; its status is ignored in a destructor.)
  void release() noexcept {
    if (y_ != nullptr) cudnnDestroyTensorDescriptor(y_);
    if (conv_ != nullptr) cudnnDestroyConvolutionDescriptor(conv_);
    if (w_ != nullptr) cudnnDestroyFilterDescriptor(w_);
    if (x_ != nullptr) cudnnDestroyTensorDescriptor(x_);
    x_ = y_ = nullptr;
    w_ = nullptr;
    conv_ = nullptr;
  }

  cudnnTensorDescriptor_t x_ = nullptr;
  cudnnFilterDescriptor_t w_ = nullptr;
  cudnnConvolutionDescriptor_t conv_ = nullptr;
  cudnnTensorDescriptor_t y_ = nullptr;
};

namespace detail {
inline std::string conv_label(const conv_geometry& g, typex::dtype t, bool allow_tf32) {
  std::string s = "conv2d n=" + std::to_string(g.n) + " c=" + std::to_string(g.c) + " h=" + std::to_string(g.h) +
                  " w=" + std::to_string(g.w) + " oc=" + std::to_string(g.oc) + " k=" + std::to_string(g.kh) + "x" +
                  std::to_string(g.kw);
  if (g.stride[0] != 1 || g.stride[1] != 1) s += " stride=" + std::to_string(g.stride[0]) + "x" + std::to_string(g.stride[1]);
  if (g.pad[0] != 0 || g.pad[1] != 0) s += " pad=" + std::to_string(g.pad[0]) + "x" + std::to_string(g.pad[1]);
  if (g.dil[0] != 1 || g.dil[1] != 1) s += " dilation=" + std::to_string(g.dil[0]) + "x" + std::to_string(g.dil[1]);
  if (g.groups != 1) s += " groups=" + std::to_string(g.groups);
  s.append(" ").append(name(t));
  if (allow_tf32 && t == typex::dtype::f32) s += " (tf32 allowed)";
  return s;
}
}  // namespace detail

inline dnn_convolution dnn_convolution::build(const conv_geometry& g, typex::dtype t, bool allow_tf32, std::string label) {
  using detail::check_dnn;
  const std::string what = label.empty() ? detail::conv_label(g, t, allow_tf32) : label;
  const cudnnDataType_t data = detail::dnn_type_of(t, what);
  const auto int_of = [&](std::int64_t v, const char* which, std::int64_t lowest) {
    if (v < lowest || v > std::numeric_limits<int>::max()) {
      typex::detail::raise_message<argument_error>("cuDNN convolution " + what + ": " + which + " is " + std::to_string(v) +
                                                   (v < lowest ? "; it must be at least " + std::to_string(lowest)
                                                               : std::string(", more than cuDNN's descriptors hold (2^31 - 1); "
                                                                             "conv_engine::typex runs it with typex's kernel")));
    }
    return static_cast<int>(v);
  };
  const int n = int_of(g.n, "the batch", 1), c = int_of(g.c, "the input channels", 1), h = int_of(g.h, "the height", 1),
            w = int_of(g.w, "the width", 1), oc = int_of(g.oc, "the output channels", 1), kh = int_of(g.kh, "the kernel height", 1),
            kw = int_of(g.kw, "the kernel width", 1), groups = int_of(g.groups, "groups", 1);
  if (c % groups != 0 || oc % groups != 0) {
    typex::detail::raise_message<argument_error>("cuDNN convolution " + what + ": " + std::to_string(c) + " input and " +
                                                 std::to_string(oc) + " output channels do not split into " +
                                                 std::to_string(groups) + " groups");
  }
  // (each tensor's element count within int32 too: the legacy API's strides are int)
  const auto elements = [&](std::int64_t a, std::int64_t b, std::int64_t cc, std::int64_t d, const char* which) {
    if (a > 0 && b > 0 && cc > 0 && d > 0 && a > std::numeric_limits<int>::max() / b / cc / d) {
      typex::detail::raise_message<argument_error>("cuDNN convolution " + what + ": the " + which +
                                                   " has more than 2^31 - 1 elements, more than cuDNN's 4-d descriptors hold; "
                                                   "conv_engine::typex runs it with typex's kernel");
    }
  };
  elements(g.n, g.c, g.h, g.w, "input");
  elements(g.oc, g.c / g.groups, g.kh, g.kw, "weight");
  elements(g.n, g.oc, g.oh, g.ow, "output");

  dnn_convolution r;
  r.label = what;
  r.type = t;
  r.geometry = g;
  r.allow_tf32 = allow_tf32 && t == typex::dtype::f32;
  check_dnn(cudnnCreateTensorDescriptor(&r.x_), "cudnnCreateTensorDescriptor(x)", what);
  check_dnn(cudnnSetTensor4dDescriptor(r.x_, CUDNN_TENSOR_NCHW, data, n, c, h, w), "cudnnSetTensor4dDescriptor(x)", what);
  check_dnn(cudnnCreateFilterDescriptor(&r.w_), "cudnnCreateFilterDescriptor", what);
  check_dnn(cudnnSetFilter4dDescriptor(r.w_, data, CUDNN_TENSOR_NCHW, oc, c / groups, kh, kw), "cudnnSetFilter4dDescriptor", what);
  check_dnn(cudnnCreateConvolutionDescriptor(&r.conv_), "cudnnCreateConvolutionDescriptor", what);
  check_dnn(cudnnSetConvolution2dDescriptor(r.conv_, int_of(g.pad[0], "the padding", 0), int_of(g.pad[1], "the padding", 0),
                                            int_of(g.stride[0], "the stride", 1), int_of(g.stride[1], "the stride", 1),
                                            int_of(g.dil[0], "the dilation", 1), int_of(g.dil[1], "the dilation", 1),
                                            CUDNN_CROSS_CORRELATION, data),
            "cudnnSetConvolution2dDescriptor", what);
  check_dnn(cudnnSetConvolutionGroupCount(r.conv_, groups), "cudnnSetConvolutionGroupCount", what);
  check_dnn(cudnnSetConvolutionMathType(r.conv_, r.allow_tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH),
            "cudnnSetConvolutionMathType", what);
  int on = 0, oc_out = 0, oh = 0, ow = 0;
  check_dnn(cudnnGetConvolution2dForwardOutputDim(r.conv_, r.x_, r.w_, &on, &oc_out, &oh, &ow),
            "cudnnGetConvolution2dForwardOutputDim", what);
  if (on != n || oc_out != oc || oh != g.oh || ow != g.ow) {
    typex::detail::raise_message<argument_error>("cuDNN convolution " + what + ": cuDNN computes an output of [" + std::to_string(on) +
                                                 ", " + std::to_string(oc_out) + ", " + std::to_string(oh) + ", " +
                                                 std::to_string(ow) + "], the program's is [" + std::to_string(g.n) + ", " +
                                                 std::to_string(g.oc) + ", " + std::to_string(g.oh) + ", " + std::to_string(g.ow) + "]");
  }
  check_dnn(cudnnCreateTensorDescriptor(&r.y_), "cudnnCreateTensorDescriptor(y)", what);
  check_dnn(cudnnSetTensor4dDescriptor(r.y_, CUDNN_TENSOR_NCHW, data, n, oc, oh, ow), "cudnnSetTensor4dDescriptor(y)", what);
  return r;
}

// The algorithms chosen per shape (dnn_convolution::key(), with the device's ordinal), shared by
// every engine of a process on a device: a shape is timed once. Thread-safe.
class dnn_algorithm_cache {
 public:
  std::optional<dnn_algorithm> find(const std::string& key) const {
    const std::lock_guard lock(mutex_);
    const auto it = chosen_.find(key);
    if (it == chosen_.end()) return std::nullopt;
    return it->second;
  }
  void insert(const std::string& key, const dnn_algorithm& a) {
    const std::lock_guard lock(mutex_);
    chosen_.emplace(key, a);
  }
  std::size_t size() const {
    const std::lock_guard lock(mutex_);
    return chosen_.size();
  }

 private:
  mutable std::mutex mutex_;
  std::unordered_map<std::string, dnn_algorithm> chosen_;
};

}  // namespace typex::cuda
