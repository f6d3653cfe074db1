// One training step — forward, backward and an SGD update (zero_grad, loss.backward(),
// optimizer.step()) — of the three workloads in LibTorch eager, with training_typex.cpp's weights
// (workloads.hpp, by parameter name), inputs and labels: the `loss` counter is the first step's
// loss, equal in both. Built with -DTYPEX_BENCHMARK_LIBTORCH=ON (run_training.sh installs Debian's
// libtorch-dev, LibTorch 1.13); the same file builds against LibTorch 2.x.
#include "../models/libtorch_encoder.hpp"
#include "../models/workloads.hpp"

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

torch::Tensor input(std::vector<int64_t> shape) {
  auto t = torch::empty(shape);
  bench::fill_input(t.data_ptr<float>(), static_cast<std::size_t>(t.numel()));
  return t;
}
torch::Tensor labels(int64_t n) {
  auto t = torch::empty({n}, torch::kLong);
  for (int64_t i = 0; i < n; ++i) t.data_ptr<int64_t>()[i] = (7 * i + 3) % 10;
  return t;
}

// The post-norm encoder block (batch first) with typex's parameter names, written with ATen ops.
struct Block : torch::nn::Module {
  std::map<std::string, torch::Tensor> p;
  Block() {
    for (const auto& [name, t] : bench::encoder_parameters()) p[name] = register_parameter(name_of(name), t);
  }
  static std::string name_of(std::string s) {  // (register_parameter refuses dots)
    for (auto& c : s) c = c == '.' ? '_' : c;
    return s;
  }
  torch::Tensor forward(const torch::Tensor& x) { return bench::encoder_forward(p, x); }
};

template <class Model, class Loss>
void train_step(benchmark::State& state, Model& model, torch::Tensor x, torch::Tensor target, Loss loss_of, double flops) {
  torch::set_num_threads(static_cast<int>(state.range(1)));
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.01));
  auto step = [&] {
    opt.zero_grad();
    auto loss = loss_of(model->forward(x), target);
    loss.backward();
    opt.step();
    return loss;
  };
  state.counters["loss"] = step().template item<float>();
  for (auto _ : state) step();
  state.counters["GFLOP/s"] = benchmark::Counter(3.0 * flops, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}

}  // namespace

static void BM_train_mlp_libtorch(benchmark::State& s) {
  torch::nn::Sequential m(torch::nn::Linear(784, 512), torch::nn::ReLU(), torch::nn::Linear(512, 512), torch::nn::ReLU(),
                          torch::nn::Linear(512, 10));
  fill(*m);
  const long b = s.range(0);
  train_step(s, m, input({b, 784}), labels(b), [](const torch::Tensor& y, const torch::Tensor& t) { return torch::nn::functional::cross_entropy(y, t); },
             bench::mlp_flops(b));
}
static void BM_train_cnn_libtorch(benchmark::State& s) {
  torch::nn::Sequential m(torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 32, 3)), torch::nn::ReLU(),
                          torch::nn::Conv2d(torch::nn::Conv2dOptions(32, 64, 3)), torch::nn::ReLU(),
                          torch::nn::MaxPool2d(torch::nn::MaxPool2dOptions(2)), torch::nn::Flatten(), torch::nn::Linear(9216, 128),
                          torch::nn::ReLU(), torch::nn::Linear(128, 10));
  fill(*m);
  const long b = s.range(0);
  train_step(s, m, input({b, 1, 28, 28}), labels(b),
             [](const torch::Tensor& y, const torch::Tensor& t) { return torch::nn::functional::cross_entropy(y, t); }, bench::cnn_flops(b));
}
static void BM_train_transformer_libtorch(benchmark::State& s) {
  auto m = std::make_shared<Block>();
  const long b = s.range(0);
  auto t = input({b, 128, 256}) * 0.5;
  train_step(s, m, input({b, 128, 256}), t, [](const torch::Tensor& y, const torch::Tensor& tt) { return torch::nn::functional::mse_loss(y, tt); },
             bench::transformer_flops(b));
}

#define TYPEX_TRAIN_ARGS(...) ArgNames({"batch", "threads"})->ArgsProduct({__VA_ARGS__, {1, 2}})->UseRealTime()->Unit(benchmark::kMillisecond)
BENCHMARK(BM_train_mlp_libtorch)->TYPEX_TRAIN_ARGS({32, 256});
BENCHMARK(BM_train_cnn_libtorch)->TYPEX_TRAIN_ARGS({32});
BENCHMARK(BM_train_transformer_libtorch)->TYPEX_TRAIN_ARGS({8});

BENCHMARK_MAIN();
