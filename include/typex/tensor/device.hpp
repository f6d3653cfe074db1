// typex/tensor/device.hpp — where a tensor's bytes live: the host, or a device (a CUDA GPU, real
// or emulated).
//
// A storage carries its device (tensor/storage.hpp): host memory is what `new` gives; device
// memory belongs to a backend's allocator, and the host never reads it through the pointer (on a
// real GPU it is not host memory; on the emulated device it is, but it is read the same way, through
// the backend's copies, so that a test on the emulator catches what a GPU would). A program or an
// eager op that gets a tensor on the wrong device throws typex::device_error naming both devices.
#pragma once

#include <typex/config.hpp>

#include <cstdint>
#include <string>

namespace typex {

enum class device_kind : std::uint8_t { host, cuda };

struct device {
  device_kind kind = device_kind::host;
  int index = 0;  // (cuda: the ordinal)

  static constexpr device host() noexcept { return {}; }
  static constexpr device cuda(int i = 0) noexcept { return {device_kind::cuda, i}; }
  constexpr bool is_host() const noexcept { return kind == device_kind::host; }
  friend constexpr bool operator==(const device&, const device&) = default;

  // "cpu", "cuda:0" (torch's spelling)
  std::string to_string() const {
    if (kind == device_kind::host) return "cpu";
    return "cuda:" + std::to_string(index);
  }
};

}  // namespace typex
