// typex/tensor/storage.hpp — aligned, shared, zero-initialized host memory.
//
// Tensors share storage like torch tensors do (copying a tensor copies a handle); `clone()` copies
// the bytes. Alignment is TYPEX_CONFIG_ALIGNMENT (64 by default: a cache line, an AVX-512 vector).
#pragma once

#include <typex/core/error.hpp>

#include <cstddef>
#include <cstring>
#include <memory>
#include <new>

namespace typex {

class storage {
 public:
  static constexpr std::size_t alignment = TYPEX_CONFIG_ALIGNMENT;

  storage() = default;
  explicit storage(std::size_t bytes) : bytes_(bytes) {
    if (bytes == 0) return;
    void* p = ::operator new(round_up(bytes), std::align_val_t{alignment});
    std::memset(p, 0, bytes);
    data_ = std::shared_ptr<std::byte>(static_cast<std::byte*>(p), [](std::byte* q) {
      ::operator delete(static_cast<void*>(q), std::align_val_t{alignment});
    });
  }

  // Bytes [offset, offset + bytes) of `owner`, sharing its ownership (no allocation): the Eigen
  // backend's planned programs hand kernels views of their arena this way.
  static storage view(const storage& owner, std::size_t offset, std::size_t bytes) {
    if (offset + bytes > owner.bytes_) {
      detail::raise<argument_error>([&](auto& w) {
        w.put("typex::storage::view: bytes ["); w.put_int(static_cast<long long>(offset)); w.put(", ");
        w.put_int(static_cast<long long>(offset + bytes)); w.put(") are outside a storage of ");
        w.put_int(static_cast<long long>(owner.bytes_));
      });
    }
    storage s;
    s.data_ = std::shared_ptr<std::byte>(owner.data_, owner.data() + offset);
    s.bytes_ = bytes;
    return s;
  }

  std::byte* data() const noexcept { return data_.get(); }
  std::size_t bytes() const noexcept { return bytes_; }
  long use_count() const noexcept { return data_.use_count(); }

  storage clone() const {
    storage s(bytes_);
    if (bytes_) std::memcpy(s.data(), data(), bytes_);
    return s;
  }

 private:
  static std::size_t round_up(std::size_t n) noexcept { return (n + alignment - 1) / alignment * alignment; }

  std::shared_ptr<std::byte> data_;
  std::size_t bytes_ = 0;
};

}  // namespace typex
