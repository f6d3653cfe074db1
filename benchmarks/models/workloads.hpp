// benchmarks/models/workloads.hpp — what every peer of the model benchmarks shares: the three
// reference workloads' sizes, their FLOP counts, and deterministic weights keyed by parameter name
// (so typex, the hand-written Eigen code and LibTorch run the same numbers). No typex, no Eigen.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace bench {

// MLP 784-512-512-10 (ReLU); CNN 1x28x28: conv3x3 1->32, conv3x3 32->64 (ReLU), max-pool 2, linear
// 9216->128 (ReLU), ->10; transformer encoder block (post-norm, batch first): d_model 256, 4 heads,
// FFN 1024, exact GELU, sequence 128.
inline constexpr long mlp_in = 784, mlp_hidden = 512, mlp_out = 10;
inline constexpr long cnn_c1 = 32, cnn_c2 = 64, cnn_fc = 128, cnn_out = 10;
inline constexpr long tf_d = 256, tf_heads = 4, tf_ff = 1024, tf_seq = 128;

inline double mlp_flops(long batch) { return 2.0 * batch * (784.0 * 512 + 512.0 * 512 + 512.0 * 10); }
inline double cnn_flops(long batch) {
  return 2.0 * batch * (26.0 * 26 * 32 * 9 + 24.0 * 24 * 64 * 32 * 9 + 9216.0 * 128 + 128.0 * 10);
}
inline double transformer_flops(long batch) {
  const double t = double(batch) * tf_seq;
  return 2.0 * t * (3.0 * tf_d * tf_d + tf_d * tf_d + 2.0 * tf_d * tf_ff) + 2.0 * 2.0 * batch * tf_seq * tf_seq * tf_d;
}

// Weight element i of the parameter called `name` (its fan-in scales it, as torch's default init
// does): a hash of the name seeds a small linear congruential stream. Norm weights ("norm*.weight")
// are near 1.
inline void fill_weights(std::string_view name, float* p, std::size_t n, std::size_t fan_in) {
  std::uint64_t h = 1469598103934665603ull;
  for (char c : name) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  const double scale = 1.0 / std::sqrt(double(fan_in ? fan_in : 1));
  const bool norm = name.find("norm") != std::string_view::npos && name.find("weight") != std::string_view::npos;
  for (std::size_t i = 0; i < n; ++i) {
    h = h * 6364136223846793005ull + 1442695040888963407ull;
    const double u = double(h >> 11) / double(1ull << 53) * 2.0 - 1.0;  // [-1, 1)
    p[i] = static_cast<float>(norm ? 1.0 + 0.1 * u : scale * u);
  }
}

// The input: batch x features, values in [-1, 1).
inline void fill_input(float* p, std::size_t n) { fill_weights("input", p, n, 1); }

}  // namespace bench
