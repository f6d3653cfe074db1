// typex/backend/eigen/kernels_impl.hpp — the Eigen backend's kernels, defined.
//
// One kernel per ATen target on type-erased tensors (declared in kernels.hpp). GEMMs and
// convolutions go through the backend's own blocked product (gemm.hpp); the hot pointwise and row
// ops (activations, softmax, layer_norm) are vectorised with Eigen's array math, in functions that
// the planned programs (plan_impl.hpp) call too. <typex/backend/eigen.hpp> includes this header
// unless TYPEX_EIGEN_SEPARATE_COMPILATION says the kernels are compiled elsewhere.
#pragma once

#include <typex/backend/eigen/gemm.hpp>
#include <typex/backend/eigen/kernels.hpp>
#include <typex/backend/eigen/plan.hpp>
#include <typex/core/half.hpp>
#include <typex/core/rules/conv.hpp>
#include <typex/ops/binary.hpp>
#include <typex/ops/factory.hpp>
#include <typex/ops/indexing.hpp>
#include <typex/ops/mutation.hpp>
#include <typex/ops/normalization.hpp>
#include <typex/ops/reduce.hpp>
#include <typex/ops/unary.hpp>

#include <Eigen/Core>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <type_traits>
#include <mutex>
#include <unordered_map>

namespace typex::eigen {

namespace detail {
using typex::detail::raise;

// f16 and bf16 compute in f32.
template <class T>
using compute_t = std::conditional_t<std::is_same_v<T, half> || std::is_same_v<T, bfloat16>, float, T>;

template <class To, class From>
To convert(const From& v) {
  if constexpr (std::is_same_v<From, half> || std::is_same_v<From, bfloat16>) {
    return convert<To>(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, half> || std::is_same_v<To, bfloat16>) {
    return To(static_cast<float>(v));
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To> && !std::is_same_v<To, bool>) {
    // NaN and values outside i64 are undefined behaviour for a C++ conversion; they become i64's
    // lowest value (what x86's conversion, and so PyTorch on x86, gives), narrowed like any i64
    constexpr From limit = From(9223372036854775808.0);  // 2^63
    const std::int64_t w = (v >= -limit && v < limit) ? static_cast<std::int64_t>(v) : std::numeric_limits<std::int64_t>::min();
    return static_cast<To>(w);
  } else {
    return static_cast<To>(v);
  }
}

[[noreturn]] inline void unsupported_dtype(std::string_view op, dtype d) {
  raise<unsupported_error>([&](auto& w) {
    w.put(op); w.put(": the Eigen backend does not run this op on "); w.put(name(d)); w.put(" tensors");
  });
}

// Calls f(T{}) with the element type of d; Floating restricts to floating dtypes.
template <bool Floating, class F>
decltype(auto) dispatch(dtype d, std::string_view op, F&& f) {
  switch (d) {
    case dtype::f32: return f(float{});
    case dtype::f64: return f(double{});
    case dtype::f16: return f(half{});
    case dtype::bf16: return f(bfloat16{});
    default: break;
  }
  if constexpr (!Floating) {
    switch (d) {
      case dtype::i64: return f(std::int64_t{});
      case dtype::i32: return f(std::int32_t{});
      case dtype::i16: return f(std::int16_t{});
      case dtype::i8: return f(std::int8_t{});
      case dtype::u8: return f(std::uint8_t{});
      case dtype::b8: return f(bool{});
      default: break;
    }
  }
  unsupported_dtype(op, d);
}

// Calls f(T{}) for f32 or f64 (what GEMM-based kernels run on).
template <class F>
decltype(auto) dispatch_gemm(dtype d, std::string_view op, F&& f) {
  if (d == dtype::f32) return f(float{});
  if (d == dtype::f64) return f(double{});
  unsupported_dtype(op, d);
}

// t in dtype d: t itself when it already is, else a converted copy.
inline any_tensor to_dtype(const any_tensor& t, dtype d) {
  if (t.scalar_type() == d) return t;
  any_tensor out(d, t.extents());
  dispatch<false>(d, "to", [&](auto to) {
    using To = decltype(to);
    dispatch<false>(t.scalar_type(), "to", [&](auto from) {
      using From = decltype(from);
      const From* src = t.data<From>();
      To* dst = out.data<To>();
      for (index_t i = 0, n = t.numel(); i < n; ++i) dst[i] = convert<To>(src[i]);
    });
  });
  return out;
}

// A tensor's dtype and extents, as any_tensor::to_string spells them ("f32[2, 3]").
struct tensor_shape {
  dtype dt;
  const std::vector<index_t>& extents;
  tensor_shape(const any_tensor& t) : dt(t.scalar_type()), extents(t.extents()) {}  // NOLINT: implicit on purpose
  tensor_shape(dtype d, const std::vector<index_t>& e) : dt(d), extents(e) {}
  std::string to_string() const { return std::string(name(dt)) + extents_string(); }
  std::string extents_string() const {
    std::string s = "[";
    for (std::size_t i = 0; i < extents.size(); ++i) {
      if (i) s += ", ";
      s += std::to_string(extents[i]);
    }
    return s + ']';
  }
};

[[noreturn]] inline void rank_error(std::string_view op, std::string_view what, tensor_shape t, std::string_view expected) {
  raise<shape_error>([&](auto& w) {
    w.put(op); w.put(": "); w.put(what); w.put(' '); w.put(name(t.dt)); w.put(t.extents_string()); w.put(" should be ");
    w.put(expected);
  });
}

inline std::size_t wrap_dim(std::string_view op, std::int64_t d, std::size_t rank) {
  const auto r = static_cast<std::int64_t>(rank);
  const std::int64_t w = d < 0 ? d + r : d;
  if (w < 0 || w >= std::max<std::int64_t>(r, 1)) {
    raise<argument_error>([&](auto& out) {
      out.put(op); out.put(": dim "); out.put_int(d); out.put(" is out of range for rank "); out.put_int(r);
    });
  }
  return static_cast<std::size_t>(w);
}

// ---------------------------------------------------------------------------------------------
// pointwise

// Pointwise math runs in three types — i64 for integers and bool, f32 for f16/bf16/f32, f64 —
// and the result is converted back to the op's dtype. Integer results are the same as computing in
// the narrow type (C++ conversions to narrower integers are modular), f16/bf16 compute in f32 as
// PyTorch's CPU kernels do; and each op is instantiated 3 times instead of once per dtype (10),
// which is most of this header's compile time.
inline dtype compute_dtype(dtype d) noexcept {
  if (d == dtype::f64) return dtype::f64;
  return is_floating_point(d) ? dtype::f32 : dtype::i64;
}
template <class F>
decltype(auto) dispatch_compute(dtype d, F&& f) {
  if (d == dtype::f64) return f(double{});
  if (d == dtype::f32) return f(float{});
  return f(std::int64_t{});
}

// Pointwise on x in its compute type, converted back to x's dtype; f(v) gets and returns the
// compute type's values.
template <class F>
any_tensor unary_map(const kernel_args& a, F&& f) {
  const any_tensor& x = a.tensor(0);
  const dtype cd = compute_dtype(x.scalar_type());
  const any_tensor X = to_dtype(x, cd);
  any_tensor out(cd, x.extents());
  dispatch_compute(cd, [&](auto tag) {
    using T = decltype(tag);
    const T* px = X.data<T>();
    T* po = out.data<T>();
    for (index_t i = 0, n = x.numel(); i < n; ++i) po[i] = f(px[i]);
  });
  return to_dtype(out, x.scalar_type());
}

// The op of a recorded call: its attributes decoded (Op::from_arguments), or Op{} for an op without any.
template <class Op>
Op decode_op(const kernel_args& a) {
  if constexpr (requires { Op::from_arguments(a); }) return Op::from_arguments(a);
  else return Op{};
}

// A unary pointwise op (ops/unary.hpp: its math written once over a math policy). The result dtype
// is the op's rule, as PyTorch's: the input's, or f32 for an integer or bool input of an op whose
// values are not integers (exp, sin, sigmoid, ...). Activations (activation_op) run on Eigen
// arrays, exactly as in a fused GEMM epilogue; the other ops one number at a time (std::exp, ...),
// in the compute type.
template <class Op>
any_tensor unary(const kernel_args& a) {
  const Op op = decode_op<Op>(a);
  const any_tensor& x = a.tensor(0);
  const dtype in = x.scalar_type();
  constexpr bool floating_only = std::is_base_of_v<typex::detail::unary_floating_only, Op>;
  constexpr bool floating_result = std::is_base_of_v<typex::detail::unary_floating_result, Op>;
  if (floating_only && !is_floating_point(in)) unsupported_dtype(a.target(), in);
  const dtype out_dt = floating_result && !is_floating_point(in) ? dtype::f32 : in;
  if constexpr (activation_op<Op>) {
    if (is_floating_point(in)) {  // (f16 / bf16 in f32)
      const dtype cd = compute_dtype(in);
      any_tensor out = to_dtype(x, cd).clone();
      dispatch_gemm(cd, a.target(), [&](auto tag) { activate(out.data<decltype(tag)>(), out.numel(), activation::of(op)); });
      return to_dtype(out, out_dt);
    }
  }
  const dtype cd = compute_dtype(out_dt);
  const any_tensor X = to_dtype(x, cd);
  any_tensor out(cd, x.extents());
  dispatch_compute(cd, [&](auto tag) {
    using T = decltype(tag);
    const T* px = X.data<T>();
    T* po = out.data<T>();
    for (index_t i = 0, n = x.numel(); i < n; ++i) op.math(scalar_math<T>{}, px[i], po[i]);
  });
  return to_dtype(out, out_dt);
}

// The activation a node computes (the null activation for an op that is not one): the fusion
// rule's table, keyed by op id, made from every registered op of activation_op.
using activation_decoder = activation (*)(const kernel_args&);
template <class Op>
activation decode_activation(const kernel_args& a) {
  return activation::of(decode_op<Op>(a));
}

// x ** e (aten.pow.Tensor_Scalar) and clamp(x, min?, max?): pointwise with numbers from the call.
inline any_tensor pow_scalar(const kernel_args& a) {
  const double e = a.real(1);
  return unary_map(a, [e](auto v) { return pow_scalar_op::scalar(v, e); });
}
inline any_tensor clamp(const kernel_args& a) {
  const bool has_lo = a.has(1), has_hi = a.has(2);
  const double lo = has_lo ? a.real(1) : 0.0, hi = has_hi ? a.real(2) : 0.0;
  return unary_map(a, [&](auto v) {
    using T = decltype(v);
    if (v != v) return v;  // NaN stays NaN
    if (has_lo && v < static_cast<T>(lo)) v = static_cast<T>(lo);
    if (has_hi && v > static_cast<T>(hi)) v = static_cast<T>(hi);
    return v;
  });
}

// Element strides of `in` aligned from the right to an output of rank R; 0 where `in` broadcasts.
inline std::vector<index_t> broadcast_strides(const std::vector<index_t>& in, const std::vector<index_t>& out) {
  std::vector<index_t> strides(out.size(), 0);
  index_t stride = 1;
  for (std::size_t k = 0; k < in.size(); ++k) {
    const std::size_t i = in.size() - 1 - k, o = out.size() - 1 - k;
    strides[o] = (in[i] == 1 && out[o] != 1) ? 0 : stride;
    stride *= in[i];
  }
  return strides;
}

inline std::vector<index_t> broadcast_extents(std::string_view op, const std::vector<index_t>& a, const std::vector<index_t>& b) {
  const std::size_t r = std::max(a.size(), b.size());
  std::vector<index_t> out(r);
  for (std::size_t k = 0; k < r; ++k) {
    const index_t ea = k < a.size() ? a[a.size() - 1 - k] : 1;
    const index_t eb = k < b.size() ? b[b.size() - 1 - k] : 1;
    if (ea != eb && ea != 1 && eb != 1) {
      raise<shape_error>([&](auto& w) {
        w.put(op); w.put(": extents "); w.put_int(ea); w.put(" and "); w.put_int(eb); w.put(" do not broadcast");
      });
    }
    out[r - 1 - k] = ea == 1 ? eb : ea;
  }
  return out;
}

// out[idx] = f(a[idx_a], b[idx_b]) over the output's multi-index.
template <class TA, class TB, class TO, class F>
void broadcast_apply(TO* po, const std::vector<index_t>& oe, const TA* pa, const std::vector<index_t>& ae, const TB* pb,
                     const std::vector<index_t>& be, F&& f) {
  index_t n = 1;
  for (index_t e : oe) n *= e;
  if (ae == oe && be == oe) {
    for (index_t i = 0; i < n; ++i) po[i] = f(pa[i], pb[i]);
    return;
  }
  const auto sa = broadcast_strides(ae, oe), sb = broadcast_strides(be, oe);
  const std::size_t r = oe.size();
  std::vector<index_t> idx(r, 0);
  index_t ia = 0, ib = 0;
  for (index_t i = 0; i < n; ++i) {
    po[i] = f(pa[ia], pb[ib]);
    for (std::size_t d = r; d-- > 0;) {
      ++idx[d];
      ia += sa[d];
      ib += sb[d];
      if (idx[d] < oe[d]) break;
      ia -= sa[d] * oe[d];
      ib -= sb[d] * oe[d];
      idx[d] = 0;
    }
  }
}

// A scalar argument as a rank-0 tensor of dtype d.
inline any_tensor scalar_tensor(const kernel_args& a, std::size_t i, dtype d) {
  any_tensor t(d, {});
  const double v = a.real(i);
  dispatch<false>(d, a.target(), [&](auto tag) {
    using T = decltype(tag);
    *t.data<T>() = convert<T>(v);
  });
  return t;
}

template <class Op, bool Compare>
any_tensor binary(const kernel_args& a) {
  const bool ta = a.is_tensor(0), tb = a.is_tensor(1);
  // The dtype the op computes in: the tensors' promoted type; a scalar joins a tensor as PyTorch's
  // wrapped numbers do (a float scalar makes an integer tensor f32), as the ops' rules say.
  dtype d;
  if (ta && tb) {
    d = promote_types(a.tensor(0).scalar_type(), a.tensor(1).scalar_type());
  } else {
    d = (ta ? a.tensor(0) : a.tensor(1)).scalar_type();
    if (!is_floating_point(d) && a.is_real(ta ? 1 : 0)) d = dtype::f32;
  }
  if (std::is_same_v<Op, div_op> && !is_floating_point(d)) d = dtype::f32;  // true division, as torch
  const dtype cd = compute_dtype(d);
  const any_tensor A = ta ? to_dtype(a.tensor(0), cd) : scalar_tensor(a, 0, cd);
  const any_tensor B = tb ? to_dtype(a.tensor(1), cd) : scalar_tensor(a, 1, cd);
  const auto oe = broadcast_extents(a.target(), A.extents(), B.extents());
  any_tensor out(Compare ? dtype::b8 : cd, oe);
  dispatch_compute(cd, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (Compare) {
      broadcast_apply(out.data<bool>(), oe, A.data<T>(), A.extents(), B.data<T>(), B.extents(),
                      [](T x, T y) { return Op::scalar(x, y); });
    } else {
      broadcast_apply(out.data<T>(), oe, A.data<T>(), A.extents(), B.data<T>(), B.extents(),
                      [](T x, T y) { return static_cast<T>(Op::scalar(x, y)); });
    }
  });
  return Compare ? out : to_dtype(out, d);
}

// ---------------------------------------------------------------------------------------------
// GEMM: linear, matmul

template <class T>
using row_matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

inline any_tensor linear(const kernel_args& a) {
  const any_tensor& x = a.tensor(0);
  const any_tensor& w = a.tensor(1);
  const any_tensor* b = a.optional_tensor(2);
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
  any_tensor out(d, oe);
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

inline std::vector<index_t> contiguous_strides(const std::vector<index_t>& e) {
  std::vector<index_t> s(e.size(), 1);
  for (std::size_t d = e.size(); d-- > 1;) s[d - 1] = s[d] * e[d];
  return s;
}

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

inline any_tensor matmul(const kernel_args& a) { return matmul_of(a.target(), a.tensor(0), a.tensor(1)); }

// mm: [n, k] x [k, m]; bmm: [b, n, k] x [b, k, m] with equal batches (no broadcasting, as torch).
template <std::size_t Rank>
any_tensor mm(const kernel_args& a) {
  const any_tensor& x = a.tensor(0);
  const any_tensor& y = a.tensor(1);
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
  const any_tensor& bias = a.tensor(0);
  const any_tensor& x = a.tensor(1);
  const any_tensor& y = a.tensor(2);
  if (x.rank() != 2 || y.rank() != 2) {
    raise<shape_error>([&](auto& o) {
      o.put(a.target()); o.put(": expected two matrices, got "); o.put(x.to_string()); o.put(" and "); o.put(y.to_string());
    });
  }
  const double beta = a.has(3) ? a.real(3) : 1.0, alpha = a.has(4) ? a.real(4) : 1.0;
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
// views and copies

inline any_tensor with_extents(const any_tensor& x, std::vector<index_t> e, std::string_view op) {
  index_t n = 1;
  for (index_t v : e) n *= v;
  if (n != x.numel()) {
    raise<shape_error>([&](auto& o) {
      o.put(op); o.put(": cannot view "); o.put(x.to_string()); o.put(" with "); o.put_int(n); o.put(" elements");
    });
  }
  return any_tensor(x.scalar_type(), std::move(e), x.get_storage());  // contiguous: no copy
}

inline any_tensor reshape(const kernel_args& a) {
  const any_tensor& x = a.tensor(0);
  return with_extents(x, a.sizes(1, x.numel()), a.target());
}

inline any_tensor flatten(const kernel_args& a) {
  const any_tensor& x = a.tensor(0);
  if (x.rank() == 0) return with_extents(x, {1}, a.target());
  const std::size_t s = wrap_dim(a.target(), a.integer(1), x.rank());
  const std::size_t e = wrap_dim(a.target(), a.has(2) ? a.integer(2) : -1, x.rank());
  if (s > e) a.fail_text(1, "comes after the end dim");
  std::vector<index_t> out(x.extents().begin(), x.extents().begin() + static_cast<std::ptrdiff_t>(s));
  index_t p = 1;
  for (std::size_t d = s; d <= e; ++d) p *= x.extents()[d];
  out.push_back(p);
  out.insert(out.end(), x.extents().begin() + static_cast<std::ptrdiff_t>(e) + 1, x.extents().end());
  return with_extents(x, std::move(out), a.target());
}

inline any_tensor unsqueeze(const kernel_args& a) {
  const any_tensor& x = a.tensor(0);
  std::vector<index_t> e = x.extents();
  const std::size_t d = wrap_dim(a.target(), a.integer(1), x.rank() + 1);
  e.insert(e.begin() + static_cast<std::ptrdiff_t>(d), 1);
  return with_extents(x, std::move(e), a.target());
}

// dst (contiguous, extents oe) = src read with element strides `is` (a permuted or strided view).
// idx: scratch of oe.size() indices (so that a planned step allocates nothing).
template <class T>
void strided_copy(const T* src, T* dst, const std::vector<index_t>& oe, const std::vector<index_t>& is, std::span<index_t> idx) {
  const std::size_t r = oe.size();
  index_t n = 1;
  for (index_t e : oe) n *= e;
  if (n == 0) return;
  const index_t inner = r ? oe[r - 1] : 1, inner_stride = r ? is[r - 1] : 1;
  std::fill(idx.begin(), idx.end(), index_t{0});
  index_t off = 0;
  for (index_t i = 0; i < n; i += inner) {
    T* d = dst + i;
    if (inner_stride == 1) std::copy(src + off, src + off + inner, d);
    else for (index_t j = 0; j < inner; ++j) d[j] = src[off + j * inner_stride];
    for (std::size_t k = r - (r ? 1 : 0); k-- > 0;) {  // the next row of the outer dims
      off += is[k];
      if (++idx[k] < oe[k]) break;
      off -= is[k] * oe[k];
      idx[k] = 0;
    }
  }
}

// A contiguous copy of x with its dims in order `perm`.
inline any_tensor permuted(const any_tensor& x, const std::vector<std::size_t>& perm, std::string_view op) {
  const std::size_t r = x.rank();
  const std::vector<index_t> in_strides = contiguous_strides(x.extents());
  std::vector<index_t> oe(r), os(r);
  for (std::size_t d = 0; d < r; ++d) {
    oe[d] = x.extents()[perm[d]];
    os[d] = in_strides[perm[d]];
  }
  any_tensor out(x.scalar_type(), oe);
  dispatch<false>(x.scalar_type(), op, [&](auto tag) {
    using T = decltype(tag);
    std::vector<index_t> idx(r);
    strided_copy(x.data<T>(), out.data<T>(), oe, os, idx);
  });
  return out;
}

inline any_tensor permute(const kernel_args& a) {
  const any_tensor& x = a.tensor(0);
  const auto p = a.ints(1);
  if (p.size() != x.rank()) a.fail_text(1, "is not a permutation of the input's dims");
  std::vector<std::size_t> perm;
  std::vector<bool> seen(x.rank(), false);
  for (auto v : p) {
    const std::size_t d = wrap_dim(a.target(), v, x.rank());
    if (seen[d]) a.fail_text(1, "is not a permutation of the input's dims");
    seen[d] = true;
    perm.push_back(d);
  }
  return permuted(x, perm, a.target());
}

inline any_tensor transpose(const kernel_args& a) {
  const any_tensor& x = a.tensor(0);
  std::vector<std::size_t> perm(x.rank());
  for (std::size_t d = 0; d < perm.size(); ++d) perm[d] = d;
  if (x.rank() == 0) return x;
  std::swap(perm[wrap_dim(a.target(), a.integer(1), x.rank())], perm[wrap_dim(a.target(), a.integer(2), x.rank())]);
  return permuted(x, perm, a.target());
}

// (input, dim, start, end, step): Python's bounds, clamped; a copy.
inline any_tensor slice(const kernel_args& a) {
  const any_tensor& x = a.tensor(0);
  if (x.rank() == 0) rank_error(a.target(), "input", x, "at least 1-d");
  const std::size_t d = wrap_dim(a.target(), a.has(1) ? a.integer(1) : 0, x.rank());
  const index_t n = x.extents()[d];
  const index_t step = a.has(4) ? a.integer(4) : 1;
  if (step < 1) a.fail_text(4, "should be at least 1");
  auto clamp = [&](std::int64_t v) { return std::clamp<std::int64_t>(v < 0 ? v + n : v, 0, n); };
  const index_t start = clamp(a.has(2) ? a.integer(2) : 0), end = std::max(start, clamp(a.has(3) ? a.integer(3) : n));
  const index_t len = (end - start + step - 1) / step;
  std::vector<index_t> oe = x.extents();
  oe[d] = len;
  any_tensor out(x.scalar_type(), oe);
  index_t outer = 1, inner = 1;
  for (std::size_t k = 0; k < d; ++k) outer *= x.extents()[k];
  for (std::size_t k = d + 1; k < x.rank(); ++k) inner *= x.extents()[k];
  const std::size_t row = static_cast<std::size_t>(inner) * itemsize(x.scalar_type());
  for (index_t o = 0; o < outer; ++o)
    for (index_t j = 0; j < len; ++j)
      std::memcpy(out.raw_data() + static_cast<std::size_t>(o * len + j) * row,
                  x.raw_data() + static_cast<std::size_t>(o * n + start + j * step) * row, row);
  return out;
}

// ---------------------------------------------------------------------------------------------
// softmax, normalization

// f(base, count, stride) over every line of x along dim d.
template <class F>
void for_each_line(const std::vector<index_t>& e, std::size_t d, F&& f) {
  index_t outer = 1, inner = 1;
  for (std::size_t k = 0; k < d; ++k) outer *= e[k];
  for (std::size_t k = d + 1; k < e.size(); ++k) inner *= e[k];
  const index_t len = e.empty() ? 1 : e[d];
  for (index_t o = 0; o < outer; ++o)
    for (index_t i = 0; i < inner; ++i) f(o * len * inner + i, len, inner);
}

// Splits [0, n) over `threads` threads of the pool when n * cost is worth it (cost: work per item).
template <class F>
void parallel_for(index_t n, index_t cost, int threads, F&& f) {
  const int t = static_cast<int>(std::clamp<index_t>(n * cost / 32768, 1, std::max(threads, 1)));
  if (t <= 1 || n < 2) {
    f(index_t{0}, n);
    return;
  }
  auto task = [&](int i) { f(n * i / t, n * (i + 1) / t); };
  thread_pool::instance().run(t, task);
}

// (log-)softmax over contiguous rows of `len` (f32/f64, vectorised).
template <class T>
void softmax_rows(const T* x, T* y, index_t rows, index_t len, bool log, int threads) {
  using row = Eigen::Array<T, Eigen::Dynamic, 1>;
  parallel_for(rows, len * 8, threads, [&](index_t r0, index_t r1) {
    for (index_t r = r0; r < r1; ++r) {
      const Eigen::Map<const row> in(x + r * len, len);
      Eigen::Map<row> out(y + r * len, len);
      const T mx = len ? in.maxCoeff() : T(0);
      if (log) {
        out = in - mx;
        out -= std::log(out.exp().sum());
      } else {
        out = (in - mx).exp();
        out /= out.sum();
      }
    }
  });
}

template <bool Log>
any_tensor softmax(const kernel_args& a) {
  const any_tensor& x = a.tensor(0);
  const std::size_t d = wrap_dim(a.target(), a.integer(1), x.rank());
  any_tensor out(x.scalar_type(), x.extents());
  const dtype dt = x.scalar_type();
  if ((dt == dtype::f32 || dt == dtype::f64) && (x.rank() == 0 || d + 1 == x.rank())) {
    const index_t len = x.rank() == 0 ? 1 : x.extents().back();
    dispatch_gemm(dt, a.target(), [&](auto tag) {
      using T = decltype(tag);
      softmax_rows<T>(x.data<T>(), out.data<T>(), len ? x.numel() / len : 0, len, Log, num_threads());
    });
    return out;
  }
  dispatch<true>(x.scalar_type(), a.target(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const T* px = x.data<T>();
    T* po = out.data<T>();
    for_each_line(x.extents(), d, [&](index_t base, index_t len, index_t stride) {
      C mx = -std::numeric_limits<C>::infinity();
      for (index_t j = 0; j < len; ++j) mx = std::max(mx, convert<C>(px[base + j * stride]));
      C sum = 0;
      for (index_t j = 0; j < len; ++j) sum += std::exp(convert<C>(px[base + j * stride]) - mx);
      const C log_sum = std::log(sum);
      for (index_t j = 0; j < len; ++j) {
        const C v = convert<C>(px[base + j * stride]) - mx;
        po[base + j * stride] = convert<T>(Log ? v - log_sum : std::exp(v) / sum);
      }
    });
  });
  return out;
}

// ---------------------------------------------------------------------------------------------
// reductions: the kept dims go first, the reduced ones last (a permuted copy unless they already
// are), then each of the `outer` rows of `inner` elements is reduced. Floating sums accumulate in
// double (at least as accurate as torch's pairwise sums); integer sums in i64.

template <reduction R>
any_tensor reduce(const kernel_args& a) {
  const any_tensor& x = a.tensor(0);
  const std::size_t r = x.rank();
  std::vector<bool> reduced(r, false);
  bool keep = false;
  double correction = 1.0;
  if constexpr (R == reduction::argmax) {
    reduced[wrap_dim(a.target(), a.integer(1), r)] = true;
    keep = a.has(2) && a.flag(2);
  } else {
    const auto dims = a.ints(1);
    if (dims.empty()) reduced.assign(r, true);
    for (const std::int64_t d : dims) reduced[wrap_dim(a.target(), d, r)] = true;
    if constexpr (R == reduction::var || R == reduction::std) {
      correction = a.has(2) ? a.real(2) : 1.0;
      keep = a.has(3) && a.flag(3);
    } else {
      keep = a.has(2) && a.flag(2);
    }
  }
  std::vector<std::size_t> perm;
  std::vector<index_t> out_extents;
  index_t outer = 1, inner = 1;
  for (std::size_t d = 0; d < r; ++d)
    if (!reduced[d]) {
      perm.push_back(d);
      outer *= x.extents()[d];
    }
  for (std::size_t d = 0; d < r; ++d) {
    if (reduced[d]) {
      perm.push_back(d);
      inner *= x.extents()[d];
      if (keep) out_extents.push_back(1);
    } else {
      out_extents.push_back(x.extents()[d]);
    }
  }
  if ((R == reduction::amax || R == reduction::amin || R == reduction::argmax) && inner == 0 && outer > 0) {
    raise<shape_error>([&](auto& w) {
      w.put(a.target()); w.put(": cannot reduce "); w.put(x.to_string()); w.put(" over an empty dim (no identity for max/min)");
    });
  }
  bool identity = true;
  for (std::size_t i = 0; i < r; ++i) identity = identity && perm[i] == i;
  const dtype in = x.scalar_type();
  const dtype cd = compute_dtype(in);
  const any_tensor X = to_dtype(identity ? x : permuted(x, perm, a.target()), cd);
  const bool index_result = R == reduction::argmax || (R == reduction::sum && !is_floating_point(in));  // i64, as torch
  const dtype out_dtype = index_result ? dtype::i64 : cd;
  any_tensor out(out_dtype, out_extents);
  dispatch_compute(cd, [&](auto tag) {
    using T = decltype(tag);
    const T* px = X.data<T>();
    for (index_t o = 0; o < outer; ++o) {
      const T* row = px + o * inner;
      if constexpr (R == reduction::argmax) {
        index_t best = 0;
        for (index_t i = 1; i < inner; ++i) {
          const bool best_nan = row[best] != row[best];
          if (!best_nan && (row[i] > row[best] || row[i] != row[i])) best = i;  // NaN is the maximum, as in torch
        }
        out.data<std::int64_t>()[o] = best;
      } else if constexpr (R == reduction::amax || R == reduction::amin) {
        T m = row[0];
        for (index_t i = 1; i < inner && m == m; ++i) {
          if (row[i] != row[i]) m = row[i];  // NaN propagates
          else if (R == reduction::amax ? row[i] > m : row[i] < m) m = row[i];
        }
        out.data<T>()[o] = m;
      } else if constexpr (std::is_floating_point_v<T>) {
        if constexpr (R == reduction::logsumexp) {
          T m = -std::numeric_limits<T>::infinity();
          for (index_t i = 0; i < inner; ++i) m = std::max(m, row[i]);
          if (std::isinf(m)) {
            out.data<T>()[o] = inner == 0 ? -std::numeric_limits<T>::infinity() : m;
            continue;
          }
          double acc = 0;
          for (index_t i = 0; i < inner; ++i) acc += std::exp(static_cast<double>(row[i] - m));
          out.data<T>()[o] = static_cast<T>(static_cast<double>(m) + std::log(acc));
        } else {
          double acc = 0;
          for (index_t i = 0; i < inner; ++i) acc += static_cast<double>(row[i]);
          if constexpr (R == reduction::sum) {
            out.data<T>()[o] = static_cast<T>(acc);
          } else {
            const double mean = acc / static_cast<double>(inner);
            if constexpr (R == reduction::mean) {
              out.data<T>()[o] = static_cast<T>(mean);
            } else {
              double sq = 0;
              for (index_t i = 0; i < inner; ++i) {
                const double dv = static_cast<double>(row[i]) - mean;
                sq += dv * dv;
              }
              const double v = sq / std::max(0.0, static_cast<double>(inner) - correction);  // 0 -> inf/nan, as torch
              out.data<T>()[o] = static_cast<T>(R == reduction::std ? std::sqrt(v) : v);
            }
          }
        }
      } else if constexpr (R == reduction::sum) {
        std::int64_t acc = 0;
        for (index_t i = 0; i < inner; ++i) acc += static_cast<std::int64_t>(row[i]);
        out.data<std::int64_t>()[o] = acc;
      } else {
        unsupported_dtype(a.target(), in);  // mean/var/std/logsumexp of integers (the front end rejects them)
      }
    }
  });
  return index_result ? out : to_dtype(out, in);
}

inline void require_extents(std::string_view op, std::string_view what, const any_tensor* t, index_t n) {
  if (t != nullptr && t->numel() != n) {
    raise<shape_error>([&](auto& o) {
      o.put(op); o.put(": "); o.put(what); o.put(' '); o.put(t->to_string()); o.put(" should hold "); o.put_int(n);
      o.put(" elements");
    });
  }
}

// Layer norm over contiguous rows of m (f32/f64, vectorised; mean and variance in two passes).
template <class T>
void layer_norm_rows(const T* x, T* y, index_t rows, index_t m, const T* w, const T* b, double eps, int threads) {
  using row = Eigen::Array<T, Eigen::Dynamic, 1>;
  parallel_for(rows, m * 6, threads, [&](index_t r0, index_t r1) {
    for (index_t r = r0; r < r1; ++r) {
      const Eigen::Map<const row> in(x + r * m, m);
      Eigen::Map<row> out(y + r * m, m);
      const T mean = in.sum() / static_cast<T>(m);
      out = in - mean;
      const T var = out.square().sum() / static_cast<T>(m);
      out *= T(1) / std::sqrt(var + static_cast<T>(eps));
      if (w != nullptr) out *= Eigen::Map<const row>(w, m);
      if (b != nullptr) out += Eigen::Map<const row>(b, m);
    }
  });
}

// (input, normalized_shape, weight, bias, eps): over the trailing dims.
inline any_tensor layer_norm(const kernel_args& a) {
  const any_tensor& x = a.tensor(0);
  const auto normalized = a.ints(1);
  if (normalized.size() > x.rank()) a.fail_text(1, "has more dims than the input");
  index_t m = 1;
  for (std::size_t k = 0; k < normalized.size(); ++k) {
    if (x.extents()[x.rank() - normalized.size() + k] != normalized[k]) a.fail_text(1, "is not the input's trailing dims");
    m *= normalized[k];
  }
  const any_tensor* w = a.optional_tensor(2);
  const any_tensor* b = a.optional_tensor(3);
  require_extents(a.target(), "weight", w, m);
  require_extents(a.target(), "bias", b, m);
  const double eps = a.has(4) ? a.real(4) : 1e-5;
  any_tensor out(x.scalar_type(), x.extents());
  const dtype dt = x.scalar_type();
  if (dt == dtype::f32 || dt == dtype::f64) {
    dispatch_gemm(dt, a.target(), [&](auto tag) {
      using T = decltype(tag);
      const any_tensor W = w ? to_dtype(*w, dt) : any_tensor();
      const any_tensor B = b ? to_dtype(*b, dt) : any_tensor();
      layer_norm_rows<T>(x.data<T>(), out.data<T>(), m == 0 ? 0 : x.numel() / m, m, w ? W.data<T>() : nullptr,
                         b ? B.data<T>() : nullptr, eps, num_threads());
    });
    return out;
  }
  dispatch<true>(x.scalar_type(), a.target(), [&](auto tag) {
    using T = decltype(tag);
    using C = float;  // f16 / bf16
    const any_tensor W = w ? to_dtype(*w, x.scalar_type()) : any_tensor();
    const any_tensor B = b ? to_dtype(*b, x.scalar_type()) : any_tensor();
    const T* px = x.data<T>();
    T* po = out.data<T>();
    const index_t rows = m == 0 ? 0 : x.numel() / m;
    for (index_t r = 0; r < rows; ++r) {
      const T* row = px + r * m;
      C mean = 0;
      for (index_t j = 0; j < m; ++j) mean += convert<C>(row[j]);
      mean /= static_cast<C>(m);
      C var = 0;
      for (index_t j = 0; j < m; ++j) {
        const C c = convert<C>(row[j]) - mean;
        var += c * c;
      }
      var /= static_cast<C>(m);
      const C inv = C(1) / std::sqrt(var + static_cast<C>(eps));
      for (index_t j = 0; j < m; ++j) {
        C v = (convert<C>(row[j]) - mean) * inv;
        if (w) v *= convert<C>(W.data<T>()[j]);
        if (b) v += convert<C>(B.data<T>()[j]);
        po[r * m + j] = convert<T>(v);
      }
    }
  });
  return out;
}

// The product of x's extents from dim `from` on (the spatial size of [N, C, ...]).
inline index_t trailing_numel(const any_tensor& x, std::size_t from) {
  index_t n = 1;
  for (std::size_t k = from; k < x.rank(); ++k) n *= x.extents()[k];
  return n;
}

// A normalization's per-channel affine: weight and bias (either absent) in the input's dtype T.
template <class T>
struct channel_affine {
  any_tensor w, b;
  bool has_w, has_b;
  channel_affine(const any_tensor* weight, const any_tensor* bias, dtype d)
      : w(weight ? to_dtype(*weight, d) : any_tensor()), b(bias ? to_dtype(*bias, d) : any_tensor()), has_w(weight), has_b(bias) {}
  // y = x * scale + shift normalizes channel ch by (mean, 1 / std = inv) and applies the affine.
  std::pair<double, double> scale_shift(index_t ch, double mean, double inv) const {
    const double scale = (has_w ? convert<double>(w.data<T>()[ch]) : 1.0) * inv;
    return {scale, (has_b ? convert<double>(b.data<T>()[ch]) : 0.0) - mean * scale};
  }
};

// Training mode: normalizes with the batch's statistics (biased variance) and, when running
// statistics are given, updates them in place as PyTorch does: r = (1 - momentum) r + momentum s,
// with the unbiased variance for running_var. (In place: eager calls on a module's buffers update
// them; planned programs refuse this op, see plan_impl.hpp.)
inline any_tensor batch_norm_training(const kernel_args& a) {
  const any_tensor& x = a.tensor(0);
  const index_t c = x.extents()[1];
  const any_tensor* w = a.optional_tensor(1);
  const any_tensor* b = a.optional_tensor(2);
  const any_tensor* rm = a.optional_tensor(3);
  const any_tensor* rv = a.optional_tensor(4);
  require_extents(a.target(), "weight", w, c);
  require_extents(a.target(), "bias", b, c);
  require_extents(a.target(), "running_mean", rm, c);
  require_extents(a.target(), "running_var", rv, c);
  for (const any_tensor* r : {rm, rv})
    if (r && r->scalar_type() != x.scalar_type()) rank_error(a.target(), "running statistic", *r, "of the input's dtype (it is updated in place)");
  const double momentum = a.has(6) ? a.real(6) : 0.1, eps = a.has(7) ? a.real(7) : 1e-5;
  const index_t inner = trailing_numel(x, 2), n = x.extents()[0], count = n * inner;
  if (count <= 1) {
    raise<shape_error>([&](auto& o) {
      o.put(a.target()); o.put(": training-mode batch norm needs more than one value per channel (input "); o.put(x.to_string()); o.put(")");
    });
  }
  any_tensor out(x.scalar_type(), x.extents());
  dispatch<true>(x.scalar_type(), a.target(), [&](auto tag) {
    using T = decltype(tag);
    const channel_affine<T> affine(w, b, x.scalar_type());
    const T* px = x.data<T>();
    T* po = out.data<T>();
    for (index_t ch = 0; ch < c; ++ch) {
      double sum = 0, sq = 0;
      for (index_t i = 0; i < n; ++i)
        for (index_t j = 0, base = (i * c + ch) * inner; j < inner; ++j) sum += convert<double>(px[base + j]);
      const double mean = sum / static_cast<double>(count);
      for (index_t i = 0; i < n; ++i)
        for (index_t j = 0, base = (i * c + ch) * inner; j < inner; ++j) {
          const double v = convert<double>(px[base + j]) - mean;
          sq += v * v;
        }
      const auto [scale, shift] = affine.scale_shift(ch, mean, 1.0 / std::sqrt(sq / static_cast<double>(count) + eps));
      for (index_t i = 0; i < n; ++i)
        for (index_t j = 0, base = (i * c + ch) * inner; j < inner; ++j) po[base + j] = convert<T>(convert<double>(px[base + j]) * scale + shift);
      if (rm) rm->data<T>()[ch] = convert<T>((1 - momentum) * convert<double>(rm->data<T>()[ch]) + momentum * mean);
      if (rv) {
        const double unbiased = sq / static_cast<double>(count - 1);
        rv->data<T>()[ch] = convert<T>((1 - momentum) * convert<double>(rv->data<T>()[ch]) + momentum * unbiased);
      }
    }
  });
  return out;
}

// (input, num_groups, weight, bias, eps, cudnn_enabled): statistics per (sample, group).
inline any_tensor group_norm(const kernel_args& a) {
  const any_tensor& x = a.tensor(0);
  if (x.rank() < 2) rank_error(a.target(), "input", x, "[N, C, ...]");
  const index_t c = x.extents()[1], g = a.integer(1);
  if (g < 1 || c % g != 0) {
    raise<shape_error>([&](auto& o) {
      o.put(a.target()); o.put(": "); o.put_int(c); o.put(" channels do not split into "); o.put_int(g); o.put(" groups");
    });
  }
  const any_tensor* w = a.optional_tensor(2);
  const any_tensor* b = a.optional_tensor(3);
  require_extents(a.target(), "weight", w, c);
  require_extents(a.target(), "bias", b, c);
  const double eps = a.has(4) ? a.real(4) : 1e-5;
  const index_t inner = trailing_numel(x, 2), per = c / g, len = per * inner;
  any_tensor out(x.scalar_type(), x.extents());
  dispatch<true>(x.scalar_type(), a.target(), [&](auto tag) {
    using T = decltype(tag);
    const channel_affine<T> affine(w, b, x.scalar_type());
    const T* px = x.data<T>();
    T* po = out.data<T>();
    for (index_t blk = 0, blocks = x.extents()[0] * g; blk < blocks; ++blk) {
      const T* in = px + blk * len;
      double sum = 0, sq = 0;
      for (index_t j = 0; j < len; ++j) sum += convert<double>(in[j]);
      const double mean = sum / static_cast<double>(len);
      for (index_t j = 0; j < len; ++j) sq += (convert<double>(in[j]) - mean) * (convert<double>(in[j]) - mean);
      const double inv = 1.0 / std::sqrt(sq / static_cast<double>(len) + eps);
      for (index_t cc = 0; cc < per; ++cc) {
        const auto [scale, shift] = affine.scale_shift((blk % g) * per + cc, mean, inv);
        for (index_t j = cc * inner; j < (cc + 1) * inner; ++j) po[blk * len + j] = convert<T>(convert<double>(in[j]) * scale + shift);
      }
    }
  });
  return out;
}

// (input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled)
inline any_tensor batch_norm(const kernel_args& a) {
  const any_tensor& x = a.tensor(0);
  if (x.rank() < 2) rank_error(a.target(), "input", x, "[N, C, ...]");
  if (a.has(5) && a.flag(5)) return batch_norm_training(a);
  const index_t c = x.extents()[1];
  const any_tensor* w = a.optional_tensor(1);
  const any_tensor* b = a.optional_tensor(2);
  const any_tensor& mean = a.tensor(3);
  const any_tensor& var = a.tensor(4);
  require_extents(a.target(), "weight", w, c);
  require_extents(a.target(), "bias", b, c);
  require_extents(a.target(), "running_mean", &mean, c);
  require_extents(a.target(), "running_var", &var, c);
  const double eps = a.has(7) ? a.real(7) : 1e-5;
  any_tensor out(x.scalar_type(), x.extents());
  dispatch<true>(x.scalar_type(), a.target(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const dtype d = x.scalar_type();
    const any_tensor M = to_dtype(mean, d), V = to_dtype(var, d);
    const any_tensor W = w ? to_dtype(*w, d) : any_tensor(), B = b ? to_dtype(*b, d) : any_tensor();
    index_t inner = 1;
    for (std::size_t k = 2; k < x.rank(); ++k) inner *= x.extents()[k];
    const index_t n = x.extents()[0];
    const T* px = x.data<T>();
    T* po = out.data<T>();
    for (index_t ch = 0; ch < c; ++ch) {
      const C scale = (w ? convert<C>(W.data<T>()[ch]) : C(1)) / std::sqrt(convert<C>(V.data<T>()[ch]) + static_cast<C>(eps));
      const C shift = (b ? convert<C>(B.data<T>()[ch]) : C(0)) - convert<C>(M.data<T>()[ch]) * scale;
      for (index_t i = 0; i < n; ++i) {
        const index_t base = (i * c + ch) * inner;
        for (index_t j = 0; j < inner; ++j) po[base + j] = convert<T>(convert<C>(px[base + j]) * scale + shift);
      }
    }
  });
  return out;
}

// ---------------------------------------------------------------------------------------------
// convolution and pooling ([N, C, H, W], or [C, H, W] as N = 1)

struct nchw {
  index_t n, c, h, w;
  bool batched;
};
inline nchw nchw_of(std::string_view op, tensor_shape x) {
  const auto& e = x.extents;
  if (e.size() == 4) return {e[0], e[1], e[2], e[3], true};
  if (e.size() == 3) return {1, e[0], e[1], e[2], false};
  rank_error(op, "input", x, "[N, C, H, W] or [C, H, W]");
}
inline std::vector<index_t> nchw_extents(const nchw& s, index_t c, index_t h, index_t w) {
  if (s.batched) return {s.n, c, h, w};
  return {c, h, w};
}
inline std::array<index_t, 2> pair_of(const kernel_args& a, std::size_t i, std::array<index_t, 2> fallback) {
  if (!a.has(i)) return fallback;
  const auto v = a.ints(i);
  if (v.size() == 1) return {v[0], v[0]};
  if (v.size() != 2) a.fail_text(i, "should hold one or two values");
  return {v[0], v[1]};
}
inline index_t window_extent(const kernel_args& a, index_t in, index_t k, index_t s, index_t p, index_t d, bool ceil) {
  if (k < 1 || s < 1 || d < 1 || p < 0) a.fail_text(1, "has a kernel, stride or dilation below 1 or a negative padding");
  const index_t o = ceil ? typex::detail::ceil_window_out(in, k, s, p, d) : (in + 2 * p - d * (k - 1) - 1) / s + 1;
  if (in + 2 * p - d * (k - 1) - 1 < 0 || o < 1) {
    raise<shape_error>([&](auto& w) {
      w.put(a.target()); w.put(": an input extent of "); w.put_int(in); w.put(" is too small for a window of "); w.put_int(k);
    });
  }
  return o;
}

// A convolution's sizes, read and checked from (input, weight, bias, stride, padding, dilation, groups).
struct conv_geometry {
  nchw s;
  index_t oc, icg, kh, kw, oh, ow, groups;
  std::array<index_t, 2> stride, pad, dil;
  index_t krows() const noexcept { return icg * kh * kw; }
  index_t cols() const noexcept { return oh * ow; }
};

// x, w: the input's and weight's shapes; bias: the bias' element count, if it has one.
inline conv_geometry conv_geometry_of(const kernel_args& a, tensor_shape x, tensor_shape w, std::optional<index_t> bias) {
  conv_geometry g{};
  g.s = nchw_of(a.target(), x);
  if (w.extents.size() != 4) rank_error(a.target(), "weight", w, "[out_channels, in_channels / groups, kH, kW]");
  g.stride = pair_of(a, 3, {1, 1});
  g.pad = pair_of(a, 4, {0, 0});
  g.dil = pair_of(a, 5, {1, 1});
  g.groups = a.has(6) ? a.integer(6) : 1;
  g.oc = w.extents[0], g.icg = w.extents[1], g.kh = w.extents[2], g.kw = w.extents[3];
  if (g.groups < 1 || g.s.c != g.icg * g.groups || g.oc % g.groups != 0) {
    raise<shape_error>([&](auto& o) {
      o.put(a.target()); o.put(": input "); o.put(x.to_string()); o.put(" does not fit weight "); o.put(w.to_string());
      o.put(" with groups="); o.put_int(g.groups);
    });
  }
  if (bias && *bias != g.oc) {
    raise<shape_error>([&](auto& o) {
      o.put(a.target()); o.put(": bias should hold "); o.put_int(g.oc); o.put(" elements, not "); o.put_int(*bias);
    });
  }
  g.oh = window_extent(a, g.s.h, g.kh, g.stride[0], g.pad[0], g.dil[0], false);
  g.ow = window_extent(a, g.s.w, g.kw, g.stride[1], g.pad[1], g.dil[1], false);
  return g;
}

struct pool_geometry {
  nchw s;
  std::array<index_t, 2> k, stride, pad, dil;
  index_t oh, ow;
  bool include_pad;
};

template <bool Max>
pool_geometry pool_geometry_of(const kernel_args& a, tensor_shape x) {
  pool_geometry g{};
  g.s = nchw_of(a.target(), x);
  g.k = pair_of(a, 1, {1, 1});
  g.stride = a.has(2) && !a.ints(2).empty() ? pair_of(a, 2, g.k) : g.k;
  g.pad = pair_of(a, 3, {0, 0});
  g.dil = Max ? pair_of(a, 4, {1, 1}) : std::array<index_t, 2>{1, 1};
  const bool ceil = a.has(Max ? 5 : 4) && a.flag(Max ? 5 : 4);
  g.include_pad = Max || !a.has(5) || a.flag(5);
  if (2 * g.pad[0] > g.k[0] || 2 * g.pad[1] > g.k[1]) a.fail_text(3, "should be at most half the kernel size");
  g.oh = window_extent(a, g.s.h, g.k[0], g.stride[0], g.pad[0], g.dil[0], ceil);
  g.ow = window_extent(a, g.s.w, g.k[1], g.stride[1], g.pad[1], g.dil[1], ceil);
  return g;
}

// Whether every window is inside the image (no padding, no dilation, and ceil_mode added no
// partial window): max_pool_plane's case.
inline bool max_pool_direct(const pool_geometry& g) {
  return g.pad[0] == 0 && g.pad[1] == 0 && g.dil[0] == 1 && g.dil[1] == 1 && (g.oh - 1) * g.stride[0] + g.k[0] <= g.s.h &&
         (g.ow - 1) * g.stride[1] + g.k[1] <= g.s.w;
}

// Max pooling of one [H, W] plane when max_pool_direct(g); rows: oh * W scratch elements.
// NaN propagates, as in PyTorch (a select, no branch).
template <class T>
void max_pool_plane(const pool_geometry& g, const T* img, T* o, T* rows) {
  const index_t w = g.s.w, oh = g.oh, ow = g.ow, kh = g.k[0], kw = g.k[1], sh = g.stride[0], sw = g.stride[1];
  for (index_t y = 0; y < oh; ++y) {
    T* v = rows + y * w;
    const T* r = img + y * sh * w;
    std::copy(r, r + w, v);
    for (index_t i = 1; i < kh; ++i) {
      r += w;
      for (index_t x = 0; x < w; ++x) v[x] = (r[x] > v[x] || r[x] != r[x]) ? r[x] : v[x];
    }
  }
  auto columns = [&](const T* v, T* out, index_t n) {
    if (kw == 2 && sw == 2) {  // max_pool2d(2): constant strides, so that the compiler vectorises it
      for (index_t q = 0; q < n; ++q) {
        const T a = v[2 * q], b = v[2 * q + 1];
        out[q] = (b > a || b != b) ? b : a;
      }
      return;
    }
    for (index_t q = 0; q < n; ++q) {
      T best = v[q * sw];
      for (index_t j = 1; j < kw; ++j) {
        const T c = v[q * sw + j];
        best = (c > best || c != c) ? c : best;
      }
      out[q] = best;
    }
  };
  if (w == ow * sw) columns(rows, o, oh * ow);  // row y's windows start at y * w = y * ow * sw: one pass
  else for (index_t y = 0; y < oh; ++y) columns(rows + y * w, o + y * ow, ow);
}

template <class T>
grow_buffer<T>& pool_scratch() {
  static thread_local grow_buffer<T> b;
  return b;
}

// out[0, n) = in[0, n) for short runs (an im2col row segment: a dozen or two elements), in packets
// (the last one overlapping the one before) instead of a call to memmove per run.
template <class T>
inline void copy_run(const T* in, T* out, index_t n) {
  using P = typename gemm_traits<T>::packet;
  using H = typename Eigen::internal::packet_traits<T>::half;
  // (no unpacket_traits<H>: a vector type as a class template's argument warns with g++)
  constexpr int L = gemm_traits<T>::lanes, LH = Eigen::internal::packet_traits<T>::HasHalfPacket ? L / 2 : L;
  using Eigen::internal::ploadu;
  using Eigen::internal::pstoreu;
  if (n >= L) {
    index_t q = 0;
    for (; q + L <= n; q += L) pstoreu(out + q, ploadu<P>(in + q));
    if (q < n) pstoreu(out + n - L, ploadu<P>(in + n - L));
  } else if (LH < L && n >= LH) {
    pstoreu(out, ploadu<H>(in));
    pstoreu(out + n - LH, ploadu<H>(in + n - LH));
  } else {
    for (index_t q = 0; q < n; ++q) out[q] = in[q];
  }
}

// Output pixels [jb, je) of one image's group as the GEMM's packed right-hand side: the im2col
// matrix col[(ci, i, j)][(y, x)] (zero where the window is in the padding) written straight into
// packed_rhs's layout (nr-column panels, kc rows at a time) — im2col and packing in one copy.
// A panel's nr pixels are runs along output rows, the same for every kernel row of the panel.
template <class T>
packed_rhs<T> im2col_packed(const conv_geometry& g, const T* img, T* out, index_t jb, index_t je) {
  constexpr int nr = gemm_traits<T>::nr;
  const index_t k = g.krows(), n = je - jb;
  const index_t kc = gemm_traits<T>::kc_for(k), np = packed_rhs<T>::padded_n(n);
  const index_t sy = g.stride[0], sx = g.stride[1];
  // output row y, columns [x, x + len), at panel column `at`; src: the input offset of (y, x)
  struct run { index_t y, x, len, at, src; };
  std::array<run, nr> runs{};
  std::size_t nruns = 0;
  const bool direct = g.pad[0] == 0 && g.pad[1] == 0 && sx == 1;
  // kernel row (ci, i, j) of the current runs, with padding and strides
  const auto general = [&](T* row, index_t ci, index_t i, index_t j) {
    // the output columns whose input column is inside the image: [lo, hi)
    const index_t x0 = j * g.dil[1] - g.pad[1];
    const index_t lo = std::min(g.ow, x0 >= 0 ? 0 : (-x0 + sx - 1) / sx);
    const index_t hi = std::max(lo, std::min(g.ow, g.s.w - x0 <= 0 ? 0 : (g.s.w - x0 + sx - 1) / sx));
    const T* plane = img + ci * g.s.h * g.s.w;
    for (std::size_t r = 0; r < nruns; ++r) {
      const run& u = runs[r];
      T* o = row + u.at;
      const index_t iy = u.y * sy - g.pad[0] + i * g.dil[0];
      const index_t a = std::clamp(lo, u.x, u.x + u.len), b = std::clamp(hi, a, u.x + u.len);
      if (iy < 0 || iy >= g.s.h) {
        std::fill(o, o + u.len, T(0));
        continue;
      }
      const T* in = plane + iy * g.s.w + x0;
      std::fill(o, o + (a - u.x), T(0));
      if (sx == 1) copy_run(in + a, o + (a - u.x), b - a);
      else for (index_t xx = a; xx < b; ++xx) o[xx - u.x] = in[xx * sx];
      std::fill(o + (b - u.x), o + u.len, T(0));
    }
  };
  for (index_t j0 = 0; j0 < n; j0 += nr) {
    const index_t w = std::min<index_t>(nr, n - j0);
    nruns = 0;
    for (index_t p = jb + j0; p < jb + j0 + w;) {
      const index_t y = p / g.ow, x = p % g.ow, len = std::min(g.ow - x, jb + j0 + w - p);
      runs[nruns++] = {y, x, len, p - jb - j0, y * sy * g.s.w + x};
      p += len;
    }
    for (index_t p0 = 0; p0 < k; p0 += kc) {
      const index_t kcp = std::min(kc, k - p0);
      T* panel = out + p0 * np + j0 * kcp;
      index_t ci = p0 / (g.kh * g.kw), i = p0 / g.kw % g.kh, j = p0 % g.kw;
      for (index_t kk = 0; kk < kcp; ++kk) {
        T* row = panel + kk * nr;
        if (w < nr) std::fill(row + w, row + nr, T(0));
        if (direct) {  // every window inside the image, stride 1 along rows: one packet copy per run
          const T* in = img + ci * g.s.h * g.s.w + i * g.dil[0] * g.s.w + j * g.dil[1];
          for (std::size_t r = 0; r < nruns; ++r) copy_run(in + runs[r].src, row + runs[r].at, runs[r].len);
        } else {
          general(row, ci, i, j);
        }
        if (++j == g.kw) {
          j = 0;
          if (++i == g.kh) i = 0, ++ci;
        }
      }
    }
  }
  return packed_rhs<T>{k, n, out, kc};
}

// The weights [oc, icg * kh * kw] as the GEMM's packed left-hand side, group after group
// (conv_packed_weights<T>(g) elements, with the packing's slack): packed once per plan when they
// are constant.
template <class T>
index_t conv_packed_weights(const conv_geometry& g) { return g.oc * g.krows() + gemm_traits<T>::lanes; }
template <class T>
void conv_pack_weights(const conv_geometry& g, const T* w, T* out) {
  const index_t ocg = g.oc / g.groups, k = g.krows();
  for (index_t gi = 0; gi < g.groups; ++gi) packed_lhs<T>::pack({w + gi * ocg * k, k, 1}, ocg, k, out + gi * ocg * k);
}

// out = act(conv(x, w) + bias), or max_pool2d of it when `pool` is given (a pool whose windows are
// all inside the image: max_pool_direct): per image and group, im2col_packed and one GEMM with the
// packed weights, the bias and the activation in the GEMM's epilogue; a fused pool reads the
// image's convolution from per-thread scratch while it is in cache, instead of from memory in
// another pass. scratch: conv_scratch(g, threads, pooled) elements. Parallel over images when
// there are enough, otherwise inside each product.
// The output pixels per product: a block of packed columns that stays in L2 (~192 KiB) while the
// product reads it, instead of the whole image's (664 KiB for 288 kernel rows x 24 x 24 pixels;
// 115 MiB for 576 x 224 x 224): the scratch stays small for large images (same speed on the CNN).
template <class T>
index_t conv_chunk(const conv_geometry& g) {
  constexpr int nr = gemm_traits<T>::nr;
  const index_t panels = std::max<index_t>(1, (index_t{192} * 1024 / static_cast<index_t>(sizeof(T))) / (g.krows() * nr));
  return std::min(panels * nr, g.cols());
}
template <class T>
index_t conv_scratch(const conv_geometry& g, int threads, bool pooled = false) {
  const index_t packed = g.krows() * packed_rhs<T>::padded_n(conv_chunk<T>(g));
  return (packed + (pooled ? g.oc * g.cols() : 0)) * std::max(threads, 1);
}
template <class T>
void conv2d_into(const conv_geometry& g, const T* x, const T* wpacked, const T* bias, activation act, T* out, T* scratch,
                 int threads, const pool_geometry* pool = nullptr) {
  const index_t ocg = g.oc / g.groups, krows = g.krows(), cols = g.cols();
  const index_t per_thread = conv_scratch<T>(g, 1, pool != nullptr), chunk = conv_chunk<T>(g);
  auto image = [&](index_t n, T* sc, int t) {
    T* conv_out = pool != nullptr ? sc + (per_thread - g.oc * cols) : out + n * g.oc * cols;
    for (index_t gi = 0; gi < g.groups; ++gi) {
      gemm_epilogue<T> ep;
      ep.bias = bias != nullptr ? bias + gi * ocg : nullptr;
      ep.bias_per_row = true;
      ep.act = act;
      const packed_lhs<T> w{ocg, krows, wpacked + gi * ocg * krows};
      for (index_t j0 = 0; j0 < cols; j0 += chunk) {
        const packed_rhs<T> col = im2col_packed(g, x + (n * g.s.c + gi * g.icg) * g.s.h * g.s.w, sc, j0, std::min(cols, j0 + chunk));
        gemm<T>(w, col, conv_out + gi * ocg * cols + j0, cols, ep, t);
      }
    }
    if (pool == nullptr) return;
    T* rows = pool_scratch<T>().get(static_cast<std::size_t>(pool->oh * pool->s.w));
    const index_t plane = pool->oh * pool->ow;
    for (index_t c = 0; c < g.oc; ++c) max_pool_plane(*pool, conv_out + c * cols, out + (n * g.oc + c) * plane, rows);
  };
  if (threads > 1 && g.s.n >= threads) {
    auto task = [&](int i) {
      for (index_t n = g.s.n * i / threads; n < g.s.n * (i + 1) / threads; ++n) image(n, scratch + i * per_thread, 1);
    };
    thread_pool::instance().run(threads, task);
  } else {
    for (index_t n = 0; n < g.s.n; ++n) image(n, scratch, threads);
  }
}

inline any_tensor conv2d(const kernel_args& a) {
  const any_tensor& x = a.tensor(0);
  const any_tensor& w = a.tensor(1);
  const any_tensor* b = a.optional_tensor(2);
  const conv_geometry g = conv_geometry_of(a, x, w, b ? std::optional<index_t>(b->numel()) : std::nullopt);
  const dtype d = promote_types(x.scalar_type(), w.scalar_type());
  any_tensor out(d, nchw_extents(g.s, g.oc, g.oh, g.ow));
  dispatch_gemm(d, a.target(), [&](auto tag) {
    using T = decltype(tag);
    const any_tensor X = to_dtype(x, d), W = to_dtype(w, d);
    const any_tensor B = b != nullptr ? to_dtype(*b, d) : any_tensor();
    const int threads = num_threads();
    std::vector<T> scratch(static_cast<std::size_t>(conv_scratch<T>(g, threads)));
    std::vector<T> wpacked(static_cast<std::size_t>(conv_packed_weights<T>(g)));
    conv_pack_weights(g, W.data<T>(), wpacked.data());
    conv2d_into<T>(g, X.data<T>(), wpacked.data(), b != nullptr ? B.data<T>() : nullptr, activation{}, out.data<T>(),
                   scratch.data(), threads);
  });
  return out;
}

template <bool Max, class T>
void pool2d_into(const pool_geometry& g, const T* px, T* po, int threads) {
  using C = compute_t<T>;
  const auto& s = g.s;
  const auto& k = g.k;
  const auto& stride = g.stride;
  const auto& pad = g.pad;
  const auto& dil = g.dil;
  const index_t oh = g.oh, ow = g.ow;
  if constexpr (Max && std::is_floating_point_v<T>) {
    if (max_pool_direct(g)) {
      // every window inside the image (the common case). Per plane, the
      // max over the window's rows first (contiguous rows: vectorised), then over its columns —
      // one flat strided pass over the plane when the rows hold no leftover columns (so that a
      // 12-wide output row does not run as scalar code). ~8x the general loop below.
      parallel_for(s.n * s.c, oh * ow * k[0] * k[1], threads, [&](index_t p0, index_t p1) {
        T* rows = pool_scratch<T>().get(static_cast<std::size_t>(oh * s.w));
        for (index_t plane = p0; plane < p1; ++plane) max_pool_plane(g, px + plane * s.h * s.w, po + plane * oh * ow, rows);
      });
      return;
    }
  }
  parallel_for(s.n * s.c, oh * ow * k[0] * k[1], threads, [&](index_t p0, index_t p1) {
    for (index_t plane = p0; plane < p1; ++plane) {
      const T* img = px + plane * s.h * s.w;
      T* o = po + plane * oh * ow;
      for (index_t y = 0; y < oh; ++y)
        for (index_t xx = 0; xx < ow; ++xx) {
          const index_t y0 = y * stride[0] - pad[0], x0 = xx * stride[1] - pad[1];
          if constexpr (Max) {
            C best = std::numeric_limits<C>::lowest();
            if constexpr (std::is_floating_point_v<C>) best = -std::numeric_limits<C>::infinity();
            const bool inside = y0 >= 0 && x0 >= 0 && y0 + (k[0] - 1) * dil[0] < s.h && x0 + (k[1] - 1) * dil[1] < s.w;
            for (index_t i = 0; i < k[0]; ++i)
              for (index_t j = 0; j < k[1]; ++j) {
                const index_t iy = y0 + i * dil[0], ix = x0 + j * dil[1];
                if (!inside && (iy < 0 || iy >= s.h || ix < 0 || ix >= s.w)) continue;
                const C v = convert<C>(img[iy * s.w + ix]);
                best = (v > best || v != v) ? v : best;  // NaN propagates, as in PyTorch (a select, no branch)
              }
            o[y * ow + xx] = convert<T>(best);
          } else {
            const index_t y1 = std::min(y0 + k[0], s.h + pad[0]), x1 = std::min(x0 + k[1], s.w + pad[1]);
            const index_t pool = (y1 - y0) * (x1 - x0);
            const index_t ya = std::max<index_t>(y0, 0), xa = std::max<index_t>(x0, 0);
            const index_t yb = std::min(y1, s.h), xb = std::min(x1, s.w);
            C sum = 0;
            for (index_t iy = ya; iy < yb; ++iy)
              for (index_t ix = xa; ix < xb; ++ix) sum += convert<C>(img[iy * s.w + ix]);
            const index_t div = g.include_pad ? pool : (yb - ya) * (xb - xa);
            o[y * ow + xx] = convert<T>(sum / static_cast<C>(div));
          }
        }
    }
  });
}

// max_pool2d: (input, kernel, stride, padding, dilation, ceil_mode)
// avg_pool2d: (input, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override)
template <bool Max>
any_tensor pool2d(const kernel_args& a) {
  const any_tensor& x = a.tensor(0);
  const pool_geometry g = pool_geometry_of<Max>(a, x);
  any_tensor out(x.scalar_type(), nchw_extents(g.s, g.s.c, g.oh, g.ow));
  dispatch<Max ? false : true>(x.scalar_type(), a.target(), [&](auto tag) {
    using T = decltype(tag);
    pool2d_into<Max, T>(g, x.data<T>(), out.data<T>(), num_threads());
  });
  return out;
}

inline any_tensor adaptive_avg_pool2d(const kernel_args& a) {
  const any_tensor& x = a.tensor(0);
  const nchw s = nchw_of(a.target(), x);
  const auto size = pair_of(a, 1, {1, 1});
  if (size[0] < 1 || size[1] < 1) a.fail_text(1, "should be at least 1x1");
  const index_t oh = size[0], ow = size[1];
  any_tensor out(x.scalar_type(), nchw_extents(s, s.c, oh, ow));
  dispatch<true>(x.scalar_type(), a.target(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const T* px = x.data<T>();
    T* po = out.data<T>();
    for (index_t plane = 0; plane < s.n * s.c; ++plane) {
      const T* img = px + plane * s.h * s.w;
      for (index_t y = 0; y < oh; ++y) {
        const index_t ya = y * s.h / oh, yb = ((y + 1) * s.h + oh - 1) / oh;
        for (index_t xx = 0; xx < ow; ++xx) {
          const index_t xa = xx * s.w / ow, xb = ((xx + 1) * s.w + ow - 1) / ow;
          C sum = 0;
          for (index_t iy = ya; iy < yb; ++iy)
            for (index_t ix = xa; ix < xb; ++ix) sum += convert<C>(img[iy * s.w + ix]);
          po[(plane * oh + y) * ow + xx] = convert<T>(sum / static_cast<C>((yb - ya) * (xb - xa)));
        }
      }
    }
  });
  return out;
}

// (weight, indices)
inline any_tensor embedding(const kernel_args& a) {
  const any_tensor& w = a.tensor(0);
  const any_tensor& idx = a.tensor(1);
  if (w.rank() != 2) rank_error(a.target(), "weight", w, "[num_embeddings, embedding_dim]");
  const index_t rows = w.extents()[0], dim = w.extents()[1];
  std::vector<index_t> oe = idx.extents();
  oe.push_back(dim);
  any_tensor out(w.scalar_type(), oe);
  const std::size_t row_bytes = static_cast<std::size_t>(dim) * itemsize(w.scalar_type());
  const any_tensor I = to_dtype(idx, dtype::i64);
  if (!(idx.scalar_type() == dtype::i64 || idx.scalar_type() == dtype::i32))
    rank_error(a.target(), "indices", idx, "an i64 or i32 tensor");
  const std::int64_t* pi = I.data<std::int64_t>();
  for (index_t i = 0, n = idx.numel(); i < n; ++i) {
    if (pi[i] < 0 || pi[i] >= rows) {
      raise<argument_error>([&](auto& o) {
        o.put(a.target()); o.put(": index "); o.put_int(pi[i]); o.put(" is out of range for "); o.put_int(rows);
        o.put(" embeddings");
      });
    }
    std::memcpy(out.raw_data() + static_cast<std::size_t>(i) * row_bytes, w.raw_data() + static_cast<std::size_t>(pi[i]) * row_bytes,
                row_bytes);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// logical ops, casts, selection (where, masked_fill, index_select, gather, tril / triu), expand,
// select, squeeze, cat, stack

inline any_tensor logical_not(const kernel_args& a) {
  const any_tensor& x = a.tensor(0);
  any_tensor out(dtype::b8, x.extents());
  dispatch<false>(x.scalar_type(), a.target(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    bool* po = out.data<bool>();
    for (index_t i = 0, n = x.numel(); i < n; ++i) po[i] = convert<compute_t<T>>(px[i]) == compute_t<T>(0);
  });
  return out;
}

// (input, dtype): always a new tensor, as x.to(dtype, copy=True).
inline any_tensor to_copy(const kernel_args& a) {
  const any_tensor& x = a.tensor(0);
  const dtype d = a.scalar_type(1);
  return x.scalar_type() == d ? x.clone() : to_dtype(x, d);
}

// Calls f(out_index, offsets) for every element of the output extents `oe`, with each operand's
// element offset (operand k read with element strides strides[k]; 0 where it broadcasts).
template <std::size_t N, class F>
void for_each_strided(const std::vector<index_t>& oe, const std::array<std::vector<index_t>, N>& strides, F&& f) {
  index_t n = 1;
  for (index_t e : oe) n *= e;
  const std::size_t r = oe.size();
  std::vector<index_t> idx(r, 0);
  std::array<index_t, N> off{};
  for (index_t i = 0; i < n; ++i) {
    f(i, off);
    for (std::size_t d = r; d-- > 0;) {
      ++idx[d];
      for (std::size_t k = 0; k < N; ++k) off[k] += strides[k][d];
      if (idx[d] < oe[d]) break;
      for (std::size_t k = 0; k < N; ++k) off[k] -= strides[k][d] * oe[d];
      idx[d] = 0;
    }
  }
}

inline void require_bool(std::string_view op, std::string_view what, const any_tensor& t) {
  if (t.scalar_type() != dtype::b8) rank_error(op, what, t, "a bool tensor");
}

// (condition, self, other): the three broadcast; self and other promote.
inline any_tensor where(const kernel_args& a) {
  const any_tensor& c = a.tensor(0);
  require_bool(a.target(), "condition", c);
  const dtype d = promote_types(a.tensor(1).scalar_type(), a.tensor(2).scalar_type());
  const any_tensor X = to_dtype(a.tensor(1), d), Y = to_dtype(a.tensor(2), d);
  const auto oe = broadcast_extents(a.target(), c.extents(), broadcast_extents(a.target(), X.extents(), Y.extents()));
  any_tensor out(d, oe);
  const std::array<std::vector<index_t>, 3> strides{broadcast_strides(c.extents(), oe), broadcast_strides(X.extents(), oe),
                                                    broadcast_strides(Y.extents(), oe)};
  dispatch<false>(d, a.target(), [&](auto tag) {
    using T = decltype(tag);
    const bool* pc = c.data<bool>();
    const T *px = X.data<T>(), *py = Y.data<T>();
    T* po = out.data<T>();
    for_each_strided(oe, strides, [&](index_t i, const std::array<index_t, 3>& o) { po[i] = pc[o[0]] ? px[o[1]] : py[o[2]]; });
  });
  return out;
}

// The mask must broadcast to x's extents exactly (not widen x).
inline void require_expands_to(std::string_view op, std::string_view what, const any_tensor& m, const std::vector<index_t>& to) {
  bool ok = m.rank() <= to.size();
  for (std::size_t k = 0; ok && k < m.rank(); ++k) {
    const index_t e = m.extents()[m.rank() - 1 - k];
    ok = e == 1 || e == to[to.size() - 1 - k];
  }
  if (!ok) {
    raise<shape_error>([&](auto& w) {
      w.put(op); w.put(": the "); w.put(what); w.put(' '); w.put(m.to_string()); w.put(" does not broadcast to ");
      w.put(tensor_shape(m.scalar_type(), to).extents_string());
    });
  }
}

// (self, mask, value)
inline any_tensor masked_fill(const kernel_args& a) {
  const any_tensor& x = a.tensor(0);
  const any_tensor& m = a.tensor(1);
  require_bool(a.target(), "mask", m);
  require_expands_to(a.target(), "mask", m, x.extents());
  any_tensor out = x.clone();
  const double value = a.real(2);
  const std::array<std::vector<index_t>, 1> strides{broadcast_strides(m.extents(), x.extents())};
  dispatch<false>(x.scalar_type(), a.target(), [&](auto tag) {
    using T = decltype(tag);
    const T v = convert<T>(value);
    const bool* pm = m.data<bool>();
    T* po = out.data<T>();
    for_each_strided(x.extents(), strides, [&](index_t i, const std::array<index_t, 1>& o) {
      if (pm[o[0]]) po[i] = v;
    });
  });
  return out;
}

// (self): the indices of the nonzero elements, [n, rank] in row-major order (NaN is nonzero, as
// in torch; -0.0 is zero). Its size depends on the data.
inline any_tensor nonzero(const kernel_args& a) {
  const any_tensor& x = a.tensor(0);
  const std::size_t r = x.rank();
  std::vector<index_t> hits;
  dispatch<false>(x.scalar_type(), a.target(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = x.data<T>();
    for (index_t i = 0; i < x.numel(); ++i)
      if constexpr (std::is_arithmetic_v<T>) {
        if (p[i] != T(0)) hits.push_back(i);
      } else if (static_cast<float>(p[i]) != 0.0f) {  // (half, bfloat16)
        hits.push_back(i);
      }
  });
  any_tensor out(dtype::i64, {static_cast<index_t>(hits.size()), static_cast<index_t>(r)});
  std::int64_t* po = out.data<std::int64_t>();
  for (std::size_t k = 0; k < hits.size(); ++k) {
    index_t flat = hits[k];
    for (std::size_t d = r; d-- > 0;) {
      po[k * r + d] = flat % x.extents()[d];
      flat /= x.extents()[d];
    }
  }
  return out;
}

// (self, mask): the elements of self where mask is true, 1-d, in row-major order; the mask
// broadcasts to self's shape. Its size depends on the data.
inline any_tensor masked_select(const kernel_args& a) {
  const any_tensor& x = a.tensor(0);
  const any_tensor& m = a.tensor(1);
  require_bool(a.target(), "mask", m);
  require_expands_to(a.target(), "mask", m, x.extents());
  const std::array<std::vector<index_t>, 1> strides{broadcast_strides(m.extents(), x.extents())};
  const bool* pm = m.data<bool>();
  index_t n = 0;
  for_each_strided(x.extents(), strides, [&](index_t, const std::array<index_t, 1>& o) { n += pm[o[0]] ? 1 : 0; });
  any_tensor out(x.scalar_type(), {n});
  const std::size_t size = itemsize(x.scalar_type());
  index_t k = 0;
  for_each_strided(x.extents(), strides, [&](index_t i, const std::array<index_t, 1>& o) {
    if (pm[o[0]]) std::memcpy(out.raw_data() + static_cast<std::size_t>(k++) * size, x.raw_data() + static_cast<std::size_t>(i) * size, size);
  });
  return out;
}

// Extents before, at and after dim d.
struct around_dim {
  index_t outer = 1, n = 1, inner = 1;
  around_dim(const std::vector<index_t>& e, std::size_t d) : n(e[d]) {
    for (std::size_t k = 0; k < d; ++k) outer *= e[k];
    for (std::size_t k = d + 1; k < e.size(); ++k) inner *= e[k];
  }
};

[[noreturn]] inline void index_out_of_range(std::string_view op, std::int64_t index, std::size_t dim, index_t extent) {
  raise<argument_error>([&](auto& w) {
    w.put(op); w.put(": index "); w.put_int(index); w.put(" is out of range for dim "); w.put_int(static_cast<long long>(dim));
    w.put(" of extent "); w.put_int(extent);
  });
}

// Index i of an extent-n dim, negative from the end; out of [-n, n) is an error.
inline index_t wrap_index(std::string_view op, std::int64_t i, std::size_t dim, index_t n) {
  if (i < -n || i >= n) index_out_of_range(op, i, dim, n);
  return i < 0 ? i + n : i;
}

// (self, dim, index)
inline any_tensor select(const kernel_args& a) {
  const any_tensor& x = a.tensor(0);
  if (x.rank() == 0) rank_error(a.target(), "input", x, "at least 1-d");
  const std::size_t d = wrap_dim(a.target(), a.integer(1), x.rank());
  const around_dim g(x.extents(), d);
  const index_t at = wrap_index(a.target(), a.integer(2), d, g.n);
  std::vector<index_t> oe = x.extents();
  oe.erase(oe.begin() + static_cast<std::ptrdiff_t>(d));
  any_tensor out(x.scalar_type(), oe);
  const std::size_t row = static_cast<std::size_t>(g.inner) * itemsize(x.scalar_type());
  for (index_t o = 0; o < g.outer; ++o)
    std::memcpy(out.raw_data() + static_cast<std::size_t>(o) * row, x.raw_data() + static_cast<std::size_t>(o * g.n + at) * row, row);
  return out;
}

// (self, dim): dim must be 1 (typex's squeeze rule; PyTorch would keep a dim that is not).
inline any_tensor squeeze(const kernel_args& a) {
  const any_tensor& x = a.tensor(0);
  if (x.rank() == 0) return x;
  const std::size_t d = wrap_dim(a.target(), a.integer(1), x.rank());
  if (x.extents()[d] != 1) {
    raise<shape_error>([&](auto& w) {
      w.put(a.target()); w.put(": dim "); w.put_int(static_cast<long long>(d)); w.put(" of "); w.put(x.to_string());
      w.put(" is not 1; only a dim of extent 1 can be squeezed");
    });
  }
  std::vector<index_t> e = x.extents();
  e.erase(e.begin() + static_cast<std::ptrdiff_t>(d));
  return with_extents(x, std::move(e), a.target());
}

// (self, sizes): -1 keeps the input's extent; a contiguous copy.
inline any_tensor expand(const kernel_args& a) {
  const any_tensor& x = a.tensor(0);
  const auto sizes = a.ints(1);
  if (sizes.size() < x.rank()) a.fail_text(1, "has fewer sizes than the input has dims");
  std::vector<index_t> oe(sizes.begin(), sizes.end());
  const std::size_t lead = oe.size() - x.rank();
  for (std::size_t k = 0; k < oe.size(); ++k) {
    const index_t in = k < lead ? -2 : x.extents()[k - lead];
    if (oe[k] == -1 && in != -2) oe[k] = in;
    if (oe[k] < 0 || (in != -2 && in != 1 && in != oe[k])) {
      raise<shape_error>([&](auto& w) {
        w.put(a.target()); w.put(": cannot expand "); w.put(x.to_string()); w.put(" to sizes ");
        w.put(tensor_shape(x.scalar_type(), sizes).extents_string()); w.put(" at dim "); w.put_int(static_cast<long long>(k));
        w.put(" (only dims of extent 1 repeat)");
      });
    }
  }
  any_tensor out(x.scalar_type(), oe);
  const std::vector<index_t> is = broadcast_strides(x.extents(), oe);
  dispatch<false>(x.scalar_type(), a.target(), [&](auto tag) {
    using T = decltype(tag);
    std::vector<index_t> idx(oe.size());
    strided_copy(x.data<T>(), out.data<T>(), oe, is, idx);
  });
  return out;
}

// Each index of an integer tensor as i64 (i64 or i32 accepted, as torch's index ops).
inline any_tensor index_tensor(std::string_view op, const any_tensor& idx, bool allow_i32) {
  if (!(idx.scalar_type() == dtype::i64 || (allow_i32 && idx.scalar_type() == dtype::i32)))
    rank_error(op, "index", idx, allow_i32 ? "an i64 or i32 tensor" : "an i64 tensor");
  return to_dtype(idx, dtype::i64);
}

// (self, dim, index): the slices of x along dim at the 1-d index's positions.
inline any_tensor index_select(const kernel_args& a) {
  const any_tensor& x = a.tensor(0);
  const any_tensor I = index_tensor(a.target(), a.tensor(2), true);
  if (I.rank() > 1) rank_error(a.target(), "index", I, "1-d");
  const std::size_t d = x.rank() == 0 ? 0 : wrap_dim(a.target(), a.integer(1), x.rank());
  std::vector<index_t> ext = x.rank() == 0 ? std::vector<index_t>{1} : x.extents();
  const around_dim g(ext, d);
  const index_t k = I.numel();
  if (x.rank() == 0 && k != 1) rank_error(a.target(), "index", I, "a single index for a 0-d input");
  ext[d] = k;
  if (x.rank() == 0) ext.clear();
  any_tensor out(x.scalar_type(), ext);
  const std::int64_t* pi = I.data<std::int64_t>();
  for (index_t j = 0; j < k; ++j)  // (negative indices are errors too, as torch's index_select)
    if (pi[j] < 0 || pi[j] >= g.n) index_out_of_range(a.target(), pi[j], d, g.n);
  const std::size_t row = static_cast<std::size_t>(g.inner) * itemsize(x.scalar_type());
  for (index_t o = 0; o < g.outer; ++o)
    for (index_t j = 0; j < k; ++j)
      std::memcpy(out.raw_data() + static_cast<std::size_t>(o * k + j) * row, x.raw_data() + static_cast<std::size_t>(o * g.n + pi[j]) * row,
                  row);
  return out;
}

// (self, dim, index): out[..i..] = x[..index[..i..]..] along dim; the index has x's rank and,
// off dim, extents no larger than x's.
inline any_tensor gather(const kernel_args& a) {
  const any_tensor& x = a.tensor(0);
  const any_tensor I = index_tensor(a.target(), a.tensor(2), false);
  const std::size_t r = x.rank();
  if (I.rank() != r) rank_error(a.target(), "index", I, "of the input's rank");
  if (r == 0) {
    (void)wrap_index(a.target(), *I.data<std::int64_t>(), 0, 1);
    return x.clone();
  }
  const std::size_t d = wrap_dim(a.target(), a.integer(1), r);
  for (std::size_t k = 0; k < r; ++k) {
    if (k != d && I.extents()[k] > x.extents()[k]) {
      raise<shape_error>([&](auto& w) {
        w.put(a.target()); w.put(": index "); w.put(I.to_string()); w.put(" is larger than the input "); w.put(x.to_string());
        w.put(" at dim "); w.put_int(static_cast<long long>(k));
      });
    }
  }
  const std::vector<index_t> xs = contiguous_strides(x.extents());
  std::vector<index_t> s = xs;
  s[d] = 0;  // the gathered dim's offset comes from the index
  any_tensor out(x.scalar_type(), I.extents());
  const std::int64_t* pi = I.data<std::int64_t>();
  const std::size_t item = itemsize(x.scalar_type());
  const index_t n = x.extents()[d];
  const std::array<std::vector<index_t>, 1> strides{s};
  for_each_strided(I.extents(), strides, [&](index_t i, const std::array<index_t, 1>& o) {
    const std::int64_t j = pi[i];
    if (j < 0 || j >= n) index_out_of_range(a.target(), j, d, n);
    std::memcpy(out.raw_data() + static_cast<std::size_t>(i) * item, x.raw_data() + static_cast<std::size_t>(o[0] + j * xs[d]) * item, item);
  });
  return out;
}

// (self, diagonal): zero above (tril) or below (triu) the diagonal of the last two dims.
template <bool Lower>
any_tensor triangle(const kernel_args& a) {
  const any_tensor& x = a.tensor(0);
  if (x.rank() < 2) rank_error(a.target(), "input", x, "at least 2-d");
  const std::int64_t k = a.has(1) ? a.integer(1) : 0;
  const index_t rows = x.extents()[x.rank() - 2], cols = x.extents()[x.rank() - 1];
  any_tensor out = x.clone();
  const std::size_t item = itemsize(x.scalar_type());
  for (index_t m = 0, count = rows * cols == 0 ? 0 : x.numel() / (rows * cols); m < count; ++m) {
    for (index_t i = 0; i < rows; ++i) {
      // zero the columns j with j - i > k (tril) or j - i < k (triu)
      const index_t lo = Lower ? std::clamp<index_t>(i + k + 1, 0, cols) : 0;
      const index_t hi = Lower ? cols : std::clamp<index_t>(i + k, 0, cols);
      if (hi > lo)
        std::memset(out.raw_data() + static_cast<std::size_t>((m * rows + i) * cols + lo) * item, 0, static_cast<std::size_t>(hi - lo) * item);
    }
  }
  return out;
}

// (tensors, dim): every tensor has one rank and the same extents off dim; dtypes promote.
inline any_tensor cat(const kernel_args& a) {
  const auto list = a.tensor_list(0);
  if (list.empty()) a.fail_text(0, "is empty; cat needs at least one tensor");
  const any_tensor& first = *list.front();
  if (first.rank() == 0) rank_error(a.target(), "tensor", first, "at least 1-d");
  const std::size_t d = wrap_dim(a.target(), a.has(1) ? a.integer(1) : 0, first.rank());
  dtype dt = first.scalar_type();
  std::vector<index_t> oe = first.extents();
  oe[d] = 0;
  for (std::size_t t = 0; t < list.size(); ++t) {
    const any_tensor& x = *list[t];
    dt = promote_types(dt, x.scalar_type());
    bool ok = x.rank() == first.rank();
    for (std::size_t k = 0; ok && k < x.rank(); ++k) ok = k == d || x.extents()[k] == first.extents()[k];
    if (!ok) {
      raise<shape_error>([&](auto& w) {
        w.put(a.target()); w.put(": tensor "); w.put_int(static_cast<long long>(t)); w.put(' '); w.put(x.to_string());
        w.put(" does not match tensor 0 "); w.put(first.to_string()); w.put(" off the concatenated dim ");
        w.put_int(static_cast<long long>(d));
      });
    }
    oe[d] += x.extents()[d];
  }
  any_tensor out(dt, oe);
  const around_dim g(oe, d);
  const std::size_t item = itemsize(dt);
  index_t at = 0;  // the dim-d offset of the current tensor
  for (const any_tensor* p : list) {
    const any_tensor x = to_dtype(*p, dt);
    const index_t len = x.extents()[d];
    const std::size_t block = static_cast<std::size_t>(len * g.inner) * item;
    for (index_t o = 0; o < g.outer; ++o)
      std::memcpy(out.raw_data() + static_cast<std::size_t>((o * g.n + at) * g.inner) * item,
                  x.raw_data() + static_cast<std::size_t>(o) * block, block);
    at += len;
  }
  return out;
}

// (tensors, dim): equal shapes, joined along a new dim.
inline any_tensor stack(const kernel_args& a) {
  const auto list = a.tensor_list(0);
  if (list.empty()) a.fail_text(0, "is empty; stack needs at least one tensor");
  const any_tensor& first = *list.front();
  const std::size_t d = wrap_dim(a.target(), a.has(1) ? a.integer(1) : 0, first.rank() + 1);
  std::vector<any_tensor> parts;
  for (std::size_t t = 0; t < list.size(); ++t) {
    if (list[t]->extents() != first.extents()) {
      raise<shape_error>([&](auto& w) {
        w.put(a.target()); w.put(": tensor "); w.put_int(static_cast<long long>(t)); w.put(' '); w.put(list[t]->to_string());
        w.put(" does not have tensor 0's shape "); w.put(first.to_string()); w.put("; stacked tensors must be equal in shape");
      });
    }
    std::vector<index_t> e = list[t]->extents();
    e.insert(e.begin() + static_cast<std::ptrdiff_t>(d), 1);
    parts.push_back(any_tensor(list[t]->scalar_type(), std::move(e), list[t]->get_storage()));
  }
  std::vector<const any_tensor*> ptrs;
  for (const any_tensor& p : parts) ptrs.push_back(&p);
  const std::vector<ir::argument> args{std::vector<ir::value_ref>(parts.size()), static_cast<std::int64_t>(d)};
  const std::array<const any_tensor*, 2> none{nullptr, nullptr};
  return cat(kernel_args(a.op(), args, none, nullptr, ptrs));
}

// ---------------------------------------------------------------------------------------------
// attention, dropout, losses

// The generator dropout draws from: one per thread, seeded by manual_seed (default seed 0x5EED).
inline std::mt19937_64& generator() {
  thread_local std::mt19937_64 g(0x5EEDu);
  return g;
}

// Zeroes elements of a floating tensor with probability p, scales the rest by 1 / (1 - p).
template <class T>
void dropout_in_place(T* p, index_t n, double prob) {
  if (prob <= 0) return;
  if (prob >= 1) {
    std::fill(p, p + n, T(0));
    return;
  }
  std::bernoulli_distribution keep(1.0 - prob);
  const T scale = convert<T>(1.0 / (1.0 - prob));
  auto& g = generator();
  for (index_t i = 0; i < n; ++i) p[i] = keep(g) ? convert<T>(convert<compute_t<T>>(p[i]) * convert<compute_t<T>>(scale)) : T(0);
}

// (input, p, train)
inline any_tensor dropout(const kernel_args& a) {
  const any_tensor& x = a.tensor(0);
  const double p = a.real(1);
  if (!(p >= 0 && p <= 1)) a.fail_text(1, "is not a probability in [0, 1]");
  any_tensor out = x.clone();
  if (a.flag(2)) {
    dispatch<true>(x.scalar_type(), a.target(), [&](auto tag) { dropout_in_place(out.data<decltype(tag)>(), out.numel(), p); });
  }
  return out;
}

// (query, key, value, attn_mask, dropout_p, is_causal, scale): softmax(q k^T * scale + mask) v.
inline any_tensor scaled_dot_product_attention(const kernel_args& a) {
  const any_tensor& q = a.tensor(0);
  const any_tensor& k = a.tensor(1);
  const any_tensor& v = a.tensor(2);
  const any_tensor* mask = a.optional_tensor(3);
  for (const any_tensor* t : {&q, &k, &v})
    if (t->rank() < 2) rank_error(a.target(), "query, key and value", *t, "at least 2-d ([..., L, E])");
  const double dropout_p = a.has(4) ? a.real(4) : 0.0;
  const bool causal = a.has(5) && a.flag(5);
  if (causal && mask != nullptr) {
    raise<argument_error>([&](auto& o) {
      o.put(a.target()); o.put(": an attention mask and is_causal are both given; give one or the other, as PyTorch");
    });
  }
  const index_t e = q.extents().back();
  if (k.extents().back() != e) {
    raise<shape_error>([&](auto& o) {
      o.put(a.target()); o.put(": the query "); o.put(q.to_string()); o.put(" and the key "); o.put(k.to_string());
      o.put(" differ in their last (embedding) dim");
    });
  }
  const double scale = a.has(6) ? a.real(6) : 1.0 / std::sqrt(static_cast<double>(e));
  std::vector<std::size_t> perm(k.rank());
  for (std::size_t d = 0; d < perm.size(); ++d) perm[d] = d;
  std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
  any_tensor scores = matmul_of(a.target(), q, permuted(k, perm, a.target()));  // [..., L, S]
  const index_t l = scores.extents()[scores.rank() - 2], s = scores.extents().back();
  dispatch_gemm(scores.scalar_type(), a.target(), [&](auto tag) {
    using T = decltype(tag);
    T* ps = scores.data<T>();
    const T sc = static_cast<T>(scale), neg_inf = -std::numeric_limits<T>::infinity();
    for (index_t i = 0, n = scores.numel(); i < n; ++i) ps[i] *= sc;
    if (causal) {
      for (index_t m = 0, count = scores.numel() / std::max<index_t>(l * s, 1); m < count; ++m)
        for (index_t i = 0; i < l; ++i)
          for (index_t j = i + 1; j < s; ++j) ps[(m * l + i) * s + j] = neg_inf;
    }
    if (mask != nullptr) {
      const std::vector<index_t> oe = broadcast_extents(a.target(), scores.extents(), mask->extents());
      if (oe != scores.extents()) a.fail_text(3, "does not broadcast to the attention scores' shape");
      const std::array<std::vector<index_t>, 1> strides{broadcast_strides(mask->extents(), oe)};
      if (mask->scalar_type() == dtype::b8) {
        const bool* pm = mask->data<bool>();
        for_each_strided(oe, strides, [&](index_t i, const std::array<index_t, 1>& o) {
          if (!pm[o[0]]) ps[i] = neg_inf;
        });
      } else {
        const any_tensor M = to_dtype(*mask, scores.scalar_type());
        const T* pm = M.data<T>();
        for_each_strided(oe, strides, [&](index_t i, const std::array<index_t, 1>& o) { ps[i] += pm[o[0]]; });
      }
    }
    softmax_rows(ps, ps, scores.numel() / std::max<index_t>(s, 1), s, false, 1);
    if (dropout_p > 0) dropout_in_place(ps, scores.numel(), dropout_p);
  });
  return matmul_of(a.target(), scores, v);
}

// The per-element loss of class scores x ([C], [N, C] or [N, C, d...]) against i64 class indices
// (or, when `probabilities`, a floating target of x's shape), reduced. LogSoftmax: x holds logits
// (cross_entropy), otherwise log-probabilities (nll_loss).
template <bool LogSoftmax>
any_tensor class_loss(const kernel_args& a, std::size_t reduction_at, std::int64_t ignore_index, double smoothing) {
  const any_tensor& x = a.tensor(0);
  const any_tensor& target = a.tensor(1);
  const any_tensor* weight = a.optional_tensor(2);
  const std::int64_t reduction = a.has(reduction_at) ? a.integer(reduction_at) : 1;
  if (reduction < 0 || reduction > 2) a.fail_text(reduction_at, "is not a reduction (0 none, 1 mean, 2 sum)");
  if (x.rank() == 0) rank_error(a.target(), "input", x, "[C], [N, C] or [N, C, d...]");
  const bool probabilities = is_floating_point(target.scalar_type());
  if (probabilities && !LogSoftmax) rank_error(a.target(), "target", target, "i64 class indices");
  if (smoothing < 0 || smoothing > 1) a.fail_text(reduction_at + 2, "is not in [0, 1]");
  const index_t c = x.rank() == 1 ? x.extents()[0] : x.extents()[1];
  const index_t n = x.rank() == 1 ? 1 : x.extents()[0];
  index_t inner = 1;
  for (std::size_t k = 2; k < x.rank(); ++k) inner *= x.extents()[k];
  std::vector<index_t> per = x.extents();  // the per-element loss: x without its class dim
  per.erase(per.begin() + (x.rank() == 1 ? 0 : 1));
  if (probabilities ? target.extents() != x.extents() : (target.extents() != per || target.scalar_type() != dtype::i64))
    rank_error(a.target(), "target", target,
               probabilities ? "of the input's shape" : "i64 class indices of the input's shape without its class dim");
  require_extents(a.target(), "weight", weight, c);
  any_tensor losses(x.scalar_type(), per);
  double total = 0, denom = 0;
  dispatch<true>(x.scalar_type(), a.target(), [&](auto tag) {
    using T = decltype(tag);
    const any_tensor W = weight ? to_dtype(*weight, x.scalar_type()) : any_tensor();
    const T* px = x.data<T>();
    auto w = [&](index_t cls) { return weight ? convert<double>(W.data<T>()[cls]) : 1.0; };
    const any_tensor P = probabilities ? to_dtype(target, x.scalar_type()) : any_tensor();
    T* pl = losses.data<T>();
    for (index_t i = 0; i < n; ++i) {
      for (index_t j = 0; j < inner; ++j) {
        const index_t base = i * c * inner + j;  // class cls at base + cls * inner
        auto logp = [&](index_t cls) { return convert<double>(px[base + cls * inner]); };
        double lse = 0;
        if constexpr (LogSoftmax) {
          double mx = -std::numeric_limits<double>::infinity();
          for (index_t cls = 0; cls < c; ++cls) mx = std::max(mx, logp(cls));
          double sum = 0;
          for (index_t cls = 0; cls < c; ++cls) sum += std::exp(logp(cls) - mx);
          lse = mx + std::log(sum);
        }
        double loss = 0;
        if (probabilities) {
          const T* pt = P.data<T>();
          for (index_t cls = 0; cls < c; ++cls) {
            const double t = convert<double>(pt[base + cls * inner]) * (1 - smoothing) + smoothing / static_cast<double>(c);
            loss -= w(cls) * t * (logp(cls) - lse);
          }
          denom += 1;
        } else {
          const std::int64_t t = target.data<std::int64_t>()[i * inner + j];
          if (t != ignore_index) {
            if (t < 0 || t >= c) {
              raise<argument_error>([&](auto& o) {
                o.put(a.target()); o.put(": target class "); o.put_int(t); o.put(" is out of range for "); o.put_int(c);
                o.put(" classes");
              });
            }
            loss = -w(t) * (logp(t) - lse) * (1 - smoothing);
            if (smoothing > 0) {
              double smooth = 0;
              for (index_t cls = 0; cls < c; ++cls) smooth -= w(cls) * (logp(cls) - lse);
              loss += smoothing / static_cast<double>(c) * smooth;
            }
            denom += w(t);
          }
        }
        pl[i * inner + j] = convert<T>(loss);
        total += loss;
      }
    }
  });
  if (reduction == 0) return losses;
  any_tensor out(x.scalar_type(), {});
  const double r = reduction == 2 ? total : total / denom;  // (mean over nothing: NaN, as PyTorch)
  dispatch<true>(x.scalar_type(), a.target(), [&](auto tag) { *out.data<decltype(tag)>() = convert<decltype(tag)>(r); });
  return out;
}

// (self, target, weight, reduction, ignore_index, label_smoothing)
inline any_tensor cross_entropy(const kernel_args& a) {
  return class_loss<true>(a, 3, a.has(4) ? a.integer(4) : -100, a.has(5) ? a.real(5) : 0.0);
}
// (self, target, weight, reduction, ignore_index)
inline any_tensor nll_loss(const kernel_args& a) { return class_loss<false>(a, 3, a.has(4) ? a.integer(4) : -100, 0.0); }

// (self, target, reduction)
inline any_tensor mse_loss(const kernel_args& a) {
  const any_tensor& x = a.tensor(0);
  const dtype d = promote_types(x.scalar_type(), a.tensor(1).scalar_type());
  if (!is_floating_point(d)) unsupported_dtype(a.target(), d);
  const std::int64_t reduction = a.has(2) ? a.integer(2) : 1;
  if (reduction < 0 || reduction > 2) a.fail_text(2, "is not a reduction (0 none, 1 mean, 2 sum)");
  const any_tensor X = to_dtype(x, d), Y = to_dtype(a.tensor(1), d);
  const auto oe = broadcast_extents(a.target(), X.extents(), Y.extents());
  any_tensor sq(d, oe);
  double total = 0;
  dispatch<true>(d, a.target(), [&](auto tag) {
    using T = decltype(tag);
    broadcast_apply(sq.data<T>(), oe, X.data<T>(), X.extents(), Y.data<T>(), Y.extents(), [&](T u, T v) {
      const double e = convert<double>(u) - convert<double>(v);
      total += e * e;
      return convert<T>(e * e);
    });
  });
  if (reduction == 0) return sq;
  any_tensor out(d, {});
  const double r = reduction == 2 ? total : total / static_cast<double>(sq.numel());
  dispatch<true>(d, a.target(), [&](auto tag) { *out.data<decltype(tag)>() = convert<decltype(tag)>(r); });
  return out;
}
}  // namespace detail

namespace detail {
// (self, src): src broadcast to self's extents, in self's dtype — the value self.copy_(src) leaves
// in self (the functional copy torch.export records).
inline any_tensor copy(const kernel_args& a) {
  const any_tensor& self = a.tensor(0);
  const any_tensor& src = a.tensor(1);
  require_expands_to(a.target(), "src", src, self.extents());
  any_tensor expanded(src.scalar_type(), self.extents());
  const std::vector<index_t> is = broadcast_strides(src.extents(), self.extents());
  dispatch<false>(src.scalar_type(), a.target(), [&](auto tag) {
    using T = decltype(tag);
    std::vector<index_t> idx(self.rank());
    strided_copy(src.data<T>(), expanded.data<T>(), self.extents(), is, idx);
  });
  return to_dtype(expanded, self.scalar_type());
}

// ---------------------------------------------------------------------------------------------
// factories: zeros, ones, full, arange, and the _like forms

// out filled with argument i's number (integers exactly; bools as 0 / 1).
inline void fill_number(any_tensor& out, const kernel_args& a, std::size_t i) {
  dispatch<false>(out.scalar_type(), a.target(), [&](auto tag) {
    using T = decltype(tag);
    const T v = a.is_integer(i) ? convert<T>(a.integer(i)) : convert<T>(a.real(i));
    std::fill_n(out.data<T>(), out.numel(), v);
  });
}
inline void fill_constant(any_tensor& out, int value, std::string_view op) {
  dispatch<false>(out.scalar_type(), op, [&](auto tag) {
    using T = decltype(tag);
    std::fill_n(out.data<T>(), out.numel(), convert<T>(value));
  });
}

// zeros / ones (sizes, dtype), full (sizes, value, dtype). Kind: 0 zeros, 1 ones, 2 full.
template <int Kind>
any_tensor fill(const kernel_args& a) {
  const std::vector<index_t> e = a.ints(0);
  for (index_t v : e)
    if (v < 0) a.fail_text(0, "has a negative size");
  any_tensor out(a.scalar_type(Kind == 2 ? 2 : 1), e);
  if (Kind == 2) fill_number(out, a, 1);
  else fill_constant(out, Kind, a.target());
  return out;
}
// zeros_like / ones_like (x), full_like (x, value).
template <int Kind>
any_tensor fill_like(const kernel_args& a) {
  const any_tensor& x = a.tensor(0);
  any_tensor out(x.scalar_type(), x.extents());
  if (Kind == 2) fill_number(out, a, 1);
  else fill_constant(out, Kind, a.target());
  return out;
}

// arange with Bounds of (end), (start, end) or (start, end, step), then the dtype: as torch, the
// length is ceil((end - start) / step) and the values start + i * step, computed in double for
// floating dtypes and in i64 for integral ones.
template <int Bounds>
any_tensor arange(const kernel_args& a) {
  constexpr std::size_t none = 3;  // (an absent bound: start 0, step 1)
  constexpr std::size_t start_at = Bounds == 1 ? none : 0, end_at = Bounds == 1 ? 0 : 1, step_at = Bounds == 3 ? 2 : none;
  const auto real_at = [&](std::size_t at, double absent) { return at == none ? absent : a.real(at); };
  const auto int_at = [&](std::size_t at, index_t absent) {
    return at == none ? absent : a.is_real(at) ? static_cast<index_t>(a.real(at)) : a.integer(at);
  };
  const bool real = a.is_real(end_at) || (start_at != none && a.is_real(start_at)) || (step_at != none && a.is_real(step_at));
  const index_t n = real ? typex::detail::arange_length(real_at(start_at, 0.0), real_at(end_at, 0.0), real_at(step_at, 1.0))
                         : typex::detail::arange_length(int_at(start_at, 0), int_at(end_at, 0), int_at(step_at, 1));
  any_tensor out(a.scalar_type(static_cast<std::size_t>(Bounds)), {n});
  dispatch<false>(out.scalar_type(), a.target(), [&](auto tag) {
    using T = decltype(tag);
    T* po = out.data<T>();
    if constexpr (std::is_same_v<compute_t<T>, float> || std::is_same_v<T, double>) {
      const double start = real_at(start_at, 0.0), step = real_at(step_at, 1.0);
      for (index_t i = 0; i < n; ++i) po[i] = convert<T>(start + static_cast<double>(i) * step);
    } else {
      const index_t start = int_at(start_at, 0), step = int_at(step_at, 1);
      for (index_t i = 0; i < n; ++i) po[i] = convert<T>(start + i * step);
    }
  });
  return out;
}

}  // namespace detail

// The kernels of the registry's ops (ops/all.hpp), one line each: kernel<Op> runs the function.
#define TYPEX_EIGEN_KERNEL(OP, ...) \
  template <>                     \
  struct kernel<OP> {             \
    static any_tensor run(const kernel_args& a) { return __VA_ARGS__(a); } \
  }
TYPEX_EIGEN_KERNEL(neg_op, detail::unary<neg_op>);
TYPEX_EIGEN_KERNEL(abs_op, detail::unary<abs_op>);
TYPEX_EIGEN_KERNEL(relu_op, detail::unary<relu_op>);
TYPEX_EIGEN_KERNEL(exp_op, detail::unary<exp_op>);
TYPEX_EIGEN_KERNEL(log_op, detail::unary<log_op>);
TYPEX_EIGEN_KERNEL(sqrt_op, detail::unary<sqrt_op>);
TYPEX_EIGEN_KERNEL(rsqrt_op, detail::unary<rsqrt_op>);
TYPEX_EIGEN_KERNEL(tanh_op, detail::unary<tanh_op>);
TYPEX_EIGEN_KERNEL(log1p_op, detail::unary<log1p_op>);
TYPEX_EIGEN_KERNEL(sin_op, detail::unary<sin_op>);
TYPEX_EIGEN_KERNEL(cos_op, detail::unary<cos_op>);
TYPEX_EIGEN_KERNEL(erf_op, detail::unary<erf_op>);
TYPEX_EIGEN_KERNEL(reciprocal_op, detail::unary<reciprocal_op>);
TYPEX_EIGEN_KERNEL(sigmoid_op, detail::unary<sigmoid_op>);
TYPEX_EIGEN_KERNEL(silu_op, detail::unary<silu_op>);
TYPEX_EIGEN_KERNEL(gelu_op, detail::unary<gelu_op>);
TYPEX_EIGEN_KERNEL(hardswish_op, detail::unary<hardswish_op>);
TYPEX_EIGEN_KERNEL(pow_scalar_op, detail::pow_scalar);
TYPEX_EIGEN_KERNEL(clamp_op, detail::clamp);
TYPEX_EIGEN_KERNEL(logical_not_op, detail::logical_not);
TYPEX_EIGEN_KERNEL(aten::_to_copy, detail::to_copy);
TYPEX_EIGEN_KERNEL(add_op, detail::binary<add_op, false>);
TYPEX_EIGEN_KERNEL(sub_op, detail::binary<sub_op, false>);
TYPEX_EIGEN_KERNEL(mul_op, detail::binary<mul_op, false>);
TYPEX_EIGEN_KERNEL(div_op, detail::binary<div_op, false>);
TYPEX_EIGEN_KERNEL(maximum_op, detail::binary<maximum_op, false>);
TYPEX_EIGEN_KERNEL(minimum_op, detail::binary<minimum_op, false>);
TYPEX_EIGEN_KERNEL(pow_op, detail::binary<pow_op, false>);
TYPEX_EIGEN_KERNEL(eq_op, detail::binary<eq_op, true>);
TYPEX_EIGEN_KERNEL(ne_op, detail::binary<ne_op, true>);
TYPEX_EIGEN_KERNEL(lt_op, detail::binary<lt_op, true>);
TYPEX_EIGEN_KERNEL(le_op, detail::binary<le_op, true>);
TYPEX_EIGEN_KERNEL(gt_op, detail::binary<gt_op, true>);
TYPEX_EIGEN_KERNEL(ge_op, detail::binary<ge_op, true>);
TYPEX_EIGEN_KERNEL(logical_and_op, detail::binary<logical_and_op, true>);
TYPEX_EIGEN_KERNEL(logical_or_op, detail::binary<logical_or_op, true>);
TYPEX_EIGEN_KERNEL(logical_xor_op, detail::binary<logical_xor_op, true>);
TYPEX_EIGEN_KERNEL(aten::sum_dim_IntList, detail::reduce<reduction::sum>);
TYPEX_EIGEN_KERNEL(aten::mean_dim, detail::reduce<reduction::mean>);
TYPEX_EIGEN_KERNEL(aten::amax, detail::reduce<reduction::amax>);
TYPEX_EIGEN_KERNEL(aten::amin, detail::reduce<reduction::amin>);
TYPEX_EIGEN_KERNEL(aten::logsumexp, detail::reduce<reduction::logsumexp>);
TYPEX_EIGEN_KERNEL(aten::argmax, detail::reduce<reduction::argmax>);
TYPEX_EIGEN_KERNEL(aten::var_correction, detail::reduce<reduction::var>);
TYPEX_EIGEN_KERNEL(aten::std_correction, detail::reduce<reduction::std>);
TYPEX_EIGEN_KERNEL(linear_op, detail::linear);
TYPEX_EIGEN_KERNEL(matmul_op, detail::matmul);
TYPEX_EIGEN_KERNEL(aten::mm, detail::mm<2>);
TYPEX_EIGEN_KERNEL(aten::bmm, detail::mm<3>);
TYPEX_EIGEN_KERNEL(addmm_op, detail::addmm);
TYPEX_EIGEN_KERNEL(aten::reshape, detail::reshape);
TYPEX_EIGEN_KERNEL(aten::view, detail::reshape);
TYPEX_EIGEN_KERNEL(aten::flatten_using_ints, detail::flatten);
TYPEX_EIGEN_KERNEL(aten::unsqueeze, detail::unsqueeze);
TYPEX_EIGEN_KERNEL(aten::permute, detail::permute);
TYPEX_EIGEN_KERNEL(aten::transpose_int, detail::transpose);
TYPEX_EIGEN_KERNEL(aten::slice_Tensor, detail::slice);
TYPEX_EIGEN_KERNEL(aten::select_int, detail::select);
TYPEX_EIGEN_KERNEL(aten::squeeze_dim, detail::squeeze);
TYPEX_EIGEN_KERNEL(aten::expand, detail::expand);
TYPEX_EIGEN_KERNEL(where_op, detail::where);
TYPEX_EIGEN_KERNEL(masked_fill_op, detail::masked_fill);
TYPEX_EIGEN_KERNEL(aten::index_select, detail::index_select);
TYPEX_EIGEN_KERNEL(aten::gather, detail::gather);
TYPEX_EIGEN_KERNEL(aten::tril, detail::triangle<true>);
TYPEX_EIGEN_KERNEL(aten::triu, detail::triangle<false>);
TYPEX_EIGEN_KERNEL(aten::nonzero, detail::nonzero);
TYPEX_EIGEN_KERNEL(aten::masked_select, detail::masked_select);
TYPEX_EIGEN_KERNEL(aten::softmax_int, detail::softmax<false>);
TYPEX_EIGEN_KERNEL(aten::log_softmax_int, detail::softmax<true>);
TYPEX_EIGEN_KERNEL(layer_norm_op, detail::layer_norm);
TYPEX_EIGEN_KERNEL(batch_norm_op, detail::batch_norm);
TYPEX_EIGEN_KERNEL(aten::group_norm, detail::group_norm);
TYPEX_EIGEN_KERNEL(aten::conv2d, detail::conv2d);
TYPEX_EIGEN_KERNEL(aten::max_pool2d, detail::pool2d<true>);
TYPEX_EIGEN_KERNEL(aten::avg_pool2d, detail::pool2d<false>);
TYPEX_EIGEN_KERNEL(aten::adaptive_avg_pool2d, detail::adaptive_avg_pool2d);
TYPEX_EIGEN_KERNEL(aten::cat, detail::cat);
TYPEX_EIGEN_KERNEL(aten::stack, detail::stack);
TYPEX_EIGEN_KERNEL(embedding_op, detail::embedding);
TYPEX_EIGEN_KERNEL(scaled_dot_product_attention_op, detail::scaled_dot_product_attention);
TYPEX_EIGEN_KERNEL(dropout_op, detail::dropout);
TYPEX_EIGEN_KERNEL(aten::cross_entropy_loss, detail::cross_entropy);
TYPEX_EIGEN_KERNEL(aten::nll_loss, detail::nll_loss);
TYPEX_EIGEN_KERNEL(aten::mse_loss, detail::mse_loss);
TYPEX_EIGEN_KERNEL(copy_op, detail::copy);
TYPEX_EIGEN_KERNEL(aten::zeros, detail::fill<0>);
TYPEX_EIGEN_KERNEL(aten::ones, detail::fill<1>);
TYPEX_EIGEN_KERNEL(aten::full, detail::fill<2>);
TYPEX_EIGEN_KERNEL(aten::zeros_like, detail::fill_like<0>);
TYPEX_EIGEN_KERNEL(aten::ones_like, detail::fill_like<1>);
TYPEX_EIGEN_KERNEL(aten::full_like, detail::fill_like<2>);
TYPEX_EIGEN_KERNEL(aten::arange, detail::arange<1>);
TYPEX_EIGEN_KERNEL(aten::arange_start, detail::arange<2>);
TYPEX_EIGEN_KERNEL(aten::arange_start_step, detail::arange<3>);
#undef TYPEX_EIGEN_KERNEL

namespace detail {
// The kernel table: every op of the registry (a missing kernel<Op> fails to compile here, naming
// the op), then those registered by users. Activations (activation_op) also get the fusion
// rule's entry: how to make their activation from a call.
struct kernel_table {
  std::mutex mutex;  // (registrations only; built-ins are there before the first look-up)
  std::unordered_map<op_id, kernel_fn> kernels;
  std::unordered_map<op_id, activation_decoder> activations;
  std::vector<op_id> order;

  kernel_table() {
    for_each_op(builtin_ops{}, [&](auto type) {
      using Op = typename decltype(type)::type;
      add(op_id_of<Op>, &kernel<Op>::run);
      if constexpr (activation_op<Op>) activations.emplace(op_id_of<Op>, &decode_activation<Op>);
    });
  }
  void add(op_id op, kernel_fn fn) {
    if (kernels.emplace(op, fn).second) order.push_back(op);
  }
};
inline kernel_table& kernels() {
  static kernel_table t;
  return t;
}

// The activation node `args` calls (the null activation where its op is not one).
inline activation activation_of(const kernel_args& args) {
  const auto& acts = kernels().activations;
  const auto it = acts.find(args.op());
  return it == acts.end() ? activation{} : it->second(args);
}

TYPEX_EIGEN_API void add_kernel(op_id op, kernel_fn fn) {
  kernel_table& t = kernels();
  const std::lock_guard lock(t.mutex);
  t.add(op, fn);
}
}  // namespace detail

TYPEX_EIGEN_API kernel_fn find_kernel(op_id op) {
  detail::kernel_table& t = detail::kernels();
  const std::lock_guard lock(t.mutex);
  const auto it = t.kernels.find(op);
  return it == t.kernels.end() ? nullptr : it->second;
}

TYPEX_EIGEN_API void manual_seed(std::uint64_t seed) { detail::generator().seed(seed); }

TYPEX_EIGEN_API std::vector<op_id> kernel_ops() {
  detail::kernel_table& t = detail::kernels();
  const std::lock_guard lock(t.mutex);
  return t.order;
}

TYPEX_EIGEN_API any_tensor run_kernel(const kernel_args& a) {
  const kernel_fn k = find_kernel(a.op());
  if (k == nullptr) {
    typex::detail::raise<unsupported_error>([&](auto& w) {
      w.put("typex::eigen: no kernel for "); w.put(a.target());
    });
  }
  return k(a);
}

}  // namespace typex::eigen

#include <typex/backend/eigen/plan_impl.hpp>
