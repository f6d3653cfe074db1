// typex's compiled programs against hand-written Eigen (hand_eigen.hpp), same weights, one run:
// the MLP, the CNN and the transformer block at the batch sizes with 1 and 2 threads.
// LibTorch is measured by models_libtorch.cpp (built where LibTorch is installed); run_models.sh
// runs both and writes the table of benchmarks/README.md.
//
//   ./build/gcc/benchmarks/typex_models_eigen --benchmark_filter=mlp
//
// Counters: GFLOP/s per row, and the parameters' bytes read per call (weight_GB/s: as a rate); the
// context has the FMA peak measured at start-up (Eigen packets, 12 independent multiply-add chains
// per thread), the read bandwidth of L3 (8 MiB) and of memory (512 MiB) on 1 thread, and the
// largest difference between typex's and the hand-written outputs (checked before timing: > 1e-3
// aborts).
#include "fma_peak.hpp"
#include "hand_eigen.hpp"
#include "typex_models.hpp"
#include "workloads.hpp"

#include <typex/backend/eigen.hpp>
#include <typex/typex.hpp>

#include <benchmark/benchmark.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <thread>

namespace bench {
template <class M>
hand::weights_fn lookup(const M& m) {
  auto params = std::make_shared<std::map<std::string, typex::any_tensor>>();
  for (auto& [name, t] : typex::named_parameters(m)) params->emplace(name, t);
  return [params](const std::string& name) -> const float* {
    const auto it = params->find(name);
    if (it == params->end()) throw std::runtime_error("no parameter " + name);
    return it->second.data<float>();
  };
}

void set_threads(int t) {
  typex::eigen::set_num_threads(t);
  Eigen::setNbThreads(t);
#ifdef _OPENMP
  omp_set_num_threads(t);
#endif
}

// Measured read bandwidth (GB/s, 1 thread): summing a buffer of `bytes` over and over (8 MiB: in
// L3, where a batch-1 model's weights live between calls; 512 MiB: memory).
double read_bandwidth(std::size_t bytes) {
  const std::size_t n = bytes / sizeof(float);
  std::vector<float> buf(n, 1.0f);
  using P = Eigen::internal::packet_traits<float>::type;
  constexpr std::size_t L = Eigen::internal::packet_traits<float>::size;
  auto pass = [&] {
    using namespace Eigen::internal;
    P a0 = pset1<P>(0.f), a1 = a0, a2 = a0, a3 = a0;
    for (std::size_t i = 0; i + 4 * L <= n; i += 4 * L) {
      a0 = padd(a0, ploadu<P>(buf.data() + i)), a1 = padd(a1, ploadu<P>(buf.data() + i + L));
      a2 = padd(a2, ploadu<P>(buf.data() + i + 2 * L)), a3 = padd(a3, ploadu<P>(buf.data() + i + 3 * L));
    }
    benchmark::DoNotOptimize(predux(padd(padd(a0, a1), padd(a2, a3))));
  };
  pass();  // (warm: pages touched, the L3 case in cache)
  double best = 0;
  for (int r = 0; r < 5; ++r) {
    const int reps = static_cast<int>(std::max<std::size_t>(1, (std::size_t{1} << 30) / bytes));
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; ++i) pass();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, double(bytes) * reps / s * 1e-9);
  }
  return best;
}

// The bytes a call must read at least: the parameters (float32).
template <class M>
double parameter_bytes(const M& m) {
  double n = 0;
  for (auto& [name, t] : typex::named_parameters(m)) n += double(t.numel()) * sizeof(float);
  return n;
}

float max_diff(const float* a, const float* b, long n) {
  float w = 0;
  for (long i = 0; i < n; ++i) w = std::max(w, std::abs(a[i] - b[i]));
  return w;
}

// One model per type, its weights filled once; one program per model and input shape type.
template <class Model>
const Model& filled() {
  static const Model model = [] {
    Model m;
    fill(m);
    return m;
  }();
  return model;
}
template <class Model, class Shape>
const typex::exported_program& exported(const Shape& example) {
  static const typex::exported_program ep =
      typex::export_program(filled<Model>(), typex::input<"x">(typex::tensor_spec<typex::f32, Shape>(example)));
  return ep;
}

template <class Model, class Shape, class Hand, class HandCall>
void run_pair(benchmark::State& state, bool use_typex, std::vector<long> in_extents, double flops, HandCall&& hand_call,
              Shape example_shape) {
  const long b = state.range(0);
  const int threads = static_cast<int>(state.range(1));
  set_threads(threads);
  const Model& model = filled<Model>();
  const typex::exported_program& ep = exported<Model>(example_shape);
  typex::program_module<typex::eigen_backend> program(ep, typex::eigen::compile_options{threads, true});
  Hand hand(lookup(model));
  in_extents[0] = b;
  typex::any_tensor x(typex::dtype::f32, in_extents);
  fill_input(x.data<float>(), static_cast<std::size_t>(x.numel()));
  std::vector<typex::any_tensor> inputs{x}, outputs;
  program.run(inputs, outputs);
  const auto& ref = hand_call(hand, x.data<float>(), b, threads);
  const float diff = max_diff(outputs[0].data<float>(), ref.data(), outputs[0].numel());
  if (!(diff <= 1e-3f)) {
    state.SkipWithError("typex and the hand-written Eigen code disagree");
    return;
  }
  state.counters["max_abs_diff"] = diff;
  double sum = 0;  // (compared with models_libtorch's out_sum: same weights, same inputs)
  for (typex::index_t i = 0; i < outputs[0].numel(); ++i) sum += outputs[0].data<float>()[i];
  state.counters["out_sum"] = sum;
  if (use_typex) {
    for (auto _ : state) program.run(inputs, outputs);
  } else {
    for (auto _ : state) benchmark::DoNotOptimize(hand_call(hand, x.data<float>(), b, threads).data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
  state.counters["weight_GB/s"] = benchmark::Counter(parameter_bytes(model) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["weight_bytes"] = parameter_bytes(model);
}

void mlp(benchmark::State& s, bool t) {
  using S = typex::shape<batch, typex::fix<784>>;
  run_pair<mlp_model, S, hand::mlp>(s, t, {1, 784}, mlp_flops(s.range(0)),
                                    [](hand::mlp& h, const float* x, long b, int) -> const hand::mat& { return h(x, b); },
                                    S(batch(2), {}));
}
void cnn(benchmark::State& s, bool t) {
  using S = typex::shape<batch, typex::fix<1>, typex::fix<28>, typex::fix<28>>;
  run_pair<cnn_model, S, hand::cnn>(s, t, {1, 1, 28, 28}, cnn_flops(s.range(0)),
                                    [](hand::cnn& h, const float* x, long b, int th) -> const hand::mat& { return h(x, b, th); },
                                    S(batch(2), {}, {}, {}));
}
void transformer(benchmark::State& s, bool t) {
  using S = typex::shape<batch, typex::fix<128>, typex::fix<256>>;
  run_pair<transformer_model, S, hand::transformer>(
      s, t, {1, 128, 256}, transformer_flops(s.range(0)),
      [](hand::transformer& h, const float* x, long b, int th) -> const hand::mat& { return h(x, b, th); }, S(batch(2), {}, {}));
}

// The cost of a call whose input shape differs from the previous call's. A program runs every
// shape in range without re-export; the Eigen backend keeps one plan (steps, arena offsets, packed
// constant weights) for the last shapes and re-plans when they change. `alternate` flips between
// batch b and b + 1 on every call of one module (each call re-plans); otherwise the same calls go
// to two modules, one per shape (each keeps its plan): the difference is the cost of re-planning.
template <class Model, class Shape>
void shape_change(benchmark::State& state, std::vector<long> in_extents, Shape example, bool alternate) {
  const long b = state.range(0);
  set_threads(1);
  const typex::exported_program& ep = exported<Model>(example);
  typex::program_module<typex::eigen_backend> program(ep, typex::eigen::compile_options{1, true});
  typex::program_module<typex::eigen_backend> other(ep, typex::eigen::compile_options{1, true});
  auto make = [&](long n) {
    in_extents[0] = n;
    typex::any_tensor x(typex::dtype::f32, in_extents);
    fill_input(x.data<float>(), static_cast<std::size_t>(x.numel()));
    return std::vector<typex::any_tensor>{x};
  };
  const std::vector<typex::any_tensor> first = make(b), second = make(b + 1);
  std::vector<typex::any_tensor> outputs;
  program.run(first, outputs);
  program.run(second, outputs);
  other.run(second, outputs);
  bool flip = false;
  for (auto _ : state) {
    if (!flip) program.run(first, outputs);
    else (alternate ? program : other).run(second, outputs);
    flip = !flip;
  }
}
void mlp_shapes(benchmark::State& s, bool alternate) {
  using S = typex::shape<batch, typex::fix<784>>;
  shape_change<mlp_model>(s, {1, 784}, S(batch(2), {}), alternate);
}
void cnn_shapes(benchmark::State& s, bool alternate) {
  using S = typex::shape<batch, typex::fix<1>, typex::fix<28>, typex::fix<28>>;
  shape_change<cnn_model>(s, {1, 1, 28, 28}, S(batch(2), {}, {}, {}), alternate);
}
void transformer_shapes(benchmark::State& s, bool alternate) {
  using S = typex::shape<batch, typex::fix<128>, typex::fix<256>>;
  shape_change<transformer_model>(s, {1, 128, 256}, S(batch(2), {}, {}), alternate);
}
}  // namespace bench

static void BM_mlp_typex(benchmark::State& s) { bench::mlp(s, true); }
static void BM_mlp_hand_eigen(benchmark::State& s) { bench::mlp(s, false); }
static void BM_cnn_typex(benchmark::State& s) { bench::cnn(s, true); }
static void BM_cnn_hand_eigen(benchmark::State& s) { bench::cnn(s, false); }
static void BM_transformer_typex(benchmark::State& s) { bench::transformer(s, true); }
static void BM_transformer_hand_eigen(benchmark::State& s) { bench::transformer(s, false); }

#define TYPEX_MODEL_ARGS(...) ArgNames({"batch", "threads"})->ArgsProduct({__VA_ARGS__, {1, 2}})->UseRealTime()->Unit(benchmark::kMicrosecond)
BENCHMARK(BM_mlp_typex)->TYPEX_MODEL_ARGS({1, 32, 256});
BENCHMARK(BM_mlp_hand_eigen)->TYPEX_MODEL_ARGS({1, 32, 256});
BENCHMARK(BM_cnn_typex)->TYPEX_MODEL_ARGS({1, 32, 256});
BENCHMARK(BM_cnn_hand_eigen)->TYPEX_MODEL_ARGS({1, 32, 256});
BENCHMARK(BM_transformer_typex)->TYPEX_MODEL_ARGS({1, 8});
BENCHMARK(BM_transformer_hand_eigen)->TYPEX_MODEL_ARGS({1, 8});

static void BM_shape_same_mlp(benchmark::State& s) { bench::mlp_shapes(s, false); }
static void BM_shape_new_mlp(benchmark::State& s) { bench::mlp_shapes(s, true); }
static void BM_shape_same_cnn(benchmark::State& s) { bench::cnn_shapes(s, false); }
static void BM_shape_new_cnn(benchmark::State& s) { bench::cnn_shapes(s, true); }
static void BM_shape_same_transformer(benchmark::State& s) { bench::transformer_shapes(s, false); }
static void BM_shape_new_transformer(benchmark::State& s) { bench::transformer_shapes(s, true); }
#define TYPEX_SHAPE_ARGS(...) ArgNames({"batch"})->Args({__VA_ARGS__})->UseRealTime()->Unit(benchmark::kMicrosecond)
BENCHMARK(BM_shape_same_mlp)->TYPEX_SHAPE_ARGS(1)->TYPEX_SHAPE_ARGS(32);
BENCHMARK(BM_shape_new_mlp)->TYPEX_SHAPE_ARGS(1)->TYPEX_SHAPE_ARGS(32);
BENCHMARK(BM_shape_same_cnn)->TYPEX_SHAPE_ARGS(1)->TYPEX_SHAPE_ARGS(32);
BENCHMARK(BM_shape_new_cnn)->TYPEX_SHAPE_ARGS(1)->TYPEX_SHAPE_ARGS(32);
BENCHMARK(BM_shape_same_transformer)->TYPEX_SHAPE_ARGS(1);
BENCHMARK(BM_shape_new_transformer)->TYPEX_SHAPE_ARGS(1);

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  bench::add_fma_peak_context();
  benchmark::AddCustomContext("read_gbs_l3_8mib", std::to_string(bench::read_bandwidth(std::size_t{8} << 20)));
  benchmark::AddCustomContext("read_gbs_memory_512mib", std::to_string(bench::read_bandwidth(std::size_t{512} << 20)));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
