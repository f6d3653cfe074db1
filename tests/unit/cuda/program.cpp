// Exported programs on the CUDA backend, run on the emulated device (the same lowering, launch
// records, kernels and cuBLASLt descriptors a GPU gets): the MLP against the Eigen backend at batch
// 1, 7 and 64 with the batch dynamic, a pointwise chain with broadcasting and an exact-GELU epilogue,
// plans kept per batch size, and the bad input the issue names (a tensor on the wrong device, out of
// device memory, an op the backend does not run, a kernel writing outside its planned slot).
#include "../support.hpp"

#include <typex/backend/cuda.hpp>
#include <typex/backend/cuda/detail/records.hpp>  // (hand-made records: the write check's canary)
#include <typex/backend/cuda/emulated_device.hpp>
#include <typex/backend/eigen.hpp>

#include <cmath>
#include <string>
#include <thread>
#include <vector>

using namespace typex;

namespace {
using batch = sym<"batch", 1, 1024>;

struct mlp {
  nn::Linear<48, 64> fc1;
  nn::Linear<64, 64> fc2;
  nn::Linear<64, 10> head;
  template <class X>
  auto operator()(const X& x) const {
    return head(relu(fc2(relu(fc1(x)))));
  }
};

// exact GELU after a linear (not a cuBLASLt epilogue: a pointwise kernel in place), tanh GELU
// (cuBLASLt's GELU_BIAS), then one chain: a residual add, a product with a broadcast row (a
// parameter), a number minus the value (the value as the op's second argument), an activation
struct chain_model {
  nn::Linear<24, 32> fc1;
  nn::Linear<32, 32> fc2;
  nn::Linear<32, 32> fc3;
  template <class X>
  auto operator()(const X& x) const {
    const auto h = gelu(fc1(x));                  // exact (erf) GELU
    const auto t = gelu(fc2(h), gelu_approximation::tanh);          // tanh GELU
    const auto r = fc3(t);
    return tanh(0.5 - (r + h) * fc3.bias);       // add (chain head), mul, rsub, tanh: one kernel
  }
};
// (f16 tensors: the CUDA backend computes f32 and f64 ones; reduced precision is matmul_precision)
struct normed {
  nn::Linear<4, 4> fc;
  template <class X>
  auto operator()(const X& x) const {
    const auto h = to<f16>(fc(x));
    return matmul(h, transpose<0, 1>(h));
  }
};
}  // namespace
BOOST_HANA_ADAPT_STRUCT(mlp, fc1, fc2, head);
BOOST_HANA_ADAPT_STRUCT(normed, fc);
BOOST_HANA_ADAPT_STRUCT(chain_model, fc1, fc2, fc3);

namespace {
template <class M, int In>
exported_program export_with_batch(M& model) {
  init_module(model, 11);
  using xs = shape<batch, fix<In>>;
  return export_program(model, input<"x">(tensor_spec<f32, xs>(xs(batch(8), {}))));
}

any_tensor random_input(index_t rows, index_t cols, std::uint64_t seed) {
  any_tensor t(dtype::f32, {rows, cols});
  float* p = t.data<float>();
  std::uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (index_t i = 0; i < rows * cols; ++i) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    p[i] = static_cast<float>(static_cast<double>(s % 20001) / 10000.0 - 1.0);
  }
  return t;
}

double max_difference(const any_tensor& a, const any_tensor& b) {
  REQUIRE(a.extents() == b.extents());
  double worst = 0;
  for (index_t i = 0; i < a.numel(); ++i) worst = std::max(worst, std::abs(double(a.data<float>()[i]) - double(b.data<float>()[i])));
  return worst;
}

// The tolerance of f32 products of length k against the Eigen backend's (both accumulate in f32 in
// different orders; the emulated cuBLASLt accumulates in double): a few ulp per term.
constexpr double tolerance = 2e-5;
}  // namespace

TEST_CASE("cuda program: the MLP on the emulated device equals the Eigen backend at batch 1, 7 and 64 (batch dynamic)") {
  mlp model;
  const exported_program ep = export_with_batch<mlp, 48>(model);
  const auto gpu = cuda::make_emulated_device();
  auto* emu = static_cast<cuda::emulated_device*>(gpu.get());
  const program_module<eigen_backend> cpu_run(ep);
  const program_module<cuda_backend> gpu_run(ep, {.device = gpu});
  for (index_t b : {1, 7, 64, 7}) {
    const any_tensor x = random_input(b, 48, static_cast<std::uint64_t>(b));
    const auto want = cpu_run({x});
    const auto got = gpu_run({cuda::to_device(x, gpu)});
    REQUIRE(got.size() == 1);
    CHECK(got[0].device() == typex::device::cuda(0));
    const any_tensor host = cuda::to_host(got[0]);
    INFO("batch " << b);
    CHECK(max_difference(host, want[0]) <= tolerance);
  }
  // plans are kept per batch size: calling the sizes again allocates nothing more on the device
  const std::size_t held = emu->bytes_in_use();
  for (index_t b : {1, 7, 64}) (void)gpu_run({cuda::to_device(random_input(b, 48, 5), gpu)});
  CHECK(emu->bytes_in_use() == held);
  // linear + relu is one cuBLASLt product with a RELU_BIAS epilogue: three launches per call
  const std::size_t before = emu->launches();
  (void)gpu_run({cuda::to_device(random_input(7, 48, 3), gpu)});
  CHECK(emu->launches() - before == 3);
  const plan::report r = gpu_run.report();
  CHECK(r.steps == 3);
  CHECK(r.fused == 2);
}

TEST_CASE("cuda program: exact GELU after a linear, tanh GELU in cuBLASLt's epilogue, a chain with a broadcast operand and numbers") {
  chain_model model;
  const exported_program ep = export_with_batch<chain_model, 24>(model);
  const auto gpu = cuda::make_emulated_device();
  auto* emu = static_cast<cuda::emulated_device*>(gpu.get());
  const program_module<eigen_backend> cpu_run(ep);
  const program_module<cuda_backend> gpu_run(ep, {.device = gpu});
  for (index_t b : {1, 33}) {
    const any_tensor x = random_input(b, 24, 100 + static_cast<std::uint64_t>(b));
    const auto want = cpu_run({x});
    const std::size_t before = emu->launches();
    const auto got = gpu_run({cuda::to_device(x, gpu)});
    // fc1 (BIAS) + its exact GELU kernel, fc2 (GELU_BIAS), fc3 (BIAS), the chain: 5 launches
    CHECK(emu->launches() - before == 5);
    INFO("batch " << b);
    CHECK(max_difference(cuda::to_host(got[0]), want[0]) <= tolerance);
  }
  // without fusion: a kernel per node, the same numbers
  const program_module<cuda_backend> unfused(ep, {.device = gpu, .fuse = false});
  const any_tensor x = random_input(5, 24, 9);
  CHECK(max_difference(cuda::to_host(unfused({cuda::to_device(x, gpu)})[0]), cpu_run({x})[0]) <= tolerance);
}

TEST_CASE("cuda program: with one plan kept, alternating batch sizes re-plan each call and stay correct, memory bounded") {
  mlp model;
  const exported_program ep = export_with_batch<mlp, 48>(model);
  const auto gpu = cuda::make_emulated_device();
  auto* emu = static_cast<cuda::emulated_device*>(gpu.get());
  const program_module<eigen_backend> cpu_run(ep);
  const program_module<cuda_backend> gpu_run(ep, {.device = gpu, .max_plans = 1});
  std::size_t after[2] = {0, 0};  // (device bytes held after a call of batch 5, of batch 40)
  for (int round = 0; round < 3; ++round)
    for (int k = 0; k < 2; ++k) {
      const index_t b = k == 0 ? 5 : 40;
      const any_tensor x = random_input(b, 48, static_cast<std::uint64_t>(b + round));
      CHECK(max_difference(cuda::to_host(gpu_run({cuda::to_device(x, gpu)})[0]), cpu_run({x})[0]) <= tolerance);
      if (round > 0) CHECK(emu->bytes_in_use() == after[k]);  // (nothing accumulates)
      after[k] = emu->bytes_in_use();
    }
  // after a call of batch 5 the batch-40 plan is gone (kept, the bytes would be the same)
  CHECK(after[0] < after[1]);
}

TEST_CASE("cuda program: a host tensor given to a CUDA program, or a device tensor to an Eigen program, is a device_error naming the input and both devices") {
  mlp model;
  const exported_program ep = export_with_batch<mlp, 48>(model);
  const auto gpu = cuda::make_emulated_device();
  const program_module<cuda_backend> gpu_run(ep, {.device = gpu});
  const any_tensor x = random_input(2, 48, 1);
  CHECK_THROWS_WITH_AS(gpu_run({x}), doctest::Contains("input 'x' is on cpu, but this program runs on cuda:0"), device_error);
  const program_module<eigen_backend> cpu_run(ep);
  CHECK_THROWS_WITH_AS(cpu_run({cuda::to_device(x, gpu)}), doctest::Contains("input 'x' is on cuda:0, but this program runs on cpu"),
                       device_error);
  // and the host cannot read device bytes behind the backend's back
  CHECK_THROWS_AS((void)cuda::to_device(x, gpu).clone(), device_error);
}

TEST_CASE("cuda program: out of device memory is a device_error, nothing leaks, and the module runs afterwards") {
  mlp model;
  const exported_program ep = export_with_batch<mlp, 48>(model);
  // The bytes: weights 7946 floats = 31784; the input of batch 200: 200 x 48 floats = 38400; its
  // slot in the plan: 38400; the plan's arena: fc1's and fc2's results live together, 2 x 51200.
  // With 50000 bytes left after the slot, the slot is allocated and the arena is not: the failed
  // plan must give the slot back.
  const auto gpu = cuda::make_emulated_device(31784 + 38400 + 38400 + 50000);
  auto* emu = static_cast<cuda::emulated_device*>(gpu.get());
  {
    const program_module<cuda_backend> run(ep, {.device = gpu});
    const std::size_t weights = emu->bytes_in_use();
    CHECK(weights > 0);
    CHECK(weights == 31784);
    {
      const any_tensor big = cuda::to_device(random_input(200, 48, 2), gpu);
      CHECK_THROWS_WITH_AS(run({big}), doctest::Contains("out of memory"), device_error);
      CHECK(emu->bytes_in_use() == weights + 38400);  // (the failed plan's slot given back; the input is the caller's)
    }
    CHECK(emu->bytes_in_use() == weights);
    const any_tensor x = random_input(3, 48, 4);
    const program_module<eigen_backend> cpu_run(ep);
    CHECK(max_difference(cuda::to_host(run({cuda::to_device(x, gpu)})[0]), cpu_run({x})[0]) <= tolerance);
  }
  CHECK(emu->bytes_in_use() == 0);
}

TEST_CASE("cuda program: a program whose shapes are not trusted (an archive loaded so) holds its weights on the device once, checked call then planned") {
  mlp model;
  exported_program ep = export_with_batch<mlp, 48>(model);
  ep.set_trusted_shapes(false);  // (its first call per set of extents runs node by node, every result checked)
  const auto gpu = cuda::make_emulated_device();
  auto* emu = static_cast<cuda::emulated_device*>(gpu.get());
  {
    const program_module<cuda_backend> run(ep, {.device = gpu});
    // (the stepwise engine and the planned one share one upload: 7946 floats)
    CHECK(emu->bytes_in_use() == 31784);
    const program_module<eigen_backend> cpu_run(ep);
    for (const index_t batch : {3, 3, 9, 3}) {  // (checked, planned, checked, planned)
      INFO("batch " << batch);
      const any_tensor x = random_input(batch, 48, 7);
      CHECK(max_difference(cuda::to_host(run({cuda::to_device(x, gpu)})[0]), cpu_run({x})[0]) <= tolerance);
    }
  }
  CHECK(emu->bytes_in_use() == 0);
}

TEST_CASE("cuda program: an op the CUDA backend does not run is an unsupported_error at compile time, naming it, before any allocation") {
  normed model;
  init_module(model, 1);
  using xs = shape<fix<2>, fix<4>>;
  const auto ep = export_program(model, input<"x">(tensor_spec<f32, xs>()));
  const auto gpu = cuda::make_emulated_device();
  auto* emu = static_cast<cuda::emulated_device*>(gpu.get());
  CHECK_THROWS_WITH_AS((program_module<cuda_backend>(ep, {.device = gpu})),
                       doctest::Contains("the program uses aten._to_copy.default (node '_to_copy'), which the CUDA backend does not run"),
                       unsupported_error);
  CHECK(emu->bytes_in_use() == 0);
}

TEST_CASE("cuda program: several threads share a module and a device") {
  mlp model;
  const exported_program ep = export_with_batch<mlp, 48>(model);
  const auto gpu = cuda::make_emulated_device();
  const program_module<cuda_backend> run(ep, {.device = gpu});
  const program_module<eigen_backend> cpu_run(ep);
  std::vector<any_tensor> xs, want;
  for (int t = 0; t < 4; ++t) {
    xs.push_back(random_input(1 + 3 * t, 48, 50 + static_cast<std::uint64_t>(t)));
    want.push_back(cpu_run({xs.back()})[0]);
  }
  std::vector<double> worst(4, 1.0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      double w = 0;
      for (int k = 0; k < 3; ++k) w = std::max(w, max_difference(cuda::to_host(run({cuda::to_device(xs[t], gpu)})[0]), want[t]));
      worst[t] = w;
    });
  for (auto& th : threads) th.join();
  for (double w : worst) CHECK(w <= tolerance);
}

// The canary of the emulated device's write check: a chain kernel planted with an off-by-one
// extent writes one element past its planned slot, into the next value's; the check names the
// record and the first byte that changed (byte 258: the third byte of 1.0f, 0x0000803f, at 256). The same
// record with the right extent passes.
TEST_CASE("cuda program: a kernel writing past its planned arena slot is caught on the emulated device, naming the node") {
  const auto gpu = cuda::make_emulated_device();
  cuda::device_memory memory(gpu);
  const storage arena = memory.allocate(2 * 64 * sizeof(float));  // two slots: [0, 256) and [256, 512)
  const storage src = memory.allocate(65 * sizeof(float));
  gpu->fill_zero(arena.data(), arena.bytes());
  gpu->fill_zero(src.data(), src.bytes());
  const auto record_for = [&](std::int64_t n) {
    cuda::chain_params c{};
    c.out = arena.data();
    c.rank = 1;
    c.n = n;
    c.extent[0] = n;
    c.n_operands = 1;
    c.operands[0].data = src.data();
    c.operands[0].stride[0] = 1;
    c.links[0].kind = cuda::link_kind::add;
    c.links[0].number = 1.0;
    c.n_links = 1;
    cuda::detail::record r;
    r.what = cuda::chain_launch(c);
    r.name = "node 'planted' (aten.add.Tensor)";
    r.out = arena.data();
    r.out_bytes = 64 * sizeof(float);
    return r;
  };
  CHECK_NOTHROW(cuda::detail::run_records_on(*gpu, {record_for(64)}, {}, arena, true));
  CHECK_THROWS_WITH_AS(cuda::detail::run_records_on(*gpu, {record_for(65)}, {}, arena, true),
                       doctest::Contains("node 'planted' (aten.add.Tensor) wrote arena byte 258, outside its planned slot [0, 256)"),
                       device_error);
}

TEST_CASE("cuda program: a failed launch is a device_error naming the node and the op") {
  const auto gpu = cuda::make_emulated_device();
  cuda::device_memory memory(gpu);
  const storage out = memory.allocate(4 * sizeof(float));
  cuda::chain_params c{};
  c.out = out.data();
  c.rank = 1;
  c.n = 4;
  c.extent[0] = 4;
  c.n_operands = 1;
  c.operands[0].data = out.data();
  c.operands[0].stride[0] = 1;
  cuda::kernel_launch k = cuda::chain_launch(c);
  k.block.x = 2048;  // (past the device's 1024 threads per block: the launch itself fails)
  CHECK_THROWS_WITH_AS(gpu->launch(k, "node 'act' (aten.relu.default)"), doctest::Contains("the launch of node 'act' (aten.relu.default) failed"),
                       device_error);
  // the device runs the next launch (a failed launch leaves nothing behind on the emulator)
  k.block.x = 256;
  CHECK_NOTHROW(gpu->launch(k, "node 'act' (aten.relu.default)"));
}

// Eager calls on device tensors (backend/cuda/eager.hpp): the op's rule types the result at compile
// time as for host tensors; the call runs on the tensors' device (a program of one node); host and
// device tensors coexist in one user program, each call running where its tensors are.
TEST_CASE("cuda eager: ops on device tensors run on their device and equal the Eigen backend's, host tensors beside them") {
  const auto gpu = cuda::make_emulated_device();
  using S = shape<fix<3>, fix<5>>;
  using R = shape<fix<5>>;
  const auto a = typex_test::random_tensor<host_tensor<f32, S>>({3, 5}, 1);
  const auto b = typex_test::random_tensor<host_tensor<f32, S>>({3, 5}, 2);
  const auto row = typex_test::random_tensor<host_tensor<f32, R>>({5}, 3);
  const auto da = cuda::to_device(a, gpu), db = cuda::to_device(b, gpu);
  const auto drow = cuda::to_device(row, gpu);
  const auto dy = gelu(da * 0.5 + db) - drow;  // (broadcast row; numbers; an activation)
  static_assert(std::is_same_v<std::remove_cvref_t<decltype(dy)>, cuda::device_tensor<f32, S>>);
  CHECK(dy.device() == typex::device::cuda(0));
  const auto want = gelu(a * 0.5 + b) - row;  // (on the host: the Eigen backend)
  CHECK(max_difference(cuda::to_host(dy).erase(), want.erase()) <= 1e-6);
  const auto ds = softmax<1>(da);
  CHECK(max_difference(cuda::to_host(ds).erase(), softmax<1>(a).erase()) <= 1e-6);
  const auto dt = transpose<0, 1>(da);
  static_assert(std::is_same_v<std::remove_cvref_t<decltype(dt)>, cuda::device_tensor<f32, shape<fix<5>, fix<3>>>>);
  CHECK(max_difference(cuda::to_host(dt).erase(), transpose<0, 1>(a).erase()) == 0.0);
  // a host tensor and a device tensor in one call
  CHECK_THROWS_WITH_AS((void)(da + b), doctest::Contains("got tensors on two devices, cuda:0 and cpu"), device_error);
  // an op the CUDA backend does not run (a conversion to f16): named; a product of f64 tensors, a
  // sum of integers and relu of integers run
  CHECK_THROWS_WITH_AS((void)to<f16>(da), doctest::Contains("which the CUDA backend does not run"), unsupported_error);
  const any_tensor got64 = cuda::to_host(matmul(to<f64>(da), to<f64>(transpose<0, 1>(da)))).erase();
  const any_tensor want64 = matmul(to<f64>(a), to<f64>(transpose<0, 1>(a))).erase();
  REQUIRE(got64.scalar_type() == dtype::f64);
  REQUIRE(got64.extents() == want64.extents());
  for (index_t i = 0; i < want64.numel(); ++i) CHECK(std::abs(got64.data<double>()[i] - want64.data<double>()[i]) <= 1e-12);
  const any_tensor got_relu = cuda::to_host(relu(to<i64>(da * 100.0f))).erase(), want_relu = relu(to<i64>(a * 100.0f)).erase();
  REQUIRE(got_relu.numel() == want_relu.numel());
  bool some_negative = false;
  for (index_t i = 0; i < want_relu.numel(); ++i) {
    CHECK(got_relu.data<std::int64_t>()[i] == want_relu.data<std::int64_t>()[i]);
    some_negative = some_negative || to<i64>(a * 100.0f).erase().data<std::int64_t>()[i] < 0;
  }
  CHECK(some_negative);  // (relu had something to clamp)
  const auto dsum = sum(to<i64>(da * 100.0f));
  CHECK(cuda::to_host(dsum).erase().data<std::int64_t>()[0] == sum(to<i64>(a * 100.0f)).erase().data<std::int64_t>()[0]);
  // a reduction over every dim runs (one block reads the whole tensor)
  CHECK(std::abs(cuda::to_host(sum(da)).erase().data<float>()[0] - sum(a).erase().data<float>()[0]) <= 1e-5);
}

namespace {
// (ops the CUDA backend runs in each branch; the predicate is an input)
struct branchy {
  nn::Linear<4, 4> fc;
  template <class P, class X>
  auto operator()(const P& p, const X& x) const {
    return cond(p, [&](const auto& v) { return fc(v); }, [](const auto& v) { return tanh(v); }, x);
  }
};
}  // namespace
BOOST_HANA_ADAPT_STRUCT(branchy, fc);

TEST_CASE("cuda program: a program with control flow given device tensors is an unsupported_error naming the input, on the host it runs") {
  branchy model;
  init_module(model, 3);
  const exported_program ep =
      export_program(model, input<"p">(tensor_spec<b8, shape<>>()), input<"x">(tensor_spec<f32, shape_c<2, 4>>()));
  const auto gpu = cuda::make_emulated_device();
  const program_module<cuda_backend> gpu_run(ep, {.device = gpu});
  any_tensor p(dtype::b8, {});
  p.data<bool>()[0] = true;
  const any_tensor x = random_input(2, 4, 9);
  CHECK_THROWS_WITH_AS(gpu_run({cuda::to_device(p, gpu), cuda::to_device(x, gpu)}), doctest::Contains("input 0 of a program with control flow is on cuda:0"),
                       unsupported_error);
  const program_module<eigen_backend> cpu_run(ep);
  CHECK(cpu_run({p, x}).size() == 1);
}
