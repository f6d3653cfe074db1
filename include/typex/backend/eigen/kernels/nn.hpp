// typex/backend/eigen/kernels/nn.hpp — the Eigen backend: attention, dropout, losses.
//
// One family of the kernel definitions: kernels_impl.hpp includes the families in order (each uses
// the ones before it); kernels.hpp declares the kernels.
#pragma once

#ifndef TYPEX_EIGEN_KERNEL_FAMILIES
#error "typex: backend/eigen/kernels/*.hpp are parts of kernels_impl.hpp (in its order); include <typex/backend/eigen.hpp>"
#endif

namespace typex::eigen::detail {

// attention, dropout, losses

// Dropout's mask from one draw of the thread's stream (core/random.hpp): element i kept (scaled by
// 1 / (1 - p)) or zeroed, the same function of (draw, i) wherever it is computed. `scale` is what a
// kept element is multiplied by, in T: the eager op, the exported program and the joint program's
// mask (typex.dropout_mask, then a multiplication) all compute x * T(1 / (1 - p)), bit for bit.
template <class T>
T dropout_scale(double prob) {
  return prob >= 1 ? T(0) : convert<T>(1.0 / (1.0 - prob));
}
template <class T>
void dropout_in_place(T* p, index_t n, double prob, rng_state draw) {
  const T scale = dropout_scale<T>(prob);
  for_each_kept(draw, keep_threshold(prob), 0, static_cast<std::uint64_t>(n), [&](std::uint64_t i, bool kept) {
    p[i] = kept ? convert<T>(convert<compute_t<T>>(p[i]) * convert<compute_t<T>>(scale)) : T(0);
  });
}

// (input, p, train): one draw when training with p > 0 (p = 0 and eval mode take none, in every
// mode of execution alike)
inline any_tensor dropout(const kernel_args& a) {
  const any_tensor& x = a.tensor("input");
  const double p = a.real("p");
  if (!(p >= 0 && p <= 1)) a.fail_text("p", "is not a probability in [0, 1]");
  any_tensor out = x.clone();
  if (a.flag("train") && p > 0) {
    const rng_state draw = take_draw();
    dispatch<true>(x.scalar_type(), a.target(), [&](auto tag) { dropout_in_place(out.data<decltype(tag)>(), out.numel(), p, draw); });
  }
  return out;
}

// (input, p): the mask a training-mode dropout multiplies by (0 or 1 / (1 - p), in the input's
// dtype and shape), one draw
inline any_tensor dropout_mask(const kernel_args& a) {
  const any_tensor& x = a.tensor("input");
  const double p = a.real("p");
  if (!(p >= 0 && p <= 1)) a.fail_text("p", "is not a probability in [0, 1]");
  any_tensor out = a.result(x.scalar_type(), x.extents());
  const rng_state draw = take_draw();
  dispatch<true>(x.scalar_type(), a.target(), [&](auto tag) {
    using T = decltype(tag);
    T* po = out.data<T>();
    const T scale = dropout_scale<T>(p);
    for_each_kept(draw, keep_threshold(p), 0, static_cast<std::uint64_t>(out.numel()),
                  [&](std::uint64_t i, bool kept) { po[i] = kept ? scale : T(0); });
  });
  return out;
}

// The last two dims of x swapped.
inline any_tensor swapped_last(const kernel_args& a, const any_tensor& x) {
  std::vector<std::size_t> perm(x.rank());
  for (std::size_t d = 0; d < perm.size(); ++d) perm[d] = d;
  std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
  return permuted(x, perm, a.target());
}

// q k^T * scale, masked: -inf above the diagonal where causal, -inf where a bool mask is false, a
// float mask added; [..., L, S] over the query's and key's batch dims.
inline any_tensor attention_scores(const kernel_args& a, const any_tensor& q, const any_tensor& k, const any_tensor* mask, bool causal,
                                   double scale) {
  any_tensor scores = matmul_of(a.target(), q, swapped_last(a, k));  // [..., L, S]
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
      if (oe != scores.extents()) a.fail_text("attn_mask", "does not broadcast to the attention scores' shape");
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
  });
  return scores;
}

// (query, key, value, attn_mask, dropout_p, is_causal, scale): softmax(q k^T * scale + mask) v.
inline any_tensor scaled_dot_product_attention(const kernel_args& a) {
  const any_tensor& q = a.tensor("query");
  const any_tensor& k = a.tensor("key");
  const any_tensor& v = a.tensor("value");
  const any_tensor* mask = a.optional_tensor("attn_mask");
  for (const any_tensor* t : {&q, &k, &v})
    if (t->rank() < 2) rank_error(a.target(), "query, key and value", *t, "at least 2-d ([..., L, E])");
  const double dropout_p = a.real_or_default("dropout_p");
  const bool causal = a.flag_or_default("is_causal");
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
  const double scale = a.has("scale") ? a.real("scale") : 1.0 / std::sqrt(static_cast<double>(e));
  any_tensor scores = attention_scores(a, q, k, mask, causal, scale);
  const index_t s = scores.extents().back();
  dispatch_gemm(scores.scalar_type(), a.target(), [&](auto tag) {
    using T = decltype(tag);
    T* ps = scores.data<T>();
    softmax_rows(ps, ps, scores.numel() / std::max<index_t>(s, 1), s, false, 1);
    if (dropout_p > 0) dropout_in_place(ps, scores.numel(), dropout_p, take_draw());
  });
  return matmul_of(a.target(), scores, v);
}

// Checks for attention's backward ops: the query, key, gradient (and value) of one attention.
inline void check_attention_operands(const kernel_args& a, const any_tensor& q, const any_tensor& k, const any_tensor& g) {
  for (const any_tensor* t : {&q, &k, &g})
    if (t->rank() < 2) rank_error(a.target(), "query, key and gradient", *t, "at least 2-d");
  if (k.extents().back() != q.extents().back() || q.scalar_type() != k.scalar_type() || g.scalar_type() != q.scalar_type() ||
      g.extents()[g.rank() - 2] != q.extents()[q.rank() - 2]) {
    raise<shape_error>([&](auto& o) {
      o.put(a.target()); o.put(": the query "); o.put(q.to_string()); o.put(", the key "); o.put(k.to_string());
      o.put(" and the gradient "); o.put(g.to_string()); o.put(" are not one attention's");
    });
  }
}

// (query, key, grad, out, attn_mask, is_causal, scale): [..., L, 2], each query row's logsumexp of
// its masked scores and grad . out, over the output's batch dims.
inline any_tensor attention_stats(const kernel_args& a) {
  const any_tensor& q = a.tensor("query");
  const any_tensor& k = a.tensor("key");
  const any_tensor& g = a.tensor("grad");
  const any_tensor& o = a.tensor("out");
  check_attention_operands(a, q, k, g);
  if (o.extents() != g.extents() || o.scalar_type() != g.scalar_type()) a.fail_text("out", "is not the gradient's shape and dtype");
  const any_tensor scores = attention_scores(a, q, k, a.optional_tensor("attn_mask"), a.flag_or_default("is_causal"), a.real("scale"));
  std::vector<index_t> rows_e(g.extents().begin(), g.extents().end() - 1);  // [..., L] of the output
  const std::vector<index_t> score_rows(scores.extents().begin(), scores.extents().end() - 1);
  if (broadcast_extents(a.target(), rows_e, score_rows) != rows_e) a.fail_text("grad", "does not have the scores' batch dims");
  std::vector<index_t> oe = rows_e;
  oe.push_back(2);
  any_tensor out = a.result(q.scalar_type(), oe);
  const index_t s = scores.extents().back(), ev = g.extents().back();
  dispatch_gemm(q.scalar_type(), a.target(), [&](auto tag) {
    using T = decltype(tag);
    const T* ps = scores.data<T>();
    std::vector<T> lse(static_cast<std::size_t>(scores.numel() / std::max<index_t>(s, 1)));
    for (std::size_t r = 0; r < lse.size(); ++r) {
      const T* row = ps + static_cast<index_t>(r) * s;
      T m = -std::numeric_limits<T>::infinity();
      for (index_t j = 0; j < s; ++j) m = row[j] > m || row[j] != row[j] ? row[j] : m;
      T sum = 0;
      if (m != -std::numeric_limits<T>::infinity())
        for (index_t j = 0; j < s; ++j) sum += std::exp(row[j] - m);
      lse[r] = m == -std::numeric_limits<T>::infinity() ? m : m + std::log(sum);
    }
    T* po = out.data<T>();
    const std::array<std::vector<index_t>, 1> strides{broadcast_strides(score_rows, rows_e)};
    for_each_strided(rows_e, strides, [&](index_t i, const std::array<index_t, 1>& at) { po[2 * i] = lse[static_cast<std::size_t>(at[0])]; });
    const T* pg = g.data<T>();
    const T* pout = o.data<T>();
    for (index_t i = 0, rows = g.numel() / std::max<index_t>(ev, 1); i < rows; ++i) {
      T d = 0;
      for (index_t c = 0; c < ev; ++c) d += pg[i * ev + c] * pout[i * ev + c];
      po[2 * i + 1] = d;
    }
  });
  return out;
}

// (grad, query, key, value, stats, attn_mask, is_causal, scale, input): the gradient of the query
// (input 0), the key (1) or the value (2), with p = exp(s - L) from the stats (NaN on a row whose
// every key is excluded or whose L is NaN, as the math path's softmax; 0 for an excluded key of
// another row).
inline any_tensor attention_backward(const kernel_args& a) {
  const any_tensor& g = a.tensor("grad");
  const any_tensor& q = a.tensor("query");
  const any_tensor& k = a.tensor("key");
  const any_tensor& v = a.tensor("value");
  const any_tensor& st = a.tensor("stats");
  check_attention_operands(a, q, k, g);
  const std::int64_t which = a.integer("input");
  if (which < 0 || which > 2) a.fail_text("input", "is not 0 (the query), 1 (the key) or 2 (the value)");
  const double scale = a.real("scale");
  const any_tensor scores = attention_scores(a, q, k, a.optional_tensor("attn_mask"), a.flag_or_default("is_causal"), scale);
  std::vector<index_t> pe(g.extents().begin(), g.extents().end() - 1);  // p over the output's batch: [..., L, S]
  pe.push_back(scores.extents().back());
  std::vector<index_t> se(g.extents().begin(), g.extents().end() - 1);
  se.push_back(2);
  if (st.extents() != se || st.scalar_type() != q.scalar_type() || broadcast_extents(a.target(), pe, scores.extents()) != pe)
    a.fail_text("stats", "is not the attention's statistics ([..., L, 2] over the output's batch dims)");
  any_tensor p(q.scalar_type(), pe);
  const index_t s = pe.back();
  dispatch_gemm(q.scalar_type(), a.target(), [&](auto tag) {
    using T = decltype(tag);
    const T* ps = scores.data<T>();
    const T* pst = st.data<T>();
    T* pp = p.data<T>();
    const T neg_inf = -std::numeric_limits<T>::infinity();
    const std::array<std::vector<index_t>, 1> strides{broadcast_strides(scores.extents(), pe)};
    for_each_strided(pe, strides, [&](index_t i, const std::array<index_t, 1>& at) {
      const T x = ps[at[0]], l = pst[2 * (i / std::max<index_t>(s, 1))];
      pp[i] = !(l > neg_inf) ? std::numeric_limits<T>::quiet_NaN() : x == neg_inf ? T(0) : std::exp(x - l);
    });
  });
  if (which == 2) return matmul_of(a.target(), swapped_last(a, p), g);
  any_tensor ds = matmul_of(a.target(), g, swapped_last(a, v));  // dp: [..., L, S]
  if (ds.extents() != pe) a.fail_text("value", "does not match the gradient's batch dims");
  dispatch_gemm(q.scalar_type(), a.target(), [&](auto tag) {
    using T = decltype(tag);
    const T* pp = p.data<T>();
    const T* pst = st.data<T>();
    T* pd = ds.data<T>();
    for (index_t i = 0, n = ds.numel(); i < n; ++i) pd[i] = pp[i] * (pd[i] - pst[2 * (i / std::max<index_t>(s, 1)) + 1]);
  });
  any_tensor r = which == 0 ? matmul_of(a.target(), ds, k) : matmul_of(a.target(), swapped_last(a, ds), q);
  dispatch_gemm(q.scalar_type(), a.target(), [&](auto tag) {
    using T = decltype(tag);
    T* pr = r.data<T>();
    for (index_t i = 0, n = r.numel(); i < n; ++i) pr[i] *= static_cast<T>(scale);
  });
  return r;
}

// The per-element loss of class scores x ([C], [N, C] or [N, C, d...]) against i64 class indices
// (or, when `probabilities`, a floating target of x's shape), reduced. LogSoftmax: x holds logits
// (cross_entropy), otherwise log-probabilities (nll_loss).
template <bool LogSoftmax>
any_tensor class_loss(const kernel_args& a, std::int64_t ignore_index, double smoothing) {
  const any_tensor& x = a.tensor("self");
  const any_tensor& target = a.tensor("target");
  const any_tensor* weight = a.optional_tensor("weight");
  const std::int64_t reduction = a.has("reduction") ? a.integer("reduction") : 1;  // (the default: Mean)
  if (reduction < 0 || reduction > 2) a.fail_text("reduction", "is not a reduction (0 none, 1 mean, 2 sum)");
  if (x.rank() == 0) rank_error(a.target(), "input", x, "[C], [N, C] or [N, C, d...]");
  const bool probabilities = is_floating_point(target.scalar_type());
  if (probabilities && !LogSoftmax) rank_error(a.target(), "target", target, "i64 class indices");
  if (smoothing < 0 || smoothing > 1) a.fail_text("label_smoothing", "is not in [0, 1]");  // (cross_entropy's)
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
  any_tensor out = a.result(x.scalar_type(), {});
  const double r = reduction == 2 ? total : total / denom;  // (mean over nothing: NaN, as PyTorch)
  dispatch<true>(x.scalar_type(), a.target(), [&](auto tag) { *out.data<decltype(tag)>() = convert<decltype(tag)>(r); });
  return out;
}

// (self, target, weight, reduction, ignore_index, label_smoothing)
inline any_tensor cross_entropy(const kernel_args& a) {
  return class_loss<true>(a, a.integer_or_default("ignore_index"), a.real_or_default("label_smoothing"));
}
// (self, target, weight, reduction, ignore_index)
inline any_tensor nll_loss(const kernel_args& a) { return class_loss<false>(a, a.integer_or_default("ignore_index"), 0.0); }

// (self, target, reduction)
inline any_tensor mse_loss(const kernel_args& a) {
  const any_tensor& x = a.tensor("self");
  const dtype d = promote_types(x.scalar_type(), a.tensor("target").scalar_type());
  if (!is_floating_point(d)) unsupported_dtype(a.target(), d);
  const std::int64_t reduction = a.has("reduction") ? a.integer("reduction") : 1;  // (the default: Mean)
  if (reduction < 0 || reduction > 2) a.fail_text("reduction", "is not a reduction (0 none, 1 mean, 2 sum)");
  const any_tensor X = to_dtype(x, d), Y = to_dtype(a.tensor("target"), d);
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
  any_tensor out = a.result(d, {});
  const double r = reduction == 2 ? total : total / static_cast<double>(sq.numel());
  dispatch<true>(d, a.target(), [&](auto tag) { *out.data<decltype(tag)>() = convert<decltype(tag)>(r); });
  return out;
}

}  // namespace typex::eigen::detail

// The kernels of this family's ops (kernels_impl.hpp builds the table from the registry).
namespace typex::eigen {
TYPEX_EIGEN_KERNEL(scaled_dot_product_attention_op, detail::scaled_dot_product_attention);
TYPEX_EIGEN_KERNEL(attention_stats_op, detail::attention_stats);
TYPEX_EIGEN_KERNEL(attention_backward_op, detail::attention_backward);
TYPEX_EIGEN_KERNEL(dropout_op, detail::dropout);
TYPEX_EIGEN_KERNEL(dropout_mask_op, detail::dropout_mask);
TYPEX_EIGEN_KERNEL(aten::cross_entropy_loss, detail::cross_entropy);
TYPEX_EIGEN_KERNEL(aten::nll_loss, detail::nll_loss);
TYPEX_EIGEN_KERNEL(aten::mse_loss, detail::mse_loss);
}  // namespace typex::eigen
