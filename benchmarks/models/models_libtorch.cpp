// LibTorch eager (torch::nn modules and ATen ops, InferenceMode) on the three workloads with the
// weights of models_eigen.cpp (workloads.hpp: filled by parameter name). Built only with
// -DTYPEX_BENCHMARK_LIBTORCH=ON where LibTorch is installed (benchmarks/models/run_models.sh
// installs Debian's libtorch-dev and runs both binaries). The out_sum counter is the sum of the
// outputs: it equals models_eigen's to ~1e-4 relative (same weights and inputs).
#include "libtorch_encoder.hpp"
#include "workloads.hpp"

#include <torch/torch.h>

#include <benchmark/benchmark.h>

#include <map>
#include <string>

namespace {

void fill(torch::nn::Module& m) {
  torch::NoGradGuard guard;
  for (auto& p : m.named_parameters()) {
    auto t = p.value();
    const auto n = static_cast<std::size_t>(t.numel());
    bench::fill_weights(p.key(), t.data_ptr<float>(), n, t.dim() >= 2 ? n / static_cast<std::size_t>(t.size(0)) : n);
  }
}

torch::nn::Sequential mlp() {
  torch::nn::Sequential s(torch::nn::Linear(784, 512), torch::nn::ReLU(), torch::nn::Linear(512, 512), torch::nn::ReLU(),
                          torch::nn::Linear(512, 10));
  fill(*s);
  return s;
}

torch::nn::Sequential cnn() {
  torch::nn::Sequential s(torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 32, 3)), torch::nn::ReLU(),
                          torch::nn::Conv2d(torch::nn::Conv2dOptions(32, 64, 3)), torch::nn::ReLU(),
                          torch::nn::MaxPool2d(torch::nn::MaxPool2dOptions(2)), torch::nn::Flatten(),
                          torch::nn::Linear(9216, 128), torch::nn::ReLU(), torch::nn::Linear(128, 10));
  fill(*s);
  return s;
}

// The post-norm encoder block with typex's parameter names, written with ATen ops.
struct encoder {
  std::map<std::string, torch::Tensor> p;
  encoder() : p(bench::encoder_parameters()) {}
  torch::Tensor forward(const torch::Tensor& x) { return bench::encoder_forward(p, x); }
};

template <class F>
void run(benchmark::State& state, std::vector<int64_t> in_shape, double flops, F&& forward) {
  const int threads = static_cast<int>(state.range(1));
  torch::set_num_threads(threads);
  in_shape[0] = state.range(0);
  torch::InferenceMode guard;
  auto x = torch::empty(in_shape);
  bench::fill_input(x.data_ptr<float>(), static_cast<std::size_t>(x.numel()));
  state.counters["out_sum"] = forward(x).sum().template item<double>();
  for (auto _ : state) benchmark::DoNotOptimize(forward(x).data_ptr());
  state.counters["GFLOP/s"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}
}  // namespace

static void BM_mlp_libtorch(benchmark::State& s) {
  static auto m = mlp();
  run(s, {1, 784}, bench::mlp_flops(s.range(0)), [&](const torch::Tensor& x) { return m->forward(x); });
}
static void BM_cnn_libtorch(benchmark::State& s) {
  static auto m = cnn();
  run(s, {1, 1, 28, 28}, bench::cnn_flops(s.range(0)), [&](const torch::Tensor& x) { return m->forward(x); });
}
static void BM_transformer_libtorch(benchmark::State& s) {
  static encoder m;
  run(s, {1, 128, 256}, bench::transformer_flops(s.range(0)), [&](const torch::Tensor& x) { return m.forward(x); });
}

#define TYPEX_MODEL_ARGS(...) ArgNames({"batch", "threads"})->ArgsProduct({__VA_ARGS__, {1, 2}})->UseRealTime()->Unit(benchmark::kMicrosecond)
BENCHMARK(BM_mlp_libtorch)->TYPEX_MODEL_ARGS({1, 32, 256});
BENCHMARK(BM_cnn_libtorch)->TYPEX_MODEL_ARGS({1, 32, 256});
BENCHMARK(BM_transformer_libtorch)->TYPEX_MODEL_ARGS({1, 8});

BENCHMARK_MAIN();
