// typex/backend/cuda/emulator.hpp — a CPU emulator of the CUDA execution model, for running the
// CUDA backend's kernels (kernels/*.cuh, written against kernel_api.cuh) without a GPU.
//
// Host C++ only (g++ / clang++; nvcc never sees it: kernel_api.cuh maps to native CUDA there). It
// is built to FAIL on the bugs a GPU punishes, not merely to produce numbers:
//   - every CUDA thread of a block is its own thread of execution, in one of two modes
//     (set_execution; the default is chosen by the build):
//       threads: one host thread per CUDA thread, all running at once (a pool, reused across blocks
//         and launches), so ThreadSanitizer reports a missing barrier as a data race; the default
//         under ThreadSanitizer and where fibers are not available;
//       fibers: the block's CUDA threads are fibers on the launching thread (a stack switch of
//         the callee-saved registers on x86-64, POSIX ucontext elsewhere on Linux), each run
//         until it waits at a barrier or a warp operation, in an order shuffled by the seed; no
//         host thread switches (on 2 cores the threads mode spends most of its time in the
//         scheduler's futex wake-ups), a deadlock is known exactly (every thread left waits), and a
//         missing barrier before a tile's first use reads the poisoned shared memory (NaN), one
//         between uses of a tile reads the previous tile's values, in an order the seed shuffles
//         (no data race: ThreadSanitizer's reports need the threads mode);
//         AddressSanitizer is told of every stack switch;
//   - sync_threads() is a barrier that counts arrivals and exits: threads reaching different
//     barriers, or a thread returning while others wait, is a device_error naming the kernel, the
//     block and the threads, not a hang (a timed wait backs up the exact checks; a kernel thread
//     that loops forever still hangs its launch: the emulator cannot stop a thread);
//   - warp operations are a rendezvous of the lanes their mask names, checked to be the same call
//     with the same mask in every lane;
//   - blocks run one at a time in an order shuffled by a seed (set_seed): a GPU promises no order;
//   - dynamic shared memory is one heap buffer per block, exactly the launch's size (AddressSanitizer
//     sees overruns), filled with 0xFF bytes at block start (NaN floats: reads before writes show);
//   - the device limits of an H100 are checked at launch (threads per block, block and grid extents,
//     48 KiB of dynamic shared memory unless the kernel opted in, 227 KiB at most);
//   - an exception thrown by a kernel thread reaches the launching thread.
// Launches are synchronous and serialised (one emulated device queue per process).
// What it does not model (each is a GPU check, scripts/gpu-check.sh):
//   - races between blocks: blocks run one after another, so two blocks writing one element
//     without an atomic give the right answer here (compute-sanitizer's racecheck, on a GPU);
//   - memory ordering within a warp: a warp operation is a rendezvous under a lock, which orders
//     memory as a GPU's shfl / ballot do not (only __syncwarp does);
//   - concurrent warp operations of disjoint lane subsets (two halves of a warp shuffling at once,
//     in divergent branches): one rendezvous per warp serves one call at a time, and such code is
//     reported as lanes making different calls. typex's kernels shuffle whole warps.
#pragma once

#include <typex/config.hpp>
#include <typex/core/error.hpp>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <random>
#include <semaphore>
#include <source_location>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <vector>

#if defined(__SANITIZE_THREAD__)
#define TYPEX_EMU_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TYPEX_EMU_TSAN 1
#endif
#endif
// fibers: Linux, not under ThreadSanitizer (its race reports are the threads mode's reason to be);
// the stack switch is the few instructions below on x86-64, POSIX ucontext elsewhere (glibc's
// swapcontext also sets the signal mask, a system call per switch, and AddressSanitizer's
// interceptor of it clears the target stack's shadow on every switch)
#if defined(__linux__) && __has_include(<ucontext.h>) && __has_include(<sys/mman.h>) && !defined(TYPEX_EMU_TSAN)
#define TYPEX_EMU_FIBERS 1
#include <sys/mman.h>
#include <unistd.h>
// (the own switch returns where its caller did not call: not with CET shadow stacks, where glibc's
// swapcontext keeps the shadow stack right)
#if defined(__x86_64__) && !(defined(__CET__) && (__CET__ & 2))
#define TYPEX_EMU_OWN_SWITCH 1
#else
#include <ucontext.h>
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define TYPEX_EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TYPEX_EMU_ASAN 1
#endif
#endif
#if defined(TYPEX_EMU_ASAN)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

namespace typex::cuda::emu {

// How the CUDA threads of a block run (the header's comment): host threads (ThreadSanitizer sees
// their races) or fibers on the launching thread (fast; a deadlock is known exactly).
enum class execution { threads, fibers };
#if defined(TYPEX_EMU_FIBERS)
inline constexpr bool fibers_available = true;
#else
inline constexpr bool fibers_available = false;
#endif
#if defined(TYPEX_EMU_FIBERS)
inline constexpr execution default_execution = execution::fibers;
#else
inline constexpr execution default_execution = execution::threads;
#endif

// CUDA's dim3 / uint3, as the emulator's kernels see them.
struct dim3 {
  unsigned x = 1, y = 1, z = 1;
};
struct uint3 {
  unsigned x = 0, y = 0, z = 0;
};

inline constexpr unsigned warp_size = 32;
inline constexpr std::size_t default_shared_limit = 48 * 1024;   // without an opt-in
inline constexpr std::size_t optin_shared_limit = 227 * 1024;    // an H100's cudaDevAttrMaxSharedMemoryPerBlockOptin

namespace detail {

// Thrown in the threads of a block that failed, so that they leave their waits and return; the
// launch reports the first real error instead.
struct block_aborted {};

inline std::string where(const std::source_location& s) {
  return std::string(s.file_name()) + ":" + std::to_string(s.line());
}

inline bool same_site(const std::source_location& a, const std::source_location& b) {
  return a.line() == b.line() && a.column() == b.column() && std::string_view(a.file_name()) == b.file_name();
}

// The execution mode a process starts with: TYPEX_CUDA_EMULATOR_EXECUTION=threads or fibers in the
// environment, else the build's default. An unknown value, or fibers where the build has none, is
// kept as `wrong` and refused by every launch until set_execution chooses a mode (not ignored).
struct initial_mode {
  execution mode = default_execution;
  std::string wrong;  // (the refusal's message)
};
inline initial_mode initial_execution() {
  initial_mode r;
  const char* e = std::getenv("TYPEX_CUDA_EMULATOR_EXECUTION");
  if (e == nullptr || *e == '\0') return r;
  const std::string_view v(e);
  if (v == "threads") r.mode = execution::threads;
  else if (v == "fibers" && fibers_available) r.mode = execution::fibers;
  else
    r.wrong = std::string("typex::cuda emulator: TYPEX_CUDA_EMULATOR_EXECUTION=") + e +
              (v == "fibers" ? ": this build has no fibers (Linux, not under ThreadSanitizer)" : ": expected threads or fibers");
  return r;
}

// Settings, process-wide.
struct settings {
  std::atomic<std::uint64_t> seed{0x5eed};
  std::atomic<long long> barrier_timeout_ms{5000};
  initial_mode initial = initial_execution();
  std::atomic<execution> mode{initial.mode};
  std::atomic<bool> mode_refused{!initial.wrong.empty()};  // (the environment's value, until set_execution)
  std::mutex optin_mutex;
  std::map<const void*, std::size_t> optin;  // kernel -> the dynamic shared memory it opted in to
};
inline settings& config() {
  static settings s;
  return s;
}

// A set of thread numbers, printed compactly for diagnostics ("0-127, 200").
inline std::string thread_list(const std::vector<unsigned>& ids) {
  std::string s;
  for (std::size_t i = 0; i < ids.size();) {
    std::size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    if (!s.empty()) s += ", ";
    s += std::to_string(ids[i]);
    if (j > i) {  // (not s += "-" + ...: g++ 12's -Wrestrict false positive at -O2)
      s += '-';
      s += std::to_string(ids[j]);
    }
    i = j + 1;
  }
  return s.empty() ? "none" : s;
}

// The rendezvous of one warp's lanes (warp operations): every lane of `mask` writes its value and
// waits for the others, then reads any lane's value (warp_exchange).
struct warp_state {
  std::mutex m;
  std::condition_variable cv;
  unsigned lanes = 0;             // the lanes this warp has (a block's last warp may be partial)
  std::uint32_t exited = 0;       // lanes that returned from the kernel
  std::uint32_t arrived = 0;      // lanes waiting in the current rendezvous
  std::uint32_t mask = 0;         // the current rendezvous' mask
  std::source_location site;      // and its call
  const char* op = "";
  std::uint64_t phase = 0;
  std::uint64_t values[2][warp_size] = {};  // (alternate rendezvous use alternate rows)
};

class fiber_scheduler;

// One block while it runs.
struct block_state {
  std::string_view kernel;
  uint3 block_idx;
  dim3 block_dim, grid_dim;
  unsigned threads = 0;
  std::unique_ptr<std::byte[]> shared;
  std::size_t shared_bytes = 0;

  // the block barrier (sync_threads)
  std::mutex m;
  std::condition_variable cv;
  unsigned arrived = 0, exited = 0;
  std::uint64_t phase = 0;
  std::source_location site;
  std::vector<unsigned char> waiting;  // per thread: at the barrier now

  std::unique_ptr<warp_state[]> warps;

  // execution::fibers: the scheduler its threads wait through; null: host threads
  fiber_scheduler* fibers = nullptr;

  // the first failure: the launch rethrows it
  std::mutex error_mutex;
  std::exception_ptr error;
  std::atomic<bool> failed{false};

  std::string name() const {
    return std::string("kernel '") + std::string(kernel) + "', block (" + std::to_string(block_idx.x) + ", " + std::to_string(block_idx.y) +
           ", " + std::to_string(block_idx.z) + ")";
  }
  // Records the first error and wakes every waiting thread of the block, which then leave.
  void fail(std::exception_ptr e) {
    {
      const std::lock_guard lock(error_mutex);
      if (!error) error = std::move(e);
    }
    failed.store(true);
    { const std::lock_guard lock(m); }
    cv.notify_all();
    const unsigned nwarps = (threads + warp_size - 1) / warp_size;
    for (unsigned w = 0; w < nwarps; ++w) {
      { const std::lock_guard lock(warps[w].m); }
      warps[w].cv.notify_all();
    }
  }
  [[noreturn]] void fail_here(const std::string& message) {
    fail(std::make_exception_ptr(device_error(std::string("typex::cuda emulator: ") + name() + ": " + message)));
    throw block_aborted{};
  }
};

// What a thread of a kernel sees (thread_idx() & co. read it).
struct thread_context {
  block_state* block = nullptr;
  uint3 thread_idx;
  unsigned linear = 0;
};
inline thread_local thread_context* current = nullptr;

inline thread_context& context() {
  if (current == nullptr)
    typex::detail::raise_message<device_error>(
        "typex::cuda emulator: a kernel API function (thread_idx, sync_threads, a warp operation, shared memory) was "
        "called outside a kernel launched with TYPEX_LAUNCH");
  return *current;
}

inline std::chrono::milliseconds timeout() { return std::chrono::milliseconds(config().barrier_timeout_ms.load()); }

#if defined(TYPEX_EMU_FIBERS)
// A suspended fiber (or the scheduler): where it continues.
#if defined(TYPEX_EMU_OWN_SWITCH)
struct fiber_context {
  void* sp = nullptr;  // its stack, as fiber_switch left it
};
// Pushes the callee-saved registers and the SSE / x87 control words (the System V ABI's preserved
// state) on the current stack, stores the stack pointer in *from, loads `to` and pops the same from
// it: returns into whatever suspended there (or into a new fiber's entry, prepare_fiber).
[[gnu::naked, gnu::noinline]] inline void fiber_switch(void** /*from*/, void* /*to*/) {
  __asm__(
      "pushq %rbp\n\t"
      "pushq %rbx\n\t"
      "pushq %r12\n\t"
      "pushq %r13\n\t"
      "pushq %r14\n\t"
      "pushq %r15\n\t"
      "subq $8, %rsp\n\t"
      "stmxcsr (%rsp)\n\t"
      "fnstcw 4(%rsp)\n\t"
      "movq %rsp, (%rdi)\n\t"
      "movq %rsi, %rsp\n\t"
      "ldmxcsr (%rsp)\n\t"
      "fldcw 4(%rsp)\n\t"
      "addq $8, %rsp\n\t"
      "popq %r15\n\t"
      "popq %r14\n\t"
      "popq %r13\n\t"
      "popq %r12\n\t"
      "popq %rbx\n\t"
      "popq %rbp\n\t"
      "ret\n\t");
}
// A new fiber's stack, as fiber_switch would have left it: the control words of the calling thread,
// zero registers (a zero frame pointer ends stack walks), and `entry` to return into, entered with
// the stack aligned as after a call.
inline void prepare_fiber(fiber_context& f, void* stack, std::size_t bytes, void (*entry)()) {
  std::uint32_t mxcsr = 0;
  std::uint16_t fpucw = 0;
  __asm__ volatile("stmxcsr %0" : "=m"(mxcsr));
  __asm__ volatile("fnstcw %0" : "=m"(fpucw));
  auto* top = reinterpret_cast<std::uint64_t*>((reinterpret_cast<std::uintptr_t>(stack) + bytes) & ~std::uintptr_t{15});
  *--top = 0;                                       // (entry's return address: it never returns)
  *--top = reinterpret_cast<std::uintptr_t>(entry);  // fiber_switch's ret
  for (int r = 0; r < 6; ++r) *--top = 0;           // rbp, rbx, r12-r15
  *--top = mxcsr | (std::uint64_t{fpucw} << 32);
  f.sp = top;
}
inline void switch_fiber(fiber_context& from, fiber_context& to) { fiber_switch(&from.sp, to.sp); }
#else
struct fiber_context {
  ucontext_t context{};
};
inline void prepare_fiber(fiber_context& f, void* stack, std::size_t bytes, void (*entry)()) {
  getcontext(&f.context);
  f.context.uc_stack.ss_sp = stack;
  f.context.uc_stack.ss_size = bytes;
  f.context.uc_link = nullptr;
  makecontext(&f.context, entry, 0);
}
inline void switch_fiber(fiber_context& from, fiber_context& to) { swapcontext(&from.context, &to.context); }
#endif

// execution::fibers: the CUDA threads of one block as fibers on the launching thread. Each runs
// until it returns or waits (a barrier, a warp operation); rounds resume every fiber left, in an
// order shuffled per block. A round in which no fiber arrived anywhere, left a wait or returned is a
// deadlock: the waits then fail (wait() returns false), as the threads mode's timed waits do.
// Fiber i runs thread i of every block: it is made once (its stack mapped with a guard page below)
// and loops, suspended between blocks, for the process (launches are serialised; the fibers of one
// launch run on its thread). Under AddressSanitizer each keeps its fake stack across blocks.
class fiber_scheduler {
 public:
  using body = void (*)(void*, unsigned);
  static constexpr std::size_t stack_bytes = 512 * 1024;

  void run(unsigned n, body fn, void* arg, std::uint64_t seed) {
    while (fibers_.size() < n) {  // (each fiber at a fixed address: a suspended context is never moved)
      fibers_.push_back(std::make_unique<fiber>(make_fiber()));
      prepare_fiber(fibers_.back()->context, fibers_.back()->stack, stack_bytes, &fiber_scheduler::entry);
    }
    fn_ = fn;
    arg_ = arg;
    order_.resize(n);
    std::iota(order_.begin(), order_.end(), 0u);
    std::mt19937_64 rng(seed);
    std::shuffle(order_.begin(), order_.end(), rng);
    for (unsigned i = 0; i < n; ++i) fibers_[i]->done = false;
    active() = this;
    unsigned live = n;
    stalled_ = false;
    while (live > 0) {
      progress_ = false;
      for (const unsigned i : order_) {
        if (fibers_[i]->done) continue;
        resume(i);
        if (fibers_[i]->done) {
          --live;
          progress_ = true;
        }
      }
      stalled_ = !progress_;
    }
  }

  // In a fiber, `lock` held: waits until pred() holds (true), or until no fiber can move (false).
  template <class P>
  bool wait(std::unique_lock<std::mutex>& lock, P pred) {
    if (pred()) return true;
    progress_ = true;  // (it arrived here: a change the others may wait for)
    for (;;) {
      lock.unlock();
      yield();
      lock.lock();
      if (pred()) {
        progress_ = true;
        return true;
      }
      if (stalled_) return false;
    }
  }

 private:
  struct fiber {
    fiber_context context;
    void* stack = nullptr;
    bool done = true;
  };

  static fiber make_fiber() {
    const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    void* base = mmap(nullptr, stack_bytes + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (base == MAP_FAILED) typex::detail::raise_message<device_error>("typex::cuda emulator: cannot map a fiber's stack");
    mprotect(base, page, PROT_NONE);  // (an overflow faults instead of writing the next stack)
    fiber f;
    f.stack = static_cast<char*>(base) + page;
    return f;
  }

  static fiber_scheduler*& active() {
    static thread_local fiber_scheduler* s = nullptr;
    return s;
  }

  void resume(unsigned i) {
    running_ = i;
#if defined(TYPEX_EMU_ASAN)
    void* fake_stack = nullptr;
    __sanitizer_start_switch_fiber(&fake_stack, fibers_[i]->stack, stack_bytes);
#endif
    switch_fiber(scheduler_, fibers_[i]->context);
#if defined(TYPEX_EMU_ASAN)
    __sanitizer_finish_switch_fiber(fake_stack, nullptr, nullptr);
#endif
  }

  // Back to the scheduler, until resumed.
  void suspend() {
    fiber& f = *fibers_[running_];
#if defined(TYPEX_EMU_ASAN)
    void* fake_stack = nullptr;
    __sanitizer_start_switch_fiber(&fake_stack, scheduler_stack_, scheduler_stack_bytes_);
#endif
    switch_fiber(f.context, scheduler_);
#if defined(TYPEX_EMU_ASAN)
    __sanitizer_finish_switch_fiber(fake_stack, &scheduler_stack_, &scheduler_stack_bytes_);
#endif
  }
  // A kernel thread's wait: its context is the thread-local `current` again when it continues.
  void yield() {
    thread_context* const me = current;
    suspend();
    current = me;
  }

  // A fiber's life: thread `running_` of each block it is resumed for, suspended in between.
  static void entry() {
    fiber_scheduler& s = *active();
#if defined(TYPEX_EMU_ASAN)
    __sanitizer_finish_switch_fiber(nullptr, &s.scheduler_stack_, &s.scheduler_stack_bytes_);
#endif
    for (;;) {
      const unsigned i = s.running_;
      s.fn_(s.arg_, i);  // (the body catches everything: nothing unwinds out of a fiber)
      s.fibers_[i]->done = true;
      s.suspend();  // (resumed by a later block, perhaps launched from another host thread)
    }
  }

  std::vector<std::unique_ptr<fiber>> fibers_;
  std::vector<unsigned> order_;
  fiber_context scheduler_{};
#if defined(TYPEX_EMU_ASAN)
  const void* scheduler_stack_ = nullptr;  // (the scheduler's stack, for ASan's switch annotations)
  std::size_t scheduler_stack_bytes_ = 0;
#endif
  body fn_ = nullptr;
  void* arg_ = nullptr;
  unsigned running_ = 0;
  bool progress_ = false, stalled_ = false;
};

// One per process, never destroyed (as the thread pool).
inline fiber_scheduler& fibers() {
  static fiber_scheduler* s = new fiber_scheduler;
  return *s;
}
#endif

// A kernel thread's wait (`lock` held): until pred() holds (true) or the wait gives up (false:
// the barrier timeout with threads, a deadlock with fibers).
template <class P>
bool await([[maybe_unused]] block_state& b, std::condition_variable& cv, std::unique_lock<std::mutex>& lock, P pred) {
#if defined(TYPEX_EMU_FIBERS)
  if (b.fibers != nullptr) return b.fibers->wait(lock, pred);
#endif
  return cv.wait_for(lock, timeout(), pred);
}

// How a wait that gave up is described.
inline std::string gave_up(const block_state& b) {
  if (b.fibers != nullptr) return " (every thread of the block that has not returned waits: a deadlock)";
  return " within " + std::to_string(timeout().count()) + " ms (a barrier some threads skip, or a deadlock)";
}

// The block's threads: they exit the kernel; an exit while others wait at a barrier (or in a
// warp operation naming this lane) can never complete, so it is reported at once.
inline void thread_exited(thread_context& t) {
  block_state& b = *t.block;
  {
    std::unique_lock lock(b.m);
    ++b.exited;
    if (b.arrived > 0 && !b.failed.load()) {
      std::vector<unsigned> at;
      for (unsigned i = 0; i < b.threads; ++i)
        if (b.waiting[i]) at.push_back(i);
      const std::string site = where(b.site);
      lock.unlock();
      b.fail(std::make_exception_ptr(device_error(
          std::string("typex::cuda emulator: ") + b.name() + ": thread " + std::to_string(t.linear) +
          " returned while threads " + thread_list(at) + " wait at sync_threads() (" + site +
          "): a barrier must be reached by every thread of the block (divergent barrier)")));
      return;
    }
  }
  warp_state& w = b.warps[t.linear / warp_size];
  const std::uint32_t bit = 1u << (t.linear % warp_size);
  std::unique_lock lock(w.m);
  w.exited |= bit;
  if (w.arrived != 0 && (w.mask & bit) && !b.failed.load()) {
    const std::string message = std::string("lane ") + std::to_string(t.linear % warp_size) + " of warp " +
                                std::to_string(t.linear / warp_size) + " returned while other lanes wait for it in " + w.op +
                                " (" + where(w.site) + ", mask 0x" + std::to_string(w.mask) + ")";
    lock.unlock();
    b.fail(std::make_exception_ptr(device_error(std::string("typex::cuda emulator: ") + b.name() + ": " + message)));
  }
}

// sync_threads(): all threads of the block, at the same call.
inline void block_barrier(const std::source_location& site) {
  thread_context& t = context();
  block_state& b = *t.block;
  std::unique_lock lock(b.m);
  if (b.failed.load()) throw block_aborted{};
  if (b.arrived == 0) {
    b.site = site;
  } else if (!same_site(b.site, site)) {
    const std::string first = where(b.site);
    lock.unlock();
    b.fail_here(std::string("thread ") + std::to_string(t.linear) + " reached sync_threads() at " + where(site) +
                " while other threads wait at sync_threads() at " + first + " (divergent barrier)");
  }
  ++b.arrived;
  b.waiting[t.linear] = 1;
  if (b.arrived + b.exited == b.threads) {
    if (b.exited > 0) {
      lock.unlock();
      b.fail_here(std::to_string(b.exited) + " thread(s) returned before sync_threads() at " + where(site) +
                  ", which the others wait at (divergent barrier)");
    }
    b.arrived = 0;
    std::fill(b.waiting.begin(), b.waiting.end(), 0);
    ++b.phase;
    lock.unlock();
    b.cv.notify_all();
    return;
  }
  const std::uint64_t phase = b.phase;
  if (!await(b, b.cv, lock, [&] { return b.phase != phase || b.failed.load(); })) {
    std::vector<unsigned> missing;
    for (unsigned i = 0; i < b.threads; ++i)
      if (!b.waiting[i]) missing.push_back(i);
    lock.unlock();
    b.fail_here(std::string("sync_threads() at ") + where(site) + " was not reached by threads " + thread_list(missing) + gave_up(b));
  }
  if (b.phase == phase) throw block_aborted{};
}

// A warp rendezvous: lane writes `value`, waits for every lane of `mask`, and gets the values of
// all lanes (read under the lock). The values of consecutive rendezvous alternate between two
// slots: a lane can start the next one only after every lane has read this one (the next cannot
// complete without them), so one wait per operation suffices.
inline void warp_exchange(std::uint32_t mask, std::uint64_t value, const char* op, const std::source_location& site,
                          std::uint64_t (&out)[warp_size]) {
  thread_context& t = context();
  block_state& b = *t.block;
  warp_state& w = b.warps[t.linear / warp_size];
  const unsigned lane = t.linear % warp_size;
  const std::uint32_t bit = 1u << lane;
  const std::uint32_t present = w.lanes == warp_size ? ~0u : ((1u << w.lanes) - 1u);
  const auto describe = [&] { return std::string(op) + " at " + where(site) + " in warp " + std::to_string(t.linear / warp_size); };
  if (!(mask & bit)) b.fail_here(std::string("lane ") + std::to_string(lane) + " calls " + describe() + " with a mask that leaves it out");
  if (mask & ~present)
    b.fail_here(describe() + ": the mask names lanes the warp does not have (the block has " + std::to_string(b.threads) +
                " threads)");
  std::unique_lock lock(w.m);
  if (b.failed.load()) throw block_aborted{};
  if (w.exited & mask) {
    lock.unlock();
    b.fail_here(describe() + ": lanes of its mask already returned from the kernel");
  }
  if (w.arrived == 0) {
    w.mask = mask;
    w.site = site;
    w.op = op;
  } else if (w.mask != mask || !same_site(w.site, site) || std::string_view(w.op) != op) {
    const std::string other = std::string(w.op) + " at " + where(w.site) + " with mask " + std::to_string(w.mask);
    lock.unlock();
    b.fail_here(std::string("lane ") + std::to_string(lane) + " reached " + describe() + " with mask " + std::to_string(mask) +
                " while other lanes wait in " + other + " (every lane of the mask must make the same call)");
  }
  const std::uint64_t phase = w.phase;
  std::uint64_t* slot = w.values[phase & 1];
  slot[lane] = value;
  w.arrived |= bit;
  if (w.arrived == mask) {
    std::copy(slot, slot + warp_size, std::begin(out));
    w.arrived = 0;
    ++w.phase;
    lock.unlock();
    w.cv.notify_all();
    return;
  }
  if (!await(b, w.cv, lock, [&] { return w.phase != phase || b.failed.load(); })) {
    const std::uint32_t missing = mask & ~w.arrived;
    lock.unlock();
    b.fail_here(describe() + ": lanes (bit mask " + std::to_string(missing) + ") did not arrive" + gave_up(b));
  }
  if (w.phase == phase) throw block_aborted{};
  std::copy(slot, slot + warp_size, std::begin(out));
}

template <class T>
std::uint64_t to_bits(T v) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 8, "typex::cuda emulator: warp shuffles move values of at most 8 bytes");
  std::uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  return bits;
}
template <class T>
T from_bits(std::uint64_t bits) {
  T v;
  std::memcpy(&v, &bits, sizeof(T));
  return v;
}

// The source lane of a shuffle, within segments of `width` lanes (CUDA's rules: out-of-segment
// sources of shfl_up / shfl_down give the lane its own value).
enum class shuffle_kind { index, up, down, bxor };
template <class T>
T shuffle(std::uint32_t mask, T v, int arg, int width, shuffle_kind kind, const char* op, const std::source_location& site) {
  thread_context& t = context();
  if (width <= 0 || width > static_cast<int>(warp_size) || (width & (width - 1)) != 0)
    t.block->fail_here(std::string(op) + " at " + where(site) + ": width " + std::to_string(width) + " is not a power of 2 up to 32");
  std::uint64_t all[warp_size];
  warp_exchange(mask, to_bits(v), op, site, all);
  const int lane = static_cast<int>(t.linear % warp_size);
  const int base = lane & ~(width - 1);
  int src = lane;
  switch (kind) {
    case shuffle_kind::index: src = base + (arg & (width - 1)); break;
    case shuffle_kind::up: src = (lane - base) - arg >= 0 ? lane - arg : lane; break;
    case shuffle_kind::down: src = (lane - base) + arg < width ? lane + arg : lane; break;
    // (CUDA: the lane mask's low 5 bits; a source in an earlier segment is read, one in a later
    // segment gives the lane its own value)
    case shuffle_kind::bxor: {
      const int x = lane ^ (arg & static_cast<int>(warp_size - 1));
      src = x >= base + width ? lane : x;
      break;
    }
  }
  if (!(mask & (1u << src)))
    t.block->fail_here(std::string(op) + " at " + where(site) + ": lane " + std::to_string(lane) + " reads lane " +
                       std::to_string(src) + ", which the mask leaves out (its value is undefined on a GPU)");
  return from_bits<T>(all[src]);
}

// The threads of the pool: worker i runs thread i of every block. Grown on demand to the largest
// block launched, kept for the process (creating hundreds of threads per block is too slow).
class thread_pool {
 public:
  using body = void (*)(void*, unsigned);

  // Runs body(arg, i) for i in [0, n) on n workers at once; returns when all have returned.
  void run(unsigned n, body fn, void* arg) {
    while (workers_.size() < n) {
      auto w = std::make_unique<worker>();
      worker* p = w.get();
      const unsigned index = static_cast<unsigned>(workers_.size());
      w->thread = std::thread([this, p, index] { loop(*p, index); });
      workers_.push_back(std::move(w));
    }
    fn_ = fn;
    arg_ = arg;
    remaining_.store(n);
    for (unsigned i = 0; i < n; ++i) workers_[i]->go.release();
    done_.acquire();
  }

 private:
  struct worker {
    std::binary_semaphore go{0};
    std::thread thread;
  };
  void loop(worker& w, unsigned index) {
    for (;;) {
      w.go.acquire();
      fn_(arg_, index);
      if (remaining_.fetch_sub(1) == 1) done_.release();
    }
  }
  std::vector<std::unique_ptr<worker>> workers_;
  body fn_ = nullptr;
  void* arg_ = nullptr;
  std::atomic<unsigned> remaining_{0};
  std::binary_semaphore done_{0};
};

// One pool per process, never destroyed: its threads wait for work until the process ends.
inline thread_pool& pool() {
  static thread_pool* p = new thread_pool;
  return *p;
}
inline std::mutex& launch_mutex() {
  static std::mutex m;
  return m;
}

[[noreturn]] inline void refuse(std::string_view kernel, const std::string& why) {
  typex::detail::raise_message<device_error>(std::string("typex::cuda emulator: cannot launch kernel '") + std::string(kernel) + "': " + why);
}

inline std::string dims_text(dim3 d) {
  return std::string("(") + std::to_string(d.x) + ", " + std::to_string(d.y) + ", " + std::to_string(d.z) + ")";
}

// Runs one launch: checks the limits, then every block in a seeded order, one at a time.
template <class F>
void run_grid(std::string_view kernel, const void* kernel_address, dim3 grid, dim3 block, std::size_t shared_bytes, const F& body) {
  const unsigned long long threads = 1ull * block.x * block.y * block.z;
  if (grid.x == 0 || grid.y == 0 || grid.z == 0 || threads == 0)
    refuse(kernel, std::string("an empty grid ") + dims_text(grid) + " or block " + dims_text(block) + " (cudaErrorInvalidConfiguration)");
  if (threads > 1024) refuse(kernel, std::to_string(threads) + " threads per block " + dims_text(block) + ", more than 1024");
  if (block.x > 1024 || block.y > 1024 || block.z > 64) refuse(kernel, std::string("block ") + dims_text(block) + " exceeds (1024, 1024, 64)");
  if (grid.x > 2147483647u || grid.y > 65535 || grid.z > 65535)
    refuse(kernel, std::string("grid ") + dims_text(grid) + " exceeds (2^31 - 1, 65535, 65535)");
  if (shared_bytes > default_shared_limit) {
    std::size_t optin = 0;
    {
      const std::lock_guard lock(config().optin_mutex);
      if (const auto it = config().optin.find(kernel_address); it != config().optin.end()) optin = it->second;
    }
    if (shared_bytes > optin)
      refuse(kernel, std::to_string(shared_bytes) + " bytes of dynamic shared memory: more than 48 KiB needs "
                     "set_max_dynamic_shared(kernel, bytes) first" + (optin != 0 ? std::string(" (it opted in to ") + std::to_string(optin) + " bytes)" : std::string()));
  }

  if (config().mode_refused.load()) typex::detail::raise_message<device_error>(config().initial.wrong);
  const std::lock_guard serial(launch_mutex());
  [[maybe_unused]] const execution mode = config().mode.load();
  const unsigned long long blocks = 1ull * grid.x * grid.y * grid.z;
  std::vector<unsigned long long> order(static_cast<std::size_t>(blocks));
  std::iota(order.begin(), order.end(), 0ull);
  std::mt19937_64 rng(config().seed.load() ^ (blocks * 0x9e3779b97f4a7c15ull));
  std::shuffle(order.begin(), order.end(), rng);

  for (const unsigned long long id : order) {
    block_state b;
    b.kernel = kernel;
    b.block_idx = {static_cast<unsigned>(id % grid.x), static_cast<unsigned>(id / grid.x % grid.y),
                   static_cast<unsigned>(id / (1ull * grid.x * grid.y))};
    b.block_dim = block;
    b.grid_dim = grid;
    b.threads = static_cast<unsigned>(threads);
    b.waiting.assign(b.threads, 0);
    const unsigned nwarps = (b.threads + warp_size - 1) / warp_size;
    b.warps = std::make_unique<warp_state[]>(nwarps);
    for (unsigned w = 0; w < nwarps; ++w) b.warps[w].lanes = std::min(warp_size, b.threads - w * warp_size);
    b.shared_bytes = shared_bytes;
    if (shared_bytes > 0) {
      // exactly the launch's bytes (an overrun is outside the allocation), poisoned: 0xFF bytes
      // read as NaN floats and as -1 integers, so a read before the write shows in the result
      // (16-byte aligned, as a GPU's dynamic shared memory is: vector accesses check it)
      static_assert(__STDCPP_DEFAULT_NEW_ALIGNMENT__ >= 16, "typex::cuda emulator: shared memory must be 16-byte aligned");
      b.shared.reset(new std::byte[shared_bytes]);
      std::memset(b.shared.get(), 0xFF, shared_bytes);
    }
    struct job {
      block_state* b;
      const F* body;
    } j{&b, &body};
    const auto thread_body = [](void* p, unsigned i) {
      const job& jb = *static_cast<const job*>(p);
      block_state& blk = *jb.b;
      thread_context t;
      t.block = &blk;
      t.linear = i;
      t.thread_idx = {i % blk.block_dim.x, i / blk.block_dim.x % blk.block_dim.y, i / (blk.block_dim.x * blk.block_dim.y)};
      current = &t;
      try {
        (*jb.body)();
        thread_exited(t);
      } catch (const block_aborted&) {
      } catch (...) {
        blk.fail(std::current_exception());
      }
      current = nullptr;
    };
#if defined(TYPEX_EMU_FIBERS)
    if (mode == execution::fibers) {
      b.fibers = &fibers();
      fibers().run(b.threads, thread_body, &j, config().seed.load() ^ ((id + 1) * 0xbf58476d1ce4e5b9ull));
    } else {
      pool().run(b.threads, thread_body, &j);
    }
#else
    pool().run(b.threads, thread_body, &j);
#endif
    if (b.error) std::rethrow_exception(b.error);
  }
}

}  // namespace detail

// The seed of the block order (every launch shuffles its blocks with it); tests run kernels under
// several seeds, as a GPU runs blocks in no promised order.
inline void set_seed(std::uint64_t seed) { detail::config().seed.store(seed); }
inline std::uint64_t seed() { return detail::config().seed.load(); }

// How the CUDA threads of a block run from the next launch on (execution::fibers where this
// build has them: fibers_available). ThreadSanitizer's race reports need execution::threads.
inline void set_execution(execution e) {
  if (e == execution::fibers && !fibers_available)
    typex::detail::raise_message<device_error>("typex::cuda emulator: fibers are not available in this build (POSIX ucontext, not under ThreadSanitizer)");
  detail::config().mode.store(e);
  detail::config().mode_refused.store(false);
}
inline execution current_execution() { return detail::config().mode.load(); }

// How long a barrier or a warp operation waits for missing threads before it reports them, with
// execution::threads (the exact checks, different barriers and threads that returned, report at
// once; this catches the rest). With fibers a deadlock is reported as soon as it is one.
inline void set_barrier_timeout(std::chrono::milliseconds t) { detail::config().barrier_timeout_ms.store(t.count()); }

// cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes).
template <class... P>
void set_max_dynamic_shared(void (*kernel)(P...), std::size_t bytes, std::string_view name = "kernel") {
  if (bytes > optin_shared_limit)
    detail::refuse(name, std::string("opting in to ") + std::to_string(bytes) + " bytes of dynamic shared memory, more than the device's " +
                             std::to_string(optin_shared_limit));
  const std::lock_guard lock(detail::config().optin_mutex);
  detail::config().optin[reinterpret_cast<const void*>(kernel)] = bytes;
}

// kernel<<<grid, block, shared_bytes>>>(args...): runs it to completion; the first error of any
// thread (a kernel's exception, or one of the checks above) is thrown here.
template <class... P>
class launcher {
 public:
  launcher(void (*kernel)(P...), std::string_view name, dim3 grid, dim3 block, std::size_t shared_bytes)
      : kernel_(kernel), name_(name), grid_(grid), block_(block), shared_(shared_bytes) {}
  template <class... A>
  void operator()(A&&... args) const {
    static_assert(sizeof...(A) == sizeof...(P), "TYPEX_LAUNCH: the kernel takes another number of arguments");
    // (arguments by value, converted once, as a GPU launch copies them into the parameter space)
    const std::tuple<std::decay_t<P>...> params(static_cast<P>(std::forward<A>(args))...);
    auto* k = kernel_;
    detail::run_grid(name_, reinterpret_cast<const void*>(kernel_), grid_, block_, shared_,
                     [&params, k] { std::apply(k, params); });
  }

 private:
  void (*kernel_)(P...);
  std::string_view name_;
  dim3 grid_, block_;
  std::size_t shared_;
};

template <class... P>
launcher<P...> make_launcher(void (*kernel)(P...), std::string_view name, dim3 grid, dim3 block, std::size_t shared_bytes) {
  return launcher<P...>(kernel, name, grid, block, shared_bytes);
}

// ---- what kernels call (kernel_api.cuh maps its names onto these)

inline uint3 thread_idx() { return detail::context().thread_idx; }
inline uint3 block_idx() { return detail::context().block->block_idx; }
inline dim3 block_dim() { return detail::context().block->block_dim; }
inline dim3 grid_dim() { return detail::context().block->grid_dim; }
inline unsigned linear_thread() { return detail::context().linear; }

inline void sync_threads(const std::source_location& site = std::source_location::current()) { detail::block_barrier(site); }

inline std::byte* shared_memory() { return detail::context().block->shared.get(); }

inline void sync_warp(std::uint32_t mask, const std::source_location& site = std::source_location::current()) {
  std::uint64_t all[warp_size];
  detail::warp_exchange(mask, 0, "sync_warp", site, all);
}
template <class T>
T shfl_sync(std::uint32_t mask, T v, int src, int width = warp_size, const std::source_location& site = std::source_location::current()) {
  return detail::shuffle(mask, v, src, width, detail::shuffle_kind::index, "shfl_sync", site);
}
template <class T>
T shfl_up_sync(std::uint32_t mask, T v, unsigned delta, int width = warp_size, const std::source_location& site = std::source_location::current()) {
  return detail::shuffle(mask, v, static_cast<int>(delta), width, detail::shuffle_kind::up, "shfl_up_sync", site);
}
template <class T>
T shfl_down_sync(std::uint32_t mask, T v, unsigned delta, int width = warp_size, const std::source_location& site = std::source_location::current()) {
  return detail::shuffle(mask, v, static_cast<int>(delta), width, detail::shuffle_kind::down, "shfl_down_sync", site);
}
template <class T>
T shfl_xor_sync(std::uint32_t mask, T v, int lane_mask, int width = warp_size, const std::source_location& site = std::source_location::current()) {
  return detail::shuffle(mask, v, lane_mask, width, detail::shuffle_kind::bxor, "shfl_xor_sync", site);
}
inline std::uint32_t ballot_sync(std::uint32_t mask, bool pred, const std::source_location& site = std::source_location::current()) {
  std::uint64_t all[warp_size];
  detail::warp_exchange(mask, pred ? 1u : 0u, "ballot_sync", site, all);
  std::uint32_t r = 0;
  for (unsigned i = 0; i < warp_size; ++i)
    if ((mask & (1u << i)) && all[i] != 0) r |= 1u << i;
  return r;
}

// Atomics on global or shared memory (host memory either way here).
template <class T>
T atomic_add(T* p, T v) {
  return std::atomic_ref<T>(*p).fetch_add(v);
}
template <class T>
T atomic_max(T* p, T v) {
  std::atomic_ref<T> a(*p);
  T old = a.load();
  while (old < v && !a.compare_exchange_weak(old, v)) {
  }
  return old;
}
template <class T>
T atomic_min(T* p, T v) {
  std::atomic_ref<T> a(*p);
  T old = a.load();
  while (v < old && !a.compare_exchange_weak(old, v)) {
  }
  return old;
}
template <class T>
T atomic_cas(T* p, T expected, T desired) {
  std::atomic_ref<T>(*p).compare_exchange_strong(expected, desired);
  return expected;
}
template <class T>
T atomic_exch(T* p, T v) {
  return std::atomic_ref<T>(*p).exchange(v);
}
inline void thread_fence() { std::atomic_thread_fence(std::memory_order_seq_cst); }

// A vector access (load_vec4 / load_vec2) at an address that is not a multiple of its size: a GPU
// faults ("misaligned address"); the emulator fails the launch naming the access.
inline void check_aligned(const void* p, std::size_t bytes, const char* access) {
  if (reinterpret_cast<std::uintptr_t>(p) % bytes != 0)
    detail::context().block->fail_here(std::string(access) + " at a misaligned address (" + std::to_string(reinterpret_cast<std::uintptr_t>(p) % bytes) +
                               " bytes past a multiple of " + std::to_string(bytes) + ")");
}

}  // namespace typex::cuda::emu
