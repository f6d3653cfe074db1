// typex's CUDA backend on a GPU: the reference models of benchmarks/models (the same weights,
// workloads.hpp's fill) forward through program_module<cuda_backend>, with CUDA graphs on and off, at
// batch 1 / 32 / 256 (transformer 1 / 8). A plain executable printing one table (benchmarks/README.md,
// "CUDA"); peers_cuda.py measures PyTorch eager, torch.compile and AOTInductor on the same GPU, and
// run_cuda.sh runs both (scripts/gpu-check.sh on a lent GPU). Built where typex::cuda is; without a
// GPU it prints the device_error and exits 77.
//
// A row's time is the median over 7 rounds of the mean time per call (each round at least 0.2 s of
// calls after a warm-up): one call is what a user's call costs (the input staged into its slot, the
// plan's graph replayed or its launches run, the output copied into a device tensor, the stream
// synchronized). The floor row is a one-node program of one element: the call path's fixed cost.
#include "../models/typex_models.hpp"
#include "../models/workloads.hpp"

#include <typex/backend/cuda.hpp>
#include <typex/backend/eigen.hpp>
#include <typex/typex.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace bench {
// relu of one element: the call path's fixed cost
struct one_relu {
  template <class X>
  auto operator()(const X& x) const {
    return typex::relu(x);
  }
};

struct row {
  std::string model;
  long batch;
  double flops;
  double us_graphs, us_plain;
};

// Mean seconds per call of f over rounds of at least 0.2 s; the median round.
double time_calls(const std::function<void()>& f) {
  for (int i = 0; i < 20; ++i) f();
  std::vector<double> rounds;
  for (int r = 0; r < 7; ++r) {
    long calls = 0;
    const auto t0 = std::chrono::steady_clock::now();
    double s = 0;
    do {
      for (int i = 0; i < 10; ++i) f();
      calls += 10;
      s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    } while (s < 0.2);
    rounds.push_back(s / static_cast<double>(calls));
  }
  std::sort(rounds.begin(), rounds.end());
  return rounds[rounds.size() / 2];
}

template <class M, class Spec>
row measure(const char* name, M& model, const Spec& spec, std::vector<typex::index_t> in_extents, double flops,
            const std::shared_ptr<typex::cuda::device_runtime>& gpu) {
  const typex::exported_program ep = typex::export_program(model, typex::input<"x">(spec));
  typex::any_tensor x(typex::dtype::f32, in_extents);
  fill_input(x.data<float>(), static_cast<std::size_t>(x.numel()));
  // (checked against the Eigen backend before timing: a wrong program is not measured)
  const auto want = typex::program_module<typex::eigen_backend>(ep)({x});
  const typex::any_tensor dx = typex::cuda::to_device(x, gpu);
  row r{name, in_extents[0], flops, 0, 0};
  for (const bool graphs : {true, false}) {
    const typex::program_module<typex::cuda_backend> run(ep, {.device = gpu, .graphs = graphs});
    const typex::any_tensor got = typex::cuda::to_host(run({dx})[0]);
    double worst = 0;
    for (typex::index_t i = 0; i < got.numel(); ++i)
      worst = std::max(worst, std::abs(double(got.data<float>()[i]) - double(want[0].data<float>()[i])));
    if (!(worst <= 1e-3)) {
      std::fprintf(stderr, "%s batch %ld: the GPU's output differs from the Eigen backend's by %g\n", name, r.batch, worst);
      std::exit(1);
    }
    const double s = time_calls([&] { (void)run({dx}); });
    (graphs ? r.us_graphs : r.us_plain) = s * 1e6;
  }
  return r;
}

}  // namespace bench
BOOST_HANA_ADAPT_STRUCT(bench::one_relu);

int main() {
  using namespace bench;
  using namespace typex;
  std::shared_ptr<cuda::device_runtime> gpu;
  try {
    gpu = cuda::make_native_device(0);
  } catch (const device_error& e) {
    std::printf("typex_models_cuda: %s\n", e.what());
    return 77;
  }
  std::printf("device: %s\n", gpu->info().name.c_str());
  std::vector<row> rows;
  {
    one_relu m;  // (the call path's floor)
    rows.push_back(measure("floor (relu of 1)", m, tensor_spec<f32, shape<fix<1>>>(), {1}, 0, gpu));
  }
  mlp_model mlp;
  fill(mlp);
  for (long b : {1L, 32L, 256L}) {
    using xs = shape<batch, fix<784>>;
    rows.push_back(measure("mlp", mlp, tensor_spec<f32, xs>(xs(batch(b), {})), {b, 784}, mlp_flops(b), gpu));
  }
  cnn_model cnn;
  fill(cnn);
  for (long b : {1L, 32L, 256L}) {
    using xs = shape<batch, fix<1>, fix<28>, fix<28>>;
    rows.push_back(measure("cnn", cnn, tensor_spec<f32, xs>(xs(batch(b), {}, {}, {})), {b, 1, 28, 28}, cnn_flops(b), gpu));
  }
  transformer_model tf;
  fill(tf);
  for (long b : {1L, 8L}) {
    using xs = shape<batch, fix<tf_seq>, fix<tf_d>>;
    rows.push_back(measure("transformer", tf, tensor_spec<f32, xs>(xs(batch(b), {}, {})), {b, tf_seq, tf_d}, transformer_flops(b), gpu));
  }
  std::printf("%-20s %6s %14s %14s %12s\n", "model", "batch", "graphs (us)", "no graphs (us)", "GFLOP/s");
  for (const row& r : rows)
    std::printf("%-20s %6ld %14.1f %14.1f %12.1f\n", r.model.c_str(), r.batch, r.us_graphs, r.us_plain,
                r.flops > 0 ? r.flops / (std::min(r.us_graphs, r.us_plain) * 1e-6) / 1e9 : 0.0);
  return 0;
}
