// benchmarks/models/fma_peak.hpp — the machine's multiply-add peak, measured in the run that
// reports against it (this VM's peak moves 1.5x within an hour: a peak from another run says
// little). Eigen packets, 12 independent multiply-add chains per thread, one thread per CPU asked.
#pragma once

#include <Eigen/Core>
#include <benchmark/benchmark.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace bench {
// Measured FMA throughput (GFLOP/s) with `threads` threads.
inline double fma_peak(int threads) {
  using P = Eigen::internal::packet_traits<float>::type;
  constexpr int L = Eigen::internal::packet_traits<float>::size;
  auto one = [] {
    using namespace Eigen::internal;
    P acc[12];
    for (auto& a : acc) a = pset1<P>(0.f);
    const P x = pset1<P>(1.0000001f), y = pset1<P>(0.9999999f);
    const long iters = 20'000'000;
    const auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < iters; ++i)
      for (auto& a : acc) a = pmadd(a, x, y);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    float sink = 0;
    for (auto& a : acc) sink += pfirst(a);
    benchmark::DoNotOptimize(sink);
    return iters * 12.0 * L * 2.0 / s * 1e-9;
  };
  std::vector<double> r(static_cast<std::size_t>(threads));
  std::vector<std::thread> ts;
  for (int i = 0; i < threads; ++i) ts.emplace_back([&, i] { r[static_cast<std::size_t>(i)] = one(); });
  for (auto& t : ts) t.join();
  double total = 0;
  for (double v : r) total += v;
  return total;
}

// The context keys rounds.py reads: fma_peak_gflops_1_thread, fma_peak_gflops_2_threads
inline void add_fma_peak_context() {
  benchmark::AddCustomContext("fma_peak_gflops_1_thread", std::to_string(fma_peak(1)));
  benchmark::AddCustomContext("fma_peak_gflops_2_threads", std::to_string(fma_peak(2)));
}
}  // namespace bench
