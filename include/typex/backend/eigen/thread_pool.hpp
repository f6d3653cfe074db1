// typex/backend/eigen/thread_pool.hpp — the CPU backend's workers.
//
// One process-wide pool of `threads - 1` workers; the calling thread is the first worker of every
// parallel region, so 1 thread means no pool at all. A region hands each participant an index
// (0 = the caller) through a function pointer and a context pointer: starting one allocates
// nothing. Workers spin for a short while after a region (the next op of a program follows within
// microseconds), then sleep on a condition variable, so an idle program costs no CPU. Spinning
// turns into yielding after a few hundred pauses, so that two threads put on one CPU (more
// threads than free CPUs) still make progress: that case measured 781 us per MLP call instead of
// 55 us before the yield.
//
// Regions do not nest: a region started from inside a worker runs on the calling thread alone.
#pragma once

#include <typex/config.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace typex::eigen::detail {

class thread_pool {
 public:
  static thread_pool& instance() {
    static thread_pool pool;
    return pool;
  }

  thread_pool(const thread_pool&) = delete;
  thread_pool& operator=(const thread_pool&) = delete;
  ~thread_pool() { resize(1); }

  // (atomic: programs on other threads ask while resize runs)
  int threads() const noexcept { return count_.load(std::memory_order_acquire); }

  // Sets the number of participants (the caller included); joins or starts workers.
  void resize(int threads) {
    threads = std::max(threads, 1);
    const std::lock_guard<std::mutex> region(region_);
    if (static_cast<std::size_t>(threads - 1) == workers_.size()) return;
    {
      const std::lock_guard<std::mutex> lk(sleep_);
      stop_ = true;
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    for (std::thread& t : workers_) t.join();
    workers_.clear();
    stop_ = false;
    // (a worker starts from the generation of its creation: a region or a stop that comes before
    // the thread runs is still seen)
    const std::uint64_t now = generation_.load(std::memory_order_acquire);
    for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i, now] { work(i, now); });
    count_.store(threads, std::memory_order_release);
  }

  // Runs f(index) for every index in [0, n); returns when all are done. Index 0 runs on the calling
  // thread; with P participants (threads() when the region starts), participant p runs the indices
  // p, p + P, p + 2P, ...: every index runs exactly once even when the pool shrank (resize from
  // another thread) after the caller split its work into n parts. f must not throw.
  template <class F>
  void run(int n, F& f) {
    if (n <= 0) return;
    if (n == 1 || in_region_) {
      for (int i = 0; i < n; ++i) f(i);
      return;
    }
    const std::lock_guard<std::mutex> region(region_);  // (resize waits for this region, and back)
    const int participants = std::min(n, threads());
    if (participants <= 1) {
      for (int i = 0; i < n; ++i) f(i);
      return;
    }
    fn_ = [](void* ctx, int i) { (*static_cast<F*>(ctx))(i); };
    ctx_ = &f;
    tasks_ = n;
    stride_ = participants;
    pending_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
    {
      const std::lock_guard<std::mutex> lk(sleep_);
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    in_region_ = true;
    for (int i = 0; i < n; i += participants) f(i);
    in_region_ = false;
    // (spin, then yield: a worker that shares this CPU — more threads than free CPUs, a VM's
    // neighbours — gets to finish instead of waiting for the end of our time slice)
    for (unsigned spins = 0; pending_.load(std::memory_order_acquire) != 0; ++spins) {
      if (spins < spin_before_yield) TYPEX_CPU_RELAX();
      else std::this_thread::yield();
    }
  }

  // Runs f(task, participant) for every task in [0, tasks) on up to `threads` participants, each
  // taking the next task from a shared counter when it finishes one: a participant that loses its
  // CPU for a while (a preempted vCPU, a busy neighbour) delays the region by one task instead of
  // by its whole static share. participant < min(threads, tasks): an index for per-participant
  // scratch (two participants never run at once with the same index). f must not throw.
  template <class F>
  void run_dynamic(int threads, std::int64_t tasks, F& f) {
    if (tasks <= 0) return;
    alignas(64) std::atomic<std::int64_t> next{0};
    auto part = [&](int p) {
      for (std::int64_t i = next.fetch_add(1, std::memory_order_relaxed); i < tasks; i = next.fetch_add(1, std::memory_order_relaxed)) f(i, p);
    };
    run(static_cast<int>(std::min<std::int64_t>(std::max(threads, 1), tasks)), part);
  }

 private:
  thread_pool() = default;

  void work(int index, std::uint64_t seen) {
    in_region_ = true;  // a region started by f runs inline
    for (;;) {
      std::uint64_t g = generation_.load(std::memory_order_acquire);
      const auto spin_until = std::chrono::steady_clock::now() + std::chrono::microseconds(200);
      for (unsigned spins = 0; g == seen; g = generation_.load(std::memory_order_acquire)) {
        if (spins < spin_before_yield) TYPEX_CPU_RELAX();
        else std::this_thread::yield();  // (the caller may share this CPU: let it run)
        if ((++spins & 255u) == 0 && std::chrono::steady_clock::now() > spin_until) {
          std::unique_lock<std::mutex> lk(sleep_);
          wake_.wait(lk, [&] { return generation_.load(std::memory_order_acquire) != seen; });
        }
      }
      seen = g;
      if (stop_) return;
      if (index < stride_)
        for (int i = index; i < tasks_; i += stride_) fn_(ctx_, i);
      pending_.fetch_sub(1, std::memory_order_acq_rel);
    }
  }

  static constexpr unsigned spin_before_yield = 256;  // pause instructions (~1-10 us, by CPU) before yielding

  std::vector<std::thread> workers_;
  std::mutex region_;  // one region (or resize) at a time
  std::mutex sleep_;
  std::condition_variable wake_;
  // (each on its own cache line: the workers poll generation_ while they finish pending_ and the
  // caller polls pending_; a shared line would bounce between the cores on every write)
  alignas(64) std::atomic<std::uint64_t> generation_{0};
  alignas(64) std::atomic<int> pending_{0};
  alignas(64) std::atomic<int> count_{1};  // workers + the caller
  void (*fn_)(void*, int) = nullptr;
  void* ctx_ = nullptr;
  int tasks_ = 0;
  int stride_ = 0;  // the participants of the current region
  bool stop_ = false;
  static inline thread_local bool in_region_ = false;
};

}  // namespace typex::eigen::detail
