// Tests for typex/backend/cuda/emulator.hpp through kernel_api.cuh: the CPU emulator of the CUDA
// execution model must give kernels what a GPU gives them (indices, shared memory, warp operations,
// atomics) and refuse what a GPU refuses (limits), loudly, with the kernel's name.
#include <doctest/doctest.h>

#include <typex/backend/cuda/kernel_api.cuh>
#include <typex/backend/cuda/launch.hpp>

#include "executions.hpp"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using namespace typex::cuda;
using typex::cuda::launch_dims;

namespace {

// Every thread writes its indices where its global linear number says.
TYPEX_GLOBAL void write_indices(unsigned* out) {
  const unsigned threads = block_dim().x * block_dim().y * block_dim().z;
  const unsigned block = block_idx().x + grid_dim().x * (block_idx().y + grid_dim().y * block_idx().z);
  unsigned* o = out + 8 * (block * threads + linear_thread());
  o[0] = thread_idx().x;
  o[1] = thread_idx().y;
  o[2] = thread_idx().z;
  o[3] = block_idx().x;
  o[4] = block_idx().y;
  o[5] = block_idx().z;
  o[6] = lane_id();
  o[7] = warp_id();
}

// The order blocks ran in: each block takes a ticket.
TYPEX_GLOBAL void take_ticket(unsigned* counter, unsigned* order) {
  if (thread_idx().x == 0) order[atomic_add(counter, 1u)] = block_idx().x;
}

TYPEX_GLOBAL void read_shared_first(float* out) {
  float* s = TYPEX_SHARED(float);
  out[thread_idx().x] = s[thread_idx().x];  // (before any write: the poison)
}

// Thread t reads 4 floats at in + 4 t + offset and 2 at in + 2 t + offset (load_vec4 / load_vec2),
// and writes their sum.
TYPEX_GLOBAL void vector_reads(const float* in, float* out, int offset) {
  const int t = static_cast<int>(thread_idx().x);
  const vec4 a = load_vec4(in + 4 * t + offset);
  const vec2 b = load_vec2(in + 2 * t + offset);
  out[t] = a.x + 2 * a.y + 4 * a.z + 8 * a.w + 16 * b.x + 32 * b.y;
}

TYPEX_GLOBAL void atomics(float* sum, int* imax, float* fmax_, unsigned* shared_total) {
  unsigned* s = TYPEX_SHARED(unsigned);
  if (thread_idx().x == 0) s[0] = 0;
  sync_threads();
  atomic_add(sum, 1.0f);
  atomic_max(imax, static_cast<int>(block_idx().x * block_dim().x + thread_idx().x));
  atomic_max(fmax_, static_cast<float>(thread_idx().x) * 0.5f);
  atomic_add(&s[0], 1u);
  sync_threads();
  if (thread_idx().x == 0) atomic_add(shared_total, s[0]);
}

TYPEX_GLOBAL void shuffles(int* out) {
  const int lane = static_cast<int>(lane_id());
  const unsigned t = linear_thread();
  out[6 * t + 0] = shfl_sync(full_mask, lane * 10, 3);
  out[6 * t + 1] = shfl_down_sync(full_mask, lane, 5);
  out[6 * t + 2] = shfl_up_sync(full_mask, lane, 2);
  out[6 * t + 3] = shfl_xor_sync(full_mask, lane, 1);
  out[6 * t + 4] = static_cast<int>(ballot_sync(full_mask, lane % 3 == 0));
  out[6 * t + 5] = warp_sum(lane);
}

// Shuffles within segments of 8 lanes (width 8): sources in an earlier segment are read, those in a
// later segment (and out-of-range up / down) give the lane its own value, as on a GPU.
TYPEX_GLOBAL void segment_shuffles(int* out) {
  const int lane = static_cast<int>(lane_id());
  out[4 * lane + 0] = shfl_xor_sync(full_mask, lane, 9, 8);   // (9: into the next segment, or the previous one)
  out[4 * lane + 1] = shfl_sync(full_mask, lane, 10, 8);      // (index 10 mod 8: lane 2 of the segment)
  out[4 * lane + 2] = shfl_down_sync(full_mask, lane, 3, 8);
  out[4 * lane + 3] = shfl_up_sync(full_mask, lane, 3, 8);
}

TYPEX_GLOBAL void throws_in_block(int bad_block) {
  if (static_cast<int>(block_idx().x) == bad_block && thread_idx().x == 7) throw std::runtime_error("thrown by a kernel thread");
}

TYPEX_GLOBAL void noop(int) {}

TYPEX_GLOBAL void partial_mask_shuffle(int* out) {
  // a 40-thread block: warp 1 has 8 lanes, and full_mask names 24 lanes it does not have
  out[linear_thread()] = shfl_down_sync(full_mask, 1, 1);
}

// Lanes 0-15 shuffle with every lane while lanes 16-31 wait at the block's barrier: neither call can
// complete, and no thread returns (a deadlock, not a divergent barrier the exits reveal).
TYPEX_GLOBAL void deadlock(int* out) {
  if (lane_id() < 16)
    out[linear_thread()] = shfl_sync(full_mask, 1, 0);
  else
    sync_threads();
}

TYPEX_GLOBAL void mismatched_warp_masks(int* out) {
  const std::uint32_t mask = lane_id() < 16 ? full_mask : 0xffff0000u;
  out[linear_thread()] = shfl_xor_sync(mask, 1, 1);
}

std::string message_of(auto&& f) {
  try {
    f();
  } catch (const typex::device_error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("cuda emulator: thread, block, lane and warp indices follow CUDA's numbering") {
  typex_test::for_each_execution([&] {
    const launch_dims grid{3, 2, 1}, block{8, 4, 2};  // 64 threads: two warps per block
    std::vector<unsigned> out(8 * 6 * 64, 999);
    TYPEX_LAUNCH(write_indices, grid, block, 0, 0)(out.data());
    for (unsigned b = 0; b < 6; ++b)
      for (unsigned t = 0; t < 64; ++t) {
        const unsigned* o = &out[8 * (b * 64 + t)];
        CHECK(o[0] == t % 8);
        CHECK(o[1] == t / 8 % 4);
        CHECK(o[2] == t / 32);
        CHECK(o[3] == b % 3);
        CHECK(o[4] == b / 3);
        CHECK(o[5] == 0);
        CHECK(o[6] == t % 32);
        CHECK(o[7] == t / 32);
      }
  });
}

TEST_CASE("cuda emulator: launch limits are refused with a device_error naming the kernel") {
  int dummy = 0;
  (void)dummy;
  CHECK(message_of([] { TYPEX_LAUNCH(noop, (launch_dims{1}), (launch_dims{1025}), 0, 0)(0); }).find("'noop'") != std::string::npos);
  CHECK(message_of([] { TYPEX_LAUNCH(noop, (launch_dims{1}), (launch_dims{1025}), 0, 0)(0); }).find("more than 1024") != std::string::npos);
  CHECK(message_of([] { TYPEX_LAUNCH(noop, (launch_dims{1}), (launch_dims{1, 1, 65}), 0, 0)(0); }).find("exceeds (1024, 1024, 64)") !=
        std::string::npos);
  CHECK(message_of([] { TYPEX_LAUNCH(noop, (launch_dims{1, 65536, 1}), (launch_dims{32}), 0, 0)(0); }).find("65535") != std::string::npos);
  CHECK(message_of([] { TYPEX_LAUNCH(noop, (launch_dims{0}), (launch_dims{32}), 0, 0)(0); }).find("empty grid") != std::string::npos);
  // dynamic shared memory: 48 KiB without an opt-in, up to 227 KiB with one
  CHECK(message_of([] { TYPEX_LAUNCH(noop, (launch_dims{1}), (launch_dims{32}), 48 * 1024 + 4, 0)(0); }).find("set_max_dynamic_shared") !=
        std::string::npos);
  CHECK(message_of([] { set_max_dynamic_shared(noop, 228 * 1024, "noop"); }).find("more than the device's") != std::string::npos);
  TYPEX_LAUNCH(noop, (launch_dims{1}), (launch_dims{32}), 48 * 1024, 0)(0);  // (the limit itself is fine)
}

TEST_CASE("cuda emulator: a kernel that opted in gets more than 48 KiB of dynamic shared memory") {
  set_max_dynamic_shared(read_shared_first, 100 * 1024, "read_shared_first");
  std::vector<float> out(32, 0.0f);
  TYPEX_LAUNCH(read_shared_first, (launch_dims{1}), (launch_dims{32}), 100 * 1024, 0)(out.data());
  CHECK(std::isnan(out[0]));
}

TEST_CASE("cuda emulator: shared memory is poisoned at block start (reads before writes give NaN)") {
  typex_test::for_each_execution([&] {
    std::vector<float> out(64, 0.0f);
    TYPEX_LAUNCH(read_shared_first, (launch_dims{1}), (launch_dims{64}), 64 * sizeof(float), 0)(out.data());
    for (float v : out) CHECK(std::isnan(v));
  });
}

TEST_CASE("cuda emulator: vector reads give consecutive floats, and a misaligned one fails as on a GPU") {
  alignas(16) float in[4 * 32 + 8];
  for (int i = 0; i < 4 * 32 + 8; ++i) in[i] = static_cast<float>(i);
  std::vector<float> out(32, 0.0f);
  TYPEX_LAUNCH(vector_reads, (launch_dims{1}), (launch_dims{32}), 0, 0)(static_cast<const float*>(in), out.data(), 0);
  for (int t = 0; t < 32; ++t) {
    const float a = static_cast<float>(4 * t), b = static_cast<float>(2 * t);
    CHECK(out[t] == a + 2 * (a + 1) + 4 * (a + 2) + 8 * (a + 3) + 16 * b + 32 * (b + 1));
  }
  // 8 bytes past a 16-byte boundary: load_vec2 would do, load_vec4 does not
  const std::string m = message_of([&] {
    TYPEX_LAUNCH(vector_reads, (launch_dims{1}), (launch_dims{32}), 0, 0)(static_cast<const float*>(in), out.data(), 2);
  });
  CHECK(m.find("vector_reads") != std::string::npos);
  CHECK(m.find("load_vec4 at a misaligned address (8 bytes past a multiple of 16)") != std::string::npos);
  // 4 bytes past: load_vec4 first, the same failure
  CHECK(message_of([&] {
          TYPEX_LAUNCH(vector_reads, (launch_dims{1}), (launch_dims{32}), 0, 0)(static_cast<const float*>(in), out.data(), 1);
        }).find("misaligned") != std::string::npos);
}

TEST_CASE("cuda emulator: the block order is shuffled by the seed") {
  const auto order_for = [](std::uint64_t seed) {
    emu::set_seed(seed);
    unsigned counter = 0;
    std::vector<unsigned> order(16, 99);
    TYPEX_LAUNCH(take_ticket, (launch_dims{16}), (launch_dims{32}), 0, 0)(&counter, order.data());
    CHECK(counter == 16);
    return order;
  };
  const auto a = order_for(1), b = order_for(2), a2 = order_for(1);
  CHECK(a == a2);  // (one seed, one order: a failure reproduces)
  CHECK(a != b);
  std::vector<unsigned> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  for (unsigned i = 0; i < 16; ++i) CHECK(sorted[i] == i);  // every block ran once
  emu::set_seed(0x5eed);
}

TEST_CASE("cuda emulator: atomics on global and shared memory") {
  typex_test::for_each_execution([&] {
    float sum = 0.0f, fmax_ = -1.0f;
    int imax = -1;
    unsigned shared_total = 0;
    TYPEX_LAUNCH(atomics, (launch_dims{3}), (launch_dims{96}), sizeof(unsigned), 0)(&sum, &imax, &fmax_, &shared_total);
    CHECK(sum == 288.0f);
    CHECK(imax == 287);
    CHECK(fmax_ == 47.5f);
    CHECK(shared_total == 288);
  });
}

TEST_CASE("cuda emulator: warp shuffles, ballot and warp reductions follow CUDA's rules") {
  typex_test::for_each_execution([&] {
    std::vector<int> out(6 * 64, -1);
    TYPEX_LAUNCH(shuffles, (launch_dims{1}), (launch_dims{64}), 0, 0)(out.data());
    std::uint32_t ballot = 0;
    for (int l = 0; l < 32; l += 3) ballot |= 1u << l;
    for (int t = 0; t < 64; ++t) {
      const int lane = t % 32;
      CHECK(out[6 * t + 0] == 30);
      CHECK(out[6 * t + 1] == (lane + 5 < 32 ? lane + 5 : lane));  // (out of range: own value)
      CHECK(out[6 * t + 2] == (lane >= 2 ? lane - 2 : lane));
      CHECK(out[6 * t + 3] == (lane ^ 1));
      CHECK(static_cast<std::uint32_t>(out[6 * t + 4]) == ballot);
      CHECK(out[6 * t + 5] == 496);
    }
  });
}

TEST_CASE("cuda emulator: shuffles of a width below 32 follow CUDA's segment rules") {
  typex_test::for_each_execution([&] {
    std::vector<int> out(4 * 32, -1);
    TYPEX_LAUNCH(segment_shuffles, (launch_dims{1}), (launch_dims{32}), 0, 0)(out.data());
    for (int lane = 0; lane < 32; ++lane) {
      CAPTURE(lane);
      const int base = lane & ~7, x = lane ^ 9;
      CHECK(out[4 * lane + 0] == (x >= base + 8 ? lane : x));
      CHECK(out[4 * lane + 1] == base + 2);
      CHECK(out[4 * lane + 2] == ((lane - base) + 3 < 8 ? lane + 3 : lane));
      CHECK(out[4 * lane + 3] == ((lane - base) >= 3 ? lane - 3 : lane));
    }
  });
}

TEST_CASE("cuda emulator: warp operations check their masks") {
  typex_test::for_each_execution([&] {
    std::vector<int> out(64, 0);
    CHECK(message_of([&] { TYPEX_LAUNCH(partial_mask_shuffle, (launch_dims{1}), (launch_dims{40}), 0, 0)(out.data()); })
              .find("the mask names lanes the warp does not have") != std::string::npos);
    CHECK(message_of([&] { TYPEX_LAUNCH(mismatched_warp_masks, (launch_dims{1}), (launch_dims{32}), 0, 0)(out.data()); }).find("mask") !=
          std::string::npos);
  });
}

TEST_CASE("cuda emulator: an exception thrown by a kernel thread reaches the launching thread") {
  typex_test::for_each_execution([&] {
    CHECK_THROWS_WITH_AS(TYPEX_LAUNCH(throws_in_block, (launch_dims{4}), (launch_dims{64}), 0, 0)(2), "thrown by a kernel thread",
                         std::runtime_error);
    // (the pool is still usable afterwards)
    std::vector<float> out(32, 0.0f);
    TYPEX_LAUNCH(read_shared_first, (launch_dims{1}), (launch_dims{32}), 32 * sizeof(float), 0)(out.data());
    CHECK(std::isnan(out[31]));
  });
}

TEST_CASE("cuda emulator: a deadlock is a device_error naming the kernel: at once with fibers, after the barrier timeout with threads") {
  std::vector<int> out(32, 0);
  const typex::cuda::emu::execution before = emu::current_execution();
  if (emu::fibers_available) {
    emu::set_execution(emu::execution::fibers);
    const std::string m = message_of([&] { TYPEX_LAUNCH(deadlock, (launch_dims{2}), (launch_dims{32}), 0, 0)(out.data()); });
    CAPTURE(m);
    CHECK(m.find("'deadlock'") != std::string::npos);
    CHECK(m.find("a deadlock") != std::string::npos);
  }
  emu::set_execution(emu::execution::threads);
  emu::set_barrier_timeout(std::chrono::milliseconds(200));
  const std::string m = message_of([&] { TYPEX_LAUNCH(deadlock, (launch_dims{1}), (launch_dims{32}), 0, 0)(out.data()); });
  emu::set_barrier_timeout(std::chrono::milliseconds(5000));
  emu::set_execution(before);
  CAPTURE(m);
  CHECK(m.find("'deadlock'") != std::string::npos);
  CHECK(m.find("within 200 ms") != std::string::npos);
  // (both modes leave the emulator usable)
  typex_test::for_each_execution([&] {
    std::vector<float> poison(32, 0.0f);
    TYPEX_LAUNCH(read_shared_first, (launch_dims{1}), (launch_dims{32}), 32 * sizeof(float), 0)(poison.data());
    CHECK(std::isnan(poison[0]));
  });
}

TEST_CASE("cuda emulator: launches from several host threads are serialised, their results each thread's own") {
  // (with fibers, a block's threads may be fibers a launch from another host thread ran before)
  typex_test::for_each_execution([&] {
    constexpr int host_threads = 4, launches = 12;
    std::vector<std::vector<int>> outs(host_threads, std::vector<int>(6 * 64, -1));
    std::vector<int> failures(host_threads, 0);
    std::vector<std::thread> pool;
    for (int h = 0; h < host_threads; ++h)
      pool.emplace_back([&, h] {
        for (int l = 0; l < launches; ++l) {
          std::fill(outs[h].begin(), outs[h].end(), -1);
          TYPEX_LAUNCH(shuffles, (launch_dims{2}), (launch_dims{64}), 0, 0)(outs[h].data());
          for (int t = 0; t < 64; ++t)
            if (outs[h][6 * t + 5] != 496 || outs[h][6 * t + 3] != ((t % 32) ^ 1)) ++failures[h];
        }
      });
    for (auto& t : pool) t.join();
    for (int h = 0; h < host_threads; ++h) CHECK(failures[h] == 0);
  });
}

TEST_CASE("cuda emulator: kernel API calls outside a kernel are refused") {
  CHECK_THROWS_AS(sync_threads(), typex::device_error);
}

TEST_CASE("cuda launch geometry: the helpers fix blocks, grids and shared memory") {
  chain_params c;
  c.rank = 1;
  c.extent[0] = 1000;
  c.n = 1000;
  c.n_operands = 1;
  const kernel_launch k = chain_launch(c);
  CHECK(k.kind == kernel_kind::chain);
  CHECK(k.block == launch_dims{256, 1, 1});
  CHECK(k.grid == launch_dims{4, 1, 1});
  c.extent[0] = c.n = 0;
  CHECK(chain_launch(c).grid == launch_dims{1, 1, 1});  // (an empty output still launches one block)
  c.extent[0] = c.n = 1 << 30;
  CHECK(chain_launch(c).grid == launch_dims{1024, 1, 1});  // (grid-stride beyond)
  c.n = 5;
  CHECK_THROWS_AS(chain_launch(c), typex::argument_error);

  reduce_params r;
  r.rows = 7;
  r.cols = 100;
  const kernel_launch kr = reduce_launch(r);
  CHECK(kr.grid == launch_dims{7, 1, 1});
  CHECK(kr.block == launch_dims{256, 1, 1});
  CHECK(kr.shared_bytes == 8 * (sizeof(double) + sizeof(std::int64_t)));  // (a partial of 8 bytes and argmax's index per warp)
  r.type = reduce_type::i32;
  r.kind = reduce_kind::mean;
  CHECK_THROWS_AS(reduce_launch(r), typex::argument_error);  // (integers: sum, amax, amin, argmax)
  r.type = reduce_type::b8;
  r.kind = reduce_kind::amax;
  CHECK_THROWS_AS(reduce_launch(r), typex::argument_error);  // (bool: sum)
  r.kind = reduce_kind::sum;
  CHECK_NOTHROW((void)reduce_launch(r));

  copy_params p;
  p.itemsize = 3;
  CHECK_THROWS_AS(copy_launch(p), typex::argument_error);
}
