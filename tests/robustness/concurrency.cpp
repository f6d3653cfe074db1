// Running programs from many threads (docs/errors_and_guarantees.md, "Threads"): one module shared
// by 8 threads, copies of one module, programs that write buffers, and the pool resized while
// programs run. Every result is compared bit for bit with the serial one. This file is also the
// ThreadSanitizer stage's test (scripts/sanitize.sh).
#include "models.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <cmath>
#include <thread>

using namespace typex;

namespace {
constexpr int threads = 8;
#if defined(__SANITIZE_THREAD__)
constexpr int calls = 200;  // (TSan runs ~10x slower; the interleavings it checks need fewer calls)
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
constexpr int calls = 200;
#else
constexpr int calls = 1000;
#endif
#else
constexpr int calls = 1000;
#endif

struct pool_threads {
  int before;
  explicit pool_threads(int n) : before(eigen::set_num_threads(n)) {}
  ~pool_threads() { eigen::set_num_threads(before); }
};

// Inputs of several batch sizes (so that calls re-plan) and what a serial run gives for each.
struct workload {
  std::vector<any_tensor> inputs;
  std::vector<any_tensor> serial;
  template <class Run>
  workload(const Run& run, std::initializer_list<index_t> rows) {
    std::uint64_t seed = 100;
    for (const index_t r : rows) {
      inputs.push_back(rb::random_x(r, seed++).erase());
      serial.push_back(run({inputs.back()})[0]);
    }
  }
};

// f(thread index) on `threads` threads at once; returns the number of mismatches they counted.
template <class F>
int on_threads(F&& f) {
  std::atomic<int> bad{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back([&, t] { bad += f(t); });
  for (auto& th : pool) th.join();
  return bad.load();
}
}  // namespace

TEST_CASE("threads: one module shared by 8 threads x calls, bit-identical to serial (several batch sizes)") {
  const pool_threads pt(2);
  const auto m = rb::random_model<rb::mlp>(21);
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, rb::x_shape>(rb::spec_shape(4))));
  const auto run = program_module<eigen_backend>(ep);
  const workload w(run, {1, 4, 7, 32});
  const int bad = on_threads([&](int t) {
    int mismatches = 0;
    std::vector<any_tensor> out;
    for (int i = 0; i < calls; ++i) {
      const std::size_t k = static_cast<std::size_t>(t + i) % w.inputs.size();
      run.run(std::span<const any_tensor>(&w.inputs[k], 1), out);
      mismatches += !rb::same_bits(out[0], w.serial[k]);
    }
    return mismatches;
  });
  CHECK(bad == 0);
}

// The convolution's images go to the pool's workers through a shared counter (run_dynamic): which
// thread does which image changes from call to call, the bits must not.
TEST_CASE("threads: a convolution whose images the pool hands out one at a time, shared by 8 threads, bit-identical to serial") {
  const pool_threads pt(2);
  const auto m = rb::random_model<rb::conv_pool>(25);
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, rb::image_shape>(rb::image_shape(rb::batch(2), {}, {}, {}))));
  const auto run = program_module<eigen_backend>(ep);
  std::vector<any_tensor> inputs, serial;
  for (const index_t n : {1, 3, 8}) {
    host_tensor<f32, rb::image_shape> x({n, 8, 10, 9});
    init::generator g(static_cast<std::uint64_t>(n), "x");
    init::uniform_(x, -1.0, 1.0, g);
    inputs.push_back(x.erase());
    serial.push_back(run({inputs.back()})[0]);
  }
  const int bad = on_threads([&](int t) {
    int mismatches = 0;
    std::vector<any_tensor> out;
    for (int i = 0; i < calls / 4; ++i) {
      const std::size_t k = static_cast<std::size_t>(t + i) % inputs.size();
      run.run(std::span<const any_tensor>(&inputs[k], 1), out);
      mismatches += !rb::same_bits(out[0], serial[k]);
    }
    return mismatches;
  });
  CHECK(bad == 0);
  CHECK(run.report().winograd == 1);
}

TEST_CASE("threads: copies of one module, one per thread, and typed modules") {
  const auto m = rb::random_model<rb::mlp>(22);
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, rb::x_shape>(rb::spec_shape(4))));
  const auto original = program_module<eigen_backend>(ep);
  const workload w(original, {3, 9});
  std::vector<program_module<eigen_backend>> copies(threads, original);
  const auto typed = ep.module();
  const auto x3 = rb::x_tensor::bind(w.inputs[0]);
  const int bad = on_threads([&](int t) {
    int mismatches = 0;
    for (int i = 0; i < calls; ++i) {
      const std::size_t k = static_cast<std::size_t>(i) % 2;
      mismatches += !rb::same_bits(copies[static_cast<std::size_t>(t)]({w.inputs[k]})[0], w.serial[k]);
      if (i % 16 == 0) mismatches += !rb::same_bits(typed(x3).erase(), w.serial[0]);
    }
    return mismatches;
  });
  CHECK(bad == 0);
}

TEST_CASE("threads: the stepwise engine (data-dependent sizes) shared by 8 threads") {
  const rb::selects m;
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, rb::x_shape>(rb::spec_shape(4))));
  const auto run = program_module<eigen_backend>(ep);
  const workload w(run, {2, 5});
  const int bad = on_threads([&](int t) {
    int mismatches = 0;
    for (int i = 0; i < calls / 4; ++i) {
      const std::size_t k = static_cast<std::size_t>(t + i) % 2;
      mismatches += !rb::same_bits(run({w.inputs[k]})[0], w.serial[k]);
    }
    return mismatches;
  });
  CHECK(bad == 0);
}

namespace {
// Counts its calls in a buffer: a program that writes state.
struct counter {
  buffer<i64> calls;
  template <class X>
  auto operator()(const X& x) const {
    copy_(calls, as_traced(calls, x) + 1);
    return mul(x, 2.0);
  }
};
}  // namespace
BOOST_HANA_ADAPT_STRUCT(counter, calls);

TEST_CASE("threads: a module that writes buffers serializes its calls, copies count on their own") {
  const counter m;
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, rb::x_shape>(rb::spec_shape(2))));
  const auto run = program_module<eigen_backend>(ep);
  const auto copy = run;
  const any_tensor x = rb::random_x(2, 1).erase();
  const any_tensor want = run({x})[0];  // (1 call)
  const int bad = on_threads([&](int) {
    int mismatches = 0;
    for (int i = 0; i < calls / 4; ++i) mismatches += !rb::same_bits(run({x})[0], want);
    return mismatches;
  });
  CHECK(bad == 0);
  CHECK(run.buffer("calls").data<std::int64_t>()[0] == 1 + threads * (calls / 4));
  CHECK(copy.buffer("calls").data<std::int64_t>()[0] == 0);
}

namespace {
// Control flow: a branch picked by the data, a scan carrying a buffer (the control-flow engine's
// parts and buffers are each executor's own).
struct branch_scan {
  nn::Linear<8, 8> fc;
  buffer<f32, fix<1>> steps;
  template <class X>
  auto operator()(const X& x) const {
    const auto y = cond(gt(mean(x), 0.0), [&](const auto& v) { return tanh(fc(v)); }, [](const auto& v) { return mul(v, -0.5); }, x);
    auto [h, hs] = scan(
        [&](const auto& acc, const auto& row) {
          copy_(steps, add(steps, 1.0));
          const auto next = add(mul(acc, 0.5), row);
          return std::pair(next, next);
        },
        mul(select<0>(y, 0), 0.0), y);
    return add(sum(h), sum(hs));
  }
};
}  // namespace
BOOST_HANA_ADAPT_STRUCT(branch_scan, fc, steps);

TEST_CASE("threads: a program with cond and a scan writing a buffer, shared by 8 threads, bit-identical to serial") {
  branch_scan m;
  init_module(m, 41);
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, rb::x_shape>(rb::spec_shape(4))));
  const auto run = program_module<eigen_backend>(ep);
  const auto serial = program_module<eigen_backend>(ep);
  std::vector<any_tensor> inputs, want;
  for (int k = 0; k < 4; ++k) {
    any_tensor x = rb::random_x(2 + k, static_cast<std::uint64_t>(k + 7)).erase();
    if (k % 2 == 1)
      for (index_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = -std::abs(x.data<float>()[i]);  // (the false branch)
    else
      for (index_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = std::abs(x.data<float>()[i]);
    want.push_back(serial({x})[0]);
    inputs.push_back(std::move(x));
  }
  const int bad = on_threads([&](int t) {
    int mismatches = 0;
    for (int i = 0; i < calls / 4; ++i) {
      const std::size_t k = static_cast<std::size_t>(t + i) % inputs.size();
      mismatches += !rb::same_bits(run({inputs[k]})[0], want[k]);
    }
    return mismatches;
  });
  CHECK(bad == 0);
  double expected = 0;  // (one step per row, every call)
  for (int t = 0; t < threads; ++t)
    for (int i = 0; i < calls / 4; ++i) expected += static_cast<double>(2 + static_cast<int>((static_cast<std::size_t>(t + i)) % inputs.size()));
  CHECK(run.buffer("steps").data<float>()[0] == static_cast<float>(expected));
}

TEST_CASE("threads: set_num_threads while programs run changes speed, not results") {
  const pool_threads pt(4);
  const auto m = rb::random_model<rb::mlp>(23);
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, rb::x_shape>(rb::spec_shape(4))));
  const auto run = program_module<eigen_backend>(ep, {.threads = 4});
  const workload w(run, {64});
  std::atomic<bool> done{false};
  std::thread resizer([&] {
    for (int i = 0; !done.load(); ++i) eigen::set_num_threads(1 + i % 4);
  });
  const int bad = on_threads([&](int) {
    int mismatches = 0;
    for (int i = 0; i < calls / 4; ++i) mismatches += !rb::same_bits(run({w.inputs[0]})[0], w.serial[0]);
    return mismatches;
  });
  done = true;
  resizer.join();
  CHECK(bad == 0);
}
