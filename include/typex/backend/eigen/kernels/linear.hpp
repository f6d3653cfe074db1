// typex/backend/eigen/kernels/linear.hpp — the Eigen backend: GEMM kernels: linear, matmul, mm / bmm, addmm.
//
// One family of the kernel definitions: kernels_impl.hpp includes the families in order (each uses
// the ones before it); kernels.hpp declares the kernels.
#pragma once

#ifndef TYPEX_EIGEN_KERNEL_FAMILIES
#error "typex: backend/eigen/kernels/*.hpp are parts of kernels_impl.hpp (in its order); include <typex/backend/eigen.hpp>"
#endif

namespace typex::eigen::detail {

// GEMM: linear, matmul

template <class T>
using row_matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

inline any_tensor linear(const kernel_args& a) {
  const any_tensor& x = ir::arg<linear_op, "input">(a);
  const any_tensor& w = ir::arg<linear_op, "weight">(a);
  const any_tensor* b = ir::arg<linear_op, "bias">(a);
  if (w.rank() != 2) rank_error(a.target(), "weight", w, "2-d: [out_features, in_features]");
  if (x.rank() == 0 || x.extents().back() != w.extents()[1]) {
    raise<shape_error>([&](auto& o) {
      o.put(a.target()); o.put(": input "); o.put(x.to_string()); o.put(" does not fit weight "); o.put(w.to_string());
    });
  }
  const index_t in = w.extents()[1], outs = w.extents()[0];
  if (b != nullptr && (b->rank() != 1 || b->extents()[0] != outs)) rank_error(a.target(), "bias", *b, "[out_features]");
  std::vector<index_t> oe = x.extents();
  oe.back() = outs;
  const dtype d = promote_types(x.scalar_type(), w.scalar_type());
  any_tensor out = a.result(d, oe);
  dispatch_gemm(d, a.target(), [&](auto tag) {
    using T = decltype(tag);
    const any_tensor X = to_dtype(x, d), W = to_dtype(w, d);
    const any_tensor B = b != nullptr ? to_dtype(*b, d) : any_tensor();
    index_t rows = 1;
    for (std::size_t k = 0; k + 1 < x.rank(); ++k) rows *= x.extents()[k];
    gemm_epilogue<T> ep;
    if (b != nullptr) ep.bias = B.data<T>();
    gemm<T>(rows, outs, in, {X.data<T>(), in, 1}, {W.data<T>(), 1, in}, out.data<T>(), outs, ep, num_threads());
  });
  return out;
}

// A matmul operand: batch offsets from a base, and the strides of its last two dims.
template <class T>
struct matmul_operand {
  const T* base;
  std::span<const index_t> batch_offsets;  // per output batch, in elements
  index_t rs, cs;
};

// out[b] = x[b] @ y[b] for every batch b: [n, k] x [k, m], out contiguous. Parallel over batches
// when there are enough of them, otherwise inside each product.
template <class T>
void matmul_batches(const matmul_operand<T>& x, const matmul_operand<T>& y, index_t n, index_t k, index_t m, T* out,
                    int threads) {
  const auto nb = static_cast<index_t>(x.batch_offsets.size());
  auto one = [&](index_t b, int t) {
    gemm<T>(n, m, k, {x.base + x.batch_offsets[static_cast<std::size_t>(b)], x.rs, x.cs},
            {y.base + y.batch_offsets[static_cast<std::size_t>(b)], y.rs, y.cs}, out + b * n * m, m, gemm_epilogue<T>{}, t);
  };
  if (threads > 1 && nb >= threads) {
    auto task = [&](int i) {
      for (index_t b = nb * i / threads; b < nb * (i + 1) / threads; ++b) one(b, 1);
    };
    thread_pool::instance().run(threads, task);
  } else {
    for (index_t b = 0; b < nb; ++b) one(b, threads);
  }
}

// Offsets (elements) of each batch of an operand with extents `e` (batch dims first) and element
// strides `s`, for the broadcast batch extents `batch`.
inline std::vector<index_t> batch_offsets(const std::vector<index_t>& e, const std::vector<index_t>& s, const std::vector<index_t>& batch) {
  const std::size_t r = batch.size(), shift = r - e.size();
  index_t nb = 1;
  for (index_t v : batch) nb *= v;
  std::vector<index_t> out;
  out.reserve(static_cast<std::size_t>(nb));
  std::vector<index_t> idx(r, 0);
  for (index_t b = 0; b < nb; ++b) {
    index_t off = 0;
    for (std::size_t d = shift; d < r; ++d)
      if (e[d - shift] != 1) off += idx[d] * s[d - shift];
    out.push_back(off);
    for (std::size_t d = r; d-- > 0;) {
      if (++idx[d] < batch[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

using plan::contiguous_strides;  // (row-major element strides: plan/planner.hpp)

inline any_tensor matmul_of(std::string_view op, const any_tensor& x, const any_tensor& y) {
  if (x.rank() == 0 || y.rank() == 0) {
    raise<shape_error>([&](auto& o) { o.put(op); o.put(": both arguments need at least one dimension"); });
  }
  // 1-d operands as [1, k] and [k, 1]; their unit dims leave the result
  std::vector<index_t> xe = x.extents(), ye = y.extents();
  const bool x1 = xe.size() == 1, y1 = ye.size() == 1;
  if (x1) xe.insert(xe.begin(), 1);
  if (y1) ye.push_back(1);
  const index_t n = xe[xe.size() - 2], k = xe.back(), m = ye.back();
  if (ye[ye.size() - 2] != k) {
    raise<shape_error>([&](auto& o) {
      o.put(op); o.put(": inner extents differ (lhs "); o.put(x.to_string()); o.put(", rhs "); o.put(y.to_string());
      o.put("): "); o.put_int(k); o.put(" vs "); o.put_int(ye[ye.size() - 2]);
    });
  }
  const std::vector<index_t> xb(xe.begin(), xe.end() - 2), yb(ye.begin(), ye.end() - 2);
  const std::vector<index_t> batch = broadcast_extents(op, xb, yb);
  std::vector<index_t> oe = batch;
  if (!x1) oe.push_back(n);
  if (!y1) oe.push_back(m);
  const dtype d = promote_types(x.scalar_type(), y.scalar_type());
  any_tensor out(d, oe);
  dispatch_gemm(d, op, [&](auto tag) {
    using T = decltype(tag);
    const any_tensor X = to_dtype(x, d), Y = to_dtype(y, d);
    // the batch strides of a contiguous operand: its batch extents' strides, times one matrix
    auto strides = [](const std::vector<index_t>& b, index_t matrix) {
      std::vector<index_t> st = contiguous_strides(b);
      for (index_t& v : st) v *= matrix;
      return st;
    };
    const std::vector<index_t> ox = batch_offsets(xb, strides(xb, n * k), batch), oy = batch_offsets(yb, strides(yb, k * m), batch);
    const matmul_operand<T> mx{X.data<T>(), ox, k, 1};
    const matmul_operand<T> my{Y.data<T>(), oy, m, 1};
    matmul_batches(mx, my, n, k, m, out.data<T>(), num_threads());
  });
  return out;
}

inline any_tensor matmul(const kernel_args& a) {
  return matmul_of(a.target(), ir::arg<matmul_op, "self">(a), ir::arg<matmul_op, "other">(a));
}

// mm: [n, k] x [k, m]; bmm: [b, n, k] x [b, k, m] with equal batches (no broadcasting, as torch).
template <std::size_t Rank>
any_tensor mm(const kernel_args& a) {
  const any_tensor& x = a.tensor("self");
  const any_tensor& y = a.tensor("mat2");
  if (x.rank() != Rank || y.rank() != Rank || (Rank == 3 && x.extents()[0] != y.extents()[0])) {
    raise<shape_error>([&](auto& o) {
      o.put(a.target()); o.put(": expected "); o.put(Rank == 2 ? "two matrices" : "two batches of matrices of the same batch size");
      o.put(", got "); o.put(x.to_string()); o.put(" and "); o.put(y.to_string());
    });
  }
  return matmul_of(a.target(), x, y);
}

// addmm(bias, x, y, beta=1, alpha=1) = beta * bias + alpha * (x @ y), bias broadcast to [n, m].
inline any_tensor addmm(const kernel_args& a) {
  const any_tensor& bias = ir::arg<addmm_op, "self">(a);
  const any_tensor& x = ir::arg<addmm_op, "mat1">(a);
  const any_tensor& y = ir::arg<addmm_op, "mat2">(a);
  if (x.rank() != 2 || y.rank() != 2) {
    raise<shape_error>([&](auto& o) {
      o.put(a.target()); o.put(": expected two matrices, got "); o.put(x.to_string()); o.put(" and "); o.put(y.to_string());
    });
  }
  const double beta = ir::arg<addmm_op, "beta">(a), alpha = ir::arg<addmm_op, "alpha">(a);
  any_tensor out = matmul_of(a.target(), x, y);
  const auto& oe = out.extents();
  if (broadcast_extents(a.target(), bias.extents(), oe) != oe) {
    raise<shape_error>([&](auto& o) {
      o.put(a.target()); o.put(": the bias "); o.put(bias.to_string()); o.put(" does not broadcast to "); o.put(out.to_string());
    });
  }
  const any_tensor B = to_dtype(bias, out.scalar_type());
  dispatch_gemm(out.scalar_type(), a.target(), [&](auto tag) {
    using T = decltype(tag);
    T* po = out.data<T>();
    broadcast_apply(po, oe, B.data<T>(), B.extents(), po, oe, [&](T b, T p) {
      return static_cast<T>((beta == 0.0 ? T(0) : static_cast<T>(beta) * b) + static_cast<T>(alpha) * p);
    });
  });
  return out;
}

// ---------------------------------------------------------------------------------------------

}  // namespace typex::eigen::detail

// The kernels of this family's ops (kernels_impl.hpp builds the table from the registry).
namespace typex::eigen {
TYPEX_EIGEN_KERNEL(linear_op, detail::linear);
TYPEX_EIGEN_KERNEL(matmul_op, detail::matmul);
TYPEX_EIGEN_KERNEL(aten::mm, detail::mm<2>);
TYPEX_EIGEN_KERNEL(aten::bmm, detail::mm<3>);
TYPEX_EIGEN_KERNEL(addmm_op, detail::addmm);
}  // namespace typex::eigen
