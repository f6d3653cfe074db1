// The Eigen backend's GEMM (against a plain triple loop: sizes around every blocking edge,
// strided operands, every epilogue, 1 and 2 threads) and its planned programs: what a plan folds,
// fuses and shares, results equal to eager calls, re-planning for a new batch, and no heap
// allocation per call in steady state (counted by the unit tests' operator new, alloc_counter.cpp).
#include "../support.hpp"

#include <typex/backend/eigen.hpp>
#include <typex/backend/eigen/activation.hpp>
#include <typex/backend/eigen/gemm.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <thread>

using namespace typex;
using namespace typex::eigen::detail;

namespace {
struct thread_count {
  int before;
  explicit thread_count(int n) : before(eigen::set_num_threads(n)) {}
  ~thread_count() { eigen::set_num_threads(before); }
};

// C = act(alpha * A B + beta * C0 + bias) in double, A and B read through strides.
std::vector<double> reference(index_t m, index_t n, index_t k, const std::vector<float>& a, index_t rsa, index_t csa,
                              const std::vector<float>& b, index_t rsb, index_t csb, const std::vector<float>& c0,
                              const gemm_epilogue<float>& ep, int act) {
  std::vector<double> c(static_cast<std::size_t>(m * n));
  for (index_t i = 0; i < m; ++i)
    for (index_t j = 0; j < n; ++j) {
      double s = 0;
      for (index_t p = 0; p < k; ++p) s += double(a[std::size_t(i * rsa + p * csa)]) * double(b[std::size_t(p * rsb + j * csb)]);
      double v = ep.alpha * s + (ep.beta != 0 ? ep.beta * double(c0[std::size_t(i * n + j)]) : 0.0);
      if (ep.bias) v += ep.bias_per_row ? ep.bias[i] : ep.bias[j];
      if (act == 1) v = std::max(v, 0.0);
      if (act == 2) v = v * std::min(std::max(v + 3.0, 0.0), 6.0) / 6.0;  // hardswish: a generic (not in-register) epilogue
      c[std::size_t(i * n + j)] = v;
    }
  return c;
}
}  // namespace

// (2 threads split by column panels ({25, 65, 513}, {1, 512, 784}) or by rows where 2m > n
// ({150, 20, 800}, over three k blocks); {200, 40, 9} is too little work to split: one thread,
// three row blocks)
TEST_CASE("eigen gemm: sizes around the blocking edges, strided operands, epilogues, 1 and 2 threads") {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1, 1);
  const index_t sizes[][3] = {{1, 1, 1}, {1, 512, 784}, {5, 7, 3}, {13, 33, 257}, {12, 32, 256}, {25, 65, 513}, {200, 40, 9}, {150, 20, 800}, {3, 100, 0}};
  for (const auto& sz : sizes) {
    const index_t m = sz[0], n = sz[1], k = sz[2];
    for (int transposed = 0; transposed < 2; ++transposed) {
      std::vector<float> a(std::size_t(m * k)), b(std::size_t(k * n)), bias(std::size_t(std::max(m, n))), c0(std::size_t(m * n));
      for (auto* v : {&a, &b, &bias, &c0})
        for (float& x : *v) x = u(rng);
      // A row-major [m, k] or stored transposed; B [k, n] or stored as [n, k] (a linear layer's weight)
      const index_t rsa = transposed ? 1 : k, csa = transposed ? m : 1;
      const index_t rsb = transposed ? 1 : n, csb = transposed ? k : 1;
      // (3 and 4: an activation applied over each row block once its panels are done, after the
      // tiles went straight to C or through the scratch tile with alpha and beta)
      for (int variant = 0; variant < 5; ++variant) {
        gemm_epilogue<float> ep;
        if (variant == 1) { ep.bias = bias.data(); ep.act = activation::of(relu_op{}); }
        if (variant == 3) { ep.bias = bias.data(); ep.act = activation::of(hardswish_op{}); }
        if (variant == 2) { ep.bias = bias.data(); ep.bias_per_row = true; ep.alpha = 0.5f; ep.beta = 2.0f; }
        if (variant == 4) { ep.bias = bias.data(); ep.alpha = 0.5f; ep.beta = 2.0f; ep.act = activation::of(hardswish_op{}); }
        const auto want = reference(m, n, k, a, rsa, csa, b, rsb, csb, c0, ep, variant == 1 ? 1 : variant >= 3 ? 2 : 0);
        for (int threads : {1, 2}) {
          const thread_count tc(threads);
          std::vector<float> c = c0;
          gemm<float>(m, n, k, {a.data(), rsa, csa}, {b.data(), rsb, csb}, c.data(), n, ep, threads);
          double worst = 0;
          for (std::size_t i = 0; i < c.size(); ++i) worst = std::max(worst, std::abs(c[i] - want[i]));
          INFO("m=" << m << " n=" << n << " k=" << k << " transposed=" << transposed << " variant=" << variant << " threads=" << threads);
          CHECK(worst <= 1e-5 * std::max<double>(1.0, std::sqrt(double(k))));
          // both operands packed beforehand (a convolution's weights and columns): the same bits
          std::vector<float> pa(packed_lhs<float>::size_for(m, k) + 1), pb(packed_rhs<float>::size_for(k, n) + 1), c2 = c0;
          const auto lhs = packed_lhs<float>::pack({a.data(), rsa, csa}, m, k, pa.data());
          const auto rhs = packed_rhs<float>::pack({b.data(), rsb, csb}, k, n, pb.data());
          gemm<float>(lhs, rhs, c2.data(), n, ep, threads);
          CHECK(c2 == c);
        }
      }
    }
  }
}

namespace plan_models {
using batch = sym<"batch", 1, 1024>;
using mlp = nn::Sequential<nn::Linear<64, 48>, nn::ReLU, nn::Linear<48, 48>, nn::GELU, nn::Linear<48, 10>>;
struct cnn {
  nn::Conv2d<1, 8, 3> conv1;
  nn::Conv2d<8, 16, 3> conv2;
  nn::MaxPool2d<pool2d_options{.kernel = {2, 2}}> pool;
  nn::Flatten<> flatten;
  nn::Linear<16 * 5 * 5, 10> fc;
  template <class X>
  auto operator()(const X& x) const {
    return fc(flatten(pool(relu(conv2(relu(conv1(x)))))));
  }
};
// Convolutions the packed im2col must get right (stride, padding, dilation, groups; images whose
// output rows straddle the GEMM's column panels) and pools that are done in a conv's step or not:
// k3 s1 (overlapping windows, leftover columns), k2 s2 after a conv without activation, and a
// ceil-mode pool with partial windows (not fused: its own step).
struct conv_pools {
  nn::Conv2d<3, 6, 3, conv2d_options{.stride = {2, 1}, .padding = {1, 2}, .groups = 3}> a;
  nn::Conv2d<6, 16, 2, conv2d_options{.dilation = {2, 1}}> b;
  nn::Conv2d<6, 8, 3, conv2d_options{.padding = {1, 1}}> c;
  nn::Linear<16 * 2 * 6, 8> fq;
  nn::Linear<8 * 4 * 7, 8> fr;
  template <class X>
  auto operator()(const X& x) const {
    const auto p = max_pool2d<pool2d_options{.kernel = {3, 3}, .stride = {1, 1}}>(relu(a(x)));  // [9, 15] -> [7, 13]
    const auto q = max_pool2d<pool2d_options{.kernel = {2, 2}}>(b(p));                           // [5, 12] -> [2, 6]
    const auto r = max_pool2d<pool2d_options{.kernel = {2, 2}, .ceil_mode = true}>(relu(c(p)));  // [7, 13] -> [4, 7]
    return fq(flatten<1>(q)) + fr(flatten<1>(r));
  }
};
using encoder = nn::TransformerEncoderLayer<32, 4, 64, nn::activation::gelu, false, true>;
struct linear_exp {
  nn::Linear<8, 8> fc;
  template <class X>
  auto operator()(const X& x) const {
    return exp(fc(x));  // exp has no planned kernel: an eager step
  }
};
// A normalization written out: (x - mu) * scale + shift, relu, / 2, - 0.25: one chain of five
// links after the first sub. z3 + late is not chained: `late` is computed after z3, its head.
struct pointwise_chain {
  buffer<f32, fix<8>> scale, shift;
  template <class X>
  auto operator()(const X& x) const {
    const auto mu = mean<1>(x, keepdim);
    const auto z = relu((x - mu) * as_traced(scale, x) + as_traced(shift, x)) / 2.0 - 0.25;
    const auto z3 = z * 3.0;
    const auto late = exp(x);
    return std::tuple{z, z3 + late};
  }
};
// hardswish: an activation that only says so in its own header (epilogue = true) fuses into the
// GEMM before it, and chains after a pointwise op, like the built-in ones.
struct hardswish_mlp {
  nn::Linear<16, 32> fc1;
  nn::Linear<32, 8> fc2;
  template <class X>
  auto operator()(const X& x) const {
    return hardswish(hardswish(fc2(hardswish(fc1(x)))) * 0.5 + 1.0);
  }
};
}  // namespace plan_models
BOOST_HANA_ADAPT_STRUCT(plan_models::hardswish_mlp, fc1, fc2);
BOOST_HANA_ADAPT_STRUCT(plan_models::cnn, conv1, conv2, pool, flatten, fc);
BOOST_HANA_ADAPT_STRUCT(plan_models::conv_pools, a, b, c, fq, fr);
BOOST_HANA_ADAPT_STRUCT(plan_models::linear_exp, fc);
BOOST_HANA_ADAPT_STRUCT(plan_models::pointwise_chain, scale, shift);

namespace {
// The program's result on the planned path == eager, then the steady state allocates nothing.
template <class M, class In>
eigen::plan_report check_planned(const M& model, const exported_program& ep, const In& x) {
  const auto eager = model(x).erase();
  auto run = program_module<eigen_backend>(ep);
  const std::vector<any_tensor> inputs{x.erase()};
  std::vector<any_tensor> out;
  run.run(inputs, out);
  REQUIRE(out.size() == 1);
  REQUIRE(out[0].extents() == eager.extents());
  double worst = 0;
  for (index_t i = 0; i < eager.numel(); ++i) worst = std::max(worst, double(std::abs(out[0].template data<float>()[i] - eager.template data<float>()[i])));
  CHECK(worst <= 1e-6);
  run.run(inputs, out);
  const long before = typex_test::allocation_count();
  run.run(inputs, out);
  run.run(inputs, out);
  CHECK(typex_test::allocation_count() - before == 0);
  return run.report();
}
// The pointwise-chain model with its scale and shift set.
plan_models::pointwise_chain chain_model() {
  plan_models::pointwise_chain m;
  for (index_t c = 0; c < 8; ++c) {
    m.scale.data()[c] = 0.5f + 0.25f * float(c);
    m.shift.data()[c] = 0.125f * float(c) - 0.5f;
  }
  return m;
}
}  // namespace

TEST_CASE("eigen plan: an MLP folds nothing, fuses its activations into the GEMMs, shares buffers, allocates nothing per call") {
  using namespace plan_models;
  mlp m;
  init_module(m, 3);
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, shape<batch, fix<64>>>(shape<batch, fix<64>>(batch(4), {}))));
  const auto x = typex_test::random_tensor<tensor<f32, batch, fix<64>>>({9, 64}, 1);
  for (int threads : {1, 2}) {
    const thread_count tc(threads);
    const auto r = check_planned(m, ep, x);
    CHECK(r.steps == 3);   // three GEMMs
    CHECK(r.fused == 2);   // relu and gelu in their epilogues
    CHECK(r.allocating_ops.empty());
    CHECK(r.arena_bytes < r.unplanned_bytes);  // the first hidden layer's buffer is reused
    CHECK(r.to_string().find("no allocation per call") != std::string::npos);
  }
}

// An output's step writes straight into the caller's output tensor (no copy out of the arena):
// a result the caller keeps is left as it was by the next call (which makes a new tensor), a
// released one is written again in place, without allocating.
TEST_CASE("eigen plan: outputs written in place: a kept result is not changed by the next call, a released one is reused") {
  using namespace plan_models;
  mlp m;
  init_module(m, 3);
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, shape<batch, fix<64>>>(shape<batch, fix<64>>(batch(4), {}))));
  const auto x1 = typex_test::random_tensor<tensor<f32, batch, fix<64>>>({9, 64}, 1);
  const auto x2 = typex_test::random_tensor<tensor<f32, batch, fix<64>>>({9, 64}, 2);
  const std::vector<any_tensor> in1{x1.erase()}, in2{x2.erase()};
  const auto near = [](const any_tensor& a, const any_tensor& b) {
    double worst = 0;
    for (index_t i = 0; i < a.numel(); ++i) worst = std::max(worst, double(std::abs(a.data<float>()[i] - b.data<float>()[i])));
    return worst <= 1e-6;
  };
  const any_tensor want1 = m(x1).erase(), want2 = m(x2).erase();
  auto run = program_module<eigen_backend>(ep);
  std::vector<any_tensor> out;
  run.run(in1, out);
  const any_tensor kept = out[0];  // (the caller holds the first result)
  const std::byte* first = kept.raw_data();
  run.run(in2, out);
  CHECK(out[0].raw_data() != first);
  CHECK(near(kept, want1));
  CHECK(near(out[0], want2));
  const std::byte* second = out[0].raw_data();
  const long before = typex_test::allocation_count();
  run.run(in1, out);
  CHECK(typex_test::allocation_count() - before == 0);
  CHECK(out[0].raw_data() == second);
  CHECK(near(out[0], want1));
  CHECK(near(kept, want1));
  CHECK(run.report().outputs_in_place == 1);
}

// A result fed back in as the next call's input through the same memory (a borrowed view, as a
// runner hands its slots over): that output is not written while the steps still read the input.
TEST_CASE("eigen plan: an output that shares memory with an input of the same call is written after the steps") {
  using batch = plan_models::batch;
  using S = shape<batch, fix<8>>;
  const plan_models::pointwise_chain m = chain_model();
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, S>(S(batch(2), {}))));
  auto run = program_module<eigen_backend>(ep);
  const auto x = typex_test::random_tensor<tensor<f32, batch, fix<8>>>({5, 8}, 9);
  std::vector<any_tensor> out;
  run.run(std::vector<any_tensor>{x.erase()}, out);
  REQUIRE(run.report().outputs_in_place >= 1);
  for (int step = 0; step < 3; ++step) {
    tensor<f32, batch, fix<8>> z(S(batch(5), {}));
    std::memcpy(z.data(), out[0].raw_data(), out[0].nbytes());
    const auto [want, want_late] = m(z);  // (the second output reads x again, after the first is written)
    any_tensor fed;
    fed.borrow(out[0]);  // (the same bytes, no second owner)
    const std::vector<any_tensor> in{fed};
    run.run(in, out);
    for (index_t i = 0; i < want.numel(); ++i) {
      REQUIRE(out[0].data<float>()[i] == want.data()[i]);
      REQUIRE(out[1].data<float>()[i] == want_late.data()[i]);
    }
  }
}

TEST_CASE("eigen plan: a CNN (conv + relu + max-pool in one step, flatten as a view)") {
  using namespace plan_models;
  cnn m;
  init_module(m, 5);
  using in_t = shape<batch, fix<1>, fix<14>, fix<14>>;
  const auto ep = export_program(m, input<"image">(tensor_spec<f32, in_t>(in_t(batch(2), {}, {}, {}))));
  const auto x = typex_test::random_tensor<tensor<f32, batch, fix<1>, fix<14>, fix<14>>>({3, 1, 14, 14}, 2);
  for (int threads : {1, 2}) {
    const thread_count tc(threads);
    const auto r = check_planned(m, ep, x);
    CHECK(r.fused == 3);   // two relus, the pool
    CHECK(r.views == 1);   // flatten
    CHECK(r.steps == 3);   // conv1+relu, conv2+relu+pool, fc
    CHECK(r.winograd == 1);  // conv2 (8 -> 16 channels, 3x3): Winograd's tiles; conv1 (1 channel): im2col
    CHECK(r.allocating_ops.empty());
  }
  // planned with 1 thread, run with 2: the convolution's scratch was planned for 1 (it stays at 1)
  const thread_count one(1);
  auto run = program_module<eigen_backend>(ep);
  const auto first = run({x.erase()});
  eigen::set_num_threads(2);
  const auto second = run({x.erase()});
  for (index_t i = 0; i < first[0].numel(); ++i) CHECK(first[0].data<float>()[i] == second[0].data<float>()[i]);
}

TEST_CASE("eigen plan: strided, padded, dilated and grouped convolutions, the pools a conv step does and those it leaves") {
  using namespace plan_models;
  conv_pools m;
  init_module(m, 9);
  using in_t = shape<batch, fix<3>, fix<17>, fix<13>>;
  const auto ep = export_program(m, input<"image">(tensor_spec<f32, in_t>(in_t(batch(2), {}, {}, {}))));
  for (index_t n : {1, 3}) {
    const auto x = typex_test::random_tensor<tensor<f32, batch, fix<3>, fix<17>, fix<13>>>({n, 3, 17, 13}, 4);
    for (int threads : {1, 2}) {
      const thread_count tc(threads);
      const auto r = check_planned(m, ep, x);
      CHECK(r.fused == 4);  // a's relu and pool, b's pool, c's relu; not c's pool (ceil mode: partial windows)
      CHECK(r.allocating_ops.empty());
    }
  }
}

TEST_CASE("eigen plan: a transformer block (in_proj slices folded, head transposes read through strides)") {
  using namespace plan_models;
  using seq = sym<"seq", 1, 128>;
  encoder m;
  init_module(m, 11);
  using in_t = shape<batch, seq, fix<32>>;
  const auto ep = export_program(m, input<"src">(tensor_spec<f32, in_t>(in_t(batch(2), seq(5), {}))));
  const auto x = typex_test::random_tensor<tensor<f32, batch, seq, fix<32>>>({2, 7, 32}, 4);
  const auto r = check_planned(m, ep, x);
  CHECK(r.folded == 6);  // the q, k, v slices of in_proj weight and bias
  CHECK(r.fused == 1);   // linear1 + gelu
  CHECK(r.views >= 6);   // the head views and the transposes feeding the matmuls
  CHECK(r.allocating_ops.empty());
}

TEST_CASE("eigen plan: a new batch size re-plans, ops without a planned kernel run their eager kernel and are named") {
  using batch = plan_models::batch;
  plan_models::linear_exp m;
  init_module(m, 1);
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, shape<batch, fix<8>>>(shape<batch, fix<8>>(batch(2), {}))));
  auto run = program_module<eigen_backend>(ep);
  for (index_t b : {3, 5, 3}) {
    const auto x = typex_test::random_tensor<tensor<f32, batch, fix<8>>>({b, 8}, std::uint64_t(b));
    const auto eager = m(x).erase();
    const auto out = run({x.erase()});
    REQUIRE(out[0].extents() == eager.extents());
    for (index_t i = 0; i < eager.numel(); ++i) CHECK(out[0].data<float>()[i] == eager.data<float>()[i]);
  }
  const auto r = run.report();
  CHECK(r.allocating_ops == std::vector<std::string>{"aten.exp.default"});
  CHECK(r.to_string().find("eager kernels (allocating) for: aten.exp.default") != std::string::npos);
}

TEST_CASE("eigen plan: a chain of pointwise ops runs in one pass, equal to one step per op and to eager") {
  using batch = plan_models::batch;
  using S = shape<batch, fix<8>>;
  const plan_models::pointwise_chain m = chain_model();
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, S>(S(batch(2), {}))));
  auto fused = program_module<eigen_backend>(ep);
  auto separate = program_module<eigen_backend>(ep, eigen::compile_options{.fuse = false});
  for (index_t b : {3, 1, 6}) {
    const auto x = typex_test::random_tensor<tensor<f32, batch, fix<8>>>({b, 8}, std::uint64_t(b));
    const auto [ez, ew] = m(x);
    const auto f = fused({x.erase()});
    const auto u = separate({x.erase()});
    REQUIRE(f.size() == 2);
    for (index_t i = 0; i < ez.numel(); ++i) {
      REQUIRE(f[0].data<float>()[i] == u[0].data<float>()[i]);
      REQUIRE(f[1].data<float>()[i] == u[1].data<float>()[i]);
      REQUIRE(f[0].data<float>()[i] == ez.data()[i]);
      REQUIRE(f[1].data<float>()[i] == ew.data()[i]);
    }
  }
  CHECK(fused.report().chained == 5);  // mul, add, relu, div, sub after the first sub
  CHECK(separate.report().chained == 0);
  CHECK(fused.report().steps + 5 == separate.report().steps);
  CHECK(fused.report().to_string().find("5 pointwise ops chained") != std::string::npos);
}

TEST_CASE("eigen plan: a new activation (hardswish) fuses into the GEMM epilogue and chains, by its op type") {
  using namespace plan_models;
  hardswish_mlp m;
  init_module(m, 21);
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, shape<batch, fix<16>>>(shape<batch, fix<16>>(batch(2), {}))));
  const auto x = typex_test::random_tensor<tensor<f32, batch, fix<16>>>({6, 16}, 8);
  for (int threads : {1, 2}) {
    const thread_count tc(threads);
    const auto r = check_planned(m, ep, x);
    CHECK(r.fused == 2);    // fc1 + hardswish, fc2 + hardswish
    CHECK(r.chained == 2);  // + 1.0 and the last hardswish, in the mul's pass
    CHECK(r.steps == 3);
    CHECK(r.allocating_ops.empty());
  }
  // the fused epilogue gives the eager kernel's bits
  auto unfused = program_module<eigen_backend>(ep, eigen::compile_options{.fuse = false});
  auto fused = program_module<eigen_backend>(ep);
  const auto a = fused({x.erase()}), b = unfused({x.erase()});
  for (index_t i = 0; i < a[0].numel(); ++i) CHECK(a[0].data<float>()[i] == b[0].data<float>()[i]);
}

// A user-defined activation, defined as a user would (no typex internals): softsign(x) = x / (1 + |x|).
namespace user_ops {
struct softsign_op {
  static constexpr std::string_view target = "mylib.softsign.default";
  static constexpr std::string_view schema = "mylib::softsign(Tensor self) -> Tensor";
  static constexpr bool epilogue = true;  // an activation: may run in the epilogue of the op before it
  template <class X>
  static constexpr X result(const X& x) {
    return x;
  }
  template <class M, class X, class Y>
  void math(M m, const X& x, Y& y) const {
    y = x / (m.k(1) + m.abs(x));
  }
};
template <class X>
auto softsign(const X& x) {
  return apply_op(softsign_op{}, nullptr, x);
}
struct softsign_mlp {
  nn::Linear<16, 32> fc1;
  nn::Linear<32, 8> fc2;
  template <class X>
  auto operator()(const X& x) const {
    return softsign(fc2(softsign(fc1(x))));
  }
};
}  // namespace user_ops
BOOST_HANA_ADAPT_STRUCT(user_ops::softsign_mlp, fc1, fc2);

template <>
struct typex::eigen::kernel<user_ops::softsign_op> {  // its eager kernel: f32, one number at a time
  static any_tensor run(const kernel_args& a) {
    any_tensor out = a.tensor("self").clone();
    float* p = out.data<float>();
    for (index_t i = 0; i < out.numel(); ++i) user_ops::softsign_op{}.math(scalar_math<float>{}, p[i], p[i]);
    return out;
  }
};

TEST_CASE("eigen plan: a user's activation fuses like a built-in one once registered with register_activation") {
  using namespace user_ops;
  softsign_mlp m;
  init_module(m, 33);
  using B = plan_models::batch;
  const auto ep = export_program(m, input<"x">(tensor_spec<f32, shape<B, fix<16>>>(shape<B, fix<16>>(B(2), {}))));
  const auto x = typex_test::random_tensor<tensor<f32, B, fix<16>>>({5, 16}, 3);
  // a kernel only: it runs, as a step of its own after each GEMM
  eigen::register_kernel<softsign_op>();
  auto separate = program_module<eigen_backend>(ep);
  const auto s = separate({x.erase()});
  CHECK(separate.report().fused == 0);
  // its place in the fusion rule too: fused into both GEMMs' epilogues, from several threads at once
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) threads.emplace_back([] { eigen::register_activation<softsign_op>(); });
  for (auto& t : threads) t.join();
  for (int n : {1, 2}) {
    const thread_count tc(n);
    const auto r = check_planned(m, ep, x);  // (== eager within 1e-6, nothing allocated per call)
    CHECK(r.fused == 2);
    CHECK(r.steps == 2);
  }
  auto fused = program_module<eigen_backend>(ep);
  const auto f = fused({x.erase()});
  for (index_t i = 0; i < f[0].numel(); ++i) CHECK(f[0].data<float>()[i] == doctest::Approx(s[0].data<float>()[i]).epsilon(1e-6));
}

// A convolution whose weights are a program input, not a lifted constant: its step packs them on
// every call (Winograd's transform included, into per-thread scratch), and still allocates nothing.
namespace plan_models {
struct conv_by_input {
  template <class X, class W>
  auto operator()(const X& x, const W& w) const {
    return relu(conv2d<conv2d_options{.padding = {1, 1}}>(x, w));
  }
};
}  // namespace plan_models
BOOST_HANA_ADAPT_STRUCT(plan_models::conv_by_input);

TEST_CASE("eigen plan: a Winograd convolution with weights given as an input packs them per call without allocating") {
  using XS = shape<fix<1>, fix<8>, fix<9>, fix<7>>;
  using WS = shape<fix<16>, fix<8>, fix<3>, fix<3>>;
  const auto ep = export_program(plan_models::conv_by_input{}, input<"x">(tensor_spec<f32, XS>()), input<"w">(tensor_spec<f32, WS>()));
  const auto x = typex_test::random_tensor<tensor<f32, fix<1>, fix<8>, fix<9>, fix<7>>>({1, 8, 9, 7}, 4);
  auto w = typex_test::random_tensor<tensor<f32, fix<16>, fix<8>, fix<3>, fix<3>>>({16, 8, 3, 3}, 5);
  auto run = program_module<eigen_backend>(ep);
  const std::vector<any_tensor> inputs{x.erase(), w.erase()};
  std::vector<any_tensor> out;
  run.run(inputs, out);
  CHECK(run.report().winograd == 1);
  run.run(inputs, out);
  const long before = typex_test::allocation_count();
  run.run(inputs, out);
  CHECK(typex_test::allocation_count() - before == 0);
  const auto eager = plan_models::conv_by_input{}(x, w).erase();
  REQUIRE(out[0].extents() == eager.extents());
  for (index_t i = 0; i < eager.numel(); ++i) CHECK(out[0].data<float>()[i] == doctest::Approx(eager.data<float>()[i]).epsilon(1e-5));
  // new weights in the same tensor: the next call packs them (nothing kept from the last call)
  for (index_t i = 0; i < w.numel(); ++i) w.data()[i] *= -2.0f;
  run.run(inputs, out);
  const auto again = plan_models::conv_by_input{}(x, w).erase();
  for (index_t i = 0; i < again.numel(); ++i) CHECK(out[0].data<float>()[i] == doctest::Approx(again.data<float>()[i]).epsilon(1e-5));
}

// A 2x2 max-pool after a Winograd convolution is done by its output transform (each pool window is
// one tile): odd outputs whose last half tiles the pool drops, padding 1 and 0, relu and gelu
// before the pool, one image split over 2 threads (a 40 x 40 image in 4 pieces, also with a pool
// that is not one tile a window) and three images; eager runs the convolution and the pool as two
// kernels. A NaN in the input comes out where eager puts it.
namespace plan_models {
struct winograd_pool_relu {
  nn::Conv2d<8, 16, 3, conv2d_options{.padding = {1, 1}}> conv;  // [13, 11] -> [13, 11] -> pool [6, 5]
  template <class X>
  auto operator()(const X& x) const {
    return max_pool2d<pool2d_options{.kernel = {2, 2}}>(relu(conv(x)));
  }
};
struct winograd_pool_gelu {
  nn::Conv2d<16, 16, 3> conv;  // [7, 9] -> [5, 7] -> pool [2, 3]
  template <class X>
  auto operator()(const X& x) const {
    return max_pool2d<pool2d_options{.kernel = {2, 2}}>(gelu(conv(x)));
  }
};
// One 40 x 40 image: 400 tiles, handed out in 4 pieces on 2 threads (winograd_piece); the 3 x 3
// stride-1 pool is not one tile per window: the convolution goes to the scratch's end and is pooled
// from there, past every participant's work area
template <bool TilePool>
struct winograd_wide {
  nn::Conv2d<8, 16, 3, conv2d_options{.padding = {1, 1}}> conv;  // [40, 40] -> [40, 40]
  template <class X>
  auto operator()(const X& x) const {
    if constexpr (TilePool) return max_pool2d<pool2d_options{.kernel = {2, 2}}>(relu(conv(x)));
    else return max_pool2d<pool2d_options{.kernel = {3, 3}, .stride = {1, 1}}>(relu(conv(x)));
  }
};
}  // namespace plan_models
BOOST_HANA_ADAPT_STRUCT(plan_models::winograd_pool_relu, conv);
BOOST_HANA_ADAPT_STRUCT(plan_models::winograd_pool_gelu, conv);
BOOST_HANA_ADAPT_STRUCT(plan_models::winograd_wide<true>, conv);
BOOST_HANA_ADAPT_STRUCT(plan_models::winograd_wide<false>, conv);

namespace {
// check_planned for a Winograd convolution with its activation and max-pool fused into its step
template <class M, class In>
void check_winograd_pooled(const M& model, const exported_program& ep, const In& x) {
  const auto r = check_planned(model, ep, x);
  CHECK(r.winograd == 1);
  CHECK(r.fused == 2);  // the activation, the pool
}
}  // namespace

TEST_CASE("eigen plan: a max-pool on Winograd's tiles (odd sizes, padding, relu and gelu, NaN) equals conv then pool") {
  using namespace plan_models;
  winograd_pool_relu r;
  winograd_pool_gelu g;
  init_module(r, 12);
  init_module(g, 13);
  using rs = shape<batch, fix<8>, fix<13>, fix<11>>;
  using gs = shape<batch, fix<16>, fix<7>, fix<9>>;
  const auto er = export_program(r, input<"x">(tensor_spec<f32, rs>(rs(batch(2), {}, {}, {}))));
  const auto eg = export_program(g, input<"x">(tensor_spec<f32, gs>(gs(batch(2), {}, {}, {}))));
  for (index_t n : {1, 3})
    for (int threads : {1, 2}) {
      const thread_count tc(threads);
      const auto xr = typex_test::random_tensor<tensor<f32, batch, fix<8>, fix<13>, fix<11>>>({n, 8, 13, 11}, 6);
      const auto xg = typex_test::random_tensor<tensor<f32, batch, fix<16>, fix<7>, fix<9>>>({n, 16, 7, 9}, 7);
      check_winograd_pooled(r, er, xr);
      check_winograd_pooled(g, eg, xg);
    }
  // one wide image on 1 and 2 threads, pooled on the tiles and from the scratch: the same values
  winograd_wide<true> wt;
  winograd_wide<false> wf;
  init_module(wt, 14);
  init_module(wf, 14);
  using ws = shape<batch, fix<8>, fix<40>, fix<40>>;
  const auto et = export_program(wt, input<"x">(tensor_spec<f32, ws>(ws(batch(1), {}, {}, {}))));
  const auto ef = export_program(wf, input<"x">(tensor_spec<f32, ws>(ws(batch(1), {}, {}, {}))));
  const auto xw = typex_test::random_tensor<tensor<f32, batch, fix<8>, fix<40>, fix<40>>>({1, 8, 40, 40}, 9);
  std::vector<any_tensor> first;
  for (int threads : {1, 2}) {
    const thread_count tc(threads);
    check_winograd_pooled(wt, et, xw);
    check_winograd_pooled(wf, ef, xw);
    const auto run_once = [&](const exported_program& ep) { return program_module<eigen_backend>(ep)({xw.erase()})[0]; };
    const std::vector<any_tensor> outs{run_once(et), run_once(ef)};
    if (threads == 1) first = outs;
    for (std::size_t m = 0; m < outs.size(); ++m) {
      INFO("model " << m << ", " << threads << " threads");
      REQUIRE(outs[m].numel() == first[m].numel());
      // (the pieces are whole panels and each output pixel's sums run in the same order: the same bits)
      CHECK(std::memcmp(outs[m].data<float>(), first[m].data<float>(), sizeof(float) * static_cast<std::size_t>(outs[m].numel())) == 0);
    }
  }
  auto x = typex_test::random_tensor<tensor<f32, batch, fix<8>, fix<13>, fix<11>>>({1, 8, 13, 11}, 8);
  x.data()[3 * 13 * 11 + 5 * 11 + 4] = std::numeric_limits<float>::quiet_NaN();  // channel 3, row 5, column 4
  const auto eager = r(x).erase();
  const auto out = program_module<eigen_backend>(er)({x.erase()});
  int nans = 0;
  for (index_t i = 0; i < eager.numel(); ++i) {
    const float a = out[0].data<float>()[i], b = eager.data<float>()[i];
    CHECK(std::isnan(a) == std::isnan(b));
    if (!std::isnan(b)) CHECK(a == doctest::Approx(b).epsilon(1e-6));
    nans += std::isnan(a) ? 1 : 0;
  }
  CHECK(nans > 0);
}

// compile_options{.winograd = false}: the same convolution by im2col. Non-finite inputs: a NaN
// reaches exactly the outputs whose 3x3 window covers it on both paths (the transforms' nonzero
// pattern is the convolution's); an infinity gives +-inf there by im2col, and inf or NaN (the
// transforms subtract) by Winograd's tiles — never a finite number, never outside those windows.
TEST_CASE("eigen plan: compile_options{.winograd = false} convolves by im2col, and NaN or inf reach only the windows that cover them") {
  using XS = shape<fix<1>, fix<8>, fix<9>, fix<7>>;
  using WS = shape<fix<16>, fix<8>, fix<3>, fix<3>>;
  const auto ep = export_program(plan_models::conv_by_input{}, input<"x">(tensor_spec<f32, XS>()), input<"w">(tensor_spec<f32, WS>()));
  auto x = typex_test::random_tensor<tensor<f32, fix<1>, fix<8>, fix<9>, fix<7>>>({1, 8, 9, 7}, 9);
  const auto w = typex_test::random_tensor<tensor<f32, fix<16>, fix<8>, fix<3>, fix<3>>>({16, 8, 3, 3}, 10);
  auto tiles = program_module<eigen_backend>(ep);
  auto direct = program_module<eigen_backend>(ep, eigen::compile_options{.winograd = false});
  const auto a = tiles({x.erase(), w.erase()}), b = direct({x.erase(), w.erase()});
  CHECK(tiles.report().winograd == 1);
  CHECK(direct.report().winograd == 0);
  for (index_t i = 0; i < a[0].numel(); ++i) CHECK(a[0].data<float>()[i] == doctest::Approx(b[0].data<float>()[i]).epsilon(1e-5));
  const index_t at = (2 * 9 + 4) * 7 + 3;  // channel 2, row 4, column 3
  for (const float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    x.data()[at] = bad;
    const auto an = tiles({x.erase(), w.erase()}), bn = direct({x.erase(), w.erase()});
    int covered_count = 0;
    for (index_t o = 0; o < 16; ++o)
      for (index_t y = 0; y < 9; ++y)
        for (index_t xx = 0; xx < 7; ++xx) {
          const index_t i = (o * 9 + y) * 7 + xx;
          const float p = an[0].data<float>()[i], q = bn[0].data<float>()[i];
          const bool covered = std::abs(y - 4) <= 1 && std::abs(xx - 3) <= 1;  // (padding 1: output (y, x)'s window is centred on it)
          INFO("bad=" << bad << " o=" << o << " y=" << y << " x=" << xx);
          if (!covered) {
            CHECK(std::isfinite(p));
            CHECK(std::isfinite(q));
            continue;
          }
          ++covered_count;
          // (relu(-inf) = 0: a covered output may be 0 where the sum is -inf, on both paths)
          if (std::isnan(bad)) CHECK((std::isnan(p) && std::isnan(q)));
          else CHECK((std::isinf(q) || q == 0.0f));
          if (!std::isnan(bad)) CHECK((!std::isfinite(p) || (p == 0.0f && q == 0.0f)));
        }
    CHECK(covered_count == 16 * 9);
  }
}
