// typex/backend/eigen/kernels/reduce.hpp — the Eigen backend: softmax and the reductions (sum, mean, amax, amin, logsumexp, argmax, var, std).
//
// One family of the kernel definitions: kernels_impl.hpp includes the families in order (each uses
// the ones before it); kernels.hpp declares the kernels.
#pragma once

#ifndef TYPEX_EIGEN_KERNEL_FAMILIES
#error "typex: backend/eigen/kernels/*.hpp are parts of kernels_impl.hpp (in its order); include <typex/backend/eigen.hpp>"
#endif

namespace typex::eigen::detail {

// softmax

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
  const any_tensor& x = a.tensor("self");
  const std::size_t d = wrap_dim(a.target(), a.integer("dim"), x.rank());
  any_tensor out = a.result(x.scalar_type(), x.extents());
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

// The sum of a contiguous run, in double (four chains: the additions' latency does not bound it).
template <class T>
double sum_run(const T* p, index_t n) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  index_t i = 0;
  for (; i + 4 <= n; i += 4) {
    s0 += static_cast<double>(p[i]), s1 += static_cast<double>(p[i + 1]);
    s2 += static_cast<double>(p[i + 2]), s3 += static_cast<double>(p[i + 3]);
  }
  for (; i < n; ++i) s0 += static_cast<double>(p[i]);
  return (s0 + s1) + (s2 + s3);
}

// sum / mean of floating x over every dim outside [k0, k1): x read as [P, K, Q] (the dims before
// the kept block, the block, the dims after), each of the K results summed in double over its
// P runs of Q elements (Q = 1: over P rows, K at a time), in parallel over K.
template <bool Mean>
any_tensor reduce_block(const kernel_args& a, const any_tensor& x, std::size_t k0, std::size_t k1, const std::vector<index_t>& out_extents) {
  index_t P = 1, K = 1, Q = 1;
  for (std::size_t d = 0; d < x.rank(); ++d) (d < k0 ? P : d < k1 ? K : Q) *= x.extents()[d];
  const dtype in = x.scalar_type(), cd = compute_dtype(in);
  const any_tensor X = to_dtype(x, cd);
  any_tensor out = cd == in ? a.result(cd, out_extents, false) : any_tensor(cd, out_extents);
  const double count = static_cast<double>(P * Q);  // (a mean over nothing: 0 / 0, NaN, as torch)
  dispatch_compute(cd, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>) {
      const T* px = X.data<T>();
      T* po = out.data<T>();
      parallel_for(K, P * Q, num_threads(), [&](index_t ka, index_t kb) {
        if (Q != 1) {  // (Q = 0: every sum over nothing, 0; a mean 0 / 0)
          for (index_t k = ka; k < kb; ++k) {
            double acc = 0;
            for (index_t p = 0; p < P; ++p) acc += sum_run(px + (p * K + k) * Q, Q);
            po[k] = static_cast<T>(Mean ? acc / count : acc);
          }
          return;
        }
        constexpr index_t chunk = 64;  // (the results' sums on the stack, the rows read in order)
        for (index_t c = ka; c < kb; c += chunk) {
          const index_t w = std::min(chunk, kb - c);
          std::array<double, chunk> acc{};
          for (index_t p = 0; p < P; ++p) {
            const T* row = px + p * K + c;
            for (index_t j = 0; j < w; ++j) acc[static_cast<std::size_t>(j)] += static_cast<double>(row[j]);
          }
          for (index_t j = 0; j < w; ++j) {
            const double v = acc[static_cast<std::size_t>(j)];
            po[c + j] = static_cast<T>(Mean ? v / count : v);
          }
        }
      });
    }
  });
  return cd == in ? out : to_dtype(out, in);
}

template <reduction R>
any_tensor reduce(const kernel_args& a) {
  const any_tensor& x = a.tensor("self");
  const std::size_t r = x.rank();
  std::vector<bool> reduced(r, false);
  const bool keep = a.flag_or_default("keepdim");
  double correction = 1.0;
  if constexpr (R == reduction::argmax) {
    if (const std::size_t d = wrap_dim(a.target(), a.integer("dim"), r); d < r) reduced[d] = true;  // (rank 0: dim 0 is the value itself)
  } else {
    const auto dims = a.has("dim") ? a.ints("dim") : std::vector<std::int64_t>{};  // (None or []: every dim)
    if (dims.empty()) reduced.assign(r, true);
    for (const std::int64_t d : dims)
      if (const std::size_t w = wrap_dim(a.target(), d, r); w < r) reduced[w] = true;
    if constexpr (R == reduction::var || R == reduction::std) correction = a.has("correction") ? a.real("correction") : 1.0;
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
  if constexpr (R == reduction::sum || R == reduction::mean) {
    // the kept dims one block (none, or a bias gradient's channels of [N, C, H, W], its features of
    // [N, F]): reduced in place as [P, K, Q], no permuted copy
    std::size_t k0 = 0, k1 = 0;  // (none kept: [0, 0), x is one run)
    for (std::size_t d = 0; d < r; ++d)
      if (!reduced[d]) k0 = k1 == 0 ? d : k0, k1 = d + 1;
    bool block = true;
    for (std::size_t d = k0; d < k1; ++d) block = block && !reduced[d];
    if (is_floating_point(in) && block) return reduce_block<R == reduction::mean>(a, x, k0, k1, out_extents);
  }
  const dtype cd = compute_dtype(in);
  const any_tensor X = to_dtype(identity ? x : permuted(x, perm, a.target()), cd);
  const bool index_result = R == reduction::argmax || (R == reduction::sum && !is_floating_point(in));  // i64, as torch
  const dtype out_dtype = index_result ? dtype::i64 : cd;
  any_tensor out = a.result(out_dtype, out_extents);
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

}  // namespace typex::eigen::detail

// The kernels of this family's ops (kernels_impl.hpp builds the table from the registry).
namespace typex::eigen {
TYPEX_EIGEN_KERNEL(aten::sum_dim_IntList, detail::reduce<reduction::sum>);
TYPEX_EIGEN_KERNEL(aten::mean_dim, detail::reduce<reduction::mean>);
TYPEX_EIGEN_KERNEL(aten::amax, detail::reduce<reduction::amax>);
TYPEX_EIGEN_KERNEL(aten::amin, detail::reduce<reduction::amin>);
TYPEX_EIGEN_KERNEL(aten::logsumexp, detail::reduce<reduction::logsumexp>);
TYPEX_EIGEN_KERNEL(aten::argmax, detail::reduce<reduction::argmax>);
TYPEX_EIGEN_KERNEL(aten::var_correction, detail::reduce<reduction::var>);
TYPEX_EIGEN_KERNEL(aten::std_correction, detail::reduce<reduction::std>);
TYPEX_EIGEN_KERNEL(aten::softmax_int, detail::softmax<false>);
TYPEX_EIGEN_KERNEL(aten::log_softmax_int, detail::softmax<true>);
}  // namespace typex::eigen
