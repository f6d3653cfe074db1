// The reference models on the CUDA backend, on the emulated device (the lowering, launch records,
// kernels and cuBLASLt descriptors a GPU gets): the MLP, the CNN (implicit-GEMM conv2d with its relu
// in the epilogue, max pooling) and the transformer encoder block (layer norm, batched matmuls
// reading the transposed keys in place, softmax, slices of the fused in-projection) of
// tests/data/parity/models.txt, against PyTorch's outputs and the Eigen backend; then the ops this
// backend added, at the shapes that take each path of their lowering (strided reductions, matmul
// operands read transposed, broadcast and copied, grouped and dilated convolutions, pools with
// padding), the index check, dropout masks, torch's edge conventions, batch and group norm.
#include "../backend_axis.hpp"
#include "../cuda_axis.hpp"
#include "../cuda_patterns.hpp"
#include "../model_cases.hpp"
#include "../support.hpp"

#include <typex/backend/cuda.hpp>
#include <typex/backend/cuda/emulated_device.hpp>
#include <typex/backend/eigen.hpp>

#include <cmath>
#include <limits>
#include <tuple>
#include <string>
#include <vector>

using namespace typex;

namespace {

using typex_test::pattern;

// The largest difference of two f32 or f64 tensors of one dtype and shape; infinite where one holds
// a NaN and the other does not.
double worst_difference(const any_tensor& got, const any_tensor& want) {
  REQUIRE(got.scalar_type() == want.scalar_type());
  REQUIRE(got.extents() == want.extents());
  REQUIRE((want.scalar_type() == dtype::f32 || want.scalar_type() == dtype::f64));
  double worst = 0;
  for (index_t k = 0; k < want.numel(); ++k) {
    const double a = want.scalar_type() == dtype::f64 ? got.data<double>()[k] : got.data<float>()[k];
    const double b = want.scalar_type() == dtype::f64 ? want.data<double>()[k] : want.data<float>()[k];
    if (std::isnan(a) || std::isnan(b)) {
      if (std::isnan(a) != std::isnan(b)) return std::numeric_limits<double>::infinity();
      continue;
    }
    worst = std::max(worst, a == b ? 0.0 : std::abs(a - b));
  }
  return worst;
}

// Runs `ep` on the Eigen backend and on the CUDA backend (emulated device); returns the largest
// difference over every output, checking dtypes and extents agree.
double cuda_vs_eigen(const exported_program& ep, const std::vector<any_tensor>& inputs, bool fuse = true) {
  const auto gpu = cuda::make_emulated_device();
  const program_module<eigen_backend> cpu_run(ep);
  const program_module<cuda_backend> gpu_run(ep, {.device = gpu, .fuse = fuse});
  std::vector<any_tensor> dev;
  for (const any_tensor& t : inputs) dev.push_back(cuda::to_device(t, gpu));
  const auto want = cpu_run(inputs);
  const auto got = gpu_run(dev);
  REQUIRE(got.size() == want.size());
  double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const any_tensor h = cuda::to_host(got[i]);
    REQUIRE(h.scalar_type() == want[i].scalar_type());
    REQUIRE(h.extents() == want[i].extents());
    if (h.scalar_type() == dtype::i64) {
      for (index_t k = 0; k < h.numel(); ++k) worst = std::max(worst, std::abs(double(h.data<std::int64_t>()[k] - want[i].data<std::int64_t>()[k])));
    } else {
      worst = std::max(worst, worst_difference(h, want[i]));
    }
  }
  return worst;
}

template <class M, class In>
void check_reference_model(const parity_models::model_case& c) {
  M m;
  load_state_dict(m, c.state);
  const auto x = In::bind(c.input, "input");
  const exported_program ep = export_program(m, input<"x">(x.spec()));
  const auto gpu = cuda::make_emulated_device();
  for (const bool fuse : {true, false}) {
    const program_module<cuda_backend> run(ep, {.device = gpu, .fuse = fuse});
    const any_tensor got = cuda::to_host(run({cuda::to_device(c.input, gpu)})[0]);
    INFO("fuse " << fuse);
    CHECK(typex_test::worst_abs_error(got, c.output) <= 2e-5);  // (PyTorch's output)
  }
  CHECK(cuda_vs_eigen(ep, {c.input}) <= 2e-5);
}

}  // namespace

namespace cuda_model_tests {
// Each op this backend added, at shapes that take each path of its lowering.
struct op_paths {
  template <class A, class B, class C, class D>
  auto operator()(const A& a, const B& b, const C& img, const D& w) const {
    // matmul: [2, 3, 4, 5] @ [5, 6] folds the batch into rows; @ bᵀ of a transposed [2, 3, 6, 5] reads
    // the transpose in place; [2, 1, 4, 5] @ [1, 3, 5, 4] broadcasts in different dims (copied)
    const auto m1 = matmul(a, transpose<-2, -1>(b));                                  // [2, 3, 4, 6]
    const auto m2 = matmul(slice<1, 0, 1>(a), transpose<-2, -1>(slice<0, 0, 1>(a)));  // [2, 1, 4, 5] @ [1, 3, 5, 4]
    const auto m3 = matmul(a, transpose<0, 1>(select<0>(select<0>(b, 0), 1)));        // [2, 3, 4, 5] @ [5, 6]ᵀ: one product
    // reductions over a middle dim, several dims, all dims; argmax; var without correction
    const auto r1 = sum<1>(m3);
    const auto r2 = amax<0, 2>(m1);
    const auto r3 = argmax<2>(m1);
    const auto r4 = var<-1>(m1, 0);
    const auto r5 = softmax<1>(m1);
    const auto r6 = mean(m2);
    // convolution: stride 2, padding 1, dilation 2, 2 groups, then relu (the epilogue); pools
    const auto c1 = relu(conv2d<conv2d_options{.stride = {2, 2}, .padding = {1, 1}, .dilation = {2, 2}, .groups = 2}>(img, w));
    const auto p1 = avg_pool2d<pool2d_options{.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}}>(img);
    const auto p2 = adaptive_avg_pool2d<3, 3>(img);
    const auto p3 = max_pool2d<pool2d_options{.kernel = {3, 2}, .stride = {1, 2}, .padding = {1, 1}, .dilation = {2, 1}}>(img);
    // shapes: a strided slice, a select, an expand, cat along a middle dim
    const auto sl = slice<3, 1, 5, 2>(img);  // [2, 4, 9, 2]
    const auto s1 = cat<1>(tensors(sl, unsqueeze<1>(select<1>(sl, 2)), slice<1, 1, 2>(sl)));
    const auto s2 = squeeze<1>(slice<1, 1, 2>(img));
    return std::tuple(m1, m2, m3, r1, r2, r3, r4, r5, r6, c1, p1, p2, p3, s1, s2);
  }
};

}  // namespace cuda_model_tests
BOOST_HANA_ADAPT_STRUCT(cuda_model_tests::op_paths);

TEST_CASE("cuda models: the MLP, CNN and transformer block of the PyTorch reference on the emulated device equal PyTorch and the Eigen backend") {
  const auto models = parity_models::read_models();
  REQUIRE(models.size() == 3);
  check_reference_model<parity_models::mlp, tensor<f32, fix<3>, fix<32>>>(models.at("mlp"));
  check_reference_model<parity_models::cnn, tensor<f32, fix<2>, fix<1>, fix<12>, fix<12>>>(models.at("cnn"));
  check_reference_model<parity_models::transformer, tensor<f32, fix<2>, fix<5>, fix<16>>>(models.at("transformer"));
}

TEST_CASE("cuda models: matmul, reductions, convolution, pooling and shape ops on the emulated device equal the Eigen backend on every path") {
  cuda_model_tests::op_paths f;
  using A = shape<fix<2>, fix<3>, fix<4>, fix<5>>;
  using B = shape<fix<2>, fix<3>, fix<6>, fix<5>>;
  using I = shape<fix<2>, fix<4>, fix<9>, fix<7>>;
  using W = shape<fix<6>, fix<2>, fix<3>, fix<3>>;
  const std::vector<any_tensor> in{pattern({2, 3, 4, 5}, 1), pattern({2, 3, 6, 5}, 2), pattern({2, 4, 9, 7}, 3), pattern({6, 2, 3, 3}, 4)};
  const exported_program ep = export_program(f, input<"a">(tensor_spec<f32, A>()), input<"b">(tensor_spec<f32, B>()),
                                             input<"img">(tensor_spec<f32, I>()), input<"w">(tensor_spec<f32, W>()));
  for (const bool fuse : {true, false}) {
    INFO("fuse " << fuse);
    CHECK(cuda_vs_eigen(ep, in, fuse) <= 2e-5);
  }
}

namespace cuda_model_tests {
struct pick_rows {
  template <class X, class I>
  auto operator()(const X& x, const I& idx) const {
    return index_select<0>(x, idx) * 2.0;
  }
};
}  // namespace cuda_model_tests
BOOST_HANA_ADAPT_STRUCT(cuda_model_tests::pick_rows);

TEST_CASE("cuda models: an index out of range is an argument_error naming the node after the call, and the next call runs") {
  cuda_model_tests::pick_rows f;
  using n = sym<"n", 1, 64>;
  const exported_program ep = export_program(f, input<"x">(tensor_spec<f32, shape<fix<5>, fix<3>>>()),
                                             input<"idx">(tensor_spec<i64, shape<n>>(shape<n>(n(2)))));
  const auto gpu = cuda::make_emulated_device();
  const program_module<cuda_backend> run(ep, {.device = gpu});
  const any_tensor x = pattern({5, 3}, 9);
  any_tensor idx(dtype::i64, {4});
  const std::int64_t bad[4] = {0, 4, 5, 1};  // (5: past the 5 rows)
  std::copy(bad, bad + 4, idx.data<std::int64_t>());
  CHECK_THROWS_WITH_AS(run({cuda::to_device(x, gpu), cuda::to_device(idx, gpu)}),
                       doctest::Contains("node 'index_select' (aten.index_select.default) was given an index out of range"), argument_error);
  idx.data<std::int64_t>()[2] = 3;  // (the same plan, the error word reset by the call)
  const any_tensor got = cuda::to_host(run({cuda::to_device(x, gpu), cuda::to_device(idx, gpu)})[0]);
  const any_tensor want = program_module<eigen_backend>(ep)({x, idx})[0];
  CHECK(typex_test::worst_abs_error(got, want) == 0.0);
}

namespace cuda_model_tests {
struct masked {
  template <class X>
  auto operator()(const X& x) const {
    return std::tuple(x * dropout_mask(x, 0.3), dropout_mask(x, 0.6));
  }
};
}  // namespace cuda_model_tests
BOOST_HANA_ADAPT_STRUCT(cuda_model_tests::masked);

TEST_CASE("cuda models: dropout masks on the emulated device are the CPU's for the same draws, bit for bit, a new draw each call") {
  cuda_model_tests::masked f;
  const exported_program ep = export_program(f, input<"x">(tensor_spec<f32, shape<fix<7>, fix<9>>>()));
  const auto gpu = cuda::make_emulated_device();
  const program_module<cuda_backend> run(ep, {.device = gpu});
  const program_module<eigen_backend> cpu(ep);
  const any_tensor x = pattern({7, 9}, 4);
  manual_seed(123);
  const auto first = run({cuda::to_device(x, gpu)});
  const auto second = run({cuda::to_device(x, gpu)});
  manual_seed(123);
  const auto want_first = cpu({x});
  const auto want_second = cpu({x});
  for (std::size_t k = 0; k < 2; ++k) {
    CHECK(typex_test::worst_abs_error(cuda::to_host(first[k]), want_first[k]) == 0.0);
    CHECK(typex_test::worst_abs_error(cuda::to_host(second[k]), want_second[k]) == 0.0);
  }
  CHECK(typex_test::worst_abs_error(cuda::to_host(first[1]), cuda::to_host(second[1])) > 0.0);  // (a new draw)
  CHECK(get_rng_state().offset == 4);  // (two random ops, two calls)
}

namespace cuda_model_tests {
// heads the map kernel runs (an int64 or mixed-dtype add / mul / div), each followed by pointwise ops
// that the planner chains after a head: they must still run (as steps of their own); and an f32
// chain with a bool and an int64 operand in its links (those links are not the chain kernel's)
struct mixed_heads {
  template <class I, class X, class M>
  auto operator()(const I& i, const X& x, const M& mask) const {
    return std::tuple((i + 1) * 2, relu(x * mask), (i / 2) + 0.5, tanh(i * 3) - 1.0, relu((x + 1.0) * mask) * i);
  }
};
}  // namespace cuda_model_tests
BOOST_HANA_ADAPT_STRUCT(cuda_model_tests::mixed_heads);

TEST_CASE("cuda models: pointwise ops after an integer or mixed-dtype head all run, as on the Eigen backend") {
  cuda_model_tests::mixed_heads f;
  using S = shape<fix<3>, fix<4>>;
  const exported_program ep = export_program(f, input<"i">(tensor_spec<i64, S>()), input<"x">(tensor_spec<f32, S>()),
                                             input<"mask">(tensor_spec<b8, S>()));
  any_tensor i(dtype::i64, {3, 4}), mask(dtype::b8, {3, 4});
  for (index_t k = 0; k < 12; ++k) {
    i.data<std::int64_t>()[k] = k - 5;
    mask.data<bool>()[k] = k % 3 != 0;
  }
  for (const bool fuse : {true, false}) {
    INFO("fuse " << fuse);
    CHECK(cuda_vs_eigen(ep, {i, pattern({3, 4}, 8), mask}, fuse) <= 1e-6);
  }
}

namespace {
// One call of `target` on placeholders for `tensors` (numbers and lists as given), run on the Eigen
// backend and on the CUDA backend (emulated device); the outputs must agree bit for bit, NaNs where
// NaNs are (the edge cases of torch's conventions: infinities and NaNs are the point).
// One call of `target` over `args` (placeholders of g for the tensors, numbers as given), g's
// output, run on the Eigen backend and on the CUDA backend (emulated device): (Eigen's, CUDA's).
std::pair<std::vector<any_tensor>, std::vector<any_tensor>> run_call_both(ir::graph& g, std::string_view target, std::vector<ir::argument> args,
                                                                          const std::vector<any_tensor>& tensors) {
  const op_id op = find_op(target);
  std::vector<ir::tensor_meta> vals = ir::infer_meta(g, op, args);
  const ir::node_id n = g.add_call({.target = op, .args = std::move(args), .vals = std::move(vals)});
  g.set_output({ir::value_ref{n}});
  auto want = typex_test::eigen_backend_under_test().run(g, tensors);
  const auto cuda = typex_test::cuda_backend_under_test("cuda (emulated device)", cuda::make_emulated_device());
  REQUIRE(cuda.runs(g));
  auto got = cuda.run(g, tensors);
  REQUIRE(got.size() == 1);
  return {std::move(want), std::move(got)};
}

void same_edge_case(std::string_view target, const std::vector<any_tensor>& tensors, std::vector<ir::argument> tail) {
  ir::graph g;
  std::vector<ir::argument> args;
  for (const any_tensor& t : tensors)
    args.emplace_back(ir::value_ref{g.add_placeholder("arg", {t.scalar_type(), std::vector<ir::sym_expr>(t.extents().begin(), t.extents().end())})});
  args.insert(args.end(), tail.begin(), tail.end());
  const auto [want, got] = run_call_both(g, target, std::move(args), tensors);
  REQUIRE(got[0].extents() == want[0].extents());
  INFO(target);
  for (index_t i = 0; i < got[0].numel(); ++i) {
    const float a = got[0].data<float>()[i], b = want[0].data<float>()[i];
    CHECK((a == b || (std::isnan(a) && std::isnan(b))));
  }
}
any_tensor values(std::vector<index_t> extents, std::vector<float> v) {
  any_tensor t(dtype::f32, std::move(extents));
  std::copy(v.begin(), v.end(), t.data<float>());
  return t;
}
}  // namespace

TEST_CASE("cuda models: torch's edge conventions, as the Eigen backend's: the last NaN of a window takes max-pool's gradient, var past its degrees of freedom, a zero class weight") {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  // [NaN, 1, NaN] pooled by (1, 3): the gradient goes to the last NaN
  same_edge_case("typex.max_pool2d_backward.default", {values({1, 1, 1, 1}, {5.0f}), values({1, 1, 1, 3}, {nan, 1.0f, nan})},
                 {std::vector<std::int64_t>{1, 3}});
  // var and std over 2 elements with correction 2 (and 3): divided by max(N - correction, 0)
  same_edge_case("aten.var.correction", {values({3, 2}, {1, 2, 3, 3, -1, 4})}, {std::vector<std::int64_t>{1}, 2.0});
  same_edge_case("aten.std.correction", {values({3, 2}, {1, 2, 3, 3, -1, 4})}, {std::vector<std::int64_t>{1}, 3.0});
  // nll_loss, reduction none: class 1's weight is 0 and its log-probability -inf or NaN
  any_tensor target(dtype::i64, {3});
  target.data<std::int64_t>()[0] = 1, target.data<std::int64_t>()[1] = 1, target.data<std::int64_t>()[2] = 0;
  same_edge_case("aten.nll_loss.default", {values({3, 2}, {-1, -inf, -2, nan, -3, -4}), target, values({2}, {1, 0})},
                 {std::int64_t{0}});
}

namespace cuda_model_tests {
// a convolution block with batch norm (evaluation mode: its running statistics) and group norm
struct normed_block {
  nn::Conv2d<3, 8, 3> conv;
  nn::BatchNorm2d<8> bn;
  nn::GroupNorm<4, 8> gn;
  template <class X>
  auto operator()(const X& x) const {
    return gn(relu(bn(conv(x))));
  }
};
}  // namespace cuda_model_tests
BOOST_HANA_ADAPT_STRUCT(cuda_model_tests::normed_block, conv, bn, gn);

TEST_CASE("cuda models: batch norm in evaluation mode and group norm after a convolution equal the Eigen backend") {
  cuda_model_tests::normed_block m;
  init_module(m, 5);
  // running statistics that are not the initial zeros and ones, and an affine that is not the identity
  for (index_t c = 0; c < 8; ++c) {
    m.bn.running_mean.data()[c] = 0.1f * static_cast<float>(c) - 0.3f;
    m.bn.running_var.data()[c] = 0.5f + 0.2f * static_cast<float>(c);
    m.gn.weight.data()[c] = 1.0f + 0.05f * static_cast<float>(c);
    m.gn.bias.data()[c] = 0.02f * static_cast<float>(c);
  }
  using batch = sym<"batch", 1, 16>;
  using xs = shape<batch, fix<3>, fix<9>, fix<9>>;
  const exported_program ep = export_program(eval(m), input<"x">(tensor_spec<f32, xs>(xs(batch(2), {}, {}, {}))));
  for (const index_t b : {2, 5}) {
    INFO("batch " << b);
    CHECK(cuda_vs_eigen(ep, {pattern({b, 3, 9, 9}, static_cast<std::uint64_t>(b))}) <= 2e-5);
  }
}

namespace cuda_model_tests {
// conv2d + bias + relu with few output tiles over a long reduction (K = 60 x 3 x 3 = 540 terms per
// group): the split-K path of the conv kernel
struct long_reduction {
  template <class X, class W, class B>
  auto operator()(const X& x, const W& w, const B& b) const {
    return relu(conv2d<conv2d_options{.padding = {1, 1}, .groups = 2}>(x, w, b));
  }
};
}  // namespace cuda_model_tests
BOOST_HANA_ADAPT_STRUCT(cuda_model_tests::long_reduction);

TEST_CASE("cuda models: a convolution with few output tiles over a long reduction splits K across blocks and equals the Eigen backend") {
  // the geometry: 2 groups of 120 / 2 x 3 x 3 = 540 terms (34 slabs, the last one partial) over 2 x 5 x 5
  // pixels: one tile a group, so K splits (4 stretches of 9, 9, 9 and 7 slabs)
  cuda::conv_params cp{};
  cp.n = 2, cp.c = 120, cp.h = 5, cp.w = 5, cp.oc = 6, cp.kh = 3, cp.kw = 3, cp.oh = 5, cp.ow = 5, cp.groups = 2;
  CHECK(cuda::conv_k_splits(cp) == 4);
  // the benchmark CNN's weight gradients at batch 32 split too (conv2's: [32, 32, 26, 26] by the
  // output gradient [64, 32, 24, 24] as its weight), a large forward convolution does not
  cuda::conv_params wg{};
  wg.n = 32, wg.c = 32, wg.h = 26, wg.w = 26, wg.oc = 64, wg.kh = 24, wg.kw = 24, wg.oh = 3, wg.ow = 3;
  CHECK(cuda::conv_k_splits(wg) > 8);
  // no stretch is empty (the kernel gives each ceil(slabs / splits) slabs): over a range of reductions
  for (std::int64_t c = 40; c <= 4000; c += 37) {
    cuda::conv_params q{};
    q.n = 1, q.c = c, q.h = 4, q.w = 4, q.oc = 8, q.kh = 3, q.kw = 3, q.oh = 4, q.ow = 4;
    const std::int64_t splits = cuda::conv_k_splits(q), slabs = (c * 9 + 15) / 16, per = (slabs + splits - 1) / splits;
    INFO("c " << c << ", " << splits << " splits of " << slabs << " slabs");
    CHECK((splits - 1) * per < slabs);
  }
  cuda::conv_params fw{};
  fw.n = 32, fw.c = 32, fw.h = 26, fw.w = 26, fw.oc = 64, fw.kh = 3, fw.kw = 3, fw.oh = 24, fw.ow = 24;
  CHECK(cuda::conv_k_splits(fw) == 1);
  cuda_model_tests::long_reduction f;
  using X = shape<fix<2>, fix<120>, fix<5>, fix<5>>;
  using W = shape<fix<6>, fix<60>, fix<3>, fix<3>>;
  const exported_program ep = export_program(f, input<"x">(tensor_spec<f32, X>()), input<"w">(tensor_spec<f32, W>()),
                                             input<"b">(tensor_spec<f32, shape<fix<6>>>()));
  const std::vector<any_tensor> in{pattern({2, 120, 5, 5}, 21), pattern({6, 60, 3, 3}, 22), pattern({6}, 23)};
  for (const bool fuse : {true, false}) {
    INFO("fuse " << fuse);
    CHECK(cuda_vs_eigen(ep, in, fuse) <= 2e-5);
  }
}

namespace {
// One call of `target` over `args` (placeholders for the tensors of `g`, numbers as given) on the
// Eigen backend and on the CUDA backend (emulated device): the largest difference of the output.
double eigen_vs_cuda_call(ir::graph& g, std::string_view target, std::vector<ir::argument> args, const std::vector<any_tensor>& tensors) {
  const auto [want, got] = run_call_both(g, target, std::move(args), tensors);
  return worst_difference(got[0], want[0]);
}
ir::value_ref placeholder(ir::graph& g, const any_tensor& t) {
  return ir::value_ref{g.add_placeholder("arg", {t.scalar_type(), std::vector<ir::sym_expr>(t.extents().begin(), t.extents().end())})};
}
any_tensor indices(std::vector<index_t> extents, std::vector<std::int64_t> v) {
  any_tensor t(dtype::i64, std::move(extents));
  std::copy(v.begin(), v.end(), t.data<std::int64_t>());
  return t;
}
}  // namespace

TEST_CASE("cuda models: spatial cross entropy, embedding gradients by frequency and a cat of mixed dtypes equal the Eigen backend") {
  // cross entropy over [N, C, H, W] scores and an [N, H, W] target: class weights, ignored
  // positions, every reduction (a row per (image, pixel), its scores H W apart)
  const any_tensor scores = pattern({2, 4, 3, 5}, 31);
  std::vector<std::int64_t> t(30);
  for (std::size_t k = 0; k < t.size(); ++k) t[k] = k % 7 == 3 ? -100 : static_cast<std::int64_t>((k * 5 + 1) % 4);
  const any_tensor target = indices({2, 3, 5}, t), weight = values({4}, {0.5f, 1.0f, 2.0f, 0.25f});
  for (const std::int64_t reduction : {0, 1, 2}) {
    INFO("reduction " << reduction);
    ir::graph g;
    const ir::value_ref s = placeholder(g, scores), tg = placeholder(g, target), w = placeholder(g, weight);
    CHECK(eigen_vs_cuda_call(g, "aten.cross_entropy_loss.default", {s, tg, w, reduction, std::int64_t{-100}, 0.0},
                             {scores, target, weight}) <= 1e-5);
  }
  // embedding's backward scaled by each index's frequency (index 1 three times, 4 twice), with and
  // without a padding index, f32 and f64
  const any_tensor idx = indices({2, 4}, {1, 2, 1, 4, 0, 1, 4, 3});
  for (const dtype dt : {dtype::f32, dtype::f64}) {
    for (const std::int64_t pad : {std::int64_t{-1}, std::int64_t{2}}) {
      INFO(name(dt) << ", padding_idx " << pad);
      const any_tensor grad = dt == dtype::f64 ? typex_test::to_f64(pattern({2, 4, 3}, 32)) : pattern({2, 4, 3}, 32);
      ir::graph g;
      const ir::value_ref gr = placeholder(g, grad), ix = placeholder(g, idx);
      CHECK(eigen_vs_cuda_call(g, "aten.embedding_dense_backward.default", {gr, ix, std::int64_t{6}, pad, true}, {grad, idx}) <=
            (dt == dtype::f64 ? 1e-12 : 1e-6));
    }
  }
  // cat of f32, int64 and bool tensors: promoted to f32 (the map kernel converts, then copies)
  {
    any_tensor b(dtype::b8, {2, 1});
    b.data<bool>()[0] = true, b.data<bool>()[1] = false;
    const any_tensor f = pattern({2, 3}, 33), i = indices({2, 2}, {-3, 7, 0, 12});
    ir::graph g;
    const ir::value_ref pf = placeholder(g, f), pi = placeholder(g, i), pb = placeholder(g, b);
    CHECK(eigen_vs_cuda_call(g, "aten.cat.default", {std::vector<ir::value_ref>{pf, pi, pb, pf}, std::int64_t{1}}, {f, i, b}) == 0.0);
  }
}

TEST_CASE("cuda models: f64 convolutions (split K and not), products and pooling gradients equal the Eigen backend") {
  cuda_model_tests::long_reduction f;
  using X = shape<fix<2>, fix<120>, fix<5>, fix<5>>;
  using W = shape<fix<6>, fix<60>, fix<3>, fix<3>>;
  const exported_program ep = export_program(f, input<"x">(tensor_spec<f64, X>()), input<"w">(tensor_spec<f64, W>()),
                                             input<"b">(tensor_spec<f64, shape<fix<6>>>()));
  const std::vector<any_tensor> in{typex_test::to_f64(pattern({2, 120, 5, 5}, 21)), typex_test::to_f64(pattern({6, 60, 3, 3}, 22)),
                                   typex_test::to_f64(pattern({6}, 23))};
  for (const bool fuse : {true, false}) {
    INFO("fuse " << fuse);
    CHECK(cuda_vs_eigen(ep, in, fuse) <= 1e-12);
  }
  // a convolution of one output tile a group (no split), then a linear layer and a batched product
  const any_tensor x = typex_test::to_f64(pattern({3, 4, 6, 6}, 24)), w = typex_test::to_f64(pattern({6, 2, 3, 3}, 25));
  {
    ir::graph g;
    const ir::value_ref px = placeholder(g, x), pw = placeholder(g, w);
    CHECK(eigen_vs_cuda_call(g, "aten.conv2d.default", {px, pw, ir::none_t{}, std::vector<std::int64_t>{2, 1},
                                                        std::vector<std::int64_t>{1, 0}, std::vector<std::int64_t>{1, 2}, std::int64_t{2}},
                             {x, w}) <= 1e-12);
  }
  {
    const any_tensor a = typex_test::to_f64(pattern({5, 7}, 26)), lw = typex_test::to_f64(pattern({3, 7}, 27)),
                     lb = typex_test::to_f64(pattern({3}, 28));
    ir::graph g;
    const ir::value_ref pa = placeholder(g, a), pw = placeholder(g, lw), pb = placeholder(g, lb);
    CHECK(eigen_vs_cuda_call(g, "aten.linear.default", {pa, pw, pb}, {a, lw, lb}) <= 1e-12);
  }
  {
    const any_tensor a = typex_test::to_f64(pattern({2, 5, 7}, 29)), b = typex_test::to_f64(pattern({2, 7, 3}, 30));
    ir::graph g;
    const ir::value_ref pa = placeholder(g, a), pb = placeholder(g, b);
    CHECK(eigen_vs_cuda_call(g, "aten.bmm.default", {pa, pb}, {a, b}) <= 1e-12);
  }
  // pooling gradients of f64 planes: max (stride 1: overlapping windows), average with padding
  const any_tensor img = typex_test::to_f64(pattern({2, 3, 6, 5}, 34));
  {
    const any_tensor go = typex_test::to_f64(pattern({2, 3, 5, 4}, 35));
    ir::graph g;
    const ir::value_ref pg = placeholder(g, go), pi = placeholder(g, img);
    CHECK(eigen_vs_cuda_call(g, "typex.max_pool2d_backward.default",
                             {pg, pi, std::vector<std::int64_t>{2, 2}, std::vector<std::int64_t>{1, 1}}, {go, img}) <= 1e-12);
  }
  {
    const any_tensor go = typex_test::to_f64(pattern({2, 3, 4, 3}, 36));
    ir::graph g;
    const ir::value_ref pg = placeholder(g, go), pi = placeholder(g, img);
    CHECK(eigen_vs_cuda_call(g, "aten.avg_pool2d_backward.default",
                             {pg, pi, std::vector<std::int64_t>{2, 2}, std::vector<std::int64_t>{2, 2}, std::vector<std::int64_t>{1, 1},
                              false, true, ir::none_t{}},
                             {go, img}) <= 1e-12);
  }
}
