// Tests for typex/backend/cuda/lt.hpp (cuBLASLt descriptors for typex's row-major products) and
// lt_reference.hpp (the emulated device's model of cublasLtMatmul, which reads those descriptors back).
//
// They need the cuBLASLt library but no GPU: descriptor creation and attributes are host-only. The
// products are checked against plain row-major triple loops, so the column-major translation (operand
// swap, transposes, leading dimensions, batch strides) and the epilogue mapping are pinned. The
// planted-mistake cases then corrupt one attribute of a correctly built descriptor with
// cublasLtMatmulDescSetAttribute / cublasLtMatrixLayoutSetAttribute and require the model to notice
// (a different result or device_error): a model that read lt.hpp's C++ fields instead of the
// descriptors, or ignored an attribute, would pass the first half and fail these.
#include <doctest/doctest.h>

#include <typex/backend/cuda/lt.hpp>
#include <typex/backend/cuda/lt_reference.hpp>

#include <cublasLt.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

using namespace typex;
using typex::cuda::epilogue;
using typex::cuda::lt_matmul;
using typex::cuda::matmul_geometry;

namespace {

std::vector<float> random_values(std::size_t n, std::uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = u(g);
  return v;
}

double gelu_tanh(double x) { return 0.5 * x * (1.0 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))); }
double gelu_erf(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }

double activate(epilogue e, double v) {
  switch (e) {
    case epilogue::relu: case epilogue::relu_bias: return v > 0.0 ? v : 0.0;
    case epilogue::gelu_tanh: case epilogue::gelu_tanh_bias: return gelu_tanh(v);
    default: return v;
  }
}

// torch's linear by definition: Y[i, j] = act(sum_l X[i, l] W[j, l] + b[j]), all row-major and dense.
std::vector<double> linear_loop(const std::vector<float>& x, const std::vector<float>& w, const std::vector<float>& b,
                                std::int64_t m, std::int64_t n, std::int64_t k, epilogue e) {
  std::vector<double> y(static_cast<std::size_t>(m * n));
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      double acc = 0.0;
      for (std::int64_t l = 0; l < k; ++l) acc += double(x[std::size_t(i * k + l)]) * double(w[std::size_t(j * k + l)]);
      if (cuda::has_bias(e)) acc += b[std::size_t(j)];
      y[std::size_t(i * n + j)] = activate(e, acc);
    }
  }
  return y;
}

// The row-major (batched, strided, possibly transposed) product by definition (matmul_geometry's
// reading of A and B); C dense per batch: [batch, m, n].
template <class T>
std::vector<double> matmul_loop(const std::vector<T>& a, const std::vector<T>& b, const matmul_geometry& g) {
  const std::int64_t lda = g.lda != 0 ? g.lda : (g.transpose_a ? g.m : g.k);
  const std::int64_t ldb = g.ldb != 0 ? g.ldb : (g.transpose_b ? g.k : g.n);
  std::vector<double> c(static_cast<std::size_t>(g.batch * g.m * g.n));
  for (std::int64_t p = 0; p < g.batch; ++p) {
    for (std::int64_t i = 0; i < g.m; ++i) {
      for (std::int64_t j = 0; j < g.n; ++j) {
        double acc = 0.0;
        for (std::int64_t l = 0; l < g.k; ++l) {
          const double av = a[std::size_t(p * g.stride_a + (g.transpose_a ? l * lda + i : i * lda + l))];
          const double bv = b[std::size_t(p * g.stride_b + (g.transpose_b ? j * ldb + l : l * ldb + j))];
          acc += av * bv;
        }
        c[std::size_t((p * g.m + i) * g.n + j)] = acc;
      }
    }
  }
  return c;
}

// The largest |got - want| / (1 + |want|).
template <class T>
double max_error(const std::vector<T>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  double e = 0.0;
  for (std::size_t i = 0; i < got.size(); ++i) e = std::max(e, std::abs(double(got[i]) - want[i]) / (1.0 + std::abs(want[i])));
  return e;
}

// A linear of m x n x k on fixed random data, through the descriptors and the model.
struct linear_case {
  std::int64_t m, n, k;
  epilogue e;
  std::vector<float> x, w, b, other_bias, y;
  lt_matmul lt;

  linear_case(std::int64_t m_, std::int64_t n_, std::int64_t k_, epilogue e_, std::uint32_t seed = 1)
      : m(m_), n(n_), k(k_), e(e_), x(random_values(std::size_t(m * k), seed)),
        // (W has room for a planted larger leading dimension: k + 1 per row)
        w(random_values(std::size_t(n * (k + 1)), seed + 1)), b(random_values(std::size_t(n), seed + 2)),
        other_bias(random_values(std::size_t(n), seed + 3)), y(std::size_t(m * n), -7.0f) {
    const bool bias = cuda::has_bias(e);
    const epilogue activation = e == epilogue::bias ? epilogue::none
                                : e == epilogue::relu_bias ? epilogue::relu
                                : e == epilogue::gelu_tanh_bias ? epilogue::gelu_tanh
                                                                : e;
    lt = cuda::make_linear(m, n, k, activation, bias);
    if (bias) lt.set_bias_pointer(b.data());
  }
  cuda::matmul_args args() { return cuda::row_major_operands(x.data(), w.data(), y.data()); }
  std::vector<float> run() {
    std::fill(y.begin(), y.end(), -7.0f);
    cuda::reference_matmul(lt, args());
    return y;
  }
  std::vector<double> want() const { return linear_loop(x, w, b, m, n, k, e); }
};

constexpr epilogue all_epilogues[] = {epilogue::none, epilogue::bias, epilogue::relu, epilogue::relu_bias,
                                      epilogue::gelu_tanh, epilogue::gelu_tanh_bias};

template <class V>
void set_desc(const lt_matmul& lt, cublasLtMatmulDescAttributes_t attr, V v) {
  REQUIRE(cublasLtMatmulDescSetAttribute(lt.desc(), attr, &v, sizeof v) == CUBLAS_STATUS_SUCCESS);
}
template <class V>
void set_layout(cublasLtMatrixLayout_t l, cublasLtMatrixLayoutAttribute_t attr, V v) {
  REQUIRE(cublasLtMatrixLayoutSetAttribute(l, attr, &v, sizeof v) == CUBLAS_STATUS_SUCCESS);
}
template <class V>
V get_desc(const lt_matmul& lt, cublasLtMatmulDescAttributes_t attr) {
  V v{};
  std::size_t written = 0;
  REQUIRE(cublasLtMatmulDescGetAttribute(lt.desc(), attr, &v, sizeof v, &written) == CUBLAS_STATUS_SUCCESS);
  return v;
}
template <class V>
V get_layout(cublasLtMatrixLayout_t l, cublasLtMatrixLayoutAttribute_t attr) {
  V v{};
  std::size_t written = 0;
  REQUIRE(cublasLtMatrixLayoutGetAttribute(l, attr, &v, sizeof v, &written) == CUBLAS_STATUS_SUCCESS);
  return v;
}

}  // namespace

TEST_CASE("cuda cublaslt: linear with every epilogue equals the triple loop (1x1x1, 7x33x5, 64x128x96)") {
  struct shape {
    std::int64_t m, n, k;
  };
  for (const shape s : {shape{1, 1, 1}, shape{7, 33, 5}, shape{64, 128, 96}}) {
    for (const epilogue e : all_epilogues) {
      CAPTURE(s.m);
      CAPTURE(s.n);
      CAPTURE(s.k);
      CAPTURE(cuda::name(e));
      linear_case c(s.m, s.n, s.k, e);
      CHECK(max_error(c.run(), c.want()) < 1e-6);
    }
  }
}

TEST_CASE("cuda cublaslt: make_linear builds W·Xᵀ in column-major terms with the mapped epilogue") {
  lt_matmul lt = cuda::make_linear(7, 33, 5, epilogue::relu, /*has_bias=*/true);
  CHECK(get_desc<std::int32_t>(lt, CUBLASLT_MATMUL_DESC_TRANSA) == CUBLAS_OP_T);
  CHECK(get_desc<std::int32_t>(lt, CUBLASLT_MATMUL_DESC_TRANSB) == CUBLAS_OP_N);
  CHECK(get_desc<std::uint32_t>(lt, CUBLASLT_MATMUL_DESC_EPILOGUE) == CUBLASLT_EPILOGUE_RELU_BIAS);
  CHECK(get_desc<std::int32_t>(lt, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE) == CUBLAS_COMPUTE_32F);
  CHECK(get_desc<std::int32_t>(lt, CUBLASLT_MATMUL_DESC_SCALE_TYPE) == CUDA_R_32F);
  // A = W: k x n, ld k; B = X: k x m, ld k; D: n x m, ld n.
  CHECK(get_layout<std::uint64_t>(lt.layout_a(), CUBLASLT_MATRIX_LAYOUT_ROWS) == 5);
  CHECK(get_layout<std::uint64_t>(lt.layout_a(), CUBLASLT_MATRIX_LAYOUT_COLS) == 33);
  CHECK(get_layout<std::int64_t>(lt.layout_a(), CUBLASLT_MATRIX_LAYOUT_LD) == 5);
  CHECK(get_layout<std::uint64_t>(lt.layout_b(), CUBLASLT_MATRIX_LAYOUT_ROWS) == 5);
  CHECK(get_layout<std::uint64_t>(lt.layout_b(), CUBLASLT_MATRIX_LAYOUT_COLS) == 7);
  CHECK(get_layout<std::uint64_t>(lt.layout_d(), CUBLASLT_MATRIX_LAYOUT_ROWS) == 33);
  CHECK(get_layout<std::uint64_t>(lt.layout_d(), CUBLASLT_MATRIX_LAYOUT_COLS) == 7);
  CHECK(get_layout<std::int64_t>(lt.layout_d(), CUBLASLT_MATRIX_LAYOUT_LD) == 33);
  CHECK(lt.bias_pointer() == nullptr);
  float bias[33] = {};
  lt.set_bias_pointer(bias);
  CHECK(lt.bias_pointer() == bias);

  CHECK(cuda::to_cublaslt(epilogue::none) == CUBLASLT_EPILOGUE_DEFAULT);
  CHECK(cuda::to_cublaslt(epilogue::bias) == CUBLASLT_EPILOGUE_BIAS);
  CHECK(cuda::to_cublaslt(epilogue::relu) == CUBLASLT_EPILOGUE_RELU);
  CHECK(cuda::to_cublaslt(epilogue::relu_bias) == CUBLASLT_EPILOGUE_RELU_BIAS);
  CHECK(cuda::to_cublaslt(epilogue::gelu_tanh) == CUBLASLT_EPILOGUE_GELU);
  CHECK(cuda::to_cublaslt(epilogue::gelu_tanh_bias) == CUBLASLT_EPILOGUE_GELU_BIAS);
}

TEST_CASE("cuda cublaslt: matmul with transposed, padded, batched and broadcast operands equals the triple loop") {
  for (const bool ta : {false, true}) {
    for (const bool tb : {false, true}) {
      CAPTURE(ta);
      CAPTURE(tb);
      const std::int64_t m = 6, n = 11, k = 9, batch = 3;
      matmul_geometry g{.m = m, .n = n, .k = k, .transpose_a = ta, .transpose_b = tb};
      // Padded rows (a strided view), A batched with a gap between matrices, B broadcast (stride 0).
      g.lda = (ta ? m : k) + 3;
      g.ldb = (tb ? k : n) + 2;
      g.batch = batch;
      g.stride_a = g.lda * (ta ? k : m) + 5;
      g.stride_b = 0;
      const auto a = random_values(std::size_t(g.stride_a * batch), 11);
      const auto b = random_values(std::size_t(g.ldb * (tb ? n : k)), 12);
      std::vector<float> c(std::size_t(batch * m * n), -7.0f);
      const lt_matmul lt = cuda::make_matmul(g);
      CHECK(get_layout<std::int32_t>(lt.layout_b(), CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT) == batch);
      CHECK(get_layout<std::int64_t>(lt.layout_b(), CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET) == g.stride_a);
      cuda::reference_matmul(lt, cuda::row_major_operands(a.data(), b.data(), c.data()));
      CHECK(max_error(c, matmul_loop(a, b, g)) < 1e-6);

      // The positional factory gives the same descriptors (dense C).
      const lt_matmul lt2 = cuda::make_matmul(m, n, k, ta, tb, g.lda, g.ldb, batch, g.stride_a, 0, 0);
      std::vector<float> c2(c.size(), -7.0f);
      cuda::reference_matmul(lt2, cuda::row_major_operands(a.data(), b.data(), c2.data()));
      CHECK(c2 == c);
    }
  }
}

TEST_CASE("cuda cublaslt: f64 products, alpha and beta, and an empty product") {
  const matmul_geometry g{.m = 5, .n = 4, .k = 3, .transpose_b = true};
  std::vector<double> a(15), b(12);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = 0.25 * double(i) - 1.0;
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = 1.0 / double(i + 1);
  std::vector<double> c(20, -7.0);
  const lt_matmul lt = cuda::make_matmul(g, epilogue::none, dtype::f64);
  CHECK(get_desc<std::int32_t>(lt, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE) == CUBLAS_COMPUTE_64F);
  cuda::reference_matmul(lt, cuda::row_major_operands(a.data(), b.data(), c.data()));
  CHECK(max_error(c, matmul_loop(a, b, g)) < 1e-15);

  // D = 0.5 A·B + 2 C (C read in place, before D is written).
  const auto ab = matmul_loop(a, b, g);
  std::vector<double> want(20);
  for (std::size_t i = 0; i < want.size(); ++i) want[i] = 0.5 * ab[i] + 2.0 * c[i];
  cuda::reference_matmul(lt, cuda::row_major_operands(a.data(), b.data(), c.data(), 0.5f, 2.0f));
  CHECK(max_error(c, want) < 1e-15);

  // m = 0: nothing is read or written.
  const lt_matmul empty = cuda::make_matmul(matmul_geometry{.m = 0, .n = 4, .k = 3});
  CHECK_NOTHROW(cuda::reference_matmul(empty, cuda::row_major_operands(nullptr, nullptr, nullptr)));
}

TEST_CASE("cuda cublaslt: GELU epilogues are the tanh form, not erf") {
  // Pre-activations from -4 to 4 (X = 1, W a ramp, k = 1): where the two forms differ most.
  const std::int64_t n = 81;
  std::vector<float> x{1.0f}, w(n), y(n);
  for (std::int64_t j = 0; j < n; ++j) w[std::size_t(j)] = -4.0f + 0.1f * float(j);
  const lt_matmul lt = cuda::make_linear(1, n, 1, epilogue::gelu_tanh, false);
  cuda::reference_matmul(lt, cuda::row_major_operands(x.data(), w.data(), y.data()));
  double to_tanh = 0.0, to_erf = 0.0;
  for (std::int64_t j = 0; j < n; ++j) {
    const double v = w[std::size_t(j)];
    to_tanh = std::max(to_tanh, std::abs(double(y[std::size_t(j)]) - gelu_tanh(v)));
    to_erf = std::max(to_erf, std::abs(double(y[std::size_t(j)]) - gelu_erf(v)));
  }
  CHECK(to_tanh < 1e-6);
  CHECK(to_erf > 1e-4);
}

TEST_CASE("cuda cublaslt: the model reads the descriptors, not lt_matmul's C++ fields") {
  linear_case c(7, 33, 5, epilogue::gelu_tanh_bias);
  // Whatever the fields say, the descriptors decide.
  c.lt.epi = epilogue::none;
  c.lt.geometry = matmul_geometry{.m = 1, .n = 1, .k = 1};
  c.lt.type = dtype::f64;
  CHECK(max_error(c.run(), c.want()) < 1e-6);
}

TEST_CASE("cuda cublaslt: a planted wrong transpose flag is caught") {
  SUBCASE("square: a different result") {
    linear_case c(8, 8, 8, epilogue::none);
    REQUIRE(max_error(c.run(), c.want()) < 1e-6);
    set_desc<std::int32_t>(c.lt, CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_N);
    CHECK(max_error(c.run(), c.want()) > 1e-2);
  }
  SUBCASE("square: TRANSB") {
    linear_case c(8, 8, 8, epilogue::relu);
    set_desc<std::int32_t>(c.lt, CUBLASLT_MATMUL_DESC_TRANSB, CUBLAS_OP_T);
    CHECK(max_error(c.run(), c.want()) > 1e-2);
  }
  SUBCASE("rectangular: shapes that no longer fit (CUBLAS_STATUS_INVALID_VALUE)") {
    linear_case c(7, 33, 5, epilogue::none);
    set_desc<std::int32_t>(c.lt, CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_N);
    CHECK_THROWS_AS(c.run(), device_error);
  }
  SUBCASE("an out-of-range value (cuBLASLt's setter accepts it; the call must not)") {
    linear_case c(7, 33, 5, epilogue::none);
    set_desc<std::int32_t>(c.lt, CUBLASLT_MATMUL_DESC_TRANSA, 77);
    CHECK_THROWS_AS(c.run(), device_error);
  }
}

TEST_CASE("cuda cublaslt: a planted wrong leading dimension is caught") {
  SUBCASE("larger: a different result") {
    linear_case c(7, 33, 5, epilogue::bias);
    REQUIRE(max_error(c.run(), c.want()) < 1e-6);
    set_layout<std::int64_t>(c.lt.layout_a(), CUBLASLT_MATRIX_LAYOUT_LD, 6);  // (W has room for it)
    CHECK(max_error(c.run(), c.want()) > 1e-2);
  }
  SUBCASE("D's: a different result") {
    linear_case c(7, 33, 5, epilogue::none);
    c.y.resize(std::size_t(7 * 34));
    set_layout<std::int64_t>(c.lt.layout_d(), CUBLASLT_MATRIX_LAYOUT_LD, 34);
    set_layout<std::int64_t>(c.lt.layout_c(), CUBLASLT_MATRIX_LAYOUT_LD, 34);
    const auto y = c.run();
    CHECK(max_error(std::vector<float>(y.begin(), y.begin() + 7 * 33), c.want()) > 1e-2);
  }
  SUBCASE("below the rows (cuBLASLt's setter accepts it; the call must not)") {
    linear_case c(7, 33, 5, epilogue::none);
    set_layout<std::int64_t>(c.lt.layout_b(), CUBLASLT_MATRIX_LAYOUT_LD, 4);
    CHECK_THROWS_AS(c.run(), device_error);
  }
}

TEST_CASE("cuda cublaslt: a planted wrong epilogue is caught") {
  SUBCASE("RELU_BIAS where GELU_BIAS was built") {
    linear_case c(7, 33, 5, epilogue::gelu_tanh_bias);
    REQUIRE(max_error(c.run(), c.want()) < 1e-6);
    set_desc<std::uint32_t>(c.lt, CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_RELU_BIAS);
    CHECK(max_error(c.run(), c.want()) > 1e-2);
  }
  SUBCASE("BIAS where RELU_BIAS was built") {
    linear_case c(7, 33, 5, epilogue::relu_bias);
    set_desc<std::uint32_t>(c.lt, CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_BIAS);
    CHECK(max_error(c.run(), c.want()) > 1e-2);
  }
  SUBCASE("DEFAULT where BIAS was built: the bias is lost, and the call's bias is refused") {
    linear_case c(7, 33, 5, epilogue::bias);
    set_desc<std::uint32_t>(c.lt, CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_DEFAULT);
    CHECK(max_error(c.run(), c.want()) > 1e-2);
    auto args = c.args();
    args.bias = c.b.data();
    CHECK_THROWS_AS(cuda::reference_matmul(c.lt, args), device_error);
  }
  SUBCASE("an epilogue the model does not know (cuBLASLt's setter accepts any value)") {
    linear_case c(7, 33, 5, epilogue::none);
    set_desc<std::uint32_t>(c.lt, CUBLASLT_MATMUL_DESC_EPILOGUE, 12345u);
    CHECK_THROWS_AS(c.run(), device_error);
    set_desc<std::uint32_t>(c.lt, CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_GELU_AUX_BIAS);
    CHECK_THROWS_AS(c.run(), device_error);
  }
}

TEST_CASE("cuda cublaslt: a planted wrong bias pointer is caught") {
  SUBCASE("another buffer: a different result") {
    linear_case c(7, 33, 5, epilogue::relu_bias);
    REQUIRE(max_error(c.run(), c.want()) < 1e-6);
    set_desc<const void*>(c.lt, CUBLASLT_MATMUL_DESC_BIAS_POINTER, c.other_bias.data());
    CHECK(max_error(c.run(), c.want()) > 1e-2);
  }
  SUBCASE("the call's bias disagrees with the descriptor's") {
    linear_case c(7, 33, 5, epilogue::bias);
    set_desc<const void*>(c.lt, CUBLASLT_MATMUL_DESC_BIAS_POINTER, c.other_bias.data());
    auto args = c.args();
    args.bias = c.b.data();
    CHECK_THROWS_AS(cuda::reference_matmul(c.lt, args), device_error);
    // (the agreeing one is accepted)
    c.lt.set_bias_pointer(c.b.data());
    CHECK_NOTHROW(cuda::reference_matmul(c.lt, args));
  }
  SUBCASE("none at all") {
    linear_case c(7, 33, 5, epilogue::gelu_tanh_bias);
    c.lt.set_bias_pointer(nullptr);
    CHECK_THROWS_AS(c.run(), device_error);
  }
}

TEST_CASE("cuda cublaslt: a planted wrong batch stride or count is caught") {
  const matmul_geometry g{.m = 4, .n = 5, .k = 3, .batch = 3, .stride_a = 12, .stride_b = 15};
  const auto a = random_values(36, 21), b = random_values(45, 22);
  std::vector<float> c(60);
  const auto want = matmul_loop(a, b, g);
  const lt_matmul lt = cuda::make_matmul(g);
  cuda::reference_matmul(lt, cuda::row_major_operands(a.data(), b.data(), c.data()));
  REQUIRE(max_error(c, want) < 1e-6);
  // typex's B is cuBLAS's A: its stride 0 (a broadcast) reads the first matrix for every batch.
  set_layout<std::int64_t>(lt.layout_a(), CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, 0);
  cuda::reference_matmul(lt, cuda::row_major_operands(a.data(), b.data(), c.data()));
  CHECK(max_error(c, want) > 1e-2);
  set_layout<std::int64_t>(lt.layout_a(), CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, 15);
  set_layout<std::int32_t>(lt.layout_b(), CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, 2);
  CHECK_THROWS_AS(cuda::reference_matmul(lt, cuda::row_major_operands(a.data(), b.data(), c.data())), device_error);
}

TEST_CASE("cuda cublaslt: what the model does not model is refused") {
  linear_case c(7, 33, 5, epilogue::none);
  SUBCASE("a row-major order") {
    set_layout<std::int32_t>(c.lt.layout_a(), CUBLASLT_MATRIX_LAYOUT_ORDER, CUBLASLT_ORDER_ROW);
    CHECK_THROWS_AS(c.run(), device_error);
  }
  SUBCASE("a data type other than f32 / f64") {
    set_layout<std::uint32_t>(c.lt.layout_c(), CUBLASLT_MATRIX_LAYOUT_TYPE, CUDA_R_16F);
    CHECK_THROWS_AS(c.run(), device_error);
  }
  SUBCASE("device pointer mode") {
    set_desc<std::int32_t>(c.lt, CUBLASLT_MATMUL_DESC_POINTER_MODE, CUBLASLT_POINTER_MODE_DEVICE);
    CHECK_THROWS_AS(c.run(), device_error);
  }
  SUBCASE("a moved-from product") {
    lt_matmul moved = std::move(c.lt);
    CHECK_FALSE(static_cast<bool>(c.lt));
    CHECK_THROWS_AS(c.run(), device_error);
    c.lt = std::move(moved);
    CHECK(max_error(c.run(), c.want()) < 1e-6);
  }
}

TEST_CASE("cuda cublaslt: the factories refuse bad geometry with typed errors") {
  CHECK_THROWS_AS(cuda::make_linear(-1, 4, 4, epilogue::none, false), argument_error);
  CHECK_THROWS_AS(cuda::make_linear(4, 4, std::int64_t{1} << 31, epilogue::none, false), unsupported_error);
  CHECK_THROWS_AS(cuda::make_linear(4, 4, 4, epilogue::relu_bias, false), argument_error);
  CHECK_THROWS_AS(cuda::make_linear(4, 4, 4, epilogue::none, false, dtype::f16), unsupported_error);
  CHECK_THROWS_AS(cuda::make_matmul(4, 4, 4, false, false, /*lda=*/3, 0), argument_error);
  CHECK_THROWS_AS(cuda::make_matmul(matmul_geometry{.m = 4, .n = 4, .k = 4, .batch = 0}), argument_error);
  CHECK_THROWS_AS(cuda::make_matmul(matmul_geometry{.m = 4, .n = 4, .k = 4, .batch = 2, .stride_c = 3}), argument_error);
  CHECK_THROWS_AS(cuda::make_matmul(matmul_geometry{.m = 4, .n = 4, .k = 4, .batch = 2, .stride_a = -1}), argument_error);
  // A message names the product and what is wrong.
  try {
    (void)cuda::make_matmul(4, 4, 4, false, false, 3, 0);
  } catch (const argument_error& e) {
    const std::string what = e.what();
    CHECK(what.find("lda is 3") != std::string::npos);
    CHECK(what.find("matmul m=4 n=4 k=4") != std::string::npos);
  }
}

// The bias-gradient epilogues (BGRADA / BGRADB) as the lowering uses them: a weight gradient's
// product that also writes its bias gradient. D must be the plain product and the bias pointer the
// sums over k of the operand the epilogue names, by definition.
TEST_CASE("cuda cublaslt: BGRADB and BGRADA write the product and the bias gradient (the sums over k of op(A)'s rows / op(B)'s columns)") {
  struct shape {
    std::int64_t m, n, k;
  };
  for (const shape s : {shape{1, 1, 1}, shape{7, 33, 5}, shape{64, 48, 96}}) {
    for (const bool left : {true, false}) {
      CAPTURE(s.m);
      CAPTURE(s.n);
      CAPTURE(s.k);
      CAPTURE(left);
      // dW = gᵀ·x (left: g stored [k, m], read transposed) or dW = xᵀ·g (right: g stored [k, n])
      matmul_geometry g{};
      g.m = s.m, g.n = s.n, g.k = s.k;
      g.transpose_a = left, g.transpose_b = false;
      const std::vector<float> a = random_values(std::size_t(s.m * s.k), 11), b = random_values(std::size_t(s.k * s.n), 12);
      const std::int64_t count = left ? s.m : s.n;
      std::vector<float> d(std::size_t(s.m * s.n), -7.0f), grad(std::size_t(count), -7.0f), guard(4, -7.0f);
      lt_matmul lt = cuda::make_matmul(g, left ? epilogue::bgrad_b : epilogue::bgrad_a);
      lt.set_bias_pointer(grad.data());
      CHECK(lt.bias_pointer() == grad.data());
      cuda::matmul_args args = cuda::row_major_operands(a.data(), b.data(), d.data());
      args.bias = grad.data();  // (the call's cross-check)
      cuda::reference_matmul(lt, args);
      CHECK(max_error(d, matmul_loop(a, b, g)) < 1e-6);
      std::vector<double> want(std::size_t(count), 0.0);
      for (std::int64_t x = 0; x < count; ++x)
        for (std::int64_t l = 0; l < s.k; ++l)
          want[std::size_t(x)] += left ? double(a[std::size_t(l * s.m + x)]) : double(b[std::size_t(l * s.n + x)]);
      CHECK(max_error(grad, want) < 1e-6);
    }
  }
}

TEST_CASE("cuda cublaslt: planted mistakes in a bias-gradient product are caught") {
  matmul_geometry g{};
  g.m = 8, g.n = 8, g.k = 8;
  g.transpose_a = true;
  const std::vector<float> a = random_values(64, 21), b = random_values(64, 22);
  std::vector<float> d(64), grad(8, -7.0f), other(8, -7.0f);
  const auto sums_of = [&](bool rows_of_a) {
    std::vector<double> want(8, 0.0);
    for (int x = 0; x < 8; ++x)
      for (int l = 0; l < 8; ++l) want[std::size_t(x)] += rows_of_a ? a[std::size_t(l * 8 + x)] : b[std::size_t(l * 8 + x)];
    return want;
  };
  SUBCASE("BGRADA where BGRADB is meant: the other operand's sums") {
    lt_matmul lt = cuda::make_matmul(g, epilogue::bgrad_b);
    lt.set_bias_pointer(grad.data());
    set_desc<std::uint32_t>(lt, CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_BGRADA);
    cuda::reference_matmul(lt, cuda::row_major_operands(a.data(), b.data(), d.data()));
    CHECK(max_error(grad, sums_of(true)) > 1e-2);
    CHECK(max_error(grad, sums_of(false)) < 1e-6);
  }
  SUBCASE("no bias pointer: refused (CUBLAS_STATUS_INVALID_VALUE)") {
    lt_matmul lt = cuda::make_matmul(g, epilogue::bgrad_b);
    CHECK_THROWS_AS(cuda::reference_matmul(lt, cuda::row_major_operands(a.data(), b.data(), d.data())), device_error);
  }
  SUBCASE("the call's pointer differs from the descriptor's") {
    lt_matmul lt = cuda::make_matmul(g, epilogue::bgrad_b);
    lt.set_bias_pointer(grad.data());
    auto args = cuda::row_major_operands(a.data(), b.data(), d.data());
    args.bias = other.data();
    CHECK_THROWS_AS(cuda::reference_matmul(lt, args), device_error);
  }
  SUBCASE("what the model does not model: alpha != 1, a reduced-precision compute type") {
    lt_matmul lt = cuda::make_matmul(g, epilogue::bgrad_b);
    lt.set_bias_pointer(grad.data());
    auto args = cuda::row_major_operands(a.data(), b.data(), d.data());
    args.alpha = 2.0f;
    CHECK_THROWS_AS(cuda::reference_matmul(lt, args), device_error);
    lt_matmul tf32 = cuda::make_matmul(g, epilogue::bgrad_b, dtype::f32, cuda::matmul_precision::tf32);
    tf32.set_bias_pointer(grad.data());
    CHECK_THROWS_AS(cuda::reference_matmul(tf32, cuda::row_major_operands(a.data(), b.data(), d.data())), device_error);
  }
}

// DGELU as the lowering uses it: a linear layer's input gradient dh = g · W whose only reader is
// gelu_backward(dh, x, approximate='tanh'); D is the product times the tanh GELU's derivative at the
// aux matrix x (the layer's pre-activation). The derivative here is a central difference of the GELU
// itself, not the model's formula.
TEST_CASE("cuda cublaslt: DGELU multiplies the product by the tanh GELU's derivative at the aux matrix") {
  const auto gelu = [](double v) { return 0.5 * v * (1.0 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v))); };
  const auto derivative = [&](double v) { return (gelu(v + 1e-5) - gelu(v - 1e-5)) / 2e-5; };
  struct shape {
    std::int64_t m, n, k;
  };
  for (const shape s : {shape{1, 8, 1}, shape{7, 32, 5}, shape{33, 48, 20}}) {
    for (const bool transposed : {false, true}) {
      CAPTURE(s.m);
      CAPTURE(s.n);
      CAPTURE(s.k);
      CAPTURE(transposed);
      matmul_geometry g{};
      g.m = s.m, g.n = s.n, g.k = s.k;
      g.transpose_b = transposed;
      const std::vector<float> a = random_values(std::size_t(s.m * s.k), 31), b = random_values(std::size_t(s.k * s.n), 32);
      const std::vector<float> x = random_values(std::size_t(s.m * s.n), 33, -4.0f, 4.0f);
      std::vector<float> d(std::size_t(s.m * s.n), -7.0f);
      lt_matmul lt = cuda::make_matmul(g, epilogue::dgelu_tanh);
      lt.set_aux(x.data(), s.n);
      cuda::reference_matmul(lt, cuda::row_major_operands(a.data(), b.data(), d.data()));
      std::vector<double> want = matmul_loop(a, b, g);
      for (std::size_t i = 0; i < want.size(); ++i) want[i] *= derivative(double(x[i]));
      CHECK(max_error(d, want) < 1e-5);
    }
  }
}

TEST_CASE("cuda cublaslt: planted mistakes in a DGELU product are caught") {
  matmul_geometry g{};
  g.m = 6, g.n = 16, g.k = 4;
  const std::vector<float> a = random_values(24, 41), b = random_values(64, 42);
  const std::vector<float> x = random_values(96, 43, -3.0f, 3.0f), other = random_values(96, 44, -3.0f, 3.0f);
  std::vector<float> d(96), with_x(96);
  {
    lt_matmul lt = cuda::make_matmul(g, epilogue::dgelu_tanh);
    lt.set_aux(x.data(), 16);
    cuda::reference_matmul(lt, cuda::row_major_operands(a.data(), b.data(), with_x.data()));
  }
  SUBCASE("another aux matrix: another result") {
    lt_matmul lt = cuda::make_matmul(g, epilogue::dgelu_tanh);
    lt.set_aux(other.data(), 16);
    cuda::reference_matmul(lt, cuda::row_major_operands(a.data(), b.data(), d.data()));
    double diff = 0;
    for (std::size_t i = 0; i < d.size(); ++i) diff = std::max(diff, double(std::abs(d[i] - with_x[i])));
    CHECK(diff > 1e-2);
  }
  SUBCASE("DEFAULT where DGELU is meant: the plain product") {
    lt_matmul lt = cuda::make_matmul(g, epilogue::dgelu_tanh);
    lt.set_aux(x.data(), 16);
    set_desc<std::uint32_t>(lt, CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_DEFAULT);
    cuda::reference_matmul(lt, cuda::row_major_operands(a.data(), b.data(), d.data()));
    CHECK(max_error(d, matmul_loop(a, b, g)) < 1e-6);
    double diff = 0;
    for (std::size_t i = 0; i < d.size(); ++i) diff = std::max(diff, double(std::abs(d[i] - with_x[i])));
    CHECK(diff > 1e-2);
  }
  SUBCASE("no aux pointer, or a leading dimension cuBLASLt refuses: CUBLAS_STATUS_INVALID_VALUE") {
    lt_matmul none = cuda::make_matmul(g, epilogue::dgelu_tanh);
    CHECK_THROWS_AS(cuda::reference_matmul(none, cuda::row_major_operands(a.data(), b.data(), d.data())), device_error);
    lt_matmul odd = cuda::make_matmul(g, epilogue::dgelu_tanh);
    odd.set_aux(x.data(), 16);
    set_desc<std::int64_t>(odd, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, 12);  // (below the rows, and no multiple of 8)
    CHECK_THROWS_AS(cuda::reference_matmul(odd, cuda::row_major_operands(a.data(), b.data(), d.data())), device_error);
    set_desc<std::int64_t>(odd, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, 20);  // (no multiple of 8)
    CHECK_THROWS_AS(cuda::reference_matmul(odd, cuda::row_major_operands(a.data(), b.data(), d.data())), device_error);
    // set_aux refuses them before cuBLASLt would
    lt_matmul lt = cuda::make_matmul(g, epilogue::dgelu_tanh);
    CHECK_THROWS_AS(lt.set_aux(x.data(), 12), argument_error);
    CHECK_THROWS_AS(lt.set_aux(x.data(), 20), argument_error);
    matmul_geometry batched = g;
    batched.batch = 2;
    lt_matmul two = cuda::make_matmul(batched, epilogue::dgelu_tanh);
    CHECK_THROWS_AS(two.set_aux(x.data(), 16), argument_error);  // (no aux batch stride is set)
  }
  SUBCASE("what the model does not model: alpha != 1, a reduced-precision compute type") {
    lt_matmul lt = cuda::make_matmul(g, epilogue::dgelu_tanh);
    lt.set_aux(x.data(), 16);
    auto args = cuda::row_major_operands(a.data(), b.data(), d.data());
    args.alpha = 2.0f;
    CHECK_THROWS_AS(cuda::reference_matmul(lt, args), device_error);
    lt_matmul tf32 = cuda::make_matmul(g, epilogue::dgelu_tanh, dtype::f32, cuda::matmul_precision::tf32);
    tf32.set_aux(x.data(), 16);
    CHECK_THROWS_AS(cuda::reference_matmul(tf32, cuda::row_major_operands(a.data(), b.data(), d.data())), device_error);
  }
}

// GELU_AUX_BIAS as a training forward uses it: D = gelu_tanh(X·Wᵀ + b) and the aux matrix = X·Wᵀ + b
// (the pre-activation gelu_backward reads), by definition.
TEST_CASE("cuda cublaslt: GELU_AUX_BIAS writes the GELU of the biased product and, to the aux matrix, its input") {
  const auto gelu = [](double v) { return 0.5 * v * (1.0 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v))); };
  for (const std::int64_t m : {1, 9}) {
    CAPTURE(m);
    const std::int64_t n = 24, k = 7;
    const std::vector<float> x = random_values(std::size_t(m * k), 51), w = random_values(std::size_t(n * k), 52), b = random_values(std::size_t(n), 53);
    std::vector<float> d(std::size_t(m * n), -7.0f), pre(std::size_t(m * n), -7.0f);
    lt_matmul lt = cuda::make_linear(m, n, k, epilogue::gelu_tanh_aux, true);
    CHECK(lt.epi == epilogue::gelu_tanh_aux_bias);
    lt.set_bias_pointer(b.data());
    lt.set_aux(pre.data(), n);
    cuda::matmul_args args = cuda::row_major_operands(x.data(), w.data(), d.data());
    args.bias = b.data();
    cuda::reference_matmul(lt, args);
    std::vector<double> want_pre(std::size_t(m * n)), want_d(std::size_t(m * n));
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        double acc = b[std::size_t(j)];
        for (std::int64_t l = 0; l < k; ++l) acc += double(x[std::size_t(i * k + l)]) * double(w[std::size_t(j * k + l)]);
        want_pre[std::size_t(i * n + j)] = acc;
        want_d[std::size_t(i * n + j)] = gelu(acc);
      }
    CHECK(max_error(pre, want_pre) < 1e-6);
    CHECK(max_error(d, want_d) < 1e-6);
    // no aux pointer: refused, as cuBLASLt does
    lt_matmul none = cuda::make_linear(m, n, k, epilogue::gelu_tanh_aux, true);
    none.set_bias_pointer(b.data());
    CHECK_THROWS_AS(cuda::reference_matmul(none, args), device_error);
  }
}
