// typex/backend/eigen/kernels/normalization.hpp — the Eigen backend: layer_norm, batch_norm (eval and training), group_norm.
//
// One family of the kernel definitions: kernels_impl.hpp includes the families in order (each uses
// the ones before it); kernels.hpp declares the kernels.
#pragma once

#ifndef TYPEX_EIGEN_KERNEL_FAMILIES
#error "typex: backend/eigen/kernels/*.hpp are parts of kernels_impl.hpp (in its order); include <typex/backend/eigen.hpp>"
#endif

namespace typex::eigen::detail {

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
  const any_tensor& x = ir::arg<layer_norm_op, "input">(a);
  const auto normalized = ir::arg<layer_norm_op, "normalized_shape">(a);
  if (normalized.size() > x.rank()) a.fail_text("normalized_shape", "has more dims than the input");
  index_t m = 1;
  for (std::size_t k = 0; k < normalized.size(); ++k) {
    if (x.extents()[x.rank() - normalized.size() + k] != normalized[k]) a.fail_text("normalized_shape", "is not the input's trailing dims");
    m *= normalized[k];
  }
  const any_tensor* w = ir::arg<layer_norm_op, "weight">(a);
  const any_tensor* b = ir::arg<layer_norm_op, "bias">(a);
  require_extents(a.target(), "weight", w, m);
  require_extents(a.target(), "bias", b, m);
  const double eps = ir::arg<layer_norm_op, "eps">(a);  // (1e-05 where the call leaves it out: the schema's)
  any_tensor out = a.result(x.scalar_type(), x.extents());
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
  const any_tensor& x = a.tensor("input");
  const index_t c = x.extents()[1];
  const any_tensor* w = a.optional_tensor("weight");
  const any_tensor* b = a.optional_tensor("bias");
  const any_tensor* rm = a.optional_tensor("running_mean");
  const any_tensor* rv = a.optional_tensor("running_var");
  require_extents(a.target(), "weight", w, c);
  require_extents(a.target(), "bias", b, c);
  require_extents(a.target(), "running_mean", rm, c);
  require_extents(a.target(), "running_var", rv, c);
  for (const any_tensor* r : {rm, rv})
    if (r && r->scalar_type() != x.scalar_type()) rank_error(a.target(), "running statistic", *r, "of the input's dtype (it is updated in place)");
  const double momentum = a.has("momentum") ? a.real("momentum") : 0.1, eps = a.has("eps") ? a.real("eps") : 1e-5;
  const index_t inner = trailing_numel(x, 2), n = x.extents()[0], count = n * inner;
  if (count <= 1) {
    raise<shape_error>([&](auto& o) {
      o.put(a.target()); o.put(": training-mode batch norm needs more than one value per channel (input "); o.put(x.to_string()); o.put(")");
    });
  }
  any_tensor out = a.result(x.scalar_type(), x.extents());
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
  using op = aten::group_norm;
  const any_tensor& x = ir::arg<op, "input">(a);
  if (x.rank() < 2) rank_error(a.target(), "input", x, "[N, C, ...]");
  const index_t c = x.extents()[1], g = ir::arg<op, "num_groups">(a);
  if (g < 1 || c % g != 0) {
    raise<shape_error>([&](auto& o) {
      o.put(a.target()); o.put(": "); o.put_int(c); o.put(" channels do not split into "); o.put_int(g); o.put(" groups");
    });
  }
  const any_tensor* w = ir::arg<op, "weight">(a);
  const any_tensor* b = ir::arg<op, "bias">(a);
  require_extents(a.target(), "weight", w, c);
  require_extents(a.target(), "bias", b, c);
  const double eps = ir::arg<op, "eps">(a);
  const index_t inner = trailing_numel(x, 2), per = c / g, len = per * inner;
  any_tensor out = a.result(x.scalar_type(), x.extents());
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
  const any_tensor& x = a.tensor("input");
  if (x.rank() < 2) rank_error(a.target(), "input", x, "[N, C, ...]");
  if (a.has("training") && a.flag("training")) return batch_norm_training(a);
  const index_t c = x.extents()[1];
  const any_tensor* w = a.optional_tensor("weight");
  const any_tensor* b = a.optional_tensor("bias");
  const any_tensor& mean = a.tensor("running_mean");
  const any_tensor& var = a.tensor("running_var");
  require_extents(a.target(), "weight", w, c);
  require_extents(a.target(), "bias", b, c);
  require_extents(a.target(), "running_mean", &mean, c);
  require_extents(a.target(), "running_var", &var, c);
  const double eps = a.has("eps") ? a.real("eps") : 1e-5;
  any_tensor out = a.result(x.scalar_type(), x.extents());
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

}  // namespace typex::eigen::detail

// The kernels of this family's ops (kernels_impl.hpp builds the table from the registry).
namespace typex::eigen {
TYPEX_EIGEN_KERNEL(layer_norm_op, detail::layer_norm);
TYPEX_EIGEN_KERNEL(batch_norm_op, detail::batch_norm);
TYPEX_EIGEN_KERNEL(aten::group_norm, detail::group_norm);
}  // namespace typex::eigen
