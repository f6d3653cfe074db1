// Programs and library calls on a real GPU (suite "gpu": skipped by name without one, main.cpp):
//   - the MLP through program_module<cuda_backend> on the native device against the Eigen backend, at
//     batch 1, 7 and 64 (the batch dynamic), with CUDA graphs on and off;
//   - the per-backend parity axis (tests/unit/backend_axis.hpp) on the native device: every PyTorch
//     parity case the CUDA backend runs, as a program, against PyTorch's values;
//   - the reference models of tests/data/parity/models.txt (MLP, CNN, transformer block) against
//     PyTorch's outputs, graphs on and off;
//   - a training step of each reference model (the joint program, its parameters on the GPU, SGD and
//     AdamW stepping them there), three steps against the Eigen backend, graphs on and off;
//   - the contract of the library model: real cuBLASLt on the GPU against the emulated device's model
//     (lt_reference.hpp) for the descriptors typex builds, each epilogue it uses, and cuBLASLt's GELU
//     is the tanh form (not erf), which the lowering relies on;
//   - (with cuDNN) real cuDNN against the emulated device's model (dnn_reference.hpp) for the
//     descriptors typex builds, exact f32 and TF32, and the programs of cuda_cudnn.hpp.
#include "../backend_axis.hpp"
#include "../cuda_axis.hpp"
#include "../cuda_attention.hpp"
#include "../cuda_cudnn.hpp"
#include "../cuda_precision.hpp"
#include "../cuda_training.hpp"
#include "../model_cases.hpp"

#include <doctest/doctest.h>

#include <typex/backend/cuda.hpp>
#include <typex/backend/cuda/lt_reference.hpp>
#if defined(TYPEX_CUDNN)
#include <typex/backend/cuda/dnn_reference.hpp>
#endif
#include <typex/backend/eigen.hpp>
#include <typex/typex.hpp>

#include <cmath>
#include <tuple>
#include <vector>

using namespace typex;

namespace {
using batch = sym<"batch", 1, 1024>;
struct gpu_mlp {
  nn::Linear<48, 64> fc1;
  nn::Linear<64, 64> fc2;
  nn::Linear<64, 10> head;
  template <class X>
  auto operator()(const X& x) const {
    return head(gelu(fc2(relu(fc1(x)))));
  }
};
// dropout masks (the CPU's Philox stream) and an index out of range
struct gpu_random_and_index {
  template <class X, class I>
  auto operator()(const X& x, const I& idx) const {
    return std::tuple(x * dropout_mask(x, 0.3), index_select<0>(x, idx));
  }
};
}  // namespace
BOOST_HANA_ADAPT_STRUCT(gpu_mlp, fc1, fc2, head);
BOOST_HANA_ADAPT_STRUCT(gpu_random_and_index);

namespace {
any_tensor filled(std::vector<index_t> e, float scale) {
  any_tensor t(dtype::f32, std::move(e));
  for (index_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = scale * std::sin(0.37f * float(i) + 0.1f);
  return t;
}
double max_difference(const any_tensor& a, const any_tensor& b) {
  double worst = 0;
  for (index_t i = 0; i < a.numel(); ++i) worst = std::max(worst, std::abs(double(a.data<float>()[i]) - double(b.data<float>()[i])));
  return worst;
}
}  // namespace

TEST_SUITE("gpu") {

TEST_CASE("cuda gpu: the MLP on the GPU equals the Eigen backend at batch 1, 7 and 64, graphs on and off") {
  gpu_mlp model;
  init_module(model, 11);
  using xs = shape<batch, fix<48>>;
  const exported_program ep = export_program(model, input<"x">(tensor_spec<f32, xs>(xs(batch(8), {}))));
  const auto gpu = cuda::make_native_device();
  const program_module<eigen_backend> cpu_run(ep);
  for (bool graphs : {true, false}) {
    const program_module<cuda_backend> gpu_run(ep, {.device = gpu, .graphs = graphs});
    for (index_t b : {1, 7, 64, 7, 64}) {
      const any_tensor x = filled({b, 48}, 1.0f);
      const auto got = cuda::to_host(gpu_run({cuda::to_device(x, gpu)})[0]);
      INFO("batch " << b << ", graphs " << graphs);
      CHECK(max_difference(got, cpu_run({x})[0]) <= 1e-4);  // (f32 products on tensor cores off: CUBLAS_COMPUTE_32F)
    }
  }
}

namespace {
template <class M, class In>
void check_reference_model_on_gpu(const parity_models::model_case& c, const std::shared_ptr<cuda::device_runtime>& gpu) {
  M m;
  load_state_dict(m, c.state);
  const auto x = In::bind(c.input, "input");
  const exported_program ep = export_program(m, input<"x">(x.spec()));
  for (const bool graphs : {true, false}) {
    const program_module<cuda_backend> run(ep, {.device = gpu, .graphs = graphs});
    for (int call = 0; call < 2; ++call) {  // (the second call replays the captured graph)
      const any_tensor got = cuda::to_host(run({cuda::to_device(c.input, gpu)})[0]);
      INFO("graphs " << graphs << ", call " << call);
      CHECK(typex_test::worst_abs_error(got, c.output) <= 1e-4);
    }
  }
}
}  // namespace

TEST_CASE("cuda gpu: the MLP, CNN and transformer block of the PyTorch reference equal PyTorch on the GPU, graphs on and off") {
  const auto gpu = cuda::make_native_device();
  const auto models = parity_models::read_models();
  REQUIRE(models.size() == 3);
  check_reference_model_on_gpu<parity_models::mlp, tensor<f32, fix<3>, fix<32>>>(models.at("mlp"), gpu);
  check_reference_model_on_gpu<parity_models::cnn, tensor<f32, fix<2>, fix<1>, fix<12>, fix<12>>>(models.at("cnn"), gpu);
  check_reference_model_on_gpu<parity_models::transformer, tensor<f32, fix<2>, fix<5>, fix<16>>>(models.at("transformer"), gpu);
}

TEST_CASE("cuda gpu: training steps of the MLP, CNN and transformer block on the GPU equal the Eigen backend, graphs on and off") {
  const auto gpu = cuda::make_native_device();
  for (const bool graphs : {true, false}) {
    INFO("graphs " << graphs);
    cuda_training::train_reference_models(gpu, 1e-4, graphs);  // (a GPU contracts products and sums: 1e-4, not the emulator's 2e-5)
  }
}

TEST_CASE("cuda gpu: the optimizers' device updates equal the host loop bit for bit on the GPU (no FMA contraction), clip_grad_norm_") {
  cuda_training::check_optimizers_bitwise(cuda::make_native_device());
}

TEST_CASE("cuda gpu: a training module made without a device (GPU 0: state, engine and outputs on runtimes of their own) trains as the Eigen backend") {
  using namespace cuda_training;
  const auto models = parity_models::read_models();
  cuda_training_tests::mlp_step m;
  load_state_dict(m.net, models.at("mlp").state);
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, shape<fix<6>, fix<32>>>()), input<"y">(tensor_spec<i64, shape<fix<6>>>()));
  const exported_program joint = make_joint(ep);
  program_module<eigen_backend> cpu(joint);
  program_module<cuda_backend> dev(joint);  // (no .device: GPU 0)
  const auto gpu = cuda::make_native_device();
  optim::sgd a(cpu.parameters(), {.lr = 0.05, .momentum = 0.9}), b(dev.parameters(), {.lr = 0.05, .momentum = 0.9});
  const std::vector<any_tensor> in = {pattern({6, 32}, 61), labels(6, 10)};
  const std::vector<any_tensor> din = {cuda::to_device(in[0], gpu), cuda::to_device(in[1], gpu)};
  for (int s = 0; s < 3; ++s) {
    const joint_outputs w = read_joint_outputs(joint, cpu(in)), g = read_joint_outputs(joint, dev(din));
    CHECK(worst(g.loss, w.loss) <= 1e-4);
    for (const auto& [fqn, t] : w.gradients) CHECK(worst(g.gradients.at(fqn), t) <= 1e-4);
    a.step(w.gradients);
    b.step(g.gradients);
  }
  for (const auto& [fqn, t] : cpu.state_dict()) CHECK(worst(dev.state_dict().at(fqn), t) <= 1e-4);
}

TEST_CASE("cuda gpu: dropout masks equal the CPU's for the same draws, and an index out of range is an argument_error after the call") {
  gpu_random_and_index f;
  const exported_program ep = export_program(f, input<"x">(tensor_spec<f32, shape<fix<33>, fix<65>>>()),
                                             input<"idx">(tensor_spec<i64, shape<fix<3>>>()));
  const auto gpu = cuda::make_native_device();
  const any_tensor x = filled({33, 65}, 1.0f);
  any_tensor idx(dtype::i64, {3});
  idx.data<std::int64_t>()[0] = 2, idx.data<std::int64_t>()[1] = 32, idx.data<std::int64_t>()[2] = 0;
  for (bool graphs : {true, false}) {
    const program_module<cuda_backend> run(ep, {.device = gpu, .graphs = graphs});
    const program_module<eigen_backend> cpu(ep);
    manual_seed(99);
    const auto got = run({cuda::to_device(x, gpu), cuda::to_device(idx, gpu)});
    const auto got2 = run({cuda::to_device(x, gpu), cuda::to_device(idx, gpu)});  // (a replay: a new draw)
    manual_seed(99);
    const auto want = cpu({x, idx});
    const auto want2 = cpu({x, idx});
    INFO("graphs " << graphs);
    CHECK(max_difference(cuda::to_host(got[0]), want[0]) == 0.0);
    CHECK(max_difference(cuda::to_host(got2[0]), want2[0]) == 0.0);
    CHECK(max_difference(cuda::to_host(got[1]), want[1]) == 0.0);
    any_tensor bad = idx.clone();
    bad.data<std::int64_t>()[1] = 33;
    CHECK_THROWS_WITH_AS(run({cuda::to_device(x, gpu), cuda::to_device(bad, gpu)}), doctest::Contains("index out of range"), argument_error);
    CHECK(max_difference(cuda::to_host(run({cuda::to_device(x, gpu), cuda::to_device(idx, gpu)})[1]), want[1]) == 0.0);
  }
}

TEST_CASE("cuda gpu: every parity case the CUDA backend runs matches PyTorch on the GPU") {
  const auto gpu = cuda::make_native_device();
  const typex_test::backend_under_test b = typex_test::cuda_backend_under_test("cuda (GPU)", gpu);
  const typex_test::axis_result r = typex_test::run_parity_axis(b);
  for (const std::string& f : r.failures) FAIL_CHECK(f);
  CHECK(r.run > 0);
  CHECK(r.not_run.empty());  // (as on the emulated device: every case)
  MESSAGE("cuda (GPU): " << r.run << " cases run, " << r.not_run.size() << " not run by this backend");
}

TEST_CASE("cuda gpu: real cuBLASLt equals the emulated device's model for typex's descriptors, and its GELU is the tanh form") {
  const auto d = cuda::make_native_device();
  const std::int64_t m = 13, n = 33, k = 21;
  std::vector<float> x(m * k), w(n * k), bias(n);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = 2.0f * std::sin(0.37f * float(i));
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = std::cos(0.11f * float(i)) * 0.5f;
  for (std::size_t i = 0; i < bias.size(); ++i) bias[i] = 0.05f * float(i) - 0.8f;
  const auto bytes = [](const std::vector<float>& v) { return v.size() * sizeof(float); };
  void* dx = d->allocate(bytes(x));
  void* dw = d->allocate(bytes(w));
  void* db = d->allocate(bytes(bias));
  void* dy = d->allocate(std::size_t(m * n) * sizeof(float));
  d->copy_to_device(dx, x.data(), bytes(x));
  d->copy_to_device(dw, w.data(), bytes(w));
  d->copy_to_device(db, bias.data(), bytes(bias));
  for (cuda::epilogue e : {cuda::epilogue::none, cuda::epilogue::relu, cuda::epilogue::gelu_tanh}) {
    for (bool with_bias : {false, true}) {
      INFO("epilogue " << cuda::name(e) << ", bias " << with_bias);
      // the GPU
      cuda::lt_matmul on_gpu = cuda::make_linear(m, n, k, e, with_bias);
      if (with_bias) on_gpu.set_bias_pointer(db);
      cuda::matmul_args a = cuda::row_major_operands(dx, dw, dy);
      if (with_bias) a.bias = db;
      d->matmul(on_gpu, a, "contract");
      std::vector<float> got(std::size_t(m * n));
      d->copy_to_host(got.data(), dy, got.size() * sizeof(float));
      d->synchronize();
      // the model, on host copies, with descriptors built the same way
      std::vector<float> want(std::size_t(m * n));
      cuda::lt_matmul on_host = cuda::make_linear(m, n, k, e, with_bias);
      if (with_bias) on_host.set_bias_pointer(bias.data());
      cuda::matmul_args h = cuda::row_major_operands(x.data(), w.data(), want.data());
      if (with_bias) h.bias = bias.data();
      cuda::reference_matmul(on_host, h);
      double worst = 0, from_erf = 0;
      for (std::size_t i = 0; i < got.size(); ++i) {
        worst = std::max(worst, std::abs(double(got[i]) - double(want[i])));
        if (e == cuda::epilogue::gelu_tanh) {  // (the same pre-activation through erf GELU)
          const std::int64_t r = std::int64_t(i) / n, c = std::int64_t(i) % n;
          double acc = with_bias ? bias[std::size_t(c)] : 0.0;
          for (std::int64_t l = 0; l < k; ++l) acc += double(x[std::size_t(r * k + l)]) * double(w[std::size_t(c * k + l)]);
          from_erf = std::max(from_erf, std::abs(double(got[i]) - 0.5 * acc * (1 + std::erf(acc / std::sqrt(2.0)))));
        }
      }
      CHECK(worst <= 1e-4);
      if (e == cuda::epilogue::gelu_tanh) CHECK(from_erf > 1e-4);  // (cuBLASLt's GELU is not the erf form)
    }
  }
  for (void* p : {dx, dw, db, dy}) d->deallocate(p);
  d->synchronize();
}

TEST_CASE("cuda gpu: real cuBLASLt's BGRADB / BGRADA equal the emulated device's model (the product and the sums over k), and have an algorithm for typex's f32 weight gradients") {
  const auto d = cuda::make_native_device();
  const auto bytes = [](const std::vector<float>& v) { return v.size() * sizeof(float); };
  struct shape {
    std::int64_t m, n, k;
  };
  for (const shape s : {shape{13, 33, 21}, shape{64, 48, 96}, shape{256, 784, 32}, shape{1, 7, 5}}) {
    for (const bool left : {true, false}) {
      INFO("m " << s.m << " n " << s.n << " k " << s.k << ", " << (left ? "BGRADB (dW = gT x)" : "BGRADA (dW = xT g)"));
      cuda::matmul_geometry g{};
      g.m = s.m, g.n = s.n, g.k = s.k;
      g.transpose_a = left;
      std::vector<float> a(std::size_t(s.m * s.k)), b(std::size_t(s.k * s.n));
      for (std::size_t i = 0; i < a.size(); ++i) a[i] = std::sin(0.37f * float(i) + 0.1f);
      for (std::size_t i = 0; i < b.size(); ++i) b[i] = std::cos(0.11f * float(i)) * 0.5f;
      const std::int64_t count = left ? s.m : s.n;
      const cuda::epilogue e = left ? cuda::epilogue::bgrad_b : cuda::epilogue::bgrad_a;
      cuda::lt_matmul on_gpu = cuda::make_matmul(g, e);
      REQUIRE(d->can_matmul(on_gpu, std::size_t{32} << 20));  // (the lowering asks the same)
      void* da = d->allocate(bytes(a));
      void* dbm = d->allocate(bytes(b));
      void* dd = d->allocate(std::size_t(s.m * s.n) * sizeof(float));
      void* dg = d->allocate(std::size_t(count) * sizeof(float));
      void* ws = d->allocate(std::size_t{32} << 20);
      d->copy_to_device(da, a.data(), bytes(a));
      d->copy_to_device(dbm, b.data(), bytes(b));
      on_gpu.set_bias_pointer(dg);
      cuda::matmul_args args = cuda::row_major_operands(da, dbm, dd);
      args.bias = dg;
      args.workspace = ws;
      args.workspace_bytes = std::size_t{32} << 20;
      d->matmul(on_gpu, args, "contract");
      std::vector<float> got(static_cast<std::size_t>(s.m * s.n)), got_grad(static_cast<std::size_t>(count));
      d->copy_to_host(got.data(), dd, got.size() * sizeof(float));
      d->copy_to_host(got_grad.data(), dg, got_grad.size() * sizeof(float));
      d->synchronize();
      std::vector<float> want(got.size()), want_grad(got_grad.size());
      cuda::lt_matmul on_host = cuda::make_matmul(g, e);
      on_host.set_bias_pointer(want_grad.data());
      cuda::reference_matmul(on_host, cuda::row_major_operands(a.data(), b.data(), want.data()));
      double worst = 0, worst_grad = 0;
      for (std::size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::abs(double(got[i]) - double(want[i])));
      for (std::size_t i = 0; i < got_grad.size(); ++i)
        worst_grad = std::max(worst_grad, std::abs(double(got_grad[i]) - double(want_grad[i])) / (1.0 + std::abs(double(want_grad[i]))));
      CHECK(worst <= 1e-4);
      CHECK(worst_grad <= 1e-5);
      for (void* p : {da, dbm, dd, dg, ws}) d->deallocate(p);
      d->synchronize();
    }
  }
}

TEST_CASE("cuda gpu: real cuBLASLt's DGELU and GELU_AUX_BIAS equal the emulated device's model (the product times the tanh GELU's derivative at the aux matrix, and the GELU with its input)") {
  const auto d = cuda::make_native_device();
  const auto bytes = [](const std::vector<float>& v) { return v.size() * sizeof(float); };
  struct shape {
    std::int64_t m, n, k;
  };
  // (n: the aux matrix's row length, a multiple of 8; dh = g · W as a linear layer's input gradient)
  for (const shape s : {shape{13, 32, 21}, shape{64, 48, 96}, shape{256, 64, 10}, shape{1, 8, 5}}) {
    INFO("m " << s.m << " n " << s.n << " k " << s.k);
    cuda::matmul_geometry g{};
    g.m = s.m, g.n = s.n, g.k = s.k;
    std::vector<float> a(std::size_t(s.m * s.k)), b(std::size_t(s.k * s.n)), x(std::size_t(s.m * s.n));
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = std::sin(0.37f * float(i) + 0.1f);
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = std::cos(0.11f * float(i)) * 0.5f;
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = 3.0f * std::sin(0.73f * float(i));  // (the GELU's input, its tails too)
    cuda::lt_matmul on_gpu = cuda::make_matmul(g, cuda::epilogue::dgelu_tanh);
    on_gpu.set_aux_for_query(s.n);
    REQUIRE(d->can_matmul(on_gpu, std::size_t{32} << 20));  // (the lowering asks the same)
    void* da = d->allocate(bytes(a));
    void* dbm = d->allocate(bytes(b));
    void* dx = d->allocate(bytes(x));
    void* dd = d->allocate(std::size_t(s.m * s.n) * sizeof(float));
    void* ws = d->allocate(std::size_t{32} << 20);
    d->copy_to_device(da, a.data(), bytes(a));
    d->copy_to_device(dbm, b.data(), bytes(b));
    d->copy_to_device(dx, x.data(), bytes(x));
    on_gpu.set_aux(dx, s.n);
    cuda::matmul_args args = cuda::row_major_operands(da, dbm, dd);
    args.workspace = ws;
    args.workspace_bytes = std::size_t{32} << 20;
    d->matmul(on_gpu, args, "contract");
    std::vector<float> got(static_cast<std::size_t>(s.m * s.n));
    d->copy_to_host(got.data(), dd, got.size() * sizeof(float));
    d->synchronize();
    std::vector<float> want(got.size());
    cuda::lt_matmul on_host = cuda::make_matmul(g, cuda::epilogue::dgelu_tanh);
    on_host.set_aux(x.data(), s.n);
    cuda::reference_matmul(on_host, cuda::row_major_operands(a.data(), b.data(), want.data()));
    double worst = 0;
    for (std::size_t i = 0; i < got.size(); ++i)
      worst = std::max(worst, std::abs(double(got[i]) - double(want[i])) / (1.0 + std::abs(double(want[i]))));
    CHECK(worst <= 1e-4);
    // the forward's GELU_AUX_BIAS on the same operands as a linear layer (x [m, k], w [n, k]): D is
    // the GELU of the biased product, the aux matrix its input
    cuda::lt_matmul fwd = cuda::make_linear(s.m, s.n, s.k, cuda::epilogue::gelu_tanh_aux, true);
    fwd.set_aux_for_query(s.n);
    REQUIRE(d->can_matmul(fwd, std::size_t{32} << 20));
    std::vector<float> w(std::size_t(s.n * s.k)), bias(std::size_t(s.n));
    for (std::size_t i = 0; i < w.size(); ++i) w[i] = std::cos(0.29f * float(i)) * 0.4f;
    for (std::size_t i = 0; i < bias.size(); ++i) bias[i] = 0.1f * float(i % 7) - 0.3f;
    void* dw = d->allocate(bytes(w));
    void* dbias = d->allocate(bytes(bias));
    void* dpre = d->allocate(std::size_t(s.m * s.n) * sizeof(float));
    d->copy_to_device(dw, w.data(), bytes(w));
    d->copy_to_device(dbias, bias.data(), bytes(bias));
    fwd.set_bias_pointer(dbias);
    fwd.set_aux(dpre, s.n);
    cuda::matmul_args fargs = cuda::row_major_operands(da, dw, dd);
    fargs.bias = dbias;
    fargs.workspace = ws;
    fargs.workspace_bytes = std::size_t{32} << 20;
    d->matmul(fwd, fargs, "contract");
    std::vector<float> got_d(got.size()), got_pre(got.size());
    d->copy_to_host(got_d.data(), dd, got_d.size() * sizeof(float));
    d->copy_to_host(got_pre.data(), dpre, got_pre.size() * sizeof(float));
    d->synchronize();
    std::vector<float> want_d(got.size()), want_pre(got.size());
    cuda::lt_matmul fwd_host = cuda::make_linear(s.m, s.n, s.k, cuda::epilogue::gelu_tanh_aux, true);
    fwd_host.set_bias_pointer(bias.data());
    fwd_host.set_aux(want_pre.data(), s.n);
    cuda::matmul_args hargs = cuda::row_major_operands(a.data(), w.data(), want_d.data());
    hargs.bias = bias.data();
    cuda::reference_matmul(fwd_host, hargs);
    double worst_d = 0, worst_pre = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      worst_d = std::max(worst_d, std::abs(double(got_d[i]) - double(want_d[i])) / (1.0 + std::abs(double(want_d[i]))));
      worst_pre = std::max(worst_pre, std::abs(double(got_pre[i]) - double(want_pre[i])) / (1.0 + std::abs(double(want_pre[i]))));
    }
    CHECK(worst_d <= 1e-4);
    CHECK(worst_pre <= 1e-4);
    for (void* p : {da, dbm, dx, dd, ws, dw, dbias, dpre}) d->deallocate(p);
    d->synchronize();
  }
}

TEST_CASE("cuda gpu: fused attention (partial tiles, broadcast batch dims, causal, boolean and additive masks, head dim 128) equals the math path on the GPU, graphs on and off") {
  cuda_attention_tests::check_attention_cases(cuda::make_native_device(), true);
}

TEST_CASE("cuda gpu: attention's fused backward (statistics, query, key and value gradients) equals the Eigen backend on the GPU") {
  cuda_attention_tests::check_attention_backward_cases(cuda::make_native_device());
}

TEST_CASE("cuda gpu: matmul_precision tf32, bf16 and f16 on cuBLASLt within their bounds of f32") {
  cuda_precision_tests::check_precisions(cuda::make_native_device(), false);
}

#if defined(TYPEX_CUDNN)
TEST_CASE("cuda gpu: real cuDNN equals the emulated device's model for typex's descriptors (exact f32 and TF32), and programs through cuDNN equal the Eigen backend, graphs on and off") {
  const auto d = cuda::make_native_device();
  struct geo { std::int64_t n, c, h, w, oc, k, stride, pad, dil, groups; };
  const geo shapes[] = {{2, 4, 9, 7, 6, 3, 2, 1, 2, 2}, {3, 16, 32, 32, 32, 3, 1, 1, 1, 1}, {1, 8, 17, 13, 8, 5, 1, 2, 1, 8}, {4, 3, 12, 12, 4, 1, 1, 0, 1, 1}};
  for (const geo& s : shapes) {
    cuda::conv_geometry g;
    g.n = s.n, g.c = s.c, g.h = s.h, g.w = s.w, g.oc = s.oc, g.kh = g.kw = s.k, g.groups = s.groups;
    g.stride[0] = g.stride[1] = s.stride, g.pad[0] = g.pad[1] = s.pad, g.dil[0] = g.dil[1] = s.dil;
    g.oh = (s.h + 2 * s.pad - s.dil * (s.k - 1) - 1) / s.stride + 1;
    g.ow = (s.w + 2 * s.pad - s.dil * (s.k - 1) - 1) / s.stride + 1;
    const any_tensor x = filled({s.n, s.c, s.h, s.w}, 1.5f), w = filled({s.oc, s.c / s.groups, s.k, s.k}, 0.5f);
    const std::size_t y_elems = std::size_t(s.n * s.oc * g.oh * g.ow);
    // the model, exact, and the bound on what TF32 may change: 2 · 2^-10 · sum |x w| per element
    cuda::dnn_convolution exact = cuda::dnn_convolution::build(g, dtype::f32, false, "");
    exact.choose(cuda::reference_choice(exact));
    std::vector<float> want(y_elems), ws_host(exact.choice->workspace_bytes / 4 + 1);
    cuda::reference_convolution(exact, {x.raw_data(), w.raw_data(), want.data(), ws_host.data(), exact.choice->workspace_bytes});
    const double terms = double(s.c / s.groups * s.k * s.k) * 1.5 * 0.5;
    for (const bool tf32 : {false, true}) {
      INFO("shape n=" << s.n << " c=" << s.c << " k=" << s.k << " groups=" << s.groups << ", tf32 " << tf32);
      cuda::dnn_convolution c = cuda::dnn_convolution::build(g, dtype::f32, tf32, "");
      const std::size_t ws = d->choose_convolution(c, "contract");
      void* dx = d->allocate(x.nbytes());
      void* dw = d->allocate(w.nbytes());
      void* dy = d->allocate(y_elems * sizeof(float));
      void* dws = d->allocate(ws);
      d->copy_to_device(dx, x.raw_data(), x.nbytes());
      d->copy_to_device(dw, w.raw_data(), w.nbytes());
      d->convolution(c, {dx, dw, dy, dws, ws}, "contract");
      std::vector<float> got(y_elems);
      d->copy_to_host(got.data(), dy, y_elems * sizeof(float));
      d->synchronize();
      double worst = 0;
      for (std::size_t i = 0; i < y_elems; ++i) worst = std::max(worst, std::abs(double(got[i]) - double(want[i])));
      CHECK(worst <= (tf32 ? 2 * std::ldexp(1.0, -10) * terms + 1e-5 : 1e-4));
      for (void* p : {dx, dw, dy, dws}) d->deallocate(p);
      d->synchronize();
    }
  }
  cuda_cudnn_tests::check_cudnn_programs(cuda::make_native_device());
}
#endif

}  // TEST_SUITE("gpu")
