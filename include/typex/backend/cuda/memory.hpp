// typex/backend/cuda/memory.hpp — tensors on a CUDA device, and copies between it and the host.
//
//   auto gpu = typex::cuda::make_native_device();          // or an emulated_device (tests, CI)
//   any_tensor x_dev = typex::cuda::to_device(x, gpu);    // x on the host
//   any_tensor y = typex::cuda::to_host(y_dev);           // waits for the device's work
//
// A device tensor is an any_tensor whose storage says where it lives (storage::device(): cuda:N)
// and owns its allocation through its runtime: the bytes go back to the runtime's pool when the last
// tensor sharing them goes. The host never reads them through the pointer; program_module refuses a
// host tensor given to a CUDA program (and the reverse) with a device_error naming the input.
#pragma once

#include <typex/backend/cuda/device.hpp>
#include <typex/backend/kit/memory.hpp>
#include <typex/tensor/host_tensor.hpp>

#include <memory>
#include <utility>

namespace typex::cuda {

namespace detail {
// The deleter of every device allocation: it holds its runtime, so that to_host can find the
// runtime of any device tensor (std::get_deleter), and the runtime outlives its memory.
struct device_deleter {
  std::shared_ptr<device_runtime> runtime;
  void operator()(std::byte* p) const noexcept { runtime->deallocate(p); }
};

inline std::shared_ptr<device_runtime> runtime_of(const storage& s, std::string_view who) {
  const std::shared_ptr<std::byte> owner = s.observe().lock();
  const auto* d = owner ? std::get_deleter<device_deleter>(owner) : nullptr;
  if (s.device().kind != device_kind::cuda || d == nullptr) {
    typex::detail::raise<device_error>([&](auto& w) {
      w.put(who); w.put(": the tensor is on "); w.put(s.device().to_string());
      w.put(s.device().kind == device_kind::cuda ? ", in memory that no typex CUDA runtime allocated" : ", not on a CUDA device");
    });
  }
  return d->runtime;
}
}  // namespace detail

// A runtime's memory as the backend kit sees it (kit::memory_resource): storages on the device.
class device_memory final : public kit::memory_resource {
 public:
  explicit device_memory(std::shared_ptr<device_runtime> rt) : rt_(std::move(rt)) {}
  typex::device where() const noexcept override { return rt_->where(); }
  storage allocate(std::size_t bytes) override {
    auto* p = static_cast<std::byte*>(rt_->allocate(bytes));
    return storage::on_device(std::shared_ptr<std::byte>(p, detail::device_deleter{rt_}), bytes, rt_->where());
  }
  void copy(std::byte* dst, typex::device dst_on, const std::byte* src, typex::device src_on, std::size_t bytes) override {
    if (bytes == 0) return;
    check(dst_on);
    check(src_on);
    if (dst_on.is_host() && src_on.is_host()) std::memmove(dst, src, bytes);
    else if (dst_on.is_host()) rt_->copy_to_host(dst, src, bytes);
    else if (src_on.is_host()) rt_->copy_to_device(dst, src, bytes);
    else rt_->copy_on_device(dst, src, bytes);
  }
  void synchronize() override { rt_->synchronize(); }
  const std::shared_ptr<device_runtime>& runtime() const noexcept { return rt_; }

 private:
  void check(typex::device d) const {
    if (d.is_host() || d == rt_->where()) return;
    typex::detail::raise<device_error>([&](auto& w) {
      w.put("typex::cuda: a copy involving "); w.put(d.to_string()); w.put(" through the runtime of ");
      w.put(rt_->where().to_string()); w.put(" (copy between devices through the host)");
    });
  }
  std::shared_ptr<device_runtime> rt_;
};

// A copy of host tensor `t` on `rt`'s device (the copy is ordered on its stream; `t` may be
// changed or destroyed as soon as this returns: the bytes are staged).
inline any_tensor to_device(const any_tensor& t, const std::shared_ptr<device_runtime>& rt) {
  if (!t.device().is_host()) {
    if (t.device() == rt->where() && detail::runtime_of(t.get_storage(), "typex::cuda::to_device")->info().emulated == rt->info().emulated)
      return t;
    typex::detail::raise<device_error>([&](auto& w) {
      w.put("typex::cuda::to_device: the tensor is on "); w.put(t.device().to_string()); w.put(", not on the host");
    });
  }
  t.check_storage("typex::cuda::to_device: the tensor");
  device_memory m(rt);
  any_tensor out = m.copy_of(t);
  rt->synchronize();  // (the host tensor may go as soon as this returns)
  return out;
}

// A host copy of device tensor `t` (waits for the work of its device's stream).
inline any_tensor to_host(const any_tensor& t) {
  if (t.device().is_host()) return t.clone();
  const std::shared_ptr<device_runtime> rt = detail::runtime_of(t.get_storage(), "typex::cuda::to_host");
  any_tensor out(t.scalar_type(), t.extents());
  if (t.nbytes() != 0) rt->copy_to_host(out.raw_data(), t.raw_data(), t.nbytes());
  rt->synchronize();
  return out;
}

// (typed tensors: tensor.hpp, device_tensor<DT, S>)

}  // namespace typex::cuda
