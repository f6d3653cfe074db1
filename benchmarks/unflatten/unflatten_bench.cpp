// Unflatten of a 32-layer transformer encoder program (issue 36): how long typex::unflatten takes,
// and the unflattened tree's forward against the flat program's.
//   - the model: 32 TransformerEncoderLayer<64, 4, 128> (GELU, post-norm, batch first) in a
//     std::array, exported with a symbolic batch and seq;
//   - unflatten: typex::unflatten(ep) (planning each call's segments, making their modules), the
//     median of 11 runs; then the first call of the tree (its segments planned for the shapes) and
//     of the flat module;
//   - forward: the tree vs ep.module() on one input (batch 2, seq 16), in paired rounds: flat, tree,
//     flat, tree, ..., each side of a pair repeated until it takes >= 0.2 s, so that the machine's
//     drift hits both alike; the median of the per-pair ratios tree / flat with its quartiles, and
//     the steal time over the rounds (/proc/stat).
// One thread (the Eigen backend's default). Not a test:
//   build/gcc/benchmarks/typex_unflatten_bench [pairs: 15]
// benchmarks/README.md, "Unflatten", has the numbers.
#include <typex/backend/eigen.hpp>
#include <typex/export/unflatten.hpp>
#include <typex/typex.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace bench {
using namespace typex;
using batch = sym<"batch", 1, 64>;
using seq = sym<"seq", 1, 512>;
using layer = nn::TransformerEncoderLayer<64, 4, 128, nn::activation::gelu, false, true>;
constexpr std::size_t depth = 32;

struct encoder_stack {
  std::array<layer, depth> layers;

  template <class X>
  auto operator()(const X& x) const {
    return through<0>(x);
  }

 private:
  template <std::size_t I, class X>
  auto through(const X& x) const {
    if constexpr (I == depth) return x;
    else return through<I + 1>(layers[I](x));
  }
};
}  // namespace bench
BOOST_HANA_ADAPT_STRUCT(bench::encoder_stack, layers);

namespace {
using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) { return std::chrono::duration<double>(clock_type::now() - t0).count(); }

// (steal, total) jiffies of all CPUs since boot: /proc/stat's "cpu" line.
std::pair<unsigned long long, unsigned long long> cpu_jiffies() {
  std::ifstream f("/proc/stat");
  std::string cpu;
  f >> cpu;
  unsigned long long steal = 0, total = 0, v = 0;
  for (int i = 0; i < 10 && (f >> v); ++i) {
    total += v;
    if (i == 7) steal = v;  // user nice system idle iowait irq softirq steal guest guest_nice
  }
  return {steal, total};
}

double quantile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const auto i = static_cast<std::size_t>(static_cast<double>(v.size() - 1) * p + 0.5);
  return v[i];
}

double max_abs_diff(const typex::any_tensor& a, const typex::any_tensor& b) {
  const float* x = a.data<float>();
  const float* y = b.data<float>();
  double m = 0;
  for (std::size_t i = 0; i < static_cast<std::size_t>(a.numel()); ++i) m = std::max(m, std::abs(double(x[i]) - double(y[i])));
  return m;
}
}  // namespace

int main(int argc, char** argv) {
  using namespace typex;
  using namespace bench;
  const int pairs = argc > 1 ? std::max(1, std::atoi(argv[1])) : 15;

  auto model = std::make_unique<encoder_stack>();
  init_module(*model, 7);
  using in_shape = shape<batch, seq, fix<64>>;
  auto t0 = clock_type::now();
  const auto typed = export_program(*model, input<"src">(tensor_spec<f32, in_shape>(in_shape(batch(2), seq(16), {}))));
  const double export_s = seconds_since(t0);
  const exported_program& ep = typed;
  std::size_t nodes = 0;
  for (const auto& n : ep.graph().nodes()) nodes += n.op == ir::node_op::call_function ? 1 : 0;
  std::printf("program: %zu layers, %zu call nodes, %zu module calls (export: %.1f ms)\n", depth, nodes,
              ep.module_call_graph().size(), export_s * 1e3);

  // (a) unflatten time
  std::vector<double> times;
  for (int i = 0; i < 11; ++i) {
    t0 = clock_type::now();
    const auto tree = typex::unflatten(ep);
    times.push_back(seconds_since(t0));
  }
  const auto tree = typex::unflatten(ep);
  std::size_t segments = 0, call_steps = 0;
  for (const auto& c : tree.plan().calls)
    for (const auto& s : c.steps) (s.is_call() ? call_steps : segments) += 1;
  std::printf("unflatten: median %.2f ms (min %.2f, max %.2f; 11 runs): %zu modules, %zu calls, %zu segments, %zu call steps\n",
              quantile(times, 0.5) * 1e3, quantile(times, 0.0) * 1e3, quantile(times, 1.0) * 1e3, tree.modules().size(),
              tree.plan().calls.size(), segments, call_steps);

  // the input, and the first calls (planning for these shapes)
  tensor<f32, batch, seq, fix<64>> x({2, 16, 64});
  {
    float* p = x.data();
    unsigned s = 12345;
    for (index_t i = 0; i < 2 * 16 * 64; ++i) {
      s = s * 1664525u + 1013904223u;
      p[i] = static_cast<float>(s >> 8) / static_cast<float>(1u << 24) * 2.0f - 1.0f;
    }
  }
  const std::vector<any_tensor> in{x.erase()};
  const auto flat = ep.module();
  t0 = clock_type::now();
  const auto y_flat = flat(in);
  const double flat_first = seconds_since(t0);
  t0 = clock_type::now();
  const auto y_tree = tree(in);
  const double tree_first = seconds_since(t0);
  std::printf("first call (planning for [2, 16, 64]): flat %.2f ms, tree %.2f ms; max |tree - flat| = %.3g\n", flat_first * 1e3,
              tree_first * 1e3, max_abs_diff(y_tree.front(), y_flat.front()));

  // (b) forward, in paired rounds: the tree as it runs whole (each call's whole program while
  // nothing in it is swapped), then step by step (every layer's norm2 swapped for a program of a
  // copy of itself: the root and every layer run their steps, one program_module call each)
  auto per_call = [&](auto&& f, int reps) {
    volatile float sink = 0;
    const auto t = clock_type::now();
    for (int i = 0; i < reps; ++i) sink = sink + f();
    return seconds_since(t) / reps;
  };
  auto paired = [&](const char* what, auto&& one_flat, auto&& one_tree) {
    const double flat_one = per_call(one_flat, 20), tree_one = per_call(one_tree, 20);
    const int reps_flat = std::max(1, static_cast<int>(std::ceil(0.2 / flat_one)));
    const int reps_tree = std::max(1, static_cast<int>(std::ceil(0.2 / tree_one)));
    std::vector<double> ratios, flat_ms, tree_ms;
    const auto [steal0, total0] = cpu_jiffies();
    for (int r = 0; r < pairs; ++r) {
      const double f = per_call(one_flat, reps_flat);
      const double t = per_call(one_tree, reps_tree);
      flat_ms.push_back(f * 1e3);
      tree_ms.push_back(t * 1e3);
      ratios.push_back(t / f);
    }
    const auto [steal1, total1] = cpu_jiffies();
    std::printf("forward [2, 16, 64], %s, %d pairs (flat x%d, tree x%d calls per side): flat median %.3f ms, tree median %.3f ms\n", what,
                pairs, reps_flat, reps_tree, quantile(flat_ms, 0.5), quantile(tree_ms, 0.5));
    std::printf("  tree / flat: median %.3f, quartiles %.3f .. %.3f (min %.3f, max %.3f)\n", quantile(ratios, 0.5), quantile(ratios, 0.25),
                quantile(ratios, 0.75), quantile(ratios, 0.0), quantile(ratios, 1.0));
    std::printf("  steal over the rounds: %.2f %% (%llu of %llu jiffies)\n",
                total1 > total0 ? 100.0 * double(steal1 - steal0) / double(total1 - total0) : 0.0, steal1 - steal0, total1 - total0);
  };
  paired("whole", [&] { return flat(in).front().data<float>()[0]; }, [&] { return tree(in).front().data<float>()[0]; });

  export_options keep;
  for (std::size_t i = 0; i < depth; ++i) keep.preserve_module_call_signature.push_back("layers." + std::to_string(i) + ".norm2");
  const exported_program kept = export_program(keep, *model, input<"src">(tensor_spec<f32, in_shape>(in_shape(batch(2), seq(16), {}))));
  auto steps = typex::unflatten(kept);
  for (std::size_t i = 0; i < depth; ++i)
    steps.submodule("layers." + std::to_string(i) + ".norm2")
        .swap(export_program(model->layers[i].norm2, input<"x">(tensor_spec<f32, in_shape>(in_shape(batch(2), seq(16), {})))));
  std::printf("step by step: max |tree - flat| = %.3g\n", max_abs_diff(steps(in).front(), y_flat.front()));
  paired("step by step", [&] { return flat(in).front().data<float>()[0]; }, [&] { return steps(in).front().data<float>()[0]; });
}
