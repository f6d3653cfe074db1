// typex's CUDA backend on a GPU: the reference models of benchmarks/models (the same weights,
// workloads.hpp's fill) forward through program_module<cuda_backend>, with CUDA graphs on and off, at
// batch 1 / 32 / 256 (transformer 1 / 8), and one training step of each (the joint program run,
// then typex::optim::sgd stepping the parameters on the device: MLP at batch 32 / 256, CNN at 32,
// transformer at 8, as benchmarks/training), the GEMM-bound rows at each matmul_precision, fused
// attention against its math path, and the CNN's conv2d by typex's kernel against cuDNN (forward and
// training step). A plain executable printing five tables (benchmarks/README.md, "CUDA"); peers_cuda.py measures PyTorch eager, torch.compile and AOTInductor on the same GPU, and
// run_cuda.sh runs both (scripts/gpu-check.sh on a lent GPU). Built where typex::cuda is; without a
// GPU it prints the device_error and exits 77. Arguments name the tables to print (models, training,
// precision, conv, attention; all without any), an unknown name exits 2.
//
// A row's time is the median over 7 rounds of the mean time per call (each round at least 0.2 s of
// calls after a warm-up): one call is what a user's call costs (the input staged into its slot, the
// plan's graph replayed or its launches run, the output copied into a device tensor, the stream
// synchronized). The floor row is a one-node program of one element: the call path's fixed cost.
#include "../models/typex_models.hpp"
#include "../models/workloads.hpp"

#include <typex/backend/cuda.hpp>
#include <typex/backend/eigen.hpp>
#include <typex/export/decompositions.hpp>
#include <typex/export/joint.hpp>
#include <typex/nn/optim.hpp>
#include <typex/typex.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
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

// The largest difference between a program's first output on the GPU and the Eigen backend's.
double worst_difference(const typex::any_tensor& device_out, const typex::any_tensor& want) {
  const typex::any_tensor got = typex::cuda::to_host(device_out);
  double worst = 0;
  for (typex::index_t i = 0; i < got.numel(); ++i)
    worst = std::max(worst, std::abs(double(got.data<float>()[i]) - double(want.data<float>()[i])));
  return worst;
}
double largest(const typex::any_tensor& t) {
  double m = 0;
  for (typex::index_t i = 0; i < t.numel(); ++i) m = std::max(m, std::abs(double(t.data<float>()[i])));
  return m;
}

// Microseconds per call of `ep` on the GPU with CUDA graphs, after checking its output against the
// Eigen backend's: within 1e-3 in f32, within 5 % of the output's largest magnitude at a reduced
// matmul_precision (a wrong program is not measured).
double us_per_call(const char* what, const typex::exported_program& ep, const std::vector<typex::any_tensor>& host_inputs,
                   const std::shared_ptr<typex::cuda::device_runtime>& gpu, typex::cuda::matmul_precision precision,
                   typex::cuda::conv_engine conv = typex::cuda::conv_engine::typex) {
  const auto want = typex::program_module<typex::eigen_backend>(ep)(host_inputs);
  std::vector<typex::any_tensor> dev;
  for (const typex::any_tensor& t : host_inputs) dev.push_back(typex::cuda::to_device(t, gpu));
  const typex::program_module<typex::cuda_backend> run(ep, {.device = gpu, .matmul_precision = precision, .convolutions = conv});
  const double worst = worst_difference(run(dev)[0], want[0]);
  const double allowed = precision == typex::cuda::matmul_precision::f32 ? 1e-3 : 0.05 * largest(want[0]) + 1e-3;
  if (!(worst <= allowed)) {
    std::fprintf(stderr, "%s (%s, conv2d by %s): the GPU's output differs from the Eigen backend's by %g (allowed %g)\n", what,
                 std::string(typex::cuda::name(precision)).c_str(), std::string(typex::cuda::name(conv)).c_str(), worst, allowed);
    std::exit(1);
  }
  return time_calls([&] { (void)run(dev); }) * 1e6;
}

// attention over [batch, heads, seq, 64] query, key and value
struct attend {
  bool causal = false;
  template <class Q, class K, class V>
  auto operator()(const Q& q, const K& k, const V& v) const {
    return typex::scaled_dot_product_attention(q, k, v, nullptr, {.is_causal = causal});
  }
};

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

// the training steps' losses: cross-entropy against labels (MLP, CNN), mse against a target (the block)
template <class Net>
struct classify {
  Net net;
  template <class X, class Y>
  auto operator()(const X& x, const Y& y) const {
    return typex::cross_entropy(net(x), y);
  }
};
template <class Net>
struct regress {
  Net net;
  template <class X, class T>
  auto operator()(const X& x, const T& t) const {
    return typex::mse_loss(net(x), t);
  }
};

struct train_row {
  std::string model;
  long batch;
  double flops;
  double us_graphs, us_plain;
  float loss;
};

// One training step (the joint program's call, then SGD on the device), checked against the Eigen
// backend's first loss and gradients before timing.
template <class M, class XSpec, class YSpec>
train_row measure_step(const char* name, M& model, const XSpec& xs, const YSpec& ys, const typex::any_tensor& x, const typex::any_tensor& y,
                       double flops, const std::shared_ptr<typex::cuda::device_runtime>& gpu) {
  using namespace typex;
  const exported_program joint = make_joint(export_program(model, input<"x">(xs), input<"y">(ys)));
  const auto want = read_joint_outputs(joint, program_module<eigen_backend>(joint)({x, y}));
  const std::vector<any_tensor> in = {cuda::to_device(x, gpu), cuda::to_device(y, gpu)};
  train_row r{name, x.extents()[0], 3.0 * flops, 0, 0, want.loss.data<float>()[0]};
  for (const bool graphs : {true, false}) {
    program_module<cuda_backend> step(joint, {.device = gpu, .graphs = graphs});
    optim::sgd opt(step.parameters(), {.lr = 1e-3, .momentum = 0.9});
    std::vector<any_tensor> out;
    step.run(in, out);
    const joint_outputs got = read_joint_outputs(joint, out);
    double worst = std::abs(double(cuda::to_host(got.loss).data<float>()[0]) - double(r.loss));
    for (const auto& [fqn, g] : want.gradients) {
      const any_tensor h = cuda::to_host(got.gradients.at(fqn));
      for (index_t i = 0; i < h.numel(); ++i) worst = std::max(worst, std::abs(double(h.data<float>()[i]) - double(g.template data<float>()[i])));
    }
    if (!(worst <= 1e-3)) {
      std::fprintf(stderr, "%s batch %ld training step: the GPU's loss or gradients differ from the Eigen backend's by %g\n", name, r.batch, worst);
      std::exit(1);
    }
    const double s = time_calls([&] {
      step.run(in, out);
      opt.step(read_joint_outputs(joint, out).gradients);
    });
    (graphs ? r.us_graphs : r.us_plain) = s * 1e6;
  }
  return r;
}

// Microseconds per training step (the joint program's call, then SGD on the device; graphs on) with
// conv2d by `conv`, its first loss checked against the Eigen backend's.
double us_per_step(const typex::exported_program& joint, const std::vector<typex::any_tensor>& host_inputs,
                   const std::shared_ptr<typex::cuda::device_runtime>& gpu, typex::cuda::conv_engine conv,
                   typex::cuda::matmul_precision precision = typex::cuda::matmul_precision::f32) {
  using namespace typex;
  const auto want = read_joint_outputs(joint, program_module<eigen_backend>(joint)(host_inputs));
  std::vector<any_tensor> in;
  for (const any_tensor& t : host_inputs) in.push_back(cuda::to_device(t, gpu));
  program_module<cuda_backend> step(joint, {.device = gpu, .matmul_precision = precision, .convolutions = conv});
  optim::sgd opt(step.parameters(), {.lr = 1e-3, .momentum = 0.9});
  std::vector<any_tensor> out;
  step.run(in, out);
  const double loss = cuda::to_host(read_joint_outputs(joint, out).loss).data<float>()[0];
  const double allowed = precision == cuda::matmul_precision::f32 ? 1e-3 : 0.05 * std::abs(double(want.loss.data<float>()[0])) + 1e-3;
  if (!(std::abs(loss - double(want.loss.data<float>()[0])) <= allowed)) {
    std::fprintf(stderr, "training step (conv2d by %s): the GPU's loss %g differs from the Eigen backend's %g\n",
                 std::string(cuda::name(conv)).c_str(), loss, double(want.loss.data<float>()[0]));
    std::exit(1);
  }
  return time_calls([&] {
    step.run(in, out);
    opt.step(read_joint_outputs(joint, out).gradients);
  }) * 1e6;
}

typex::any_tensor filled(std::vector<typex::index_t> extents, float scale = 1.0f) {
  typex::any_tensor t(typex::dtype::f32, extents);
  fill_input(t.data<float>(), static_cast<std::size_t>(t.numel()));
  for (typex::index_t i = 0; i < t.numel(); ++i) t.data<float>()[i] *= scale;
  return t;
}
typex::any_tensor class_labels(typex::index_t n) {
  typex::any_tensor t(typex::dtype::i64, {n});
  for (typex::index_t i = 0; i < n; ++i) t.data<std::int64_t>()[i] = (7 * i + 3) % 10;
  return t;
}

}  // namespace bench
BOOST_HANA_ADAPT_STRUCT(bench::one_relu);
BOOST_HANA_ADAPT_STRUCT(bench::attend);
BOOST_HANA_ADAPT_STRUCT(bench::classify<bench::mlp_model>, net);
BOOST_HANA_ADAPT_STRUCT(bench::classify<bench::cnn_model>, net);
BOOST_HANA_ADAPT_STRUCT(bench::regress<bench::transformer_model>, net);

int main(int argc, char** argv) {
  using namespace bench;
  using namespace typex;
  const std::vector<std::string> tables(argv + 1, argv + argc);
  for (const std::string& t : tables) {
    if (t != "models" && t != "training" && t != "precision" && t != "conv" && t != "attention") {
      std::fprintf(stderr, "typex_models_cuda: no table '%s' (models, training, precision, conv, attention)\n", t.c_str());
      return 2;
    }
  }
  const auto want = [&](const char* t) { return tables.empty() || std::find(tables.begin(), tables.end(), t) != tables.end(); };
  std::shared_ptr<cuda::device_runtime> gpu;
  try {
    gpu = cuda::make_native_device(0);
  } catch (const device_error& e) {
    std::printf("typex_models_cuda: %s\n", e.what());
    return 77;
  }
  std::printf("device: %s\n", gpu->info().name.c_str());
  mlp_model mlp;
  fill(mlp);
  cnn_model cnn;
  fill(cnn);
  transformer_model tf;
  fill(tf);
  if (want("models")) {
  std::vector<row> rows;
  {
    one_relu m;  // (the call path's floor)
    rows.push_back(measure("floor (relu of 1)", m, tensor_spec<f32, shape<fix<1>>>(), {1}, 0, gpu));
  }
  for (long b : {1L, 32L, 256L}) {
    using xs = shape<batch, fix<784>>;
    rows.push_back(measure("mlp", mlp, tensor_spec<f32, xs>(xs(batch(b), {})), {b, 784}, mlp_flops(b), gpu));
  }
  for (long b : {1L, 32L, 256L}) {
    using xs = shape<batch, fix<1>, fix<28>, fix<28>>;
    rows.push_back(measure("cnn", cnn, tensor_spec<f32, xs>(xs(batch(b), {}, {}, {})), {b, 1, 28, 28}, cnn_flops(b), gpu));
  }
  for (long b : {1L, 8L}) {
    using xs = shape<batch, fix<tf_seq>, fix<tf_d>>;
    rows.push_back(measure("transformer", tf, tensor_spec<f32, xs>(xs(batch(b), {}, {})), {b, tf_seq, tf_d}, transformer_flops(b), gpu));
  }
  std::printf("%-20s %6s %14s %14s %12s\n", "model", "batch", "graphs (us)", "no graphs (us)", "GFLOP/s");
  for (const row& r : rows)
    std::printf("%-20s %6ld %14.1f %14.1f %12.1f\n", r.model.c_str(), r.batch, r.us_graphs, r.us_plain,
                r.flops > 0 ? r.flops / (std::min(r.us_graphs, r.us_plain) * 1e-6) / 1e9 : 0.0);
  }
  if (want("training")) {
  // one training step of each: forward, backward (the joint program) and SGD on the device
  std::vector<train_row> steps;
  {
    classify<mlp_model> m{mlp};
    for (long b : {32L, 256L}) {
      using xs = shape<batch, fix<784>>;
      using ys = shape<batch>;
      steps.push_back(measure_step("mlp", m, tensor_spec<f32, xs>(xs(batch(b), {})), tensor_spec<i64, ys>(ys(batch(b))), filled({b, 784}),
                                   class_labels(b), mlp_flops(b), gpu));
    }
  }
  {
    classify<cnn_model> m{cnn};
    using xs = shape<batch, fix<1>, fix<28>, fix<28>>;
    using ys = shape<batch>;
    steps.push_back(measure_step("cnn", m, tensor_spec<f32, xs>(xs(batch(32), {}, {}, {})), tensor_spec<i64, ys>(ys(batch(32))),
                                 filled({32, 1, 28, 28}), class_labels(32), cnn_flops(32), gpu));
  }
  {
    regress<transformer_model> m{tf};
    using xs = shape<batch, fix<tf_seq>, fix<tf_d>>;
    steps.push_back(measure_step("transformer", m, tensor_spec<f32, xs>(xs(batch(8), {}, {})), tensor_spec<f32, xs>(xs(batch(8), {}, {})),
                                 filled({8, tf_seq, tf_d}), filled({8, tf_seq, tf_d}, 0.5f), transformer_flops(8), gpu));
  }
  std::printf("\n%-20s %6s %14s %14s %12s %10s\n", "training step", "batch", "graphs (us)", "no graphs (us)", "GFLOP/s", "loss");
  for (const train_row& r : steps)
    std::printf("%-20s %6ld %14.1f %14.1f %12.1f %10.5f\n", r.model.c_str(), r.batch, r.us_graphs, r.us_plain,
                r.flops / (std::min(r.us_graphs, r.us_plain) * 1e-6) / 1e9, static_cast<double>(r.loss));
  }
  if (want("precision")) {
  // the GEMM-bound rows at each matmul_precision (graphs on): the products on tensor cores
  {
    using P = cuda::matmul_precision;
    std::printf("\n%-20s %6s %12s %12s %12s %12s   (us per call, graphs on)\n", "matmul_precision", "batch", "f32", "tf32", "bf16", "f16");
    const auto precision_row = [&](const char* name, long b, const exported_program& ep, const any_tensor& x) {
      std::printf("%-20s %6ld", name, b);
      for (const P p : {P::f32, P::tf32, P::bf16, P::f16}) std::printf(" %12.1f", us_per_call(name, ep, {x}, gpu, p));
      std::printf("\n");
    };
    {
      using xs = shape<batch, fix<784>>;
      precision_row("mlp", 256, export_program(mlp, input<"x">(tensor_spec<f32, xs>(xs(batch(256), {})))), filled({256, 784}));
    }
    {
      using xs = shape<batch, fix<tf_seq>, fix<tf_d>>;
      precision_row("transformer", 8, export_program(tf, input<"x">(tensor_spec<f32, xs>(xs(batch(8), {}, {})))), filled({8, tf_seq, tf_d}));
    }
  }
  }
  // conv2d by typex's implicit GEMM against cuDNN (exact f32: FMA kernels only; then TF32 allowed,
  // matmul_precision tf32, which also puts the linear layers on tensor cores), graphs on
  if (!want("conv")) {
  } else if (cuda::has_cudnn()) {
    using E = cuda::conv_engine;
    std::printf("\n%-24s %6s %12s %12s %12s   (us per call, graphs on)\n", "conv2d engine (cnn)", "batch", "typex", "cudnn", "cudnn tf32");
    for (long b : {1L, 32L, 256L}) {
      using xs = shape<batch, fix<1>, fix<28>, fix<28>>;
      const exported_program ep = export_program(cnn, input<"x">(tensor_spec<f32, xs>(xs(batch(b), {}, {}, {}))));
      const any_tensor x = filled({b, 1, 28, 28});
      std::printf("%-24s %6ld %12.1f %12.1f %12.1f\n", "forward", b, us_per_call("cnn", ep, {x}, gpu, cuda::matmul_precision::f32, E::typex),
                  us_per_call("cnn", ep, {x}, gpu, cuda::matmul_precision::f32, E::cudnn),
                  us_per_call("cnn", ep, {x}, gpu, cuda::matmul_precision::tf32, E::cudnn));
    }
    classify<cnn_model> m{cnn};
    for (long b : {32L, 256L}) {
      using xs = shape<batch, fix<1>, fix<28>, fix<28>>;
      using ys = shape<batch>;
      const exported_program joint = make_joint(export_program(m, input<"x">(tensor_spec<f32, xs>(xs(batch(b), {}, {}, {}))),
                                                               input<"y">(tensor_spec<i64, ys>(ys(batch(b))))));
      const std::vector<any_tensor> in{filled({b, 1, 28, 28}), class_labels(b)};
      std::printf("%-24s %6ld %12.1f %12.1f %12.1f\n", "training step", b, us_per_step(joint, in, gpu, E::typex),
                  us_per_step(joint, in, gpu, E::cudnn), us_per_step(joint, in, gpu, E::cudnn, cuda::matmul_precision::tf32));
    }
  } else {
    std::printf("\nconv2d engine: this build has no cuDNN (TYPEX_CUDNN is OFF): typex's implicit GEMM only\n");
  }
  if (want("attention")) {
  // scaled_dot_product_attention: the fused kernel against the math path (its decomposition: two
  // batched products, the scale, the mask, softmax), f32, graphs on
  {
    std::printf("\n%-32s %14s %14s %10s\n", "attention [b, h, seq, 64]", "fused (us)", "math (us)", "math/fused");
    const auto attention_row = [&]<long B, long H, long L>(bool causal) {
      using qs = shape<fix<B>, fix<H>, fix<L>, fix<64>>;
      const exported_program ep = export_program(attend{causal}, input<"q">(tensor_spec<f32, qs>()), input<"k">(tensor_spec<f32, qs>()),
                                                 input<"v">(tensor_spec<f32, qs>()));
      passes::decomposition_table only;
      only.add(op_id_of<scaled_dot_product_attention_op>);
      const exported_program math = run_decompositions(ep, only);
      const std::vector<any_tensor> in{filled({B, H, L, 64}), filled({B, H, L, 64}), filled({B, H, L, 64})};
      const double fused = us_per_call("attention", ep, in, gpu, cuda::matmul_precision::f32);
      const double plain = us_per_call("attention (math path)", math, in, gpu, cuda::matmul_precision::f32);
      char name[64];
      std::snprintf(name, sizeof name, "[%ld, %ld, %ld, 64]%s", B, H, L, causal ? " causal" : "");
      std::printf("%-32s %14.1f %14.1f %10.2f\n", name, fused, plain, plain / fused);
    };
    attention_row.template operator()<8, 8, 128>(false);
    attention_row.template operator()<8, 8, 512>(false);
    attention_row.template operator()<8, 8, 512>(true);
    attention_row.template operator()<1, 8, 2048>(true);
  }
  // attention's backward (typex.attention_stats and the three gradients): the fused kernels against
  // the math path (the ops' decompositions, the copies of the scores merged, as a backend without
  // the kernels runs them), f32, graphs on; one call computes dq, dk and dv
  {
    std::printf("\n%-32s %14s %14s %10s\n", "attention backward", "fused (us)", "math (us)", "math/fused");
    const auto backward_row = [&]<long Bt, long Ht, long Lt>(bool causal) {
      const index_t b = Bt, h = Ht, l = Lt;
      const std::vector<index_t> ext{b, h, l, 64};
      ir::graph g;
      const auto placeholder = [&](const char* name) {
        return ir::value_ref{g.add_placeholder(name, {dtype::f32, std::vector<ir::sym_expr>(ext.begin(), ext.end())})};
      };
      const auto call = [&](op_id op, std::vector<ir::argument> args) {
        std::vector<ir::tensor_meta> vals = ir::infer_meta(g, op, args);
        return ir::value_ref{g.add_call({.target = op, .args = std::move(args), .vals = std::move(vals)})};
      };
      const ir::value_ref dy = placeholder("grad"), q = placeholder("q"), k = placeholder("k"), v = placeholder("v"), o = placeholder("out");
      const double scale = 0.125;  // (1 / sqrt(64): the forward's default)
      const ir::value_ref st = call(op_id_of<attention_stats_op>, {q, k, dy, o, ir::none_t{}, causal, scale});
      std::vector<ir::value_ref> outs;
      for (std::int64_t which = 0; which < 3; ++which) outs.push_back(call(op_id_of<attention_backward_op>, {dy, q, k, v, st, ir::none_t{}, causal, scale, which}));
      g.set_output(outs);
      passes::decomposition_table ops;
      ops.add(op_id_of<attention_stats_op>);
      ops.add(op_id_of<attention_backward_op>);
      ir::graph math = passes::decompose(g, ops);
      passes::eliminate_common_subexpressions(math);
      passes::eliminate_dead_code(math);
      const auto engine = [&](const ir::graph& graph) {
        program_binding bind;
        bind.graph = std::make_shared<const ir::graph>(graph);
        bind.inputs = graph.placeholders();
        bind.user_inputs = bind.inputs.size();
        bind.check = [](const symbol_table&) {};
        return cuda_backend::compile(std::move(bind), {.device = gpu});
      };
      // (the inputs: the output's gradient, q, k, v, and the forward's output for them)
      using qs = shape<fix<Bt>, fix<Ht>, fix<Lt>, fix<64>>;
      const exported_program forward = export_program(attend{causal}, input<"q">(tensor_spec<f32, qs>()), input<"k">(tensor_spec<f32, qs>()),
                                                      input<"v">(tensor_spec<f32, qs>()));
      std::vector<any_tensor> dev{cuda::to_device(filled(ext, 0.5f), gpu)};
      for (int i = 0; i < 3; ++i) dev.push_back(cuda::to_device(filled(ext), gpu));
      dev.push_back(program_module<cuda_backend>(forward, {.device = gpu})({dev[1], dev[2], dev[3]})[0]);
      const auto fused = engine(g), plain = engine(math);
      std::vector<any_tensor> got, want;
      fused->run(dev, symbol_table{}, got);
      plain->run(dev, symbol_table{}, want);
      double worst = 0;
      for (std::size_t i = 0; i < got.size(); ++i) worst = std::max(worst, worst_difference(got[i], cuda::to_host(want[i])));
      if (!(worst <= 1e-3)) {
        std::fprintf(stderr, "attention backward: the fused gradients differ from the math path's by %g\n", worst);
        std::exit(1);
      }
      std::vector<any_tensor> out;
      const double f = time_calls([&] { fused->run(dev, symbol_table{}, out); }) * 1e6;
      const double m = time_calls([&] { plain->run(dev, symbol_table{}, out); }) * 1e6;
      char name[64];
      std::snprintf(name, sizeof name, "[%ld, %ld, %ld, 64]%s", static_cast<long>(b), static_cast<long>(h), static_cast<long>(l),
                    causal ? " causal" : "");
      std::printf("%-32s %14.1f %14.1f %10.2f\n", name, f, m, m / f);
    };
    backward_row.template operator()<8, 8, 128>(false);
    backward_row.template operator()<8, 8, 512>(false);
    backward_row.template operator()<8, 8, 512>(true);
    backward_row.template operator()<1, 8, 2048>(true);
  }
  }
  return 0;
}
