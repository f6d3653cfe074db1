// typex/trace/init.hpp — deterministic parameter initialization with PyTorch's default schemes.
//
// init_module(m, seed) calls reset_parameters(gen) on m and every submodule that has one, each with
// its own generator derived from the seed and the submodule's FQN: the values do not depend on the
// order modules are visited in, and adding a module does not change the others'. The schemes are
// PyTorch's (kaiming_uniform_ with a = sqrt(5) for Linear/Conv weights, U(-1/sqrt(fan_in), ..) for
// their biases, xavier_uniform_ for attention projections, N(0, 1) for embeddings, ones/zeros for
// norms); the random stream is typex's own (xoshiro256**), so the numbers differ from torch's
// while their distributions match.
#pragma once

#include <typex/trace/module.hpp>

#include <cmath>
#include <cstdint>
#include <string_view>

namespace typex::init {

// xoshiro256** seeded through splitmix64 from (seed, name).
class generator {
 public:
  generator(std::uint64_t seed, std::string_view name = {}) {
    std::uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a of the name, mixed into the seed
    for (char c : name) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
    std::uint64_t x = seed ^ h;
    for (auto& s : state_) s = splitmix(x);
  }

  std::uint64_t next() noexcept {
    const std::uint64_t result = rotl(state_[1] * 5, 7) * 9;
    const std::uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = rotl(state_[3], 45);
    return result;
  }
  // Uniform in [0, 1), 53 random bits.
  double uniform() noexcept { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  // Standard normal (Box-Muller; one draw per call).
  double normal() noexcept {
    double u1 = uniform();
    while (u1 <= 0.0) u1 = uniform();
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) noexcept { return (x << k) | (x >> (64 - k)); }
  static std::uint64_t splitmix(std::uint64_t& x) noexcept {
    std::uint64_t z = (x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  std::uint64_t state_[4];
};

namespace detail {
template <class T, class F>
void fill_with(const T& t, F&& value) {
  using V = typename T::value_type;
  V* p = t.data();
  for (index_t i = 0, n = t.numel(); i < n; ++i) {
    if constexpr (std::is_floating_point_v<V>) p[i] = static_cast<V>(value());
    else if constexpr (std::is_same_v<V, half> || std::is_same_v<V, bfloat16>) p[i] = V(static_cast<float>(value()));
    else p[i] = static_cast<V>(value());
  }
}
}  // namespace detail

template <class T>
void constant_(const T& t, double v) { detail::fill_with(t, [v] { return v; }); }
template <class T>
void zeros_(const T& t) { constant_(t, 0.0); }
template <class T>
void ones_(const T& t) { constant_(t, 1.0); }
template <class T>
void uniform_(const T& t, double lo, double hi, generator& g) {
  detail::fill_with(t, [&] { return lo + (hi - lo) * g.uniform(); });
}
template <class T>
void normal_(const T& t, double mean, double std, generator& g) {
  detail::fill_with(t, [&] { return mean + std * g.normal(); });
}

// PyTorch's fan-in of a weight: dim 1 times the receptive field (the dims after 1).
template <class T>
index_t fan_in(const T& t) {
  const auto e = t.extents();
  static_assert(T::rank >= 2, "typex::init::fan_in: a weight has at least 2 dims");
  index_t f = e[1];
  for (std::size_t d = 2; d < e.size(); ++d) f *= e[d];
  return f;
}
template <class T>
index_t fan_out(const T& t) {
  const auto e = t.extents();
  index_t f = e[0];
  for (std::size_t d = 2; d < e.size(); ++d) f *= e[d];
  return f;
}

// torch.nn.init.kaiming_uniform_(t, a, mode='fan_in', nonlinearity='leaky_relu').
template <class T>
void kaiming_uniform_(const T& t, double a, generator& g) {
  const double gain = std::sqrt(2.0 / (1.0 + a * a));
  const double bound = gain * std::sqrt(3.0 / static_cast<double>(fan_in(t)));
  uniform_(t, -bound, bound, g);
}

// torch.nn.init.xavier_uniform_(t, gain).
template <class T>
void xavier_uniform_(const T& t, double gain, generator& g) {
  const double bound = gain * std::sqrt(6.0 / static_cast<double>(fan_in(t) + fan_out(t)));
  uniform_(t, -bound, bound, g);
}

}  // namespace typex::init

namespace typex {

// Initializes every submodule that defines reset_parameters(init::generator&), each from
// (seed, its FQN).
// A model type without reflection: a compile error saying so (not "no matching function").
// (a deduced return type: g++ instantiates a void function template's body at the end of the unit,
// which would put this sentence after the errors of the lines that follow the call)
template <class M>
  requires(!module_type<M>)
auto init_module(M&, std::uint64_t) {
  detail::fail_not_a_module<M>();
}

template <module_type M>
void init_module(M& m, std::uint64_t seed) {
  for_each_submodule(m, [&](const std::string& fqn, auto& sub) {
    if constexpr (requires(init::generator& g) { sub.reset_parameters(g); }) {
      init::generator g(seed, fqn);
      sub.reset_parameters(g);
    }
  });
}

}  // namespace typex
