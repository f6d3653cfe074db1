// Tests for typex/backend/eigen/kernels.hpp against values computed by hand from each op's
// definition (the model tests compare exported programs with eager mode, which share these
// kernels; these pin the kernels themselves).
#include "../support.hpp"

#include <typex/backend/eigen.hpp>

#include <cmath>

using namespace typex;

namespace {
template <class T>
T iota(float start = 0.0f) {
  T t;
  for (index_t i = 0; i < t.numel(); ++i) t.data()[i] = static_cast<typename T::value_type>(start + static_cast<float>(i));
  return t;
}
}  // namespace

TEST_CASE("eigen kernels: conv2d, pools and adaptive pooling follow their definitions") {
  const auto x = iota<tensor<f32, fix<1>, fix<1>, fix<3>, fix<3>>>();  // [[0 1 2][3 4 5][6 7 8]]
  tensor<f32, fix<1>, fix<1>, fix<2>, fix<2>> w;
  w.fill(1.0f);
  const auto c = conv2d(x, w);  // 2x2 window sums
  CHECK(c(0, 0, 0, 0) == 8.0f);
  CHECK(c(0, 0, 1, 1) == 24.0f);
  const tensor<f32, fix<1>> b = tensor<f32, fix<1>>::from_values({}, {0.5f});
  const auto cp = conv2d<conv2d_options{.padding = {1, 1}}>(x, w, b);  // 4x4, corners see one element
  static_assert(std::is_same_v<decltype(cp)::shape_type, shape_c<1, 1, 4, 4>>);
  CHECK(cp(0, 0, 0, 0) == 0.5f);
  CHECK(cp(0, 0, 3, 3) == 8.5f);

  const auto mp = max_pool2d<pool2d_options{.kernel = {2, 2}, .stride = {1, 1}}>(x);
  CHECK(mp(0, 0, 0, 0) == 4.0f);
  CHECK(mp(0, 0, 1, 1) == 8.0f);
  // count_include_pad: the corner window holds x[0][0] and three padded zeros
  const auto ap = avg_pool2d<pool2d_options{.kernel = {2, 2}, .stride = {2, 2}, .padding = {1, 1}}>(x);
  CHECK(ap(0, 0, 0, 0) == doctest::Approx(0.0 / 4));
  CHECK(ap(0, 0, 1, 1) == doctest::Approx((4.0 + 5 + 7 + 8) / 4));
  const auto ad = adaptive_avg_pool2d<2, 2>(x);  // windows [0,2) x [0,2) ... overlapping at 1
  CHECK(ad(0, 0, 0, 0) == doctest::Approx((0.0 + 1 + 3 + 4) / 4));
  CHECK(ad(0, 0, 1, 1) == doctest::Approx((4.0 + 5 + 7 + 8) / 4));
}

// conv2d against its definition (double accumulation) where the PyTorch data would be large:
// images whose packed columns take several ~192 KiB blocks, two k blocks, padding (the general
// im2col path) and none (the direct one), strides, dilations, groups; and the Winograd path (3x3,
// stride 1, >= 8 input and >= 16 output channels): even and odd output sizes (a last tile cut in
// half), paddings 0, 1, 2, tile chunks that end mid-row and mid-panel, two k blocks of channels,
// one image split over 2 threads and two images one per thread.
TEST_CASE("eigen kernels: conv2d equals its definition through every path of the packed im2col and of Winograd's tiles") {
  struct geometry { index_t n, c, h, w, oc, k, sh, sw, ph, pw, dh, dw, groups; bool winograd; };
  const geometry cases[] = {
      {2, 32, 14, 14, 8, 3, 1, 1, 1, 1, 1, 1, 1, false},  // padded, 288 kernel rows, 196 pixels: two column blocks
      {1, 64, 12, 12, 6, 3, 1, 1, 0, 0, 1, 1, 1, false},  // 576 kernel rows: two k blocks, direct path
      {1, 64, 20, 20, 4, 3, 2, 2, 1, 1, 1, 1, 2, false},  // strides, padding, groups
      {2, 8, 30, 30, 16, 3, 1, 1, 0, 0, 2, 2, 1, false},  // dilation, direct path, 676 pixels: two column blocks
      {1, 3, 9, 40, 5, 2, 3, 1, 0, 0, 1, 3, 1, false},    // row stride and column dilation on the direct path
      {1, 32, 26, 26, 64, 3, 1, 1, 0, 0, 1, 1, 1, true},  // the reference CNN's second layer: 12 x 12 tiles
      {2, 16, 11, 9, 16, 3, 1, 1, 1, 1, 1, 1, 1, true},   // odd output (11 x 9): half tiles at the right and bottom
      {1, 24, 40, 37, 20, 3, 1, 1, 2, 1, 1, 1, 1, true},  // 42 x 37 output, 21 x 19 tiles: chunks end mid-row
      {1, 400, 6, 7, 16, 3, 1, 1, 1, 1, 1, 1, 1, true},   // 400 channels: two k blocks of the packed V
      {1, 8, 3, 3, 16, 3, 1, 1, 0, 0, 1, 1, 1, true},     // one output pixel: one tile, three quarters outside
      // kernels larger than their output (a weight gradient's convolution): one GEMM over every image
      {4, 8, 14, 14, 20, 12, 1, 1, 0, 0, 1, 1, 1, false},  // 1152 kernel rows: several blocks of the reduction, 36 columns
      {3, 5, 13, 11, 7, 9, 2, 1, 1, 2, 1, 1, 1, false},    // padding and a row stride: 4 x 7 outputs, zeros gathered
      {2, 6, 16, 15, 9, 6, 1, 1, 0, 0, 2, 2, 1, false},    // dilation
      {2, 2, 56, 56, 3, 29, 1, 1, 0, 0, 1, 1, 1, false},   // 1568 columns: two column chunks
      {5, 16, 7, 7, 10, 7, 1, 1, 0, 0, 1, 1, 1, false},    // the kernel covers the image: 1 x 1 outputs (a linear layer)
      {0, 4, 9, 9, 3, 8, 1, 1, 0, 0, 1, 1, 1, false},      // no images: an empty output
  };
  for (const geometry& q : cases) {
    const index_t icg = q.c / q.groups, ocg = q.oc / q.groups;
    const index_t oh = (q.h + 2 * q.ph - q.dh * (q.k - 1) - 1) / q.sh + 1, ow = (q.w + 2 * q.pw - q.dw * (q.k - 1) - 1) / q.sw + 1;
    any_tensor x(dtype::f32, {q.n, q.c, q.h, q.w}), w(dtype::f32, {q.oc, icg, q.k, q.k}), b(dtype::f32, {q.oc});
    std::uint32_t seed = 7;
    for (any_tensor* t : {&x, &w, &b})
      for (index_t i = 0; i < t->numel(); ++i) {
        seed = seed * 1664525u + 1013904223u;
        t->data<float>()[i] = static_cast<float>(seed >> 8) / float(1 << 24) - 0.5f;
      }
    const std::vector<ir::argument> args{ir::value_ref{0}, ir::value_ref{1}, ir::value_ref{2}, std::vector<std::int64_t>{q.sh, q.sw},
                                         std::vector<std::int64_t>{q.ph, q.pw}, std::vector<std::int64_t>{q.dh, q.dw},
                                         std::int64_t{q.groups}};
    const std::vector<const any_tensor*> tensors{&x, &w, &b, nullptr, nullptr, nullptr, nullptr};
    for (int threads : {1, 2}) {
      const int before = eigen::set_num_threads(threads);
      const any_tensor out = eigen::run_kernel(eigen::kernel_args(op_id_of<aten::conv2d>, args, tensors, nullptr));
      eigen::set_num_threads(before);
      REQUIRE(out.extents() == std::vector<index_t>{q.n, q.oc, oh, ow});
      double worst = 0;
      for (index_t n = 0; n < q.n; ++n)
        for (index_t o = 0; o < q.oc; ++o)
          for (index_t y = 0; y < oh; ++y)
            for (index_t xx = 0; xx < ow; ++xx) {
              double sum = b.data<float>()[o];
              const index_t gi = o / ocg;
              for (index_t ci = 0; ci < icg; ++ci)
                for (index_t i = 0; i < q.k; ++i)
                  for (index_t j = 0; j < q.k; ++j) {
                    const index_t iy = y * q.sh - q.ph + i * q.dh, ix = xx * q.sw - q.pw + j * q.dw;
                    if (iy < 0 || iy >= q.h || ix < 0 || ix >= q.w) continue;
                    sum += double(x.data<float>()[((n * q.c + gi * icg + ci) * q.h + iy) * q.w + ix]) *
                           double(w.data<float>()[((o * icg + ci) * q.k + i) * q.k + j]);
                  }
              worst = std::max(worst, std::abs(sum - double(out.data<float>()[((n * q.oc + o) * oh + y) * ow + xx])));
            }
      INFO("c=" << q.c << " h=" << q.h << " w=" << q.w << " oc=" << q.oc << " threads=" << threads << " winograd=" << q.winograd);
      CHECK(worst < 1e-4);
    }
  }
}

TEST_CASE("eigen kernels: softmax, layer_norm, batch_norm") {
  const auto x = iota<tensor<f32, fix<2>, fix<3>>>();
  const auto s = softmax<-1>(x);
  const double z = 1 + std::exp(1.0) + std::exp(2.0);
  CHECK(s(1, 0) == doctest::Approx(1 / z));
  CHECK(s(1, 2) == doctest::Approx(std::exp(2.0) / z));
  CHECK(log_softmax<0>(x)(0, 0) == doctest::Approx(-std::log(1 + std::exp(3.0))));

  tensor<f32, fix<3>> w, b;
  w.fill(2.0f);
  b.fill(1.0f);
  const auto ln = layer_norm(x, w, b, 0.0);  // row [0 1 2]: mean 1, var 2/3
  CHECK(ln(0, 0) == doctest::Approx(1 - 2 / std::sqrt(2.0 / 3)));
  CHECK(ln(1, 1) == doctest::Approx(1.0));

  const auto img = iota<tensor<f32, fix<1>, fix<2>, fix<1>, fix<2>>>();  // channel 0: [0 1], 1: [2 3]
  const auto ones = tensor<f32, fix<2>>::from_values({}, {1.0f, 1.0f});
  const auto mean = tensor<f32, fix<2>>::from_values({}, {0.5f, 2.5f});
  const auto var = tensor<f32, fix<2>>::from_values({}, {0.25f, 4.0f});
  const auto bn = batch_norm(img, ones, mean, mean, var, 0.1, 0.0);  // (x - m) / sqrt(v) + m
  CHECK(bn(0, 0, 0, 1) == doctest::Approx((1 - 0.5) / 0.5 + 0.5));
  CHECK(bn(0, 1, 0, 0) == doctest::Approx((2 - 2.5) / 2 + 2.5));
}

TEST_CASE("eigen kernels: matmul broadcasting, permute, slice, embedding") {
  const auto a = iota<tensor<f32, fix<2>, fix<2>, fix<3>>>();  // two 2x3 matrices
  const auto m = iota<tensor<f32, fix<3>, fix<2>>>();          // one 3x2, broadcast over the batch
  const auto p = matmul(a, m);
  static_assert(std::is_same_v<decltype(p)::shape_type, shape_c<2, 2, 2>>);
  CHECK(p(1, 0, 1) == 6 * 1 + 7 * 3 + 8 * 5);  // row [6 7 8] . column [1 3 5]
  const auto v = matmul(a, iota<tensor<f32, fix<3>>>());      // matrix x vector
  CHECK(v(0, 1) == 3 * 0 + 4 * 1 + 5 * 2);

  const auto t = permute<2, 0, 1>(a);
  CHECK(t(2, 1, 0) == a(1, 0, 2));
  const auto sl = slice<2, 1, 3>(a);
  CHECK(sl(1, 1, 0) == a(1, 1, 1));

  const auto table = iota<tensor<f32, fix<4>, fix<2>>>();
  const auto ids = tensor<i64, fix<3>>::from_values({}, {3, 0, 3});
  const auto e = embedding(table, ids);
  CHECK(e(0, 1) == 7.0f);
  CHECK(e(1, 0) == 0.0f);
  const auto bad = tensor<i64, fix<1>>::from_values({}, {4});
  CHECK(typex_test::message_of<argument_error>([&] { (void)embedding(table, bad); }) ==
        "aten.embedding.default: index 4 is out of range for 4 embeddings");
}

// sum / mean over every dim but one contiguous block, reduced in place as [P, K, Q] (a bias
// gradient's [0, 2, 3] of [N, C, H, W]): against the definition in double, with keepdim, no dims
// kept, empty extents on either side of the block (a sum of nothing is 0, a mean NaN), and rank 0.
TEST_CASE("eigen kernels: sum and mean over a kept block, empty extents and rank 0 follow their definitions") {
  const auto run = [](op_id op, const any_tensor& x, std::vector<std::int64_t> dims, bool keep) {
    const std::vector<ir::argument> args{ir::value_ref{0}, std::move(dims), keep};
    const std::vector<const any_tensor*> tensors{&x, nullptr, nullptr};
    return eigen::run_kernel(eigen::kernel_args(op, args, tensors, nullptr));
  };
  const auto filled = [](dtype d, std::vector<index_t> e) {
    any_tensor t(d, std::move(e));
    std::uint32_t seed = 3;
    for (index_t i = 0; i < t.numel(); ++i) {
      seed = seed * 1664525u + 1013904223u;
      const double v = static_cast<double>(seed >> 8) / double(1 << 24) - 0.5;
      if (d == dtype::f32) t.data<float>()[i] = static_cast<float>(v);
      else t.data<double>()[i] = v;
    }
    return t;
  };
  const auto at = [](const any_tensor& t, index_t i) {
    return t.scalar_type() == dtype::f32 ? double(t.data<float>()[i]) : t.data<double>()[i];
  };
  for (dtype d : {dtype::f32, dtype::f64}) {
    const any_tensor x = filled(d, {3, 4, 5, 6});
    for (bool mean : {false, true}) {
      const op_id op = mean ? op_id_of<aten::mean_dim> : op_id_of<aten::sum_dim_IntList>;
      const any_tensor s = run(op, x, {0, 2, 3}, false);
      REQUIRE(s.extents() == std::vector<index_t>{4});
      CHECK(run(op, x, {0, -2, -1}, true).extents() == std::vector<index_t>{1, 4, 1, 1});
      for (index_t c = 0; c < 4; ++c) {
        double want = 0;
        for (index_t n = 0; n < 3; ++n)
          for (index_t i = 0; i < 30; ++i) want += at(x, (n * 4 + c) * 30 + i);
        if (mean) want /= 90;
        CHECK(at(s, c) == doctest::Approx(want).epsilon(d == dtype::f32 ? 1e-6 : 1e-12));
      }
      const any_tensor r = run(op, x, {0}, false);  // (Q = 30 after the block [1, 4))
      REQUIRE(r.extents() == std::vector<index_t>{4, 5, 6});
      for (index_t k = 0; k < 120; ++k) {
        const double want = (at(x, k) + at(x, 120 + k) + at(x, 240 + k)) / (mean ? 3 : 1);
        CHECK(at(r, k) == doctest::Approx(want).epsilon(d == dtype::f32 ? 1e-6 : 1e-12));
      }
      // empty on either side of the kept dim, and nothing kept
      for (const auto& [ext, dims, kept] : {std::tuple{std::vector<index_t>{0, 4}, std::vector<std::int64_t>{0}, index_t{4}},
                                            std::tuple{std::vector<index_t>{3, 0}, std::vector<std::int64_t>{1}, index_t{3}},
                                            std::tuple{std::vector<index_t>{0}, std::vector<std::int64_t>{}, index_t{1}}}) {
        const any_tensor e = run(op, any_tensor(d, ext), dims, false);
        REQUIRE(e.numel() == kept);
        for (index_t i = 0; i < kept; ++i) CHECK((mean ? std::isnan(at(e, i)) : at(e, i) == 0.0));
      }
      // rank 0: dim 0 is the value itself
      any_tensor scalar(d, {});
      if (d == dtype::f32) scalar.data<float>()[0] = 2.5f;
      else scalar.data<double>()[0] = 2.5;
      const any_tensor v = run(op, scalar, {0}, false);
      CHECK(v.rank() == 0);
      CHECK(at(v, 0) == 2.5);
    }
  }
}

// (the blocks of 256 split over the threads: 40 whole blocks and a tail of 37)
TEST_CASE("eigen kernels: gelu_backward over many blocks on 1 and 2 threads follows its definition") {
  const index_t n = 256 * 40 + 37;
  for (dtype d : {dtype::f32, dtype::f64}) {
    any_tensor g(d, {n}), x(d, {n});
    const auto set = [d](any_tensor& t, index_t i, double v) {
      if (d == dtype::f32) t.data<float>()[i] = static_cast<float>(v);
      else t.data<double>()[i] = v;
    };
    const auto at = [d](const any_tensor& t, index_t i) { return d == dtype::f32 ? double(t.data<float>()[i]) : t.data<double>()[i]; };
    for (index_t i = 0; i < n; ++i) {
      set(x, i, -4.0 + 8.0 * double(i) / double(n));
      set(g, i, std::cos(0.37 * double(i)));
    }
    for (const bool tanh_form : {false, true}) {
      const std::vector<ir::argument> args{ir::value_ref{0}, ir::value_ref{1}, std::string(tanh_form ? "tanh" : "none")};
      const std::vector<const any_tensor*> tensors{&g, &x, nullptr};
      std::vector<any_tensor> outs;
      for (int threads : {1, 2}) {
        const int before = eigen::set_num_threads(threads);
        outs.push_back(eigen::run_kernel(eigen::kernel_args(op_id_of<aten::gelu_backward>, args, tensors, nullptr)));
        eigen::set_num_threads(before);
      }
      for (const any_tensor& out : outs) {
        REQUIRE(out.extents() == std::vector<index_t>{n});
        double worst = 0;
        for (index_t i = 0; i < n; ++i) {
          const double v = at(x, i);
          double dgelu;
          if (tanh_form) {
            const double c = std::sqrt(2.0 / std::acos(-1.0)), u = c * (v + 0.044715 * v * v * v), t = std::tanh(u);
            dgelu = 0.5 * (1 + t) + 0.5 * v * (1 - t * t) * c * (1 + 3 * 0.044715 * v * v);
          } else {
            dgelu = 0.5 * (1 + std::erf(v / std::sqrt(2.0))) + v * std::exp(-0.5 * v * v) / std::sqrt(2 * std::acos(-1.0));
          }
          worst = std::max(worst, std::abs(at(out, i) - at(g, i) * dgelu));
        }
        INFO("dtype " << name(d) << ", tanh " << tanh_form);
        CHECK(worst <= (d == dtype::f32 ? 2e-6 : 1e-13));
      }
      // the same bits whatever the threads
      index_t differing = 0;
      for (index_t i = 0; i < n; ++i) differing += at(outs[0], i) == at(outs[1], i) ? 0 : 1;
      CHECK(differing == 0);
    }
  }
}
