// src/cuda/native_device.cpp — typex::cuda's device runtime on a real GPU (device.hpp's interface):
// device_count, make_native_device and native_device. Part of typex::cuda, but host code only (the
// CUDA runtime and cuBLASLt APIs are C functions), so the host compiler builds it, not nvcc: nvcc
// 13.0's front end stops with an internal error on lt.hpp (std::optional<cublasLtMatmulAlgo_t>),
// and g++ is faster and warns as the rest of typex does. The kernels are kernels.cu's (nvcc).
//
// One native_device per engine:
//   stream     one non-blocking stream (cudaStreamNonBlocking: no implicit ordering with the legacy
//              default stream, which other libraries in the process may use); every operation below
//              is ordered on it and synchronize() waits for it.
//   memory     a private cudaMemPool_t on the device (never managed memory), its release threshold at
//              the maximum so that freed blocks stay cached in the pool for the next plan instead of
//              going back to the driver at each synchronize; allocations are stream-ordered
//              (cudaMallocFromPoolAsync / cudaFreeAsync on the stream). Out of memory is device_error,
//              with nothing allocated and the runtime's last-error state cleared: the device stays usable.
//   copies     cudaMemcpyAsync on the stream, from and to the caller's memory as it is: no pinned
//              staging here. From pageable host memory the driver stages the bytes itself (the copy to
//              the device returns once the source was read, the copy to the host once the bytes have
//              arrived), so the "valid until synchronize()" contract holds; pinned host slots for the
//              engine's inputs and outputs are the engine's optimisation, not the device's.
//   kernels    launch() runs a launch record through dispatch (kernels.cu, the kernel source of
//              backend/cuda/kernels/*.cuh compiled natively) and checks the launch with cudaGetLastError.
//   cuBLASLt   one cublasLtHandle_t per device object; the algorithm of an lt_matmul is chosen by
//              cublasLtMatmulAlgoGetHeuristic at its first run and kept in the lt_matmul (lt.hpp's slot).
//   cuDNN      (TYPEX_CUDNN) one cudnnHandle_t per device object, made at its first convolution and
//              bound to the stream; choose_convolution times every forward algorithm once per shape
//              (cudnnFindConvolutionForwardAlgorithmEx on buffers from the pool, at plan time: never
//              while capturing) and keeps the fastest deterministic GEMM within dnn_workspace_limit
//              (exact f32: FMA kernels only) in a process-wide cache per GPU and shape.
//   graphs     capture() records work on the stream (cudaStreamCaptureModeThreadLocal) into a CUDA
//              graph, instantiated once and replayed with cudaGraphLaunch.
// Every CUDA call first makes the device object's GPU current (a device object may be used from a
// thread whose current device is another one).
#include <typex/backend/cuda/device.hpp>
#include <typex/backend/cuda/launch.hpp>
#include <typex/backend/cuda/lt.hpp>
#include <typex/core/error.hpp>

#if defined(TYPEX_CUDNN)
#include <typex/backend/cuda/dnn.hpp>
#endif

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace typex::cuda {

namespace detail {

// Runs a launch record on a stream (kernels.cu: dispatch's instance compiled there by nvcc).
void launch_native(const kernel_launch& k, cudaStream_t stream);

// "cudaErrorMemoryAllocation (2): out of memory"
inline std::string describe(cudaError_t e) {
  std::string s = cudaGetErrorName(e);
  s.append(" (").append(std::to_string(static_cast<int>(e))).append("): ").append(cudaGetErrorString(e));
  return s;
}

// Throws device_error "<where>: <call> failed with <error>" unless `e` is cudaSuccess. Clears the
// runtime's last-error state first, so that a later cudaGetLastError reports only a later failure
// (a sticky error, one that ruins the context, stays whatever is cleared: every later call reports it).
inline void check(cudaError_t e, std::string_view call, const std::string& where) {
  if (e == cudaSuccess) [[likely]] return;
  (void)cudaGetLastError();
  std::string message = where;
  message.append(": ").append(call).append(" failed with ").append(describe(e));
  typex::detail::raise_message<device_error>(std::move(message));
}

// Makes `ordinal` the calling thread's current device for the duration of one operation, and gives
// the previous one back.
class device_guard {
 public:
  device_guard(int ordinal, const std::string& where) {
    check(cudaGetDevice(&previous_), "cudaGetDevice", where);
    if (previous_ != ordinal) {
      check(cudaSetDevice(ordinal), "cudaSetDevice", where);
      switched_ = true;
    }
  }
  device_guard(const device_guard&) = delete;
  device_guard& operator=(const device_guard&) = delete;
  // (only where it switched: restoring an unset device would make a context on GPU 0)
  ~device_guard() {
    if (switched_) (void)cudaSetDevice(previous_);
  }

 private:
  int previous_ = 0;
  bool switched_ = false;
};

// A CUDA graph instantiated from a capture; replay() launches it on the stream it was captured on.
class native_graph final : public captured_work {
 public:
  native_graph(cudaGraphExec_t exec, std::shared_ptr<const device_runtime> owner, cudaStream_t stream, int ordinal,
               std::string where)
      : exec_(exec), owner_(std::move(owner)), stream_(stream), ordinal_(ordinal), where_(std::move(where)) {}
  native_graph(const native_graph&) = delete;
  native_graph& operator=(const native_graph&) = delete;
  ~native_graph() override {
    int previous = 0;
    if (cudaGetDevice(&previous) == cudaSuccess) {
      (void)cudaSetDevice(ordinal_);
      (void)cudaGraphExecDestroy(exec_);
      (void)cudaSetDevice(previous);
    }
    (void)cudaGetLastError();
  }

  void replay() override {
    const std::string where = where_ + ": replaying a captured graph";
    device_guard guard(ordinal_, where);
    check(cudaGraphLaunch(exec_, stream_), "cudaGraphLaunch", where);
  }

 private:
  cudaGraphExec_t exec_;
  std::shared_ptr<const device_runtime> owner_;  // (keeps the device object, hence its stream, alive)
  cudaStream_t stream_;
  int ordinal_;
  std::string where_;
};

class native_device final : public device_runtime, public std::enable_shared_from_this<native_device> {
 public:
  explicit native_device(int ordinal) {
    info_.ordinal = ordinal;
    where_ = std::string("CUDA device cuda:") + std::to_string(ordinal);
    device_guard guard(ordinal, where_);

    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, ordinal), "cudaGetDeviceProperties", where_);
    info_.name = prop.name;
    info_.emulated = false;
    info_.sm = prop.major * 10 + prop.minor;
    info_.total_memory = prop.totalGlobalMem;
    info_.shared_per_block_optin = prop.sharedMemPerBlockOptin;
    where_ += std::string(" (") + info_.name + ")";

    // (each resource is released by the destructor, which runs only for a constructed object: a
    // failure part-way releases what was made so far here)
    try {
      check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags", where_);

      cudaMemPoolProps props{};
      props.allocType = cudaMemAllocationTypePinned;
      props.handleTypes = cudaMemHandleTypeNone;
      props.location.type = cudaMemLocationTypeDevice;
      props.location.id = ordinal;
      check(cudaMemPoolCreate(&pool_, &props), "cudaMemPoolCreate", where_);
      std::uint64_t threshold = std::numeric_limits<std::uint64_t>::max();
      check(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &threshold),
            "cudaMemPoolSetAttribute(cudaMemPoolAttrReleaseThreshold)", where_);

      const cublasStatus_t s = cublasLtCreate(&lt_);
      if (s != CUBLAS_STATUS_SUCCESS) {
        lt_ = nullptr;
        typex::detail::raise_message<device_error>(where_ + ": cublasLtCreate failed with " +
                                                   std::string(cuda::detail::cublas_status_name(s)));
      }
    } catch (...) {
      release();
      throw;
    }
  }

  // (a new stream, pool and cuBLASLt handle on the same GPU: device.hpp)
  std::shared_ptr<device_runtime> for_engine() override { return std::make_shared<native_device>(info_.ordinal); }
  native_device(const native_device&) = delete;
  native_device& operator=(const native_device&) = delete;
  ~native_device() override { release(); }

  const device_info& info() const noexcept override { return info_; }

  void* allocate(std::size_t bytes) override {
    device_guard guard(info_.ordinal, where_);
    void* p = nullptr;
    // (0 bytes: one byte, for a unique non-null address)
    const cudaError_t e = cudaMallocFromPoolAsync(&p, bytes == 0 ? 1 : bytes, pool_, stream_);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();  // (out of memory is not sticky: cleared, the device stays usable)
      if (e == cudaErrorMemoryAllocation) {
        typex::detail::raise_message<device_error>(where_ + ": out of device memory: " + std::to_string(bytes) +
                                                   " bytes could not be allocated (nothing was; free memory and try again)");
      }
      check(e, "cudaMallocFromPoolAsync", where_);
    }
    return p;
  }

  void deallocate(void* p) noexcept override {
    if (p == nullptr) return;
    {
      // (a tensor dropped by another thread while this stream is being captured: its free would
      // become a node of the graph, run again at every replay; it waits for the capture's end)
      const std::lock_guard lock(capture_mutex_);
      if (capturing_) {
        deferred_frees_.push_back(p);
        return;
      }
    }
    free_now(p);
  }

  void copy_to_device(void* dst, const void* src, std::size_t bytes) override {
    copy(dst, src, bytes, cudaMemcpyHostToDevice, "copying to the device");
  }
  void copy_to_host(void* dst, const void* src, std::size_t bytes) override {
    copy(dst, src, bytes, cudaMemcpyDeviceToHost, "copying to the host");
  }
  void copy_on_device(void* dst, const void* src, std::size_t bytes) override {
    copy(dst, src, bytes, cudaMemcpyDeviceToDevice, "copying on the device");
  }

  void fill_zero(void* dst, std::size_t bytes) override {
    if (bytes == 0) return;
    const std::string where = where_ + ": zeroing " + std::to_string(bytes) + " bytes";
    device_guard guard(info_.ordinal, where);
    check(cudaMemsetAsync(dst, 0, bytes, stream_), "cudaMemsetAsync", where);
  }

  void launch(const kernel_launch& k, std::string_view what) override {
    device_guard guard(info_.ordinal, where_);
    (void)cudaGetLastError();  // (so that what follows reports this launch's failure, not an older one)
    detail::launch_native(k, stream_);
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) {
      std::string message = where_;
      message.append(": the kernel launch of ").append(what).append(" failed with ").append(describe(e));
      typex::detail::raise_message<device_error>(std::move(message));
    }
  }

  void matmul(const lt_matmul& m, const matmul_args& a, std::string_view what) override {
    const std::string where = where_ + ": cuBLASLt matrix product (" + m.label + ") of " + std::string(what);
    if (!m) typex::detail::raise_message<device_error>(where + ": the lt_matmul has no descriptors (moved from?)");
    // The bias is the descriptor's (lt.hpp); the call's is a cross-check, as on the emulated device.
    if (uses_bias_pointer(m.epi)) {
      if (a.bias != nullptr && a.bias != m.bias_pointer()) {
        typex::detail::raise_message<device_error>(
            where + ": the call's bias differs from the descriptor's CUBLASLT_MATMUL_DESC_BIAS_POINTER (the descriptor's is used)");
      }
    } else if (a.bias != nullptr) {
      typex::detail::raise_message<device_error>(where + ": the call passes a bias, but the epilogue (" +
                                                 std::string(name(m.epi)) + ") adds none");
    }
    if (m.geometry.m == 0 || m.geometry.n == 0) return;  // (D is empty: nothing to write)
    device_guard guard(info_.ordinal, where);

    if (!m.algo) m.algo = choose_algorithm(m, a, where);

    // alpha and beta in the scale type (lt.hpp: f64 products scale in double)
    const double alpha64 = a.alpha, beta64 = a.beta;
    const float alpha32 = a.alpha, beta32 = a.beta;
    const bool scale64 = m.scale_type == CUDA_R_64F;
    const void* alpha = scale64 ? static_cast<const void*>(&alpha64) : static_cast<const void*>(&alpha32);
    const void* beta = scale64 ? static_cast<const void*>(&beta64) : static_cast<const void*>(&beta32);
    // (C is not read when beta is 0; cuBLASLt still wants a pointer: D's)
    const void* c = a.c != nullptr ? a.c : a.d;
    // (matmul_args's operands are cuBLAS's A and B, as the descriptors' layouts: lt.hpp, lt_reference.hpp)
    const cublasStatus_t s = cublasLtMatmul(lt_, m.desc(), alpha, a.a, m.layout_a(), a.b, m.layout_b(), beta, c, m.layout_c(),
                                            a.d, m.layout_d(), &*m.algo, a.workspace, a.workspace_bytes, stream_);
    if (s != CUBLAS_STATUS_SUCCESS) {
      (void)cudaGetLastError();
      typex::detail::raise_message<device_error>(where + ": cublasLtMatmul failed with " +
                                                 std::string(cuda::detail::cublas_status_name(s)));
    }
  }

#if defined(TYPEX_CUDNN)
  std::size_t choose_convolution(dnn_convolution& c, std::string_view what) override {
    const std::string where = where_ + ": choosing cuDNN's algorithm for " + c.label + " (" + std::string(what) + ")";
    if (!c) typex::detail::raise_message<device_error>(where + ": the dnn_convolution has no descriptors (moved from?)");
    device_guard guard(info_.ordinal, where);
    // (the handle first, cached shape or not: this is plan time, and the first call of the plan is
    // captured, where cudnnCreate's allocations would end the capture)
    ensure_dnn(where);
    const std::string key = std::to_string(info_.ordinal) + ":" + c.key();
    if (const std::optional<dnn_algorithm> hit = dnn_cache().find(key)) {
      c.choose(*hit);
      return hit->workspace_bytes;
    }
    int most = 0;
    check_dnn_status(cudnnGetConvolutionForwardAlgorithmMaxCount(dnn_, &most), "cudnnGetConvolutionForwardAlgorithmMaxCount", where);
    std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(static_cast<std::size_t>(std::max(most, 1)));
    int found = 0;
    // (times each algorithm on buffers from this device's pool, the workspace at the limit: plan
    // time, outside any capture; the buffers' contents do not matter to the timing)
    const conv_geometry& g = c.geometry;
    const std::size_t elem = c.type == typex::dtype::f64 ? 8 : 4;
    const std::size_t x_bytes = static_cast<std::size_t>(g.n * g.c * g.h * g.w) * elem;
    const std::size_t w_bytes = static_cast<std::size_t>(g.oc * (g.c / g.groups) * g.kh * g.kw) * elem;
    const std::size_t y_bytes = static_cast<std::size_t>(g.n * g.oc * g.oh * g.ow) * elem;
    struct scratch {
      native_device& d;
      void* p;
      ~scratch() { d.deallocate(p); }
    };
    const scratch x{*this, allocate(x_bytes)}, w{*this, allocate(w_bytes)}, y{*this, allocate(y_bytes)},
        ws{*this, allocate(dnn_workspace_limit)};
    check_dnn_status(cudnnFindConvolutionForwardAlgorithmEx(dnn_, c.x_desc(), x.p, c.w_desc(), w.p, c.conv_desc(), c.y_desc(), y.p,
                                                            static_cast<int>(perf.size()), &found, perf.data(), ws.p,
                                                            dnn_workspace_limit),
                     "cudnnFindConvolutionForwardAlgorithmEx", where);
    // (sorted fastest first: the first that ran, is deterministic, is a GEMM (implicit,
    // precomputed or explicit: FFT and Winograd transform the operands, with a larger error than a
    // sum of products) and fits the workspace limit; exact f32 takes FMA kernels only)
    for (int i = 0; i < found; ++i) {
      const cudnnConvolutionFwdAlgoPerf_t& r = perf[static_cast<std::size_t>(i)];
      if (r.status != CUDNN_STATUS_SUCCESS || r.determinism != CUDNN_DETERMINISTIC || r.memory > dnn_workspace_limit) continue;
      if (r.algo != CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM && r.algo != CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM &&
          r.algo != CUDNN_CONVOLUTION_FWD_ALGO_GEMM)
        continue;
      if (!c.allow_tf32 && c.type == typex::dtype::f32 && r.mathType != CUDNN_FMA_MATH) continue;
      const dnn_algorithm a{r.algo, r.mathType, r.memory};
      dnn_cache().insert(key, a);
      c.choose(a);
      return a.workspace_bytes;
    }
    typex::detail::raise_message<device_error>(where + ": cuDNN timed " + std::to_string(found) +
                                               " algorithms and none is a deterministic GEMM that computes as asked within a workspace of " +
                                               std::to_string(dnn_workspace_limit) + " bytes (compile_options::convolutions = "
                                               "conv_engine::typex runs this convolution with typex's kernel)");
  }

  void convolution(const dnn_convolution& c, const convolution_args& a, std::string_view what) override {
    const std::string where = where_ + ": cuDNN convolution (" + c.label + ") of " + std::string(what);
    if (!c || !c.choice) typex::detail::raise_message<device_error>(where + ": no algorithm was chosen for it (choose_convolution, at plan time)");
    if (a.workspace_bytes < c.choice->workspace_bytes) {
      typex::detail::raise_message<device_error>(where + ": the call brings " + std::to_string(a.workspace_bytes) +
                                                 " bytes of workspace, the algorithm needs " + std::to_string(c.choice->workspace_bytes));
    }
    device_guard guard(info_.ordinal, where);
    ensure_dnn(where);
    const double one64 = 1.0, zero64 = 0.0;
    const float one32 = 1.0f, zero32 = 0.0f;
    const bool f64 = c.type == typex::dtype::f64;
    const cudnnStatus_t st = cudnnConvolutionForward(
        dnn_, f64 ? static_cast<const void*>(&one64) : static_cast<const void*>(&one32), c.x_desc(), a.x, c.w_desc(), a.w,
        c.conv_desc(), c.choice->algorithm, a.workspace, a.workspace_bytes,
        f64 ? static_cast<const void*>(&zero64) : static_cast<const void*>(&zero32), c.y_desc(), a.y);
    if (st != CUDNN_STATUS_SUCCESS) {
      (void)cudaGetLastError();
      typex::detail::raise_message<device_error>(where + ": cudnnConvolutionForward failed with " + std::string(cudnnGetErrorString(st)));
    }
  }
#endif

  void synchronize() override {
    const std::string where = where_ + ": waiting for the stream's work";
    device_guard guard(info_.ordinal, where);
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize", where);
  }

  std::unique_ptr<captured_work> capture(const std::function<void()>& work) override {
    const std::string where = where_ + ": capturing a CUDA graph";
    {
      device_guard guard(info_.ordinal, where);
      const std::lock_guard lock(capture_mutex_);
      check(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture", where);
      capturing_ = true;
    }
    struct end_of_capture {  // (the frees deferred while capturing, issued once the stream records no more)
      native_device& d;
      ~end_of_capture() { d.capture_ended(); }
    };
    end_of_capture ended_capture{*this};
    try {
      work();
    } catch (...) {
      // end the capture (the stream is usable again), drop what was recorded, then rethrow
      device_guard guard(info_.ordinal, where);
      cudaGraph_t partial = nullptr;
      (void)cudaStreamEndCapture(stream_, &partial);
      if (partial != nullptr) (void)cudaGraphDestroy(partial);
      (void)cudaGetLastError();
      throw;
    }
    device_guard guard(info_.ordinal, where);
    cudaGraph_t graph = nullptr;
    // (EndCapture fails when something in `work` was not capturable, e.g. a synchronize: the capture
    // is invalidated, and ended here all the same)
    const cudaError_t ended = cudaStreamEndCapture(stream_, &graph);
    capture_ended();
    if (ended != cudaSuccess) {
      if (graph != nullptr) (void)cudaGraphDestroy(graph);
      check(ended, "cudaStreamEndCapture", where);
    }
    cudaGraphExec_t exec = nullptr;
    const cudaError_t made = cudaGraphInstantiate(&exec, graph, 0);
    (void)cudaGraphDestroy(graph);  // (the executable graph is independent of it)
    check(made, "cudaGraphInstantiate", where);
    try {
      return std::make_unique<native_graph>(exec, shared_from_this(), stream_, info_.ordinal, where_);
    } catch (...) {
      (void)cudaGraphExecDestroy(exec);
      throw;
    }
  }

 private:
  void free_now(void* p) noexcept {
    int previous = 0;
    if (cudaGetDevice(&previous) != cudaSuccess) {
      (void)cudaGetLastError();
      return;
    }
    const bool switched = previous != info_.ordinal;
    if (switched) (void)cudaSetDevice(info_.ordinal);
    // (a failure here can only be a broken context, which the next checked call reports)
    (void)cudaFreeAsync(p, stream_);
    if (switched) (void)cudaSetDevice(previous);
    (void)cudaGetLastError();
  }
  void capture_ended() noexcept {
    std::vector<void*> frees;
    {
      const std::lock_guard lock(capture_mutex_);
      if (!capturing_) return;
      capturing_ = false;
      frees.swap(deferred_frees_);
    }
    for (void* p : frees) free_now(p);
  }

  void copy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind, const char* what) {
    if (bytes == 0) return;
    const std::string where = where_ + ": " + what + " (" + std::to_string(bytes) + " bytes)";
    device_guard guard(info_.ordinal, where);
    check(cudaMemcpyAsync(dst, src, bytes, kind, stream_), "cudaMemcpyAsync", where);
  }

  // The alignment in bytes (a power of two, at most 256) of an operand's address: cuBLASLt's
  // heuristic assumes 256 unless told, and an algorithm chosen for 256 may not run on an operand
  // the planner placed at a 64-byte boundary or a view placed inside a buffer.
  static std::uint32_t alignment_of(const void* p) noexcept {
    const auto v = reinterpret_cast<std::uintptr_t>(p);
    std::uint32_t a = 256;
    while (a > 1 && v % a != 0) a /= 2;
    return a;
  }

  // Whether cuBLASLt's heuristic has an algorithm for the product at the least alignment a call gives.
  bool can_matmul(const lt_matmul& m, std::size_t workspace_bytes) override {
    if (!m) return false;
    device_guard guard(info_.ordinal, where_);
    // (the operands' element size as their alignment: the least any call gives)
    matmul_args least;
    const auto item = reinterpret_cast<void*>(static_cast<std::uintptr_t>(itemsize(m.type)));
    least.a = least.b = least.c = least.d = item;
    least.workspace_bytes = workspace_bytes;
    try {
      (void)choose_algorithm(m, least, where_);
      return true;
    } catch (const device_error&) {
      return false;
    }
  }

  // cuBLASLt's first heuristic choice for the product's descriptors within the workspace given, for
  // operands at the alignments of the call's. (Chosen once per lt_matmul: its workspace is a planned
  // buffer of a fixed size, and a plan's addresses never change.)
  cublasLtMatmulAlgo_t choose_algorithm(const lt_matmul& m, const matmul_args& args, const std::string& where) {
    const std::size_t workspace_bytes = args.workspace_bytes;
    cublasLtMatmulPreference_t pref = nullptr;
    const auto lt_check = [&](cublasStatus_t s, const char* call) {
      if (s == CUBLAS_STATUS_SUCCESS) return;
      if (pref != nullptr) cublasLtMatmulPreferenceDestroy(pref);
      typex::detail::raise_message<device_error>(where + ": " + call + " failed with " +
                                                 std::string(cuda::detail::cublas_status_name(s)));
    };
    lt_check(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
    const std::uint64_t ws = workspace_bytes;
    lt_check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws),
             "cublasLtMatmulPreferenceSetAttribute(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES)");
    const std::uint32_t align[4] = {alignment_of(args.a), alignment_of(args.b), alignment_of(args.c), alignment_of(args.d)};
    lt_check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align[0], sizeof align[0]),
             "cublasLtMatmulPreferenceSetAttribute(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES)");
    lt_check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align[1], sizeof align[1]),
             "cublasLtMatmulPreferenceSetAttribute(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES)");
    lt_check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align[2], sizeof align[2]),
             "cublasLtMatmulPreferenceSetAttribute(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES)");
    lt_check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align[3], sizeof align[3]),
             "cublasLtMatmulPreferenceSetAttribute(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES)");
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    lt_check(cublasLtMatmulAlgoGetHeuristic(lt_, m.desc(), m.layout_a(), m.layout_b(), m.layout_c(), m.layout_d(), pref, 1,
                                            &result, &found),
             "cublasLtMatmulAlgoGetHeuristic");
    cublasLtMatmulPreferenceDestroy(pref);
    if (found == 0 || result.state != CUBLAS_STATUS_SUCCESS) {
      typex::detail::raise_message<device_error>(where + ": cuBLASLt has no algorithm for these descriptors within a workspace of " +
                                                 std::to_string(workspace_bytes) + " bytes");
    }
    return result.algo;
  }

#if defined(TYPEX_CUDNN)
  // The process's algorithm choices, every GPU's (keys start with the ordinal).
  static dnn_algorithm_cache& dnn_cache() {
    static dnn_algorithm_cache cache;
    return cache;
  }
  static void check_dnn_status(cudnnStatus_t st, const char* call, const std::string& where) {
    if (st == CUDNN_STATUS_SUCCESS) return;
    (void)cudaGetLastError();
    typex::detail::raise_message<device_error>(where + ": " + call + " failed with " + std::string(cudnnGetErrorString(st)));
  }
  // cuDNN's handle for this device object, made at its first use (cudnnCreate loads cuDNN's
  // sub-libraries: a program without convolutions does not pay for it) and bound to the stream.
  void ensure_dnn(const std::string& where) {
    if (dnn_ != nullptr) return;
    cudnnHandle_t h = nullptr;
    const cudnnStatus_t st = cudnnCreate(&h);
    if (st != CUDNN_STATUS_SUCCESS) {
      (void)cudaGetLastError();
      typex::detail::raise_message<device_error>(where + ": cudnnCreate failed with " + std::string(cudnnGetErrorString(st)));
    }
    const cudnnStatus_t bound = cudnnSetStream(h, stream_);
    if (bound != CUDNN_STATUS_SUCCESS) {
      (void)cudnnDestroy(h);
      typex::detail::raise_message<device_error>(where + ": cudnnSetStream failed with " + std::string(cudnnGetErrorString(bound)));
    }
    dnn_ = h;
  }
#endif

  void release() noexcept {
    int previous = 0;
    const bool switched = cudaGetDevice(&previous) == cudaSuccess && cudaSetDevice(info_.ordinal) == cudaSuccess;
    if (stream_ != nullptr) (void)cudaStreamSynchronize(stream_);  // (products and frees ordered on it complete first)
#if defined(TYPEX_CUDNN)
    if (dnn_ != nullptr) (void)cudnnDestroy(dnn_);
    dnn_ = nullptr;
#endif
    if (lt_ != nullptr) (void)cublasLtDestroy(lt_);
    if (pool_ != nullptr) (void)cudaMemPoolDestroy(pool_);
    if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
    if (switched) (void)cudaSetDevice(previous);
    (void)cudaGetLastError();
    lt_ = nullptr;
    pool_ = nullptr;
    stream_ = nullptr;
  }

  device_info info_;
  std::string where_;  // "CUDA device cuda:0 (NVIDIA H100 80GB HBM3)", the start of every message
  cudaStream_t stream_ = nullptr;
  cudaMemPool_t pool_ = nullptr;
  cublasLtHandle_t lt_ = nullptr;
#if defined(TYPEX_CUDNN)
  cudnnHandle_t dnn_ = nullptr;
#endif
  std::mutex capture_mutex_;           // (capturing_ and deferred_frees_: deallocate comes from any thread)
  bool capturing_ = false;
  std::vector<void*> deferred_frees_;
};

}  // namespace detail

int device_count(std::string* why) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  (void)cudaGetLastError();
  if (e != cudaSuccess) {
    // (without a driver the count is left as it was: only the error says there is no device)
    if (why != nullptr) {
      if (e == cudaErrorInsufficientDriver || e == cudaErrorStubLibrary) {
        *why = std::string("no CUDA driver: cudaGetDeviceCount failed with ") + detail::describe(e);
      } else if (e == cudaErrorNoDevice) {
        *why = std::string("no CUDA GPU: cudaGetDeviceCount failed with ") + detail::describe(e);
      } else {
        *why = std::string("CUDA is unavailable: cudaGetDeviceCount failed with ") + detail::describe(e);
      }
    }
    return 0;
  }
  if (count <= 0) {
    if (why != nullptr) *why = "no CUDA GPU: cudaGetDeviceCount found none";
    return 0;
  }
  return count;
}

std::shared_ptr<device_runtime> make_native_device(int ordinal) {
  std::string why;
  const int count = device_count(&why);
  if (count == 0) {
    typex::detail::raise_message<device_error>(std::string("typex::cuda::make_native_device(") + std::to_string(ordinal) + "): " + why);
  }
  if (ordinal < 0 || ordinal >= count) {
    typex::detail::raise_message<device_error>(std::string("typex::cuda::make_native_device(") + std::to_string(ordinal) + "): no GPU cuda:" +
                                               std::to_string(ordinal) + " (this process sees " + std::to_string(count) +
                                               (count == 1 ? " GPU)" : " GPUs)"));
  }
  return std::make_shared<detail::native_device>(ordinal);
}

}  // namespace typex::cuda
