// benchmarks/models/hand_eigen.hpp — the peer to match: the three workloads written by hand with
// Eigen, the way a careful engineer would without typex.
//
// Activations are column-major [features x batch] (the same memory as a row-major [batch,
// features] tensor: inputs map with no copy); weights stay row-major [out, in] as in PyTorch;
// products are `Y.noalias() = W * X` (Eigen's GEMM, threaded with OpenMP: Eigen::setNbThreads);
// bias + activation is one vectorised pass per column (Eigen's colwise() broadcast is not
// vectorised in 3.4); the CNN is im2col + GEMM per image, OpenMP over images; attention is per
// (sequence, head), OpenMP over them. Buffers are allocated on the first call and reused.
#pragma once

#include "workloads.hpp"

#include <Eigen/Core>
#include <unsupported/Eigen/SpecialFunctions>

#ifdef _OPENMP
#include <omp.h>
#endif

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

namespace bench::hand {

using mat = Eigen::MatrixXf;  // column-major
using row_mat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using vec = Eigen::VectorXf;
using weights_fn = std::function<const float*(const std::string&)>;

struct linear {
  Eigen::Map<const row_mat> w{nullptr, 0, 0};
  Eigen::Map<const vec> b{nullptr, 0};
  linear() = default;
  linear(const weights_fn& get, const std::string& name, long in, long out)
      : w(get(name + ".weight"), out, in), b(get(name + ".bias"), out) {}
};

enum class act { none, relu, gelu };

// Y = act(W X + b), column by column for the epilogue.
template <class Y, class X>
void apply(const linear& l, const X& x, Y& y, act a) {
  y.noalias() = l.w * x;
#pragma omp parallel for schedule(static) if (y.size() >= (1 << 16))
  for (long j = 0; j < y.cols(); ++j) {
    auto c = y.col(j).array();
    c += l.b.array();
    if (a == act::relu) c = c.max(0.f);
    if (a == act::gelu) c = 0.5f * c * (1.0f + (c * 0.70710678118654752f).erf());
  }
}

struct mlp {
  linear l1, l2, l3;
  mat h1, h2, out;
  explicit mlp(const weights_fn& get)
      : l1(get, "0", mlp_in, mlp_hidden), l2(get, "2", mlp_hidden, mlp_hidden), l3(get, "4", mlp_hidden, mlp_out) {}
  const mat& operator()(const float* x, long batch) {
    const Eigen::Map<const mat> in(x, mlp_in, batch);
    h1.resize(mlp_hidden, batch), h2.resize(mlp_hidden, batch), out.resize(mlp_out, batch);
    apply(l1, in, h1, act::relu);
    apply(l2, h1, h2, act::relu);
    apply(l3, h2, out, act::none);
    return out;
  }
};

struct cnn {
  Eigen::Map<const row_mat> w1{nullptr, 0, 0}, w2{nullptr, 0, 0};
  Eigen::Map<const vec> b1{nullptr, 0}, b2{nullptr, 0};
  linear fc1, fc2;
  mat pooled, h, out;
  std::vector<row_mat> col1, col2, y1, y2;  // per OpenMP thread
  explicit cnn(const weights_fn& get)
      : w1(get("0.weight"), cnn_c1, 9), w2(get("2.weight"), cnn_c2, cnn_c1 * 9), b1(get("0.bias"), cnn_c1),
        b2(get("2.bias"), cnn_c2), fc1(get, "6", 9216, cnn_fc), fc2(get, "8", cnn_fc, cnn_out) {}

  // col[(c, i, j)][(y, x)] of a c x n x n image, 3x3 windows, no padding
  static void im2col(const float* img, long c, long n, row_mat& col) {
    const long o = n - 2;
    col.resize(c * 9, o * o);
    for (long ci = 0; ci < c; ++ci)
      for (long i = 0; i < 3; ++i)
        for (long j = 0; j < 3; ++j) {
          float* r = col.row((ci * 3 + i) * 3 + j).data();
          for (long y = 0; y < o; ++y)
            for (long x = 0; x < o; ++x) r[y * o + x] = img[(ci * n + y + i) * n + x + j];
        }
  }

  const mat& operator()(const float* x, long batch, int threads) {
    pooled.resize(9216, batch), h.resize(cnn_fc, batch), out.resize(cnn_out, batch);
    col1.resize(threads), col2.resize(threads), y1.resize(threads), y2.resize(threads);
#pragma omp parallel for schedule(static) num_threads(threads) if (batch > 1)
    for (long b = 0; b < batch; ++b) {
      int t = 0;
#ifdef _OPENMP
      t = omp_get_thread_num();
#endif
      im2col(x + b * 28 * 28, 1, 28, col1[t]);
      y1[t].resize(cnn_c1, 26 * 26);
      y1[t].noalias() = w1 * col1[t];
      for (long c = 0; c < cnn_c1; ++c) y1[t].row(c) = (y1[t].row(c).array() + b1[c]).max(0.f).matrix();
      im2col(y1[t].data(), cnn_c1, 26, col2[t]);
      y2[t].resize(cnn_c2, 24 * 24);
      y2[t].noalias() = w2 * col2[t];
      float* p = pooled.col(b).data();
      for (long c = 0; c < cnn_c2; ++c) {
        auto r = y2[t].row(c).array();
        r = (r + b2[c]).max(0.f);
        for (long yy = 0; yy < 12; ++yy)
          for (long xx = 0; xx < 12; ++xx) {
            const float* q = y2[t].row(c).data() + (2 * yy) * 24 + 2 * xx;
            p[(c * 12 + yy) * 12 + xx] = std::max(std::max(q[0], q[1]), std::max(q[24], q[25]));
          }
      }
    }
    apply(fc1, pooled, h, act::relu);
    apply(fc2, h, out, act::none);
    return out;
  }
};

struct transformer {
  Eigen::Map<const row_mat> w_in{nullptr, 0, 0};
  Eigen::Map<const vec> b_in{nullptr, 0};
  linear out_proj, l1, l2;
  Eigen::Map<const vec> n1w{nullptr, 0}, n1b{nullptr, 0}, n2w{nullptr, 0}, n2b{nullptr, 0};
  mat qkv, attn, proj, x1, ff, y;
  std::vector<mat> scores;  // per OpenMP thread
  explicit transformer(const weights_fn& get)
      : w_in(get("self_attn.in_proj_weight"), 3 * tf_d, tf_d), b_in(get("self_attn.in_proj_bias"), 3 * tf_d),
        out_proj(get, "self_attn.out_proj", tf_d, tf_d), l1(get, "linear1", tf_d, tf_ff), l2(get, "linear2", tf_ff, tf_d),
        n1w(get("norm1.weight"), tf_d), n1b(get("norm1.bias"), tf_d), n2w(get("norm2.weight"), tf_d),
        n2b(get("norm2.bias"), tf_d) {}

  static void layer_norm(mat& m, const Eigen::Map<const vec>& w, const Eigen::Map<const vec>& b) {
#pragma omp parallel for schedule(static) if (m.size() >= (1 << 16))
    for (long j = 0; j < m.cols(); ++j) {
      auto c = m.col(j).array();
      const float mean = c.mean();
      c -= mean;
      const float inv = 1.0f / std::sqrt(c.square().mean() + 1e-5f);
      c = c * inv * w.array() + b.array();
    }
  }

  const mat& operator()(const float* x, long batch, int threads) {
    const long t = batch * tf_seq, hd = tf_d / tf_heads;
    const Eigen::Map<const mat> in(x, tf_d, t);
    qkv.resize(3 * tf_d, t), attn.resize(tf_d, t), proj.resize(tf_d, t), ff.resize(tf_ff, t), y.resize(tf_d, t);
    qkv.noalias() = w_in * in;
    for (long j = 0; j < t; ++j) qkv.col(j) += b_in;
    scores.resize(threads);
    const float scale = 1.0f / std::sqrt(float(hd));
#pragma omp parallel for schedule(static) num_threads(threads)
    for (long bh = 0; bh < batch * tf_heads; ++bh) {
      int th = 0;
#ifdef _OPENMP
      th = omp_get_thread_num();
#endif
      const long b = bh / tf_heads, h = bh % tf_heads;
      const auto q = qkv.block(h * hd, b * tf_seq, hd, tf_seq);
      const auto k = qkv.block(tf_d + h * hd, b * tf_seq, hd, tf_seq);
      const auto v = qkv.block(2 * tf_d + h * hd, b * tf_seq, hd, tf_seq);
      mat& s = scores[th];
      s.resize(tf_seq, tf_seq);
      s.noalias() = (k.transpose() * q) * scale;  // [keys x queries]
      for (long j = 0; j < tf_seq; ++j) {
        auto c = s.col(j).array();
        c = (c - c.maxCoeff()).exp();
        c /= c.sum();
      }
      attn.block(h * hd, b * tf_seq, hd, tf_seq).noalias() = v * s;
    }
    apply(out_proj, attn, proj, act::none);
    x1 = in + proj;
    layer_norm(x1, n1w, n1b);
    apply(l1, x1, ff, act::gelu);
    apply(l2, ff, y, act::none);
    y += x1;
    layer_norm(y, n2w, n2b);
    return y;
  }
};

}  // namespace bench::hand
