// typex/backend/kit/memory.hpp — the device and buffer model under the plan's locations and the
// arena: where a backend's memory comes from, and copies between the host and it.
//
// A plan (plan/plan.hpp) places every intermediate at an offset of one arena; the arena, the
// uploaded weights and the tensors a backend hands out are storages (tensor/storage.hpp) that
// know their device. A backend's memory_resource makes them: the host's allocates aligned host
// memory; a device's (cuda::device_memory) allocates on its device and copies over its stream.
// Addresses never move while a storage lives: a plan that needs a bigger arena gets a new one.
#pragma once

#include <typex/core/error.hpp>
#include <typex/tensor/device.hpp>
#include <typex/tensor/host_tensor.hpp>
#include <typex/tensor/storage.hpp>

#include <cstddef>
#include <cstring>

namespace typex::kit {

class memory_resource {
 public:
  virtual ~memory_resource() = default;
  // The device this resource allocates on.
  virtual typex::device where() const noexcept = 0;
  // `bytes` on where(), aligned for any dtype (the host: storage::alignment; CUDA: 256 bytes), NOT
  // zeroed (a plan writes before it reads); a typed error when there is no more memory.
  virtual storage allocate(std::size_t bytes) = 0;
  // Copies `bytes` from src to dst, either of which may be on the host or on where() (ordered
  // with the resource's other work; visible to the host after synchronize()).
  virtual void copy(std::byte* dst, typex::device dst_on, const std::byte* src, typex::device src_on, std::size_t bytes) = 0;
  // Waits for the resource's copies and work.
  virtual void synchronize() {}

  // A tensor of `dt` and `extents` on where() (not zeroed).
  any_tensor make_tensor(dtype dt, std::vector<index_t> extents) {
    const std::size_t bytes = typex::detail::checked_bytes(extents, dt, "tensor");
    return any_tensor(dt, std::move(extents), allocate(bytes));
  }
  // A copy of `t` on where() (t may be on the host or on where()).
  any_tensor copy_of(const any_tensor& t) {
    any_tensor out = make_tensor(t.scalar_type(), t.extents());
    if (t.nbytes() != 0) copy(out.raw_data(), out.device(), t.raw_data(), t.device(), t.nbytes());
    return out;
  }
};

// The host's memory: aligned allocations, memcpy.
class host_memory final : public memory_resource {
 public:
  typex::device where() const noexcept override { return typex::device::host(); }
  storage allocate(std::size_t bytes) override { return storage::uninitialized(bytes); }
  void copy(std::byte* dst, typex::device dst_on, const std::byte* src, typex::device src_on, std::size_t bytes) override {
    if (!dst_on.is_host() || !src_on.is_host()) {
      typex::detail::raise<device_error>([&](auto& w) {
        w.put("typex::kit::host_memory: a copy from "); w.put(src_on.to_string()); w.put(" to "); w.put(dst_on.to_string());
        w.put(" needs that device's backend");
      });
    }
    if (bytes != 0) std::memmove(dst, src, bytes);
  }
};

}  // namespace typex::kit
