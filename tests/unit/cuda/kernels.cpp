// Tests for the CUDA backend's kernels (kernels/*.cuh) on the emulator, through the launch records
// and dispatch the devices use: each against a plain C++ reference (double precision) at edge
// shapes — one element, sizes that are not multiples of a warp or a block, broadcast and strided
// operands, empty matrices — and under several block-order seeds.
//
// Tolerances: f32 results are compared with the double-precision reference to 2e-6 absolute plus
// 2e-5 relative (a few f32 ulp: libm's and CUDA's f32 functions are within 1 to 4 ulp, and the
// ops' formulas add a few roundings); f64 to 1e-12 relative. A NaN must match a NaN.
#include <doctest/doctest.h>

#include <typex/backend/cuda/chain.hpp>
#include <typex/backend/cuda/dispatch.cuh>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

using namespace typex::cuda;

namespace {

constexpr std::uint64_t seeds[] = {1, 7, 12345};

bool close(double got, double ref, double abs_tol, double rel_tol) {
  if (std::isnan(ref) || std::isnan(got)) return std::isnan(ref) && std::isnan(got);
  if (std::isinf(ref) || std::isinf(got)) return got == ref;
  return std::fabs(got - ref) <= abs_tol + rel_tol * std::fabs(ref);
}

std::vector<float> uniform(std::size_t n, float lo, float hi, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

template <class Op>
chain_link link_of(const Op& op) {
  chain_link l;
  l.kind = link_kind::unary;
  l.code = static_cast<std::uint8_t>(unary_code<Op>);
  std::memcpy(l.op, static_cast<const void*>(&op), sizeof(Op));
  return l;
}

chain_link binary(link_kind kind, int operand, double number = 0.0, double alpha = 1.0, bool chain_second = false) {
  chain_link l;
  l.kind = kind;
  l.operand = static_cast<std::int8_t>(operand);
  l.number = number;
  l.alpha = alpha;
  l.chain_second = chain_second;
  return l;
}

// A chain over a contiguous 1-d operand with one unary link.
template <class T>
chain_params unary_chain(const T* x, T* out, std::int64_t n, const chain_link& link) {
  chain_params p;
  p.dtype = std::is_same_v<T, float> ? chain_dtype::f32 : chain_dtype::f64;
  p.rank = 1;
  p.extent[0] = n;
  p.n = n;
  p.out = out;
  p.n_operands = 1;
  p.operands[0].data = x;
  p.operands[0].stride[0] = 1;
  p.n_links = 1;
  p.links[0] = link;
  return p;
}

// Every op of the chain list, with default attributes and with other ones where it has attributes.
template <class Op>
void check_unary_op(const Op& op, const std::string& what) {
  CAPTURE(what);
  const std::size_t n = 300;  // (not a multiple of 32 or 256: two blocks, the second partial)
  std::vector<float> x = uniform(n, -4.0f, 4.0f, 3);
  x[0] = 0.0f;
  x[1] = -0.0f;
  x[2] = 3.0f;   // (hardswish / hardsigmoid kinks)
  x[3] = -3.0f;
  x[4] = 25.0f;  // (softplus' threshold)
  x[5] = std::nanf("");
  std::vector<float> out(n, -7.0f);
  dispatch(chain_launch(unary_chain(x.data(), out.data(), static_cast<std::int64_t>(n), link_of(op))), 0);
  std::vector<double> xd(x.begin(), x.end()), outd(n, -7.0);
  dispatch(chain_launch(unary_chain(xd.data(), outd.data(), static_cast<std::int64_t>(n), link_of(op))), 0);
  for (std::size_t i = 0; i < n; ++i) {
    CAPTURE(x[i]);
    double ref = 0.0;
    op.math(typex::scalar_math<double>{}, static_cast<double>(x[i]), ref);
    CHECK(close(out[i], ref, 2e-6, 2e-5));
    CHECK(close(outd[i], ref, 1e-14, 1e-12));
  }
}

template <class... Ops>
void check_every_unary_op(typex::op_list<Ops...>) {
  (check_unary_op(Ops{}, std::string(typex::op_id_of<Ops>.name())), ...);
}

}  // namespace

TEST_CASE("cuda chain kernel: every unary op of the chain list matches its math in double precision") {
  static_assert(chain_unary_ops::size >= 20);
  check_every_unary_op(chain_unary_ops{});
  typex::gelu_op gelu;
  gelu.approximate = typex::gelu_approximation::tanh;
  check_unary_op(gelu, "gelu tanh");
  typex::hardtanh_op hardtanh;
  hardtanh.min_val = -0.5;
  hardtanh.max_val = 2.0;
  check_unary_op(hardtanh, "hardtanh(-0.5, 2)");
  typex::leaky_relu_op leaky;
  leaky.negative_slope = 0.2;
  check_unary_op(leaky, "leaky_relu(0.2)");
  typex::elu_op elu;
  elu.alpha = 1.5;
  elu.scale = 0.7;
  elu.input_scale = 2.0;
  check_unary_op(elu, "elu(1.5, 0.7, 2)");
  typex::softplus_op softplus;
  softplus.beta = 2.0;
  softplus.threshold = 3.0;
  check_unary_op(softplus, "softplus(2, 3)");
}

TEST_CASE("cuda chain kernel: binary links with broadcast operands and numbers, at edge sizes") {
  for (const std::uint64_t seed : seeds) {
    emu::set_seed(seed);
    // out [a, b, c]; x0 contiguous; x1 [1, b, 1] (broadcast on dims 0 and 2); x2 [a, 1, c]
    // stored transposed ([c, a] in memory)
    for (const auto& [a, b, c] : {std::array<int, 3>{1, 1, 1}, {3, 5, 7}, {2, 3, 43}, {1, 257, 1}, {4, 10, 25}}) {
      CAPTURE(a);
      CAPTURE(b);
      CAPTURE(c);
      const std::size_t n = static_cast<std::size_t>(a * b * c);
      const auto x0 = uniform(n, -2.0f, 2.0f, 1), x1 = uniform(static_cast<std::size_t>(b), 0.5f, 2.0f, 2),
                 x2 = uniform(static_cast<std::size_t>(a * c), -1.0f, 1.0f, 3);
      std::vector<float> out(n + 1, -9.0f);
      chain_params p;
      p.rank = 3;
      p.extent[0] = a;
      p.extent[1] = b;
      p.extent[2] = c;
      p.n = static_cast<std::int64_t>(n);
      p.out = out.data();
      p.n_operands = 3;
      p.operands[0] = {x0.data(), {b * c, c, 1}};
      p.operands[1] = {x1.data(), {0, 1, 0}};
      p.operands[2] = {x2.data(), {1, 0, a}};
      typex::gelu_op gelu;
      p.links[0] = binary(link_kind::add, 1, 0.0, 0.5);                 // y + 0.5 x1
      p.links[1] = link_of(gelu);                                       // gelu(y)
      p.links[2] = binary(link_kind::mul, -1, 2.0);                     // y * 2
      p.links[3] = binary(link_kind::sub, 2, 0.0, 1.5, true);           // x2 - 1.5 y
      p.links[4] = link_of(typex::exp_op{});                            // exp(y) (away from 0)
      p.links[5] = binary(link_kind::div, 1, 0.0, 1.0, true);           // x1 / y
      p.links[6] = binary(link_kind::div, -1, 4.0);                     // y / 4
      p.links[7] = binary(link_kind::sub, -1, 1.0, 2.0);                // y - 2 * 1
      p.n_links = 8;
      dispatch(chain_launch(p), 0);
      for (int i = 0; i < a; ++i)
        for (int j = 0; j < b; ++j)
          for (int k = 0; k < c; ++k) {
            const std::size_t o = static_cast<std::size_t>((i * b + j) * c + k);
            double y = x0[o] + 0.5 * x1[static_cast<std::size_t>(j)];
            double g = 0.0;
            gelu.math(typex::scalar_math<double>{}, y, g);
            y = g * 2.0;
            y = std::exp(x2[static_cast<std::size_t>(k * a + i)] - 1.5 * y);
            y = x1[static_cast<std::size_t>(j)] / y;
            y = y / 4.0 - 2.0;
            CHECK(close(out[o], y, 2e-6, 2e-5));
          }
      CHECK(out[n] == -9.0f);  // (nothing written past the output)
    }
  }
  emu::set_seed(0x5eed);
}

TEST_CASE("cuda chain: encode_unary turns recorded calls into links, and refuses ops without math") {
  using typex::ir::argument;
  const std::vector<argument> leaky_args{typex::ir::value_ref{}, 0.25};
  const typex::any_tensor* tensors[] = {nullptr, nullptr};
  const typex::ir::call_args a(typex::op_id_of<typex::leaky_relu_op>, leaky_args, tensors);
  const auto link = encode_unary(typex::op_id_of<typex::leaky_relu_op>, a);
  REQUIRE(link.has_value());
  CHECK(link->kind == link_kind::unary);
  CHECK(link->code == unary_code<typex::leaky_relu_op>);
  typex::leaky_relu_op decoded;
  std::memcpy(static_cast<void*>(&decoded), link->op, sizeof decoded);
  CHECK(decoded.negative_slope == 0.25);

  const std::vector<argument> gelu_args{typex::ir::value_ref{}, std::string("tanh")};
  const typex::ir::call_args g(typex::op_id_of<typex::gelu_op>, gelu_args, tensors);
  const auto gl = encode_unary(typex::op_id_of<typex::gelu_op>, g);
  REQUIRE(gl.has_value());
  typex::gelu_op gd;
  std::memcpy(static_cast<void*>(&gd), gl->op, sizeof gd);
  CHECK(gd.approximate == typex::gelu_approximation::tanh);

  const std::vector<argument> none{typex::ir::value_ref{}};
  CHECK(encode_unary(typex::op_id_of<typex::relu_op>, typex::ir::call_args(typex::op_id_of<typex::relu_op>, none, tensors)).has_value());
  CHECK(!encode_unary(typex::op_id_of<typex::clamp_op>, typex::ir::call_args(typex::op_id_of<typex::clamp_op>, none, tensors)));
  CHECK(!chain_supports(typex::op_id_of<typex::add_op>));
  CHECK(chain_supports(typex::op_id_of<typex::silu_op>));
}

// The grid-stride loop past its first pass: a record whose grid is smaller than the elements need
// (a GPU caps the grid; every thread then handles several elements).
TEST_CASE("cuda chain kernel: a grid smaller than the elements covers them all (grid-stride loop)") {
  const std::int64_t n = 3 * 256 + 17;  // (one block of 256 threads: four passes, the last partial)
  std::vector<float> x(static_cast<std::size_t>(n)), out(static_cast<std::size_t>(n) + 1, -9.0f);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i);
  chain_params p{};
  p.out = out.data();
  p.rank = 1;
  p.n = n;
  p.extent[0] = n;
  p.n_operands = 1;
  p.operands[0].data = x.data();
  p.operands[0].stride[0] = 1;
  p.links[0].kind = link_kind::mul;
  p.links[0].number = 2.0;
  p.n_links = 1;
  kernel_launch k = chain_launch(p);
  k.grid = launch_dims{1};
  dispatch(k, 0);
  for (std::int64_t i = 0; i < n; ++i) CHECK(out[static_cast<std::size_t>(i)] == 2.0f * static_cast<float>(i));
  CHECK(out[static_cast<std::size_t>(n)] == -9.0f);
}

TEST_CASE("cuda copy kernel: strided to contiguous, every item size, transposes and flips") {
  for (const std::uint64_t seed : seeds) {
    emu::set_seed(seed);
    // a [37, 41] f32 matrix transposed
    const auto x = uniform(37 * 41, -1.0f, 1.0f, 5);
    std::vector<float> t(37 * 41 + 1, -5.0f);
    copy_params p;
    p.src = x.data();
    p.dst = t.data();
    p.itemsize = 4;
    p.rank = 2;
    p.extent[0] = 41;
    p.extent[1] = 37;
    p.src_stride[0] = 1;
    p.src_stride[1] = 41;
    p.n = 41 * 37;
    dispatch(copy_launch(p), 0);
    for (int i = 0; i < 41; ++i)
      for (int j = 0; j < 37; ++j) CHECK(t[static_cast<std::size_t>(i * 37 + j)] == x[static_cast<std::size_t>(j * 41 + i)]);
    CHECK(t.back() == -5.0f);

    // rank 3 permute (2, 0, 1) with the last dim flipped (a negative stride), items of 1, 2, 8 bytes
    const auto permute = [&]<class Item>(Item) {
      const int d0 = 3, d1 = 5, d2 = 17;  // source [d0, d1, d2]; output [d2, d0, d1] with d1 reversed
      std::vector<Item> src(static_cast<std::size_t>(d0 * d1 * d2));
      for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<Item>(i * 2654435761u);
      std::vector<Item> dst(src.size());
      copy_params q;
      q.src = src.data() + (d1 - 1) * d2;  // (element [0, d1 - 1, 0])
      q.dst = dst.data();
      q.itemsize = sizeof(Item);
      q.rank = 3;
      q.extent[0] = d2;
      q.extent[1] = d0;
      q.extent[2] = d1;
      q.src_stride[0] = 1;
      q.src_stride[1] = d1 * d2;
      q.src_stride[2] = -d2;
      q.n = d0 * d1 * d2;
      dispatch(copy_launch(q), 0);
      for (int k = 0; k < d2; ++k)
        for (int i = 0; i < d0; ++i)
          for (int j = 0; j < d1; ++j)
            CHECK(dst[static_cast<std::size_t>((k * d0 + i) * d1 + j)] == src[static_cast<std::size_t>((i * d1 + (d1 - 1 - j)) * d2 + k)]);
    };
    permute(std::uint8_t{});
    permute(std::uint16_t{});
    permute(std::uint64_t{});

    // one element, rank 0
    const double one = 3.5;
    double got = 0.0;
    copy_params s;
    s.src = &one;
    s.dst = &got;
    s.itemsize = 8;
    s.rank = 0;
    s.n = 1;
    dispatch(copy_launch(s), 0);
    CHECK(got == 3.5);
  }
  emu::set_seed(0x5eed);
}

TEST_CASE("cuda reduce kernel: row sum, mean, softmax and log_softmax at edge shapes") {
  // (one seed for most shapes: a block per row, the rows are independent; the emulator's barriers
  // and shuffles cost ~5 ms per block with 256 threads on 2 cores)
  for (const auto& [seed, rows64, cols64] : {std::array<std::uint64_t, 3>{1, 1, 1}, {1, 3, 33}, {1, 2, 256}, {1, 4, 31}, {1, 3, 257},
                                         {7, 3, 257}, {12345, 2, 1000}}) {
    emu::set_seed(seed);
    {
      const int rows = static_cast<int>(rows64), cols = static_cast<int>(cols64);
      CAPTURE(rows);
      CAPTURE(cols);
      const auto x = uniform(static_cast<std::size_t>(rows * cols), -3.0f, 3.0f, static_cast<unsigned>(rows * 1000 + cols));
      for (const reduce_kind kind : {reduce_kind::sum, reduce_kind::mean, reduce_kind::softmax, reduce_kind::log_softmax}) {
        CAPTURE(static_cast<int>(kind));
        const bool rowwise = kind == reduce_kind::sum || kind == reduce_kind::mean;
        const std::size_t n_out = rowwise ? static_cast<std::size_t>(rows) : x.size();
        std::vector<float> out(n_out + 1, -9.0f);
        reduce_params p;
        p.kind = kind;
        p.in = x.data();
        p.out = out.data();
        p.rows = rows;
        p.cols = cols;
        dispatch(reduce_launch(p), 0);
        for (int r = 0; r < rows; ++r) {
          const float* row = x.data() + r * cols;
          double s = 0.0, m = -INFINITY;
          for (int c = 0; c < cols; ++c) {
            s += row[c];
            m = std::max(m, static_cast<double>(row[c]));
          }
          if (kind == reduce_kind::sum) CHECK(close(out[static_cast<std::size_t>(r)], s, 1e-5, 1e-5));
          if (kind == reduce_kind::mean) CHECK(close(out[static_cast<std::size_t>(r)], s / cols, 1e-6, 1e-5));
          if (rowwise) continue;
          double e = 0.0;
          for (int c = 0; c < cols; ++c) e += std::exp(row[c] - m);
          for (int c = 0; c < cols; ++c) {
            const double ref = kind == reduce_kind::softmax ? std::exp(row[c] - m) / e : row[c] - m - std::log(e);
            CHECK(close(out[static_cast<std::size_t>(r * cols + c)], ref, 1e-6, 1e-5));
          }
        }
        CHECK(out[n_out] == -9.0f);
      }
    }
  }
  // rows a softmax without its max subtraction gets wrong (exp(1000) overflows), a row of -inf
  // (PyTorch: NaN), a row holding +inf and a NaN row
  {
    const float inf = std::numeric_limits<float>::infinity();
    std::vector<float> x = {1000.0f, 999.0f, 998.0f, -1000.0f, -inf, -inf, -inf, -inf, 1.0f, inf, 2.0f, 3.0f, 1.0f, NAN, 2.0f, 0.0f};
    for (const reduce_kind kind : {reduce_kind::softmax, reduce_kind::log_softmax}) {
      CAPTURE(static_cast<int>(kind));
      std::vector<float> out(x.size(), -9.0f);
      reduce_params p;
      p.kind = kind;
      p.in = x.data();
      p.out = out.data();
      p.rows = 4;
      p.cols = 4;
      dispatch(reduce_launch(p), 0);
      const double e = 1.0 + std::exp(-1.0) + std::exp(-2.0);  // (row 0: exp(x - 1000); the -1000 term is 0)
      if (kind == reduce_kind::softmax) {
        CHECK(close(out[0], 1.0 / e, 1e-6, 1e-5));
        CHECK(close(out[2], std::exp(-2.0) / e, 1e-6, 1e-5));
        CHECK(out[3] == 0.0f);
        CHECK(std::isnan(out[9]));  // (+inf in a row: inf - inf is NaN, as in PyTorch)
      } else {
        CHECK(close(out[0], -std::log(e), 1e-5, 1e-5));
        CHECK(close(out[3], -2000.0 - std::log(e), 1e-3, 1e-6));
      }
      for (int c = 4; c < 8; ++c) CHECK(std::isnan(out[static_cast<std::size_t>(c)]));   // (a row of -inf)
      for (int c = 12; c < 16; ++c) CHECK(std::isnan(out[static_cast<std::size_t>(c)]));  // (a NaN spreads over its row)
    }
  }
  // empty: no rows (one block, which writes nothing); rows of no columns (sum 0, mean NaN)
  std::vector<float> out(2, -9.0f);
  reduce_params p;
  p.in = out.data();
  p.out = out.data();
  p.rows = 0;
  p.cols = 5;
  dispatch(reduce_launch(p), 0);
  CHECK(out[0] == -9.0f);
  p.rows = 2;
  p.cols = 0;
  dispatch(reduce_launch(p), 0);
  CHECK(out[0] == 0.0f);
  CHECK(out[1] == 0.0f);
  p.kind = reduce_kind::mean;
  dispatch(reduce_launch(p), 0);
  CHECK(std::isnan(out[0]));
  emu::set_seed(0x5eed);
}

TEST_CASE("cuda reduce kernel: integer and bool rows reduce exactly in int64, f64 rows in f64, strided, at edge values") {
  constexpr std::int64_t lo = std::numeric_limits<std::int64_t>::lowest(), hi = std::numeric_limits<std::int64_t>::max();
  // [3, 300] i32 rows summed past int32's range (exact only in int64), amax / amin / argmax of each
  // row; a run of equal maxima (the first index wins)
  const int rows = 3, cols = 300;
  std::vector<std::int32_t> x32(static_cast<std::size_t>(rows * cols));
  for (int i = 0; i < rows * cols; ++i) x32[static_cast<std::size_t>(i)] = (i % 7 - 3) * 20000000 + i;
  for (int c = 100; c < 110; ++c) x32[static_cast<std::size_t>(cols + c)] = std::numeric_limits<std::int32_t>::max();
  for (const std::uint64_t seed : seeds) {
    emu::set_seed(seed);
    std::vector<std::int64_t> sums(rows + 1, -9), index(rows + 1, -9);
    std::vector<std::int32_t> maxes(rows + 1, -9), mins(rows + 1, -9);
    reduce_params p;
    p.type = reduce_type::i32;
    p.in = x32.data();
    p.rows = rows;
    p.cols = cols;
    p.kind = reduce_kind::sum;
    p.out = sums.data();
    dispatch(reduce_launch(p), 0);
    p.kind = reduce_kind::amax;
    p.out = maxes.data();
    dispatch(reduce_launch(p), 0);
    p.kind = reduce_kind::amin;
    p.out = mins.data();
    dispatch(reduce_launch(p), 0);
    p.kind = reduce_kind::argmax;
    p.out = nullptr;
    p.index_out = index.data();
    dispatch(reduce_launch(p), 0);
    for (int r = 0; r < rows; ++r) {
      std::int64_t s = 0, m = lo, n = hi, at = 0;
      for (int c = 0; c < cols; ++c) {
        const std::int64_t v = x32[static_cast<std::size_t>(r * cols + c)];
        s += v;
        if (v > m) m = v, at = c;
        n = std::min(n, v);
      }
      CAPTURE(r);
      CHECK(sums[static_cast<std::size_t>(r)] == s);
      CHECK(maxes[static_cast<std::size_t>(r)] == m);
      CHECK(mins[static_cast<std::size_t>(r)] == n);
      CHECK(index[static_cast<std::size_t>(r)] == at);
    }
    CHECK(index[1] == 100);
    CHECK((sums[rows] == -9 && maxes[rows] == -9 && mins[rows] == -9 && index[rows] == -9));
  }
  // i64 at its limits, reduced over the leading dim of a [2, 3] matrix (strided rows): amax / amin
  // reach lowest and max (no negation: -lowest overflows), argmax of a column of lowest is its first
  {
    const std::vector<std::int64_t> x = {lo, hi, 5, lo, lo + 1, 5};
    std::vector<std::int64_t> maxes(3, -9), mins(3, -9), index(3, -9), sums(3, -9);
    reduce_params p;
    p.type = reduce_type::i64;
    p.in = x.data();
    p.rows = 3;
    p.cols = 2;
    p.rank_kept = 1, p.kept_extent[0] = 3, p.kept_stride[0] = 1;
    p.rank_red = 1, p.red_extent[0] = 2, p.red_stride[0] = 3;
    p.kind = reduce_kind::amax, p.out = maxes.data();
    dispatch(reduce_launch(p), 0);
    p.kind = reduce_kind::amin, p.out = mins.data();
    dispatch(reduce_launch(p), 0);
    p.kind = reduce_kind::sum, p.out = sums.data();
    dispatch(reduce_launch(p), 0);
    p.kind = reduce_kind::argmax, p.out = nullptr, p.index_out = index.data();
    dispatch(reduce_launch(p), 0);
    CHECK(maxes == std::vector<std::int64_t>{lo, hi, 5});
    CHECK(mins == std::vector<std::int64_t>{lo, lo + 1, 5});
    // (lo + lo wraps, as torch's int64 sum does)
    CHECK(sums == std::vector<std::int64_t>{static_cast<std::int64_t>(static_cast<std::uint64_t>(lo) * 2u), hi + (lo + 1), 10});
    CHECK(index == std::vector<std::int64_t>{0, 0, 0});
  }
  // bool rows: the count of true
  {
    const bool b[] = {true, false, true, true, false, false, false, false};
    std::vector<std::int64_t> count(2, -9);
    reduce_params p;
    p.type = reduce_type::b8;
    p.in = b;
    p.out = count.data();
    p.rows = 2;
    p.cols = 4;
    dispatch(reduce_launch(p), 0);
    CHECK(count == std::vector<std::int64_t>{3, 0});
  }
  // f64 rows: sum, mean, var (correction 1), std, softmax and logsumexp against double references,
  // to a relative 1e-13: values that f32 would round away (1 + 1e-12 steps)
  {
    const int n = 257;
    std::vector<double> x(static_cast<std::size_t>(2 * n));
    for (int i = 0; i < 2 * n; ++i) x[static_cast<std::size_t>(i)] = 1.0 + 1e-12 * i + (i % 2 == 0 ? 0.0 : 3.0);
    for (const reduce_kind kind : {reduce_kind::sum, reduce_kind::mean, reduce_kind::var, reduce_kind::std, reduce_kind::logsumexp,
                                   reduce_kind::softmax}) {
      CAPTURE(static_cast<int>(kind));
      const bool rowwise = kind != reduce_kind::softmax;
      std::vector<double> out(rowwise ? 2 : x.size(), -9.0);
      reduce_params p;
      p.type = reduce_type::f64;
      p.kind = kind;
      p.in = x.data();
      p.out = out.data();
      p.rows = 2;
      p.cols = n;
      dispatch(reduce_launch(p), 0);
      for (int r = 0; r < 2; ++r) {
        const double* row = x.data() + r * n;
        double s = 0, m = -INFINITY;
        for (int c = 0; c < n; ++c) s += row[c], m = std::max(m, row[c]);
        const double mean = s / n;
        double q = 0, e = 0;
        for (int c = 0; c < n; ++c) q += (row[c] - mean) * (row[c] - mean), e += std::exp(row[c] - m);
        const double want = kind == reduce_kind::sum    ? s
                            : kind == reduce_kind::mean ? mean
                            : kind == reduce_kind::var  ? q / (n - 1)
                            : kind == reduce_kind::std  ? std::sqrt(q / (n - 1))
                                                        : m + std::log(e);
        if (rowwise) {
          CHECK(close(out[static_cast<std::size_t>(r)], want, 0.0, 1e-13));
        } else {
          for (int c = 0; c < n; ++c) CHECK(close(out[static_cast<std::size_t>(r * n + c)], std::exp(row[c] - m) / e, 0.0, 1e-13));
        }
      }
    }
  }
  emu::set_seed(0x5eed);
}
