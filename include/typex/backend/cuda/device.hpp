// typex/backend/cuda/device.hpp — what the CUDA backend runs on: a device with memory, one stream
// and a way to run launch records. Host C++ only (no CUDA header): the planner's lowering, the
// engine and the tests see this interface; two implementations stand behind it.
//
//   native_device    (src/cuda/native_device.cpp, in typex::cuda): a real GPU. One
//                    non-blocking stream per device object (one per engine), memory from a
//                    caching pool over a private cudaMemPool_t (never managed memory), cuBLASLt
//                    bound to the stream, CUDA Graphs capture and replay.
//   emulated_device  (emulated_device.hpp, host C++): the CPU emulator of the execution model
//                    (kernel_api.cuh) runs the same kernel source with the same launch geometry;
//                    library calls run a reference model that reads the real cuBLASLt descriptors.
//
// Every operation is ordered on the device's stream; synchronize() waits for all of it. Errors are
// typex::device_error (core/error.hpp): no GPU or driver when a native device is made, out of
// memory (nothing allocated, the device usable afterwards), a failed launch (naming the node).
#pragma once

#include <typex/backend/cuda/launch.hpp>
#include <typex/core/error.hpp>
#include <typex/tensor/device.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace typex::cuda {

struct lt_matmul;        // a matrix product through cuBLASLt: its descriptors (lt.hpp)
struct dnn_convolution;  // a convolution through cuDNN: its descriptors (dnn.hpp, where TYPEX_CUDNN)

// What an f32 matrix product through cuBLASLt may compute in (compile_options::matmul_precision):
// its operands are f32 in memory and its sums f32 in every case; the reduced ones let cuBLASLt read
// the operands rounded to a narrower format and multiply them on tensor cores (cuBLAS's
// CUBLAS_COMPUTE_32F_FAST_* compute types). torch.set_float32_matmul_precision's "highest" is f32,
// "high" tf32, "medium" bf16.
//   f32   every bit of the operands (CUBLAS_COMPUTE_32F; no TF32), PyTorch's default on CUDA
//   tf32  significands of 11 bits (10 stored), f32's range (CUBLAS_COMPUTE_32F_FAST_TF32)
//   bf16  significands of 8 bits (7 stored), f32's range (CUBLAS_COMPUTE_32F_FAST_16BF)
//   f16   significands of 11 bits (10 stored), f16's range (CUBLAS_COMPUTE_32F_FAST_16F)
// cuBLAS documents that the bf16 and f16 modes may also run as TF32 (its choice of kernel): each
// is a bound on the rounding, not a promise of it. The emulated device models each mode as its
// format, rounding to nearest even (f16: an operand of magnitude 65520 or more reads as inf).
// An f64 product is f64 whatever this says.
enum class matmul_precision : std::uint8_t { f32, tf32, bf16, f16 };

constexpr std::string_view name(matmul_precision p) noexcept {
  switch (p) {
    case matmul_precision::f32: return "f32";
    case matmul_precision::tf32: return "tf32";
    case matmul_precision::bf16: return "bf16";
    case matmul_precision::f16: return "f16";
  }
  return "?";
}

// The operands of one lt_matmul call: device addresses (D = epilogue(alpha * op(A) op(B) + beta * C)).
struct matmul_args {
  const void* a = nullptr;
  const void* b = nullptr;
  const void* c = nullptr;
  void* d = nullptr;
  const void* bias = nullptr;   // (the epilogue's, where the descriptor has one)
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
  float alpha = 1.0f, beta = 0.0f;
};

// Which code runs conv2d (compile_options::convolutions).
//   typex  typex's own implicit GEMM (kernels/conv.cuh): every build, every test
//   cudnn  cuDNN's forward convolution, the algorithm timed once per shape (dnn.hpp), for every
//          conv2d whose kernel window is no larger than its output (kh kw <= oh ow); the others
//          (weight gradients: a kernel the size of the output gradient) run typex's kernel. Needs a
//          build with TYPEX_CUDNN (cuda::has_cudnn()). The bias and the activation after it run as
//          one kernel on its result.
enum class conv_engine : std::uint8_t { typex, cudnn };

constexpr std::string_view name(conv_engine e) noexcept { return e == conv_engine::cudnn ? "cudnn" : "typex"; }

// The operands of one cuDNN forward convolution: device addresses (y = conv(x, w)), and the
// plan's workspace (at least the bytes the device's choice asked for).
struct convolution_args {
  const void* x = nullptr;
  const void* w = nullptr;
  void* y = nullptr;
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
};

struct device_info {
  std::string name;            // "NVIDIA H100 80GB HBM3", "emulated (sm_90a execution model)"
  bool emulated = false;
  int ordinal = 0;
  int sm = 0;                  // compute capability major * 10 + minor (90 on an H100)
  std::size_t total_memory = 0;
  std::size_t shared_per_block_optin = 0;  // the most dynamic shared memory a kernel may opt in to
};

// A captured sequence of work (a CUDA graph), replayed as one launch.
class captured_work {
 public:
  virtual ~captured_work() = default;
  virtual void replay() = 0;
};

class device_runtime {
 public:
  virtual ~device_runtime() = default;
  virtual const device_info& info() const noexcept = 0;
  typex::device where() const noexcept { return typex::device::cuda(info().ordinal); }

  // `bytes` of device memory aligned to 256 bytes (cudaMalloc's), or device_error when the device
  // has no more (nothing is allocated then). 0 bytes gives a unique non-null address.
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void deallocate(void* p) noexcept = 0;

  // Copies, ordered on the stream. to_device / to_host read or write host memory that must stay
  // valid until synchronize() (pinned staging is the implementation's business).
  virtual void copy_to_device(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void copy_to_host(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void copy_on_device(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void fill_zero(void* dst, std::size_t bytes) = 0;

  // Runs a kernel launch record (launch.hpp) / a cuBLASLt matrix product. `what` names the node
  // and op for the error a failed launch gives.
  virtual void launch(const kernel_launch& k, std::string_view what) = 0;
  virtual void matmul(const lt_matmul& m, const matmul_args& a, std::string_view what) = 0;
  // Whether matmul can run `m` with operands aligned to at least their element size and a workspace
  // of `workspace_bytes` (the native device asks cuBLASLt's heuristic; the emulator's model runs
  // what it accepts). A lowering asks before it chooses an epilogue it has a fallback for.
  virtual bool can_matmul(const lt_matmul& m, std::size_t workspace_bytes) {
    (void)m, (void)workspace_bytes;
    return true;
  }

  // A cuDNN convolution (dnn.hpp): choose_convolution picks its algorithm at plan time (never while
  // capturing), records it in `c` and returns the workspace it needs; convolution runs it. A device
  // without cuDNN (a build without TYPEX_CUDNN) refuses both with unsupported_error.
  virtual std::size_t choose_convolution(dnn_convolution& c, std::string_view what);
  virtual void convolution(const dnn_convolution& c, const convolution_args& a, std::string_view what);

  // Waits for everything ordered on the stream; reports an asynchronous failure as device_error.
  virtual void synchronize() = 0;

  // The runtime an engine runs on: the same device with a stream of its own (each engine of a
  // program_module, one per concurrent call, then orders and captures its work alone). The
  // emulator, which has no streams, gives itself.
  virtual std::shared_ptr<device_runtime> for_engine() = 0;

  // Records `work` (launches and copies on this device) as one replayable unit: a CUDA graph on a
  // GPU; nullptr where the device cannot capture (the emulator runs the work directly).
  virtual std::unique_ptr<captured_work> capture(const std::function<void()>& work) = 0;
};

namespace detail {
[[noreturn]] inline void no_cudnn(const device_info& info, std::string_view what) {
  std::string m = "typex::cuda: ";
  m.append(what).append(" asks for a cuDNN convolution, but the device (").append(info.name);
  m.append(") runs none: typex was built without cuDNN (configure with -DTYPEX_CUDNN=ON where cuDNN is installed), or the "
           "device_runtime does not override choose_convolution and convolution");
  typex::detail::raise_message<unsupported_error>(std::move(m));
}
}  // namespace detail

inline std::size_t device_runtime::choose_convolution(dnn_convolution&, std::string_view what) { detail::no_cudnn(info(), what); }
inline void device_runtime::convolution(const dnn_convolution&, const convolution_args&, std::string_view what) {
  detail::no_cudnn(info(), what);
}

// Device memory owned by a runtime: one allocation, given back when the last handle goes.
inline std::shared_ptr<std::byte> device_allocation(const std::shared_ptr<device_runtime>& rt, std::size_t bytes) {
  auto* p = static_cast<std::byte*>(rt->allocate(bytes));
  return std::shared_ptr<std::byte>(p, [rt](std::byte* q) { rt->deallocate(q); });
}

// The number of CUDA devices this process sees, or 0 with `why` set where there is none, or no
// driver (cudaGetDeviceCount's error, not its count: without a driver it returns error 35 and
// leaves the count alone). Defined by typex::cuda (src/cuda/native_device.cpp).
int device_count(std::string* why = nullptr);

// A runtime on GPU `ordinal` (a new stream), or device_error saying why there is none.
std::shared_ptr<device_runtime> make_native_device(int ordinal = 0);

}  // namespace typex::cuda
