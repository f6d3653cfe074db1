// typex::cuda's native device on a real GPU (src/cuda/native_device.cu): what the emulated device
// cannot check — the CUDA runtime's behaviour (device discovery, the stream-ordered pool, out of
// memory and recovery, graph capture and replay, cuBLASLt through the device's handle).
// Suite "gpu": runs where there is a GPU, reported skipped by name elsewhere (main.cpp). Suite
// "no_gpu": make_native_device's error where there is none (this one runs in CI).
#include <doctest/doctest.h>

#include <typex/backend/cuda/device.hpp>
#include <typex/backend/cuda/lt.hpp>

#include <cuda_runtime_api.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using typex::device_error;
using typex::cuda::device_runtime;

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const device_error& e) {
    return e.what();
  }
  FAIL("no device_error was thrown");
  return {};
}

std::vector<unsigned char> pattern(std::size_t n, unsigned seed) {
  std::vector<unsigned char> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<unsigned char>((i * 131 + seed * 7 + (i >> 8)) & 0xff);
  return v;
}

// Uploads, copies on the device, downloads: the bytes come back.
void check_round_trip(device_runtime& d, std::size_t bytes) {
  const auto host = pattern(bytes, 3);
  void* a = d.allocate(bytes);
  void* b = d.allocate(bytes);
  std::vector<unsigned char> back(bytes, 0);
  d.copy_to_device(a, host.data(), bytes);
  d.copy_on_device(b, a, bytes);
  d.copy_to_host(back.data(), b, bytes);
  d.synchronize();
  d.deallocate(a);
  d.deallocate(b);
  CHECK(back == host);
}

}  // namespace

TEST_SUITE("gpu") {

TEST_CASE("cuda gpu: device_count sees the GPU and info() describes it") {
  std::string why = "unchanged";
  const int n = typex::cuda::device_count(&why);
  REQUIRE(n > 0);
  CHECK(why == "unchanged");  // (set only where there is no GPU)
  const auto d = typex::cuda::make_native_device(0);
  const auto& info = d->info();
  CHECK_FALSE(info.emulated);
  CHECK(info.ordinal == 0);
  CHECK_FALSE(info.name.empty());
  CHECK(info.sm >= 75);  // (CUDA 13 runs on nothing older)
  CHECK(info.total_memory > (std::size_t{1} << 30));
  CHECK(info.shared_per_block_optin >= 48 * 1024);
  CHECK(d->where() == typex::device::cuda(0));
  MESSAGE("GPU 0: ", info.name, ", sm_", info.sm, ", ", info.total_memory >> 20, " MiB, ",
          info.shared_per_block_optin, " bytes of shared memory per block (opt-in)");
}

TEST_CASE("cuda gpu: make_native_device of an ordinal past the last GPU throws device_error naming it") {
  const int n = typex::cuda::device_count();
  const std::string m = message_of([&] { (void)typex::cuda::make_native_device(n); });
  CHECK(m.find("no GPU cuda:" + std::to_string(n)) != std::string::npos);
  CHECK(message_of([] { (void)typex::cuda::make_native_device(-1); }).find("no GPU cuda:-1") != std::string::npos);
}

TEST_CASE("cuda gpu: allocations are 256-byte aligned, distinct, and 0 bytes gives a unique address") {
  const auto d = typex::cuda::make_native_device();
  void* z1 = d->allocate(0);
  void* z2 = d->allocate(0);
  void* a = d->allocate(1000);
  CHECK(z1 != nullptr);
  CHECK(z2 != nullptr);
  CHECK(z1 != z2);
  CHECK(reinterpret_cast<std::uintptr_t>(a) % 256 == 0);
  d->deallocate(z1);
  d->deallocate(z2);
  d->deallocate(a);
  d->deallocate(nullptr);
  d->synchronize();
}

TEST_CASE("cuda gpu: copies to the device, on the device and back give the bytes back") {
  const auto d = typex::cuda::make_native_device();
  for (std::size_t bytes : {std::size_t{1}, std::size_t{4097}, std::size_t{3} << 20}) {
    CAPTURE(bytes);
    check_round_trip(*d, bytes);
  }
  // fill_zero on part of a buffer
  const std::size_t bytes = 10000;
  const auto host = pattern(bytes, 5);
  void* a = d->allocate(bytes);
  d->copy_to_device(a, host.data(), bytes);
  d->fill_zero(static_cast<unsigned char*>(a) + 100, 5000);
  std::vector<unsigned char> back(bytes);
  d->copy_to_host(back.data(), a, bytes);
  d->synchronize();
  d->deallocate(a);
  for (std::size_t i = 0; i < bytes; ++i) {
    const unsigned char want = (i >= 100 && i < 5100) ? 0 : host[i];
    if (back[i] != want) {
      FAIL_CHECK("byte ", i, " is ", int(back[i]), ", not ", int(want));
      break;
    }
  }
}

TEST_CASE("cuda gpu: out of memory is device_error, nothing is leaked, and the device works afterwards") {
  const auto d = typex::cuda::make_native_device();
  const std::size_t huge = d->info().total_memory * 4;
  const std::string m = message_of([&] { (void)d->allocate(huge); });
  CHECK(m.find("out of device memory") != std::string::npos);
  CHECK(m.find(std::to_string(huge)) != std::string::npos);
  // the runtime's error state was cleared: the next operations succeed
  CHECK(cudaPeekAtLastError() == cudaSuccess);
  check_round_trip(*d, std::size_t{1} << 20);
  // twice more: the failure did not leave anything behind that makes the next one different
  CHECK_THROWS_AS((void)d->allocate(huge), device_error);
  CHECK_THROWS_AS((void)d->allocate(huge), device_error);
  check_round_trip(*d, 4096);
  // nearly all of the memory, once: the pool gives it (nothing of the failures is held)
  std::size_t free_bytes = 0, total = 0;
  REQUIRE(cudaMemGetInfo(&free_bytes, &total) == cudaSuccess);
  void* big = d->allocate(free_bytes / 2);
  d->deallocate(big);
  d->synchronize();
}

TEST_CASE("cuda gpu: a captured memset and copy replay as a graph, with the buffers' current contents") {
  const auto d = typex::cuda::make_native_device();
  const std::size_t bytes = 1 << 16, half = bytes / 2;
  auto* src = static_cast<unsigned char*>(d->allocate(bytes));
  auto* dst = static_cast<unsigned char*>(d->allocate(bytes));
  const auto p = pattern(bytes, 1), q = pattern(bytes, 2), old = pattern(bytes, 9);
  d->copy_to_device(src, p.data(), bytes);
  d->copy_to_device(dst, old.data(), bytes);
  d->synchronize();

  const auto graph = d->capture([&] {
    d->fill_zero(dst, bytes);
    d->copy_on_device(dst, src, half);
  });
  REQUIRE(graph != nullptr);
  std::vector<unsigned char> back(bytes);
  d->copy_to_host(back.data(), dst, bytes);
  d->synchronize();
  CHECK(back == old);  // (captured, not run)

  const auto expect = [&](const std::vector<unsigned char>& s) {
    std::vector<unsigned char> e(bytes, 0);
    std::memcpy(e.data(), s.data(), half);
    return e;
  };
  graph->replay();
  d->copy_to_host(back.data(), dst, bytes);
  d->synchronize();
  CHECK(back == expect(p));

  d->copy_to_device(src, q.data(), bytes);  // the graph reads src when it runs
  graph->replay();
  graph->replay();
  d->copy_to_host(back.data(), dst, bytes);
  d->synchronize();
  CHECK(back == expect(q));
  d->deallocate(src);
  d->deallocate(dst);
  d->synchronize();
}

TEST_CASE("cuda gpu: a capture that fails ends the capture, throws, and leaves the stream usable") {
  const auto d = typex::cuda::make_native_device();
  // waiting for the stream is not capturable: the capture is invalidated and reported
  const std::string m = message_of([&] { (void)d->capture([&] { d->synchronize(); }); });
  CHECK(m.find("cuda:0") != std::string::npos);
  check_round_trip(*d, 4096);
  // an exception of the work itself comes through as it is
  CHECK_THROWS_AS((void)d->capture([] { throw std::logic_error("the work's own failure"); }), std::logic_error);
  check_round_trip(*d, 4096);
  // and a capture after both works
  void* a = d->allocate(256);
  const auto graph = d->capture([&] { d->fill_zero(a, 256); });
  REQUIRE(graph != nullptr);
  graph->replay();
  d->synchronize();
  d->deallocate(a);
  d->synchronize();
}

TEST_CASE("cuda gpu: a cuBLASLt linear with a relu+bias epilogue through the device matches the host") {
  const auto d = typex::cuda::make_native_device();
  const std::int64_t m = 7, n = 33, k = 5;  // (odd sizes: no algorithm's tile divides them)
  std::vector<float> x(m * k), w(n * k), b(n), y(m * n, -1.0f);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * float(i));
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = std::cos(0.11f * float(i)) * 0.5f;
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = 0.05f * float(i) - 0.8f;
  const auto bytes = [](const std::vector<float>& v) { return v.size() * sizeof(float); };
  void* dx = d->allocate(bytes(x));
  void* dw = d->allocate(bytes(w));
  void* db = d->allocate(bytes(b));
  void* dy = d->allocate(bytes(y));
  const std::size_t ws_bytes = std::size_t{4} << 20;
  void* ws = d->allocate(ws_bytes);
  d->copy_to_device(dx, x.data(), bytes(x));
  d->copy_to_device(dw, w.data(), bytes(w));
  d->copy_to_device(db, b.data(), bytes(b));

  auto lin = typex::cuda::make_linear(m, n, k, typex::cuda::epilogue::relu, true);
  lin.set_bias_pointer(db);
  typex::cuda::matmul_args args;
  args.a = dw;  // (cuBLAS's A is typex's B, W: lt.hpp)
  args.b = dx;
  args.d = dy;
  args.bias = db;
  args.workspace = ws;
  args.workspace_bytes = ws_bytes;
  d->matmul(lin, args, "linear (test)");
  CHECK(lin.algo.has_value());  // (chosen once, kept)
  d->matmul(lin, args, "linear (test)");
  d->copy_to_host(y.data(), dy, bytes(y));
  d->synchronize();
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      double acc = b[j];
      for (std::int64_t l = 0; l < k; ++l) acc += double(x[i * k + l]) * double(w[j * k + l]);
      const double want = acc > 0 ? acc : 0;
      CHECK(std::abs(double(y[i * n + j]) - want) <= 1e-5 + 1e-5 * std::abs(want));
    }
  }
  // a bias in the call that is not the descriptor's is refused, naming the node
  args.bias = dx;
  CHECK(message_of([&] { d->matmul(lin, args, "node 12 (linear)"); }).find("node 12 (linear)") != std::string::npos);
  for (void* p : {dx, dw, db, dy, ws}) d->deallocate(p);
  d->synchronize();
}

}  // TEST_SUITE("gpu")

TEST_SUITE("no_gpu") {

TEST_CASE("cuda gpu: without a GPU, make_native_device throws device_error saying why (no driver: error 35)") {
  std::string why;
  REQUIRE(typex::cuda::device_count(&why) == 0);
  CHECK_FALSE(why.empty());
  const std::string m = message_of([] { (void)typex::cuda::make_native_device(); });
  MESSAGE(m);
  CHECK(m.rfind("typex::cuda::make_native_device(0): ", 0) == 0);
  CHECK(m.find(why) != std::string::npos);
  // the reason is cudaGetDeviceCount's error, asked here independently
  int count = -7;
  const cudaError_t e = cudaGetDeviceCount(&count);
  (void)cudaGetLastError();
  if (e == cudaErrorInsufficientDriver) {
    CHECK(m.find("no CUDA driver") != std::string::npos);
    CHECK(m.find("cudaErrorInsufficientDriver (35)") != std::string::npos);
  } else if (e == cudaErrorNoDevice || (e == cudaSuccess && count == 0)) {
    CHECK(m.find("no CUDA GPU") != std::string::npos);
  } else {
    CHECK(m.find(cudaGetErrorName(e)) != std::string::npos);
  }
}

}  // TEST_SUITE("no_gpu")
