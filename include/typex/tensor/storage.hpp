// typex/tensor/storage.hpp — aligned, shared, zero-initialized host memory.
//
// Tensors share storage like torch tensors do (copying a tensor copies a handle); `clone()` copies
// the bytes. Alignment is TYPEX_CONFIG_ALIGNMENT (64 by default: a cache line, an AVX-512 vector).
#pragma once

#include <typex/core/error.hpp>
#include <typex/tensor/device.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <string_view>
#include <utility>

namespace typex {

class storage {
 public:
  static constexpr std::size_t alignment = TYPEX_CONFIG_ALIGNMENT;

  // No memory (a moved-from storage is one too): data() is null.
  storage() = default;
  // `bytes` zeroed bytes. Even 0 bytes get a block of their own: a storage's address is its
  // identity (tracing tells tensors apart by it), and two empty tensors are two tensors.
  explicit storage(std::size_t bytes) : storage(bytes, uninitialized_tag{}) { std::memset(data_.get(), 0, bytes); }

  // `bytes` bytes NOT zeroed, for a buffer filled right away (a file read into memory): zeroing a
  // gigabyte first costs as much as reading it.
  static storage uninitialized(std::size_t bytes) { return storage(bytes, uninitialized_tag{}); }

  // Bytes [offset, offset + bytes) of `owner`, sharing its ownership (no allocation): the Eigen
  // backend's planned programs hand kernels views of their arena this way.
  static storage view(const storage& owner, std::size_t offset, std::size_t bytes) {
    if (offset > owner.bytes_ || bytes > owner.bytes_ - offset) {  // (no offset + bytes: it may wrap)
      detail::raise<argument_error>([&](auto& w) {
        w.put("typex::storage::view: bytes ["); w.put_int(static_cast<long long>(offset)); w.put(", ");
        w.put_int(static_cast<long long>(offset + bytes)); w.put(") are outside a storage of ");
        w.put_int(static_cast<long long>(owner.bytes_));
      });
    }
    storage s;
    s.data_ = std::shared_ptr<std::byte>(owner.data_, owner.data() + offset);
    s.bytes_ = bytes;
    s.device_ = owner.device_;
    return s;
  }

  // A view of o's bytes that owns nothing (use_count() 0): a runner hands a tensor it keeps to a
  // consumer for one call this way, so that the consumer's copy does not count as a second owner
  // (a planned engine reuses an output buffer that no one else holds). o must outlive its use.
  static storage borrow(const storage& o) noexcept {
    storage s;
    s.data_ = std::shared_ptr<std::byte>(std::shared_ptr<std::byte>{}, o.data_.get());
    s.bytes_ = o.bytes_;
    s.device_ = o.device_;
    return s;
  }

  // `bytes` bytes at `owner.get()` that `owner` keeps alive (a memory-mapped file, a buffer from
  // another library): no allocation, no copy. Its address must satisfy the alignment of whatever
  // dtype a tensor over it holds (any_tensor checks).
  static storage adopt(std::shared_ptr<std::byte> owner, std::size_t bytes) noexcept {
    storage s;
    s.data_ = std::move(owner);
    s.bytes_ = s.data_ ? bytes : 0;
    return s;
  }

  // `bytes` bytes of device memory at `owner.get()` (a backend's allocation: `owner`'s deleter
  // gives it back). The host does not read them: data() is a device address, and clone() refuses.
  static storage on_device(std::shared_ptr<std::byte> owner, std::size_t bytes, typex::device d) noexcept {
    storage s = adopt(std::move(owner), bytes);
    s.device_ = d;
    return s;
  }
  storage(const storage&) = default;
  storage& operator=(const storage&) = default;
  // A moved-from storage holds nothing (null, 0 bytes), so the tensor it belonged to is detected.
  storage(storage&& o) noexcept : data_(std::move(o.data_)), bytes_(std::exchange(o.bytes_, 0)), device_(o.device_) {}
  storage& operator=(storage&& o) noexcept {
    data_ = std::move(o.data_);
    bytes_ = std::exchange(o.bytes_, 0);
    device_ = o.device_;
    return *this;
  }

  std::byte* data() const noexcept { return data_.get(); }
  std::size_t bytes() const noexcept { return bytes_; }
  long use_count() const noexcept { return data_.use_count(); }
  // Where the bytes live (the host unless a backend made this storage: on_device).
  typex::device device() const noexcept { return device_; }
  // An observer of the bytes' lifetime (expired once no storage shares them).
  std::weak_ptr<std::byte> observe() const noexcept { return data_; }

  storage clone() const {
    if (!device_.is_host()) {
      detail::raise<device_error>([&](auto& w) {
        w.put("typex::storage::clone: the bytes live on "); w.put(device_.to_string());
        w.put(", where the host cannot copy them: copy the tensor with its backend (typex::cuda::to_host, or to_device)");
      });
    }
    storage s(bytes_);
    if (bytes_) std::memcpy(s.data(), data(), bytes_);
    return s;
  }

 private:
  static std::size_t round_up(std::size_t n) noexcept { return n == 0 ? alignment : (n + alignment - 1) / alignment * alignment; }

  struct uninitialized_tag {};
  storage(std::size_t bytes, uninitialized_tag) : bytes_(bytes) {
    if (bytes > static_cast<std::size_t>(PTRDIFF_MAX)) {  // (core/sizes.hpp's limit; round_up would wrap)
      detail::raise<argument_error>([&](auto& w) {
        w.put("typex::storage: "); w.put_int(static_cast<long long>(bytes >> 1)); w.put(" * 2 bytes is more than a pointer can address");
      });
    }
    void* p = ::operator new(round_up(bytes), std::align_val_t{alignment});
    data_ = std::shared_ptr<std::byte>(static_cast<std::byte*>(p), [](std::byte* q) {
      ::operator delete(static_cast<void*>(q), std::align_val_t{alignment});
    });
  }

  std::shared_ptr<std::byte> data_;
  std::size_t bytes_ = 0;
  typex::device device_;
};

namespace detail {
// A tensor whose storage holds fewer bytes than its extents need: a moved-from tensor (no storage
// at all: `data` null) is a state_error, any other an argument_error.
[[noreturn]] TYPEX_NOINLINE TYPEX_COLD inline void storage_too_small(std::string_view who, std::size_t have, std::size_t need,
                                                                     const void* data) {
  if (data == nullptr) {
    raise<state_error>([&](auto& w) {
      w.put(who); w.put(": the tensor has no storage (it was moved from), and its extents need ");
      w.put_int(static_cast<long long>(need)); w.put(" bytes");
    });
  }
  raise<argument_error>([&](auto& w) {
    w.put(who); w.put(": storage of "); w.put_int(static_cast<long long>(have)); w.put(" bytes is too small for ");
    w.put_int(static_cast<long long>(need));
  });
}
}  // namespace detail

}  // namespace typex
