// One training step — forward, backward and an SGD update — of the three workloads
// (benchmarks/models/workloads.hpp: the MLP 784-512-512-10, the CNN, the transformer encoder block)
// with typex: a joint forward/backward program (make_joint) run by the Eigen backend, its
// gradients stepped by typex::optim::sgd. training_libtorch.cpp runs the same steps in LibTorch
// eager (same weights by parameter name, same inputs and labels); the `loss` counter is the first
// step's loss, equal in both to ~1e-5 relative. benchmarks/training/run_training.sh runs them in
// turns and prints the table of benchmarks/README.md.
#include "../models/fma_peak.hpp"
#include "../models/workloads.hpp"

#include <typex/backend/eigen.hpp>
#include <typex/export/joint.hpp>
#include <typex/typex.hpp>

#include <benchmark/benchmark.h>

#include <string>
#include <vector>

namespace bench {
using batch = typex::sym<"batch", 1, 1024>;
using mlp_net = typex::nn::Sequential<typex::nn::Linear<784, 512>, typex::nn::ReLU, typex::nn::Linear<512, 512>, typex::nn::ReLU,
                                      typex::nn::Linear<512, 10>>;
using cnn_net = typex::nn::Sequential<typex::nn::Conv2d<1, 32, 3>, typex::nn::ReLU, typex::nn::Conv2d<32, 64, 3>, typex::nn::ReLU,
                                      typex::nn::MaxPool2d<typex::pool2d_options{.kernel = {2, 2}}>, typex::nn::Flatten<>,
                                      typex::nn::Linear<64 * 12 * 12, 128>, typex::nn::ReLU, typex::nn::Linear<128, 10>>;
using block_net = typex::nn::TransformerEncoderLayer<256, 4, 1024, typex::nn::activation::gelu, false, true>;

// classification: cross-entropy against labels
template <class Net>
struct classify {
  BOOST_HANA_DEFINE_STRUCT(classify, (Net, net));
  template <class X, class Y>
  auto operator()(const X& x, const Y& y) const {
    return typex::cross_entropy(net(x), y);
  }
};
// the block: mean squared error against a target
template <class Net>
struct regress {
  BOOST_HANA_DEFINE_STRUCT(regress, (Net, net));
  template <class X, class T>
  auto operator()(const X& x, const T& t) const {
    return typex::mse_loss(net(x), t);
  }
};

// weights by the parameter's name without the wrapper's "net." (LibTorch's names)
template <class M>
void fill(M& m) {
  for (auto& [name, t] : typex::named_parameters(m)) {
    const auto n = static_cast<std::size_t>(t.numel());
    fill_weights(std::string_view(name).substr(4), t.template data<float>(), n, t.rank() >= 2 ? n / static_cast<std::size_t>(t.extents()[0]) : n);
  }
}

typex::any_tensor input(std::vector<typex::index_t> extents) {
  typex::any_tensor t(typex::dtype::f32, extents);
  fill_input(t.data<float>(), static_cast<std::size_t>(t.numel()));
  return t;
}
typex::any_tensor labels(typex::index_t n) {
  typex::any_tensor t(typex::dtype::i64, {n});
  for (typex::index_t i = 0; i < n; ++i) t.data<std::int64_t>()[i] = (7 * i + 3) % 10;
  return t;
}

template <class Model, class XShape, class YSpec>
void train_step(benchmark::State& state, std::vector<typex::index_t> x_extents, typex::any_tensor target, YSpec y_spec, double flops) {
  using namespace typex;
  const int threads = static_cast<int>(state.range(1));
  eigen::set_num_threads(threads);
  Model model;
  fill(model);
  const auto ep = export_program(model, input<"x">(tensor_spec<f32, XShape>()), input<"y">(y_spec));
  const exported_program joint = make_joint(ep);
  program_module<eigen_backend> step(joint, eigen::compile_options{threads, true});
  optim::sgd opt(step.parameters(), {.lr = 0.01});
  const std::vector<any_tensor> in = {bench::input(x_extents), target};
  std::vector<any_tensor> out;
  step.run(in, out);
  state.counters["loss"] = read_joint_outputs(joint, out).loss.data<float>()[0];
  for (auto _ : state) {
    step.run(in, out);
    opt.step(read_joint_outputs(joint, out).gradients);
  }
  // (a training step is ~3x the forward's FLOPs: the forward, and two products per layer back)
  state.counters["GFLOP/s"] = benchmark::Counter(3.0 * flops, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}
}  // namespace bench

static void BM_train_mlp_typex(benchmark::State& s) {
  const long b = s.range(0);
  bench::train_step<bench::classify<bench::mlp_net>, typex::shape<bench::batch, typex::fix<784>>>(
      s, {b, 784}, bench::labels(b), typex::tensor_spec<typex::i64, typex::shape<bench::batch>>(), bench::mlp_flops(b));
}
static void BM_train_cnn_typex(benchmark::State& s) {
  const long b = s.range(0);
  bench::train_step<bench::classify<bench::cnn_net>, typex::shape<bench::batch, typex::fix<1>, typex::fix<28>, typex::fix<28>>>(
      s, {b, 1, 28, 28}, bench::labels(b), typex::tensor_spec<typex::i64, typex::shape<bench::batch>>(), bench::cnn_flops(b));
}
static void BM_train_transformer_typex(benchmark::State& s) {
  const long b = s.range(0);
  using x_shape = typex::shape<bench::batch, typex::fix<128>, typex::fix<256>>;
  typex::any_tensor t = bench::input({b, 128, 256});
  for (typex::index_t i = 0; i < t.numel(); ++i) t.data<float>()[i] *= 0.5f;  // (a target other than the input)
  bench::train_step<bench::regress<bench::block_net>, x_shape>(s, {b, 128, 256}, t, typex::tensor_spec<typex::f32, x_shape>(),
                                                               bench::transformer_flops(b));
}

#define TYPEX_TRAIN_ARGS(...) ArgNames({"batch", "threads"})->ArgsProduct({__VA_ARGS__, {1, 2}})->UseRealTime()->Unit(benchmark::kMillisecond)
BENCHMARK(BM_train_mlp_typex)->TYPEX_TRAIN_ARGS({32, 256});
BENCHMARK(BM_train_cnn_typex)->TYPEX_TRAIN_ARGS({32});
BENCHMARK(BM_train_transformer_typex)->TYPEX_TRAIN_ARGS({8});

// (the FMA peak measured in every run: rounds.py reports each row's GFLOP/s against the median of
// its rounds' peaks)
int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  bench::add_fma_peak_context();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
