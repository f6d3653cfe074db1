// The CUDA tests' inputs: a tensor of f32 values spread over [-amplitude, amplitude] in `steps`
// levels by a xorshift stream of `seed` (the same values on every machine), shared by the emulated
// and the GPU tests.
#pragma once

#include <typex/tensor/host_tensor.hpp>

#include <cstdint>
#include <vector>

namespace typex_test {

inline typex::any_tensor pattern(std::vector<typex::index_t> extents, std::uint64_t seed, double amplitude = 1.0,
                                 std::uint64_t steps = 20001) {
  typex::any_tensor t(typex::dtype::f32, extents);
  std::uint64_t s = seed * 0x9E3779B97F4A7C15ull + 7;
  const double half = static_cast<double>(steps - 1) / 2.0;
  for (typex::index_t i = 0; i < t.numel(); ++i) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    t.data<float>()[i] = static_cast<float>(amplitude * (static_cast<double>(s % steps) / half - 1.0));
  }
  return t;
}

}  // namespace typex_test
