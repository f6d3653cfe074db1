// typex/backend/cuda/emulated_device.hpp — the CUDA device as CI sees it: no GPU, the same code.
//
// An emulated_device is a device_runtime (device.hpp) whose memory is host memory and whose
// kernels run on the CPU emulator of the CUDA execution model (kernel_api.cuh, emulator.hpp): the
// same kernel source, the same launch records (launch.hpp, made by the same lowering) and the same
// dispatch (dispatch.cuh) the GPU runs, each CUDA thread a fiber or a host thread with real barriers, block
// order shuffled, shared memory poisoned. cuBLASLt products run lt_reference.hpp's model, which
// reads the real descriptors back, so a wrong transpose, leading dimension, epilogue or bias
// pointer fails here as it would on a GPU. Where typex is built with cuDNN (TYPEX_CUDNN), cuDNN
// convolutions run dnn_reference.hpp's model the same way, over the real cuDNN descriptors; the
// algorithm a device would time once per shape is the model's choice, cached per shape as the native
// device caches it (dnn_choices() counts the shapes chosen).
//
// What it adds for tests: a memory limit (the device's "total memory": an allocation beyond it is
// the device_error a GPU's out-of-memory gives, and nothing is allocated), a count of live bytes
// (leak checks), of launches and of synchronizations. It has no streams: every operation completes before it returns,
// which is one legal schedule of the GPU's in-order stream.
#pragma once

#include <typex/backend/cuda/device.hpp>
#include <typex/backend/cuda/dispatch.cuh>
#include <typex/backend/cuda/lt_reference.hpp>
#if defined(TYPEX_CUDNN)
#include <typex/backend/cuda/dnn_reference.hpp>
#endif

#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <unordered_map>

namespace typex::cuda {

class emulated_device final : public device_runtime, public std::enable_shared_from_this<emulated_device> {
 public:
  // memory_limit: the bytes this device may hand out at once (an H100's 80 GB by default).
  explicit emulated_device(std::size_t memory_limit = std::size_t{80} << 30, int ordinal = 0) {
    info_.name = "emulated CUDA device (the execution model of sm_90a, run on the CPU)";
    info_.emulated = true;
    info_.ordinal = ordinal;
    info_.sm = 90;
    info_.total_memory = memory_limit;
    info_.shared_per_block_optin = 227 * 1024;
  }
  emulated_device(const emulated_device&) = delete;
  emulated_device& operator=(const emulated_device&) = delete;
  ~emulated_device() override {
    for (auto& [p, bytes] : live_) ::operator delete(p, std::align_val_t{alignment});
  }

  const device_info& info() const noexcept override { return info_; }

  void* allocate(std::size_t bytes) override {
    const std::lock_guard lock(mutex_);
    if (bytes > info_.total_memory - in_use_) {
      typex::detail::raise<device_error>([&](auto& w) {
        w.put("typex::cuda: out of memory on "); w.put(where().to_string()); w.put(" (emulated): ");
        w.put_int(static_cast<long long>(bytes)); w.put(" bytes asked, ");
        w.put_int(static_cast<long long>(info_.total_memory - in_use_)); w.put(" of ");
        w.put_int(static_cast<long long>(info_.total_memory)); w.put(" free");
      });
    }
    // (exactly `bytes` for AddressSanitizer to see an overrun, at least 1 for a unique address)
    void* p = ::operator new(bytes == 0 ? 1 : bytes, std::align_val_t{alignment});
    live_.emplace(p, bytes);
    in_use_ += bytes;
    return p;
  }
  void deallocate(void* p) noexcept override {
    if (p == nullptr) return;
    const std::lock_guard lock(mutex_);
    const auto it = live_.find(p);
    if (it == live_.end()) return;  // (not ours: a bug in the caller, but freeing it would be worse)
    in_use_ -= it->second;
    live_.erase(it);
    ::operator delete(p, std::align_val_t{alignment});
  }

  void copy_to_device(void* dst, const void* src, std::size_t bytes) override { copy(dst, src, bytes); }
  void copy_to_host(void* dst, const void* src, std::size_t bytes) override { copy(dst, src, bytes); }
  void copy_on_device(void* dst, const void* src, std::size_t bytes) override { copy(dst, src, bytes); }
  void fill_zero(void* dst, std::size_t bytes) override {
    if (bytes != 0) std::memset(dst, 0, bytes);
  }

  void launch(const kernel_launch& k, std::string_view what) override {
    ++launches_;
    try {
      dispatch(k, nullptr);
    } catch (const device_error& e) {
      std::string m = "typex::cuda: the launch of ";
      m += what;
      m += " failed: ";
      m += e.what();
      typex::detail::raise_message<device_error>(m);
    }
  }
  void matmul(const lt_matmul& m, const matmul_args& a, std::string_view what) override {
    ++launches_;
    try {
      reference_matmul(m, a);
    } catch (const device_error& e) {
      std::string msg = "typex::cuda: the cuBLASLt product of ";
      msg += what;
      msg += " failed: ";
      msg += e.what();
      typex::detail::raise_message<device_error>(msg);
    }
  }
  // Yes, as the model runs what it accepts, unless a test refused the product's epilogue: a GPU's
  // heuristic may find no algorithm, and a lowering that asks must then keep its fallback.
  bool can_matmul(const lt_matmul& m, std::size_t) override { return (refused_.load() & (1u << static_cast<unsigned>(m.epi))) == 0; }
  // (for tests: can_matmul says no for products with epilogue e from now on)
  void refuse_epilogue(epilogue e) noexcept { refused_.fetch_or(1u << static_cast<unsigned>(e)); }
#if defined(TYPEX_CUDNN)
  std::size_t choose_convolution(dnn_convolution& c, std::string_view) override {
    const std::string key = c.key();
    std::optional<dnn_algorithm> a = dnn_cache_.find(key);
    if (!a) {
      a = reference_choice(c);
      dnn_cache_.insert(key, *a);
      ++dnn_choices_;
    }
    c.choose(*a);
    return a->workspace_bytes;
  }
  void convolution(const dnn_convolution& c, const convolution_args& a, std::string_view what) override {
    ++launches_;
    try {
      reference_convolution(c, a);
    } catch (const device_error& e) {
      std::string msg = "typex::cuda: the cuDNN convolution of ";
      msg += what;
      msg += " failed: ";
      msg += e.what();
      typex::detail::raise_message<device_error>(msg);
    }
  }
  // (for tests: the algorithm choices this device made, the cache's misses: one per shape)
  std::size_t dnn_choices() const noexcept { return dnn_choices_.load(); }
#endif
  void synchronize() override { ++synchronizations_; }
  std::shared_ptr<device_runtime> for_engine() override {
    const std::shared_ptr<device_runtime> self = weak_from_this().lock();
    if (!self) typex::detail::raise_message<state_error>("typex::cuda::emulated_device: make it with make_emulated_device (a shared_ptr), not on its own");
    return self;
  }
  std::unique_ptr<captured_work> capture(const std::function<void()>&) override { return nullptr; }

  // (for tests)
  std::size_t bytes_in_use() const {
    const std::lock_guard lock(mutex_);
    return in_use_;
  }
  std::size_t launches() const noexcept { return launches_.load(); }
  std::size_t synchronizations() const noexcept { return synchronizations_.load(); }

 private:
  static constexpr std::size_t alignment = 256;  // (cudaMalloc's)
  static void copy(void* dst, const void* src, std::size_t bytes) {
    if (bytes != 0) std::memmove(dst, src, bytes);
  }

  device_info info_;
  mutable std::mutex mutex_;
  std::unordered_map<void*, std::size_t> live_;
  std::size_t in_use_ = 0;
  std::atomic<std::size_t> launches_{0};
  std::atomic<std::size_t> synchronizations_{0};
  std::atomic<std::uint32_t> refused_{0};  // (a bit per epilogue can_matmul refuses)
#if defined(TYPEX_CUDNN)
  dnn_algorithm_cache dnn_cache_;
  std::atomic<std::size_t> dnn_choices_{0};
#endif
};

// An emulated device as the runtime the backend takes.
inline std::shared_ptr<device_runtime> make_emulated_device(std::size_t memory_limit = std::size_t{80} << 30, int ordinal = 0) {
  return std::make_shared<emulated_device>(memory_limit, ordinal);
}

}  // namespace typex::cuda
