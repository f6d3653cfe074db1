// typex/backend/cuda/detail/records.hpp — what a CUDA plan runs per call: its records (a kernel
// launch, a cuBLASLt product, a cuDNN convolution or a zero fill, each named by its node), run in order on a device, and
// the emulated device's check that each writes only its planned slot. Part of the planned engine
// (engine_impl.hpp); a header of its own so that tests can run hand-made records.
#pragma once

#include <typex/backend/cuda/device.hpp>
#include <typex/backend/cuda/launch.hpp>
#include <typex/backend/cuda/lt.hpp>
#include <typex/core/error.hpp>
#include <typex/tensor/storage.hpp>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace typex::cuda::detail {

// One thing the engine does per call, in order.
struct record {
  struct gemm {
    std::size_t product;  // index into the plan's products
    matmul_args args;
  };
  struct zero {  // (fill_zero: a product with k = 0 writes its bias, or zeros)
    void* at;
    std::size_t bytes;
  };
  struct dnn {  // (a cuDNN convolution, dnn.hpp: shared, so that this header needs no cuDNN header)
    std::shared_ptr<const dnn_convolution> conv;
    convolution_args args;
  };
  std::variant<kernel_launch, gemm, zero, dnn> what;
  std::string name;       // "node 'fc1' (aten.linear.default)"
  std::byte* out = nullptr;  // (the emulator's write check: the bytes the record may write)
  std::size_t out_bytes = 0;
  std::byte* out2 = nullptr;  // (and a second range: a product's bias gradient)
  std::size_t out2_bytes = 0;
};

// On the emulated device (`check`): a record may change the arena only inside the bytes it writes.
// A kernel that writes past its planned slot (an off-by-one tail, a wrong stride) changes another
// value's bytes, which this finds at once, naming the node, where a GPU would silently corrupt a
// later result.
inline void check_writes(const storage& arena, const record& r, const std::vector<std::byte>& before) {
  const std::byte* base = arena.data();
  const std::size_t n = arena.bytes();
  const auto range = [&](const std::byte* p, std::size_t bytes) {
    if (p < base || p >= base + n) return std::pair{n, n};
    const auto lo = static_cast<std::size_t>(p - base);
    return std::pair{lo, std::min(n, lo + bytes)};
  };
  const auto [lo, hi] = range(r.out, r.out_bytes);
  const auto [lo2, hi2] = range(r.out2, r.out2_bytes);
  std::size_t first = n;
  for (std::size_t i = 0; i < n && first == n; ++i)
    if ((i < lo || i >= hi) && (i < lo2 || i >= hi2) && base[i] != before[i]) first = i;
  if (first == n) return;
  typex::detail::raise<device_error>([&](auto& w) {
    w.put("typex::cuda: "); w.put(r.name); w.put(" wrote arena byte "); w.put_int(static_cast<long long>(first));
    w.put(", outside its planned slot ["); w.put_int(static_cast<long long>(lo)); w.put(", ");
    w.put_int(static_cast<long long>(hi)); w.put(")");
    if (lo2 != n) {
      w.put(" and ["); w.put_int(static_cast<long long>(lo2)); w.put(", "); w.put_int(static_cast<long long>(hi2)); w.put(")");
    }
    w.put(" (the emulated device checks the writes of every launch)");
  });
}

// Runs a plan's records in order on `rt`; with `check`, each record's writes are checked.
inline void run_records_on(device_runtime& rt, const std::vector<record>& records, const std::vector<lt_matmul*>& products,
                           const storage& arena, bool check) {
  std::vector<std::byte> before;
  for (const record& r : records) {
    if (check) before.assign(arena.data(), arena.data() + arena.bytes());
    if (const auto* k = std::get_if<kernel_launch>(&r.what)) rt.launch(*k, r.name);
    else if (const auto* z = std::get_if<record::zero>(&r.what)) rt.fill_zero(z->at, z->bytes);
    else if (const auto* c = std::get_if<record::dnn>(&r.what)) rt.convolution(*c->conv, c->args, r.name);
    else {
      const auto& g = std::get<record::gemm>(r.what);
      rt.matmul(*products[g.product], g.args, r.name);
    }
    if (check) check_writes(arena, r, before);
  }
}

}  // namespace typex::cuda::detail
