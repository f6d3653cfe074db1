// Export time of the three reference models (Google Benchmark): tracing the functor into a graph,
// lifting parameters, dead-code elimination, the signature and the verifier — everything
// export_program does. torch.export takes on the order of a second for a small MLP.
//
//   ./build/<preset>/benchmarks/typex_export_time
#include <typex/typex.hpp>

#include <benchmark/benchmark.h>

namespace bench {
using batch = typex::sym<"batch", 1, 1024>;
using seq = typex::sym<"seq", 1, 512>;

using mlp = typex::nn::Sequential<typex::nn::Linear<784, 512>, typex::nn::ReLU, typex::nn::Linear<512, 512>, typex::nn::ReLU,
                                  typex::nn::Linear<512, 10>>;
using cnn = typex::nn::Sequential<typex::nn::Conv2d<1, 32, 3>, typex::nn::ReLU, typex::nn::Conv2d<32, 64, 3>, typex::nn::ReLU,
                                  typex::nn::MaxPool2d<typex::pool2d_options{.kernel = {2, 2}}>, typex::nn::Flatten<>,
                                  typex::nn::Linear<64 * 12 * 12, 128>, typex::nn::ReLU, typex::nn::Linear<128, 10>>;
using encoder = typex::nn::TransformerEncoderLayer<256, 4, 1024, typex::nn::activation::gelu, false, true>;

template <class M, class Spec>
void export_model(benchmark::State& state, const Spec& spec) {
  const M model;  // (parameters are zeros: export time does not depend on their values)
  std::size_t nodes = 0;
  for (auto _ : state) {
    const auto ep = typex::export_program(model, typex::input<"x">(spec));
    nodes = ep.graph().size();
    benchmark::DoNotOptimize(nodes);
  }
  state.counters["nodes"] = static_cast<double>(nodes);
}
}  // namespace bench

static void BM_export_mlp(benchmark::State& state) {
  using s = typex::shape<bench::batch, typex::fix<784>>;
  bench::export_model<bench::mlp>(state, typex::tensor_spec<typex::f32, s>(s(bench::batch(32), {})));
}
static void BM_export_cnn(benchmark::State& state) {
  using s = typex::shape<bench::batch, typex::fix<1>, typex::fix<28>, typex::fix<28>>;
  bench::export_model<bench::cnn>(state, typex::tensor_spec<typex::f32, s>(s(bench::batch(32), {}, {}, {})));
}
static void BM_export_transformer(benchmark::State& state) {
  using s = typex::shape<bench::batch, bench::seq, typex::fix<256>>;
  bench::export_model<bench::encoder>(state, typex::tensor_spec<typex::f32, s>(s(bench::batch(8), bench::seq(128), {})));
}
BENCHMARK(BM_export_mlp)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_export_cnn)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_export_transformer)->Unit(benchmark::kMicrosecond);
BENCHMARK_MAIN();
