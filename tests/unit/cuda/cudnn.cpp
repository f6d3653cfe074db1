// conv2d through cuDNN (compile_options::convolutions = conv_engine::cudnn, a build with
// TYPEX_CUDNN) on the emulated device: the descriptors dnn.hpp builds, read back with cuDNN's own
// getters; the emulated model (dnn_reference.hpp) following what the descriptors say, so that a
// planted padding, stride, group count or math type changes the result; programs and a training
// step of the reference CNN equal to the Eigen backend, with the bias and activation after the
// convolution; the algorithm chosen once per shape; the workspace contract. In a build without
// cuDNN, asking for it is an unsupported_error that says how to get it.
#include "../cuda_cudnn.hpp"
#include "../cuda_patterns.hpp"
#include "../support.hpp"

#include <typex/backend/cuda.hpp>
#include <typex/backend/cuda/emulated_device.hpp>
#include <typex/backend/eigen.hpp>

#if defined(TYPEX_CUDNN)
#include <typex/backend/cuda/dnn.hpp>
#include <typex/backend/cuda/dnn_reference.hpp>
#endif

#include <cmath>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

using namespace typex;
using cuda_cudnn_tests::conv_inputs;
using cuda_cudnn_tests::conv_program;

#if defined(TYPEX_CUDNN)

namespace {
using typex_test::pattern;

cuda::conv_geometry geometry() {
  cuda::conv_geometry g;
  g.n = 2, g.c = 4, g.h = 9, g.w = 7, g.oc = 6, g.kh = 3, g.kw = 3;
  g.stride[0] = 2, g.pad[1] = 2, g.dil[0] = 2, g.groups = 2;
  g.pad[0] = 1;
  g.oh = (9 + 2 - 2 * 2 - 1) / 2 + 1;  // 4
  g.ow = (7 + 4 - 2 - 1) / 1 + 1;      // 9
  return g;
}

// Runs `c` on the model with host buffers x, w (the pattern inputs of the conv_program's first
// convolution) and returns y.
std::vector<float> model_run(cuda::dnn_convolution& c, std::vector<std::byte>* workspace = nullptr) {
  const any_tensor x = pattern({2, 4, 9, 7}, 1), w = pattern({6, 2, 3, 3}, 2);
  std::vector<float> y(static_cast<std::size_t>(2 * 6 * 4 * 9), -7.0f);
  if (!c.choice) c.choose(cuda::reference_choice(c));
  std::vector<std::byte> own(c.choice->workspace_bytes);
  std::vector<std::byte>& ws = workspace != nullptr ? *workspace : own;
  if (ws.size() < c.choice->workspace_bytes) ws.resize(c.choice->workspace_bytes);
  cuda::reference_convolution(c, {x.raw_data(), w.raw_data(), y.data(), ws.data(), ws.size()});
  return y;
}
}  // namespace

TEST_CASE("cuda cudnn: the descriptors say the geometry, NCHW, cross-correlation, the groups and exact f32 math, read back with cuDNN's getters") {
  CHECK(cuda::has_cudnn());
  const cuda::dnn_convolution c = cuda::dnn_convolution::build(geometry(), dtype::f32, false, "");
  const cuda::detail::dnn_read_back d = cuda::detail::dnn_read(c);
  CHECK((d.n == 2 && d.c == 4 && d.h == 9 && d.w == 7));
  CHECK((d.xs[0] == 4 * 9 * 7 && d.xs[1] == 9 * 7 && d.xs[2] == 7 && d.xs[3] == 1));
  CHECK((d.k == 6 && d.wc == 2 && d.kh == 3 && d.kw == 3 && d.w_format == CUDNN_TENSOR_NCHW));
  CHECK((d.yn == 2 && d.yc == 6 && d.yh == 4 && d.yw == 9));
  CHECK((d.pad[0] == 1 && d.pad[1] == 2 && d.stride[0] == 2 && d.stride[1] == 1 && d.dil[0] == 2 && d.dil[1] == 1));
  CHECK(d.groups == 2);
  CHECK(d.mode == CUDNN_CROSS_CORRELATION);
  CHECK((d.x_type == CUDNN_DATA_FLOAT && d.compute == CUDNN_DATA_FLOAT));
  CHECK(d.math == CUDNN_FMA_MATH);
  CHECK(c.label == "conv2d n=2 c=4 h=9 w=7 oc=6 k=3x3 stride=2x1 pad=1x2 dilation=2x1 groups=2 f32");
  CHECK(cuda::dnn_convolution::build(geometry(), dtype::f32, false, "conv2d of node 'c'").label == "conv2d of node 'c'");
  const cuda::dnn_convolution t = cuda::dnn_convolution::build(geometry(), dtype::f32, true, "");
  CHECK(cuda::detail::dnn_read(t).math == CUDNN_DEFAULT_MATH);
  CHECK(t.key() != c.key());
  const cuda::dnn_convolution d64 = cuda::dnn_convolution::build(geometry(), dtype::f64, true, "");
  CHECK(cuda::detail::dnn_read(d64).x_type == CUDNN_DATA_DOUBLE);
  CHECK(cuda::detail::dnn_read(d64).math == CUDNN_FMA_MATH);  // (no TF32 for f64)
  // a moved-from convolution holds nothing; the moved-to one the descriptors
  cuda::dnn_convolution m = cuda::dnn_convolution::build(geometry(), dtype::f32, false, "");
  const cuda::dnn_convolution n = std::move(m);
  CHECK((!m && n && cuda::detail::dnn_read(n).groups == 2));
}

TEST_CASE("cuda cudnn: geometry the descriptors cannot hold, or that is not the program's, is refused when the convolution is built") {
  cuda::conv_geometry g = geometry();
  g.ow = 8;  // (cuDNN computes 9)
  CHECK_THROWS_WITH_AS(cuda::dnn_convolution::build(g, dtype::f32, false, ""),
                       doctest::Contains("cuDNN computes an output of [2, 6, 4, 9], the program's is [2, 6, 4, 8]"), argument_error);
  g = geometry();
  g.c = std::int64_t{1} << 31;
  CHECK_THROWS_WITH_AS(cuda::dnn_convolution::build(g, dtype::f32, false, ""), doctest::Contains("the input channels is 2147483648"), argument_error);
  g = geometry();
  g.n = 1 << 20, g.c = 4, g.h = 1 << 10, g.w = 1 << 10;  // (2^42 elements)
  CHECK_THROWS_WITH_AS(cuda::dnn_convolution::build(g, dtype::f32, false, ""), doctest::Contains("the input has more than 2^31 - 1 elements"),
                       argument_error);
  g = geometry();
  g.oc = 5;
  CHECK_THROWS_WITH_AS(cuda::dnn_convolution::build(g, dtype::f32, false, ""), doctest::Contains("do not split into 2 groups"), argument_error);
  CHECK_THROWS_AS(cuda::dnn_convolution::build(geometry(), dtype::i64, false, ""), unsupported_error);
}

TEST_CASE("cuda cudnn: the emulated model follows the descriptors: a planted padding, stride, group count or math type changes the result") {
  cuda::dnn_convolution c = cuda::dnn_convolution::build(geometry(), dtype::f32, false, "");
  const std::vector<float> base = model_run(c);
  // the first element by hand: y[0, 0, 0, 0] = sum over c < 2, r, s of x[0, c, -1 + 2r, -2 + s] w[0, c, r, s]
  {
    const any_tensor x = pattern({2, 4, 9, 7}, 1), w = pattern({6, 2, 3, 3}, 2);
    double want = 0;
    for (int ci = 0; ci < 2; ++ci)
      for (int r = 0; r < 3; ++r)
        for (int s = 0; s < 3; ++s) {
          const int hi = -1 + 2 * r, wi = -2 + s;
          if (hi < 0 || hi >= 9 || wi < 0 || wi >= 7) continue;
          want += double(x.data<float>()[(ci * 9 + hi) * 7 + wi]) * double(w.data<float>()[(ci * 3 + r) * 3 + s]);
        }
    CHECK(base[0] == doctest::Approx(want).epsilon(1e-6));
  }
  const auto differs = [&](const std::vector<float>& y) {
    for (std::size_t i = 0; i < y.size(); ++i)
      if (y[i] != base[i]) return true;
    return false;
  };
  {  // (padding 1 x 1 instead of 1 x 2: the output is then 4 x 7, which the y descriptor refuses)
    cuda::dnn_convolution p = cuda::dnn_convolution::build(geometry(), dtype::f32, false, "");
    REQUIRE(cudnnSetConvolution2dDescriptor(p.conv_desc(), 1, 1, 2, 1, 2, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT) == CUDNN_STATUS_SUCCESS);
    REQUIRE(cudnnSetConvolutionGroupCount(p.conv_desc(), 2) == CUDNN_STATUS_SUCCESS);
    CHECK_THROWS_WITH_AS(model_run(p), doctest::Contains("the output descriptor's extents are not the convolution's"), device_error);
  }
  {  // padding 0 x 2 and dilation 1: (9 - 2 - 1) / 2 + 1 = 4 rows and 9 columns, the same extents, other numbers
    cuda::dnn_convolution p = cuda::dnn_convolution::build(geometry(), dtype::f32, false, "");
    REQUIRE(cudnnSetConvolution2dDescriptor(p.conv_desc(), 0, 2, 2, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT) == CUDNN_STATUS_SUCCESS);
    REQUIRE(cudnnSetConvolutionGroupCount(p.conv_desc(), 2) == CUDNN_STATUS_SUCCESS);
    CHECK(differs(model_run(p)));
  }
  {  // groups 1 with a filter of 2 channels over 4: refused as cuDNN refuses it
    cuda::dnn_convolution p = cuda::dnn_convolution::build(geometry(), dtype::f32, false, "");
    REQUIRE(cudnnSetConvolutionGroupCount(p.conv_desc(), 1) == CUDNN_STATUS_SUCCESS);
    CHECK_THROWS_WITH_AS(model_run(p), doctest::Contains("CUDNN_STATUS_BAD_PARAM"), device_error);
  }
  {  // the true convolution (a flipped kernel) is not modelled: refused, not guessed
    cuda::dnn_convolution p = cuda::dnn_convolution::build(geometry(), dtype::f32, false, "");
    REQUIRE(cudnnSetConvolution2dDescriptor(p.conv_desc(), 1, 2, 2, 1, 2, 1, CUDNN_CONVOLUTION, CUDNN_DATA_FLOAT) == CUDNN_STATUS_SUCCESS);
    REQUIRE(cudnnSetConvolutionGroupCount(p.conv_desc(), 2) == CUDNN_STATUS_SUCCESS);
    CHECK_THROWS_WITH_AS(model_run(p), doctest::Contains("not modelled"), device_error);
  }
  {  // an input descriptor with other strides (channels last) reads other elements
    cuda::dnn_convolution p = cuda::dnn_convolution::build(geometry(), dtype::f32, false, "");
    REQUIRE(cudnnSetTensor4dDescriptor(p.x_desc(), CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, 2, 4, 9, 7) == CUDNN_STATUS_SUCCESS);
    CHECK(differs(model_run(p)));
  }
  {  // TF32 allowed: every operand read rounded to 11 significant bits, the result within tf32's bound and not exact
    cuda::dnn_convolution p = cuda::dnn_convolution::build(geometry(), dtype::f32, true, "");
    const std::vector<float> t = model_run(p);
    CHECK(differs(t));
    double worst = 0;
    for (std::size_t i = 0; i < t.size(); ++i) worst = std::max(worst, std::abs(double(t[i]) - double(base[i])));
    CHECK(worst <= 18 * 2 * std::ldexp(1.0, -10));  // (18 terms, |x w| at most 1: pattern's values are in [-1, 1])
  }
}

TEST_CASE("cuda cudnn: the workspace contract: chosen before the call, at least the bytes chosen, garbage after each call") {
  cuda::dnn_convolution c = cuda::dnn_convolution::build(geometry(), dtype::f32, false, "");
  const any_tensor x = pattern({2, 4, 9, 7}, 1), w = pattern({6, 2, 3, 3}, 2);
  std::vector<float> y(2 * 6 * 4 * 9);
  CHECK_THROWS_WITH_AS(cuda::reference_convolution(c, {x.raw_data(), w.raw_data(), y.data(), nullptr, 0}),
                       doctest::Contains("no algorithm was chosen"), device_error);
  const cuda::dnn_algorithm a = cuda::reference_choice(c);
  CHECK(a.workspace_bytes == std::size_t{4 * 9 * 4 * 9 * 4});  // (one image's im2col: c kh kw x oh ow floats)
  c.choose(a);
  std::vector<std::byte> ws(a.workspace_bytes - 1);
  CHECK_THROWS_WITH_AS(cuda::reference_convolution(c, {x.raw_data(), w.raw_data(), y.data(), ws.data(), ws.size()}),
                       doctest::Contains("brings 5183 bytes of workspace, the algorithm chosen needs 5184"), device_error);
  ws.assign(a.workspace_bytes, std::byte{0});
  (void)model_run(c, &ws);
  for (const std::byte b : ws) REQUIRE(b == std::byte{0xFF});
}

TEST_CASE("cuda cudnn: convolutions of every geometry with their bias and activation, the reference CNN and its training step through cuDNN equal the Eigen backend and PyTorch") {
  const auto gpu = cuda::make_emulated_device();
  cuda_cudnn_tests::check_cudnn_programs(gpu);
  // (shapes chosen: the convolution program's 3, the CNN's 2 at batch 2, and its training step's 3
  // at batch 3: the two forward convolutions and the input gradient through cuDNN; the two weight
  // gradients, kernels of 10 x 10 and 8 x 8 into 3 x 3 outputs, through typex's kernel)
  CHECK(static_cast<cuda::emulated_device&>(*gpu).dnn_choices() == 8);
}

TEST_CASE("cuda cudnn: one cuDNN call per convolution and one pass for its bias and activation") {
  const auto gpu = cuda::make_emulated_device();
  const exported_program ep = conv_program();
  // one cuDNN call per convolution, and the bias and activation in one pass after it: 3 calls, the
  // relu of c1 and the tanh of c3 each one finish launch (fused), no other launch
  auto& emu = static_cast<cuda::emulated_device&>(*gpu);
  const program_module<cuda_backend> run(ep, {.device = gpu, .convolutions = cuda::conv_engine::cudnn});
  std::vector<any_tensor> dev;
  for (const any_tensor& t : conv_inputs()) dev.push_back(cuda::to_device(t, gpu));
  (void)run(dev);
  const std::size_t before = emu.launches();
  (void)run(dev);
  CHECK(emu.launches() - before == 5);
  // the same program on typex's own kernel: 3 launches
  const program_module<cuda_backend> own(ep, {.device = gpu});
  (void)own(dev);
  const std::size_t mid = emu.launches();
  (void)own(dev);
  CHECK(emu.launches() - mid == 3);
}

TEST_CASE("cuda cudnn: the algorithm is chosen once per shape: a second plan, module or copy of the same shapes asks for none") {
  const auto gpu = cuda::make_emulated_device();
  auto& emu = static_cast<cuda::emulated_device&>(*gpu);
  const exported_program ep = conv_program();
  std::vector<any_tensor> dev;
  for (const any_tensor& t : conv_inputs()) dev.push_back(cuda::to_device(t, gpu));
  CHECK(emu.dnn_choices() == 0);
  const program_module<cuda_backend> a(ep, {.device = gpu, .convolutions = cuda::conv_engine::cudnn});
  (void)a(dev);
  CHECK(emu.dnn_choices() == 3);  // (three shapes)
  const program_module<cuda_backend> b(ep, {.device = gpu, .convolutions = cuda::conv_engine::cudnn});
  (void)b(dev);
  const program_module<cuda_backend> c = a;
  (void)c(dev);
  CHECK(emu.dnn_choices() == 3);
  // TF32 allowed is another choice per shape
  const program_module<cuda_backend> t(ep, {.device = gpu, .matmul_precision = cuda::matmul_precision::tf32,
                                           .convolutions = cuda::conv_engine::cudnn});
  (void)t(dev);
  CHECK(emu.dnn_choices() == 6);
}

#else

TEST_CASE("cuda cudnn: a build without cuDNN refuses conv_engine::cudnn with an unsupported_error that says how to get it") {
  CHECK(!cuda::has_cudnn());
  const auto gpu = cuda::make_emulated_device();
  CHECK_THROWS_WITH_AS(program_module<cuda_backend>(conv_program(), {.device = gpu, .convolutions = cuda::conv_engine::cudnn}),
                       doctest::Contains("-DTYPEX_CUDNN=ON"), unsupported_error);
  // typex's own convolution runs as ever
  const program_module<cuda_backend> run(conv_program(), {.device = gpu});
  std::vector<any_tensor> dev;
  for (const any_tensor& t : conv_inputs()) dev.push_back(cuda::to_device(t, gpu));
  CHECK(run(dev).size() == 3);
}

#endif
