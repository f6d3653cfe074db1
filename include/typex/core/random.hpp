// typex/core/random.hpp — the random numbers random ops draw: one counter-based stream per thread.
//
//   typex::manual_seed(7);                 // as torch.manual_seed: the calling thread's stream restarts
//   typex::rng_state s = typex::get_rng_state();
//   ... model(x) ...                       // a training-mode dropout takes one draw
//   typex::set_rng_state(s);               // the same draws again: the same masks
//
// A random op takes one *draw* per call: the thread's (seed, offset), after which the offset moves
// on by one. Element i of the draw is a pure function of (seed, offset, i): Philox4x32-10 (Salmon
// et al., "Parallel Random Numbers: As Easy as 1, 2, 3", SC'11; PyTorch's CUDA generator) with the
// seed as its key and (i / 4, offset) as its counter, one 32-bit word of the four per element. So
// a draw's numbers do not depend on how a kernel splits the work across threads, or on the backend,
// and a model run eagerly, its exported program and its joint (training) program draw the same masks
// in the same order from the same state: each records its random ops in the order the model calls
// them, and each op takes one draw.
//
// The numbers are typex's own: PyTorch's CPU generator is a Mersenne twister, so a typex dropout mask
// is not PyTorch's for the same seed (its statistics are).
#pragma once

#include <array>
#include <cstdint>

namespace typex {

// PyTorch's default CPU seed (torch.initial_seed() in a fresh process).
inline constexpr std::uint64_t default_rng_seed = 67280421310721ULL;

struct rng_state {
  std::uint64_t seed = default_rng_seed;
  std::uint64_t offset = 0;  // draws taken since the seed was set
  friend constexpr bool operator==(const rng_state&, const rng_state&) = default;
};

// Philox4x32-10: four 32-bit words from a 128-bit counter and a 64-bit key.
constexpr std::array<std::uint32_t, 4> philox4x32_10(std::array<std::uint32_t, 4> c, std::array<std::uint32_t, 2> k) noexcept {
  constexpr std::uint64_t m0 = 0xD2511F53u, m1 = 0xCD9E8D57u;
  constexpr std::uint32_t w0 = 0x9E3779B9u, w1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    const std::uint64_t p0 = m0 * c[0], p1 = m1 * c[2];
    c = {static_cast<std::uint32_t>(p1 >> 32) ^ c[1] ^ k[0], static_cast<std::uint32_t>(p1),
         static_cast<std::uint32_t>(p0 >> 32) ^ c[3] ^ k[1], static_cast<std::uint32_t>(p0)};
    k = {k[0] + w0, k[1] + w1};
  }
  return c;
}

// The four words of block `block` (elements 4*block .. 4*block+3) of draw `d`.
constexpr std::array<std::uint32_t, 4> draw_block(rng_state d, std::uint64_t block) noexcept {
  return philox4x32_10({static_cast<std::uint32_t>(block), static_cast<std::uint32_t>(block >> 32),
                        static_cast<std::uint32_t>(d.offset), static_cast<std::uint32_t>(d.offset >> 32)},
                       {static_cast<std::uint32_t>(d.seed), static_cast<std::uint32_t>(d.seed >> 32)});
}

// Dropout's keep test: element i of a draw is kept when its word is below keep_threshold(p), i.e.
// with probability 1 - p (exactly 1 for p = 0, 0 for p = 1; p must be in [0, 1]).
constexpr std::uint64_t keep_threshold(double p) noexcept {
  const double keep = (1.0 - p) * 4294967296.0;  // (1 - p) * 2^32
  return keep <= 0 ? 0 : keep >= 4294967296.0 ? 4294967296ULL : static_cast<std::uint64_t>(keep);
}

// Calls f(i, kept) for elements [begin, end) of draw d (any split of a draw's elements gives the
// same answers).
template <class F>
constexpr void for_each_kept(rng_state d, std::uint64_t threshold, std::uint64_t begin, std::uint64_t end, F&& f) {
  std::uint64_t i = begin;
  while (i < end) {
    const auto words = draw_block(d, i / 4);
    for (std::uint64_t j = i % 4; j < 4 && i < end; ++j, ++i) f(i, words[j] < threshold);
  }
}

namespace detail {
inline rng_state& thread_rng() noexcept {
  thread_local rng_state s;
  return s;
}
}  // namespace detail

// The calling thread's stream (each thread has its own, starting at default_rng_seed).
inline void manual_seed(std::uint64_t seed) noexcept { detail::thread_rng() = {seed, 0}; }
inline rng_state get_rng_state() noexcept { return detail::thread_rng(); }
inline void set_rng_state(rng_state s) noexcept { detail::thread_rng() = s; }

// A random op's draw: the thread's state, then the offset moves on by one.
inline rng_state take_draw() noexcept {
  rng_state& s = detail::thread_rng();
  const rng_state d = s;
  ++s.offset;
  return d;
}

}  // namespace typex
