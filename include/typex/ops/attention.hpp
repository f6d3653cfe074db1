// typex/ops/attention.hpp — scaled_dot_product_attention and dropout.
//
//   scaled_dot_product_attention(q, k, v)                  F.scaled_dot_product_attention(q, k, v)
//   scaled_dot_product_attention(q, k, v, mask)            ... attn_mask=mask (bool: true attends; float: added)
//   scaled_dot_product_attention(q, k, v, nullptr, {.is_causal = true})
//       -> aten.scaled_dot_product_attention.default(q, k, v, mask, dropout_p, is_causal, scale)
//   dropout(x, 0.1, train)                                 F.dropout(x, 0.1, train) -> aten.dropout.default(x, 0.1, train)
//
// q [..., L, E], k [..., S, E], v [..., S, Ev] -> [..., L, Ev]; the batch dims broadcast, as
// matmul's; a mask broadcasts to [..., L, S]. The scale defaults to 1/sqrt(E). A causal mask keeps
// key j for query i where j <= i (top-left aligned, as PyTorch). A row whose every key is masked
// out gives NaN, as PyTorch's math path does.
#pragma once

#include <typex/ops/op.hpp>
#include <typex/core/rules/matmul.hpp>
#include <typex/core/random.hpp>
#include <typex/core/rules/permute.hpp>
#include <typex/ops/apply.hpp>
#include <typex/ops/linear.hpp>
#include <typex/ops/reduce.hpp>
#include <typex/ops/tensor_like.hpp>

#include <optional>
#include <source_location>
#include <string>
#include <string_view>
#include <cmath>
#include <limits>

namespace typex {

struct attention_options {
  bool is_causal = false;
  std::optional<double> scale = std::nullopt;  // nullopt: 1 / sqrt(E)
  double dropout_p = 0.0;       // dropout on the attention weights (0 for inference)
};

namespace detail {
// attention's scale: the call's, else 1 / sqrt(E) for the query's last extent E (which must then
// be static), as torch's
template <class C, class V>
double attention_scale(C& c, V q) {
  if (c.args().has("scale")) return c.args().real("scale");
  const auto e = c.size(q, -1);
  if (!e.is_constant()) c.unsupported("a symbolic head size without an explicit scale");
  return 1.0 / std::sqrt(static_cast<double>(*e.value()));
}
}  // namespace detail

struct scaled_dot_product_attention_op {
  static constexpr std::string_view target = "aten.scaled_dot_product_attention.default";
  static constexpr std::string_view schema =
      "aten::scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, float dropout_p=0.0, bool is_causal=False, *, float? scale=None, bool enable_gqa=False) -> Tensor";
  // the math path: softmax(q k^T scale + mask) v, with the causal mask, a boolean mask (false:
  // -inf) or an additive one, and dropout on the weights
  template <class C> static void decompose(C& c);  // (defined after dropout_mask_op, which it writes)
  // dropout on the attention weights takes a draw (dropout_p > 0)
  static constexpr bool random = true;
  template <class A> static bool draws(const A& a) { return a.real_or_default("dropout_p") > 0; }
  // q [..., L, E], k [..., S, E], v [..., S, Ev] -> [..., L, Ev] in the query's dtype, the batch
  // dims broadcast as matmul's (with enable_gqa, key and value heads, dim -3, repeated to the
  // query's: their count divides it); a mask (bool or floating) broadcasts to the scores
  // [..., L, S], and is not given with is_causal
  template <class R> static void infer(R& r) {
    const auto& q = r.input("query");
    auto k = r.input("key").shape;
    auto v = r.input("value").shape;
    if (!is_floating_point(q.scalar_type)) r.fail("the query must be floating-point");
    if (q.rank() < 2 || k.size() < 2 || v.size() < 2) r.fail("query, key and value must be at least 2-d ([..., L, E])");
    // (typex records grouped-query attention with the keys and values repeated to the query's heads,
    // typex::scaled_dot_product_attention(enable_gqa, ...): the op itself, its kernels and its
    // derivative take equal head counts, so a call that asks the op to repeat them is refused)
    if (r.args().flag_or_default("enable_gqa"))
      r.fail("enable_gqa: typex records grouped-query attention with the keys and values repeated to the query's heads "
             "(typex::scaled_dot_product_attention(typex::enable_gqa, q, k, v)); the op takes equal head counts");
    std::swap(k[k.size() - 1], k[k.size() - 2]);
    const auto scores = detail::matmul_meta_shape(r, q.shape, k);
    if (r.is_tensor("attn_mask")) {
      const auto& m = r.input("attn_mask");
      if (m.scalar_type != dtype::b8 && !is_floating_point(m.scalar_type))
        r.fail("the mask must be bool (true attends) or floating-point (added)");
      if (r.args().flag_or_default("is_causal"))
        r.fail("an attention mask and is_causal are both given; give one or the other, as PyTorch");
      detail::require_expands(r, "attn_mask", m.shape, scores);
    }
    r.result(q.scalar_type, detail::matmul_meta_shape(r, scores, v));
  }
  // The backward as typex's own ops, which a backend may fuse (the CUDA backend's kernels never
  // store the [L, S] scores): typex.attention_stats (each query row's log-sum-exp of its scores and
  // the dot product of its output gradient with its output), then one
  // typex.scaled_dot_product_attention_backward per input that wants a gradient. Their
  // decompositions are the math path below, node for node, so a backend that decomposes them and
  // merges common subexpressions runs the same graph as before (the Eigen backend does).
  // A float mask that wants a gradient takes the math path:
  //   s = q k^T scale, masked; p = softmax(s);
  //   dv = p^T g, dp = g v^T, ds = p (dp - sum(dp p)), dq = ds k scale, dk = ds^T q scale, dmask = ds
  template <class C> static void vjp(C& c);
  static constexpr std::size_t attributes_at = 4;  // (query, key, value, attn_mask, dropout_p, is_causal, scale)
  attention_options options;
  constexpr bool draws() const noexcept { return options.dropout_p > 0; }  // (one draw: the weights' dropout)

  template <class Q, class K, class V, class M>
  static constexpr auto result(const Q& q, const K& k, const V& v, const M& mask) {
    static_assert(is_floating_point(Q::dtype_type::value), "typex::scaled_dot_product_attention: the query must be floating-point");
    static_assert(Q::shape_type::rank >= 2 && K::shape_type::rank >= 2 && V::shape_type::rank >= 2,
                  "typex::scaled_dot_product_attention: query, key and value must be at least 2-d ([..., L, E])");
    const auto scores = matmul_shape(q.shape, transpose_shape<-1, -2>(k.shape, op_name<"scaled_dot_product_attention">),
                                     op_name<"scaled_dot_product_attention">);
    if constexpr (!std::is_null_pointer_v<M>) {
      static_assert(M::dtype_type::value == dtype::b8 || is_floating_point(M::dtype_type::value),
                    "typex::scaled_dot_product_attention: the mask must be bool (true attends) or floating-point (added)");
      (void)broadcast_shapes(scores, mask.shape, op_name<"scaled_dot_product_attention">);
    }
    const auto s = matmul_shape(scores, v.shape, op_name<"scaled_dot_product_attention">);
    return tensor_spec<typename Q::dtype_type, std::remove_cvref_t<decltype(s)>>(s);
  }
  template <class W>
  void attributes(W&& w) const {
    w(options.dropout_p);
    w(options.is_causal);
    if (options.scale) w(*options.scale);
    else w(nullptr);
  }
};

template <tensor_like Q, tensor_like K, tensor_like V>
auto scaled_dot_product_attention(const Q& q, const K& k, const V& v, std::nullptr_t = nullptr, attention_options options = {},
                                  const std::source_location& loc = std::source_location::current()) {
  return apply_op(scaled_dot_product_attention_op{options}, &loc, q, k, v, nullptr);
}
template <tensor_like Q, tensor_like K, tensor_like V, tensor_like M>
auto scaled_dot_product_attention(const Q& q, const K& k, const V& v, const M& mask, attention_options options = {},
                                  const std::source_location& loc = std::source_location::current()) {
  return apply_op(scaled_dot_product_attention_op{options}, &loc, q, k, v, mask);
}

// Zeroes each element with probability p and scales the rest by 1 / (1 - p) when `train`;
// the identity otherwise. A training-mode call with p > 0 takes one draw of the calling thread's
// random stream (core/random.hpp: typex::manual_seed), eagerly and in a program alike, so a model
// and its exported program draw the same masks from the same state.
struct dropout_op {
  static constexpr std::string_view target = "aten.dropout.default";
  static constexpr std::string_view schema =
      "aten::dropout(Tensor input, float p, bool train) -> Tensor";
  // input where it does not train (or p is 0); else input * typex.dropout_mask(input, p): the
  // same draw, the same numbers (passes::expose_dropout_masks writes it so for make_joint)
  template <class C> static void decompose(C& c);  // (defined after dropout_mask_op, which it writes)

  // a draw in training mode with p > 0 (eval mode, or p == 0, is the identity)
  static constexpr bool random = true;
  template <class A> static bool draws(const A& a) { return a.flag("train") && a.real("p") > 0; }
  // the input's dtype and shape (floating-point)
  template <class R> static void infer(R& r) {
    const auto& x = r.input("input");
    if (!is_floating_point(x.scalar_type)) r.fail("the input must be floating-point");
    r.result(x);
  }
  // identity in eval mode (or p == 0); in training the mask is needed: make_joint first rewrites
  // each training-mode dropout as input * typex.dropout_mask(input, p) (passes::expose_dropout_masks),
  // whose product's derivative reads the mask it drew
  template <class C> static void vjp(C& c) {
    if (c.args().flag("train") && c.args().real("p") != 0.0)
      c.unsupported("dropout in training mode: its mask is not a value of the graph (run passes::expose_dropout_masks "
                    "first, as typex::make_joint does)");
    c.accumulate("input", c.grad());
  }
  double p = 0.5;
  bool train = true;
  // (a call that takes a draw: never folded into a constant, never run while tracing)
  constexpr bool draws() const noexcept { return train && p > 0; }
  template <class X>
  static constexpr X result(const X& x) {
    static_assert(is_floating_point(X::dtype_type::value), "typex::dropout: the input must be floating-point");
    return x;
  }
  template <class W>
  void attributes(W&& w) const {
    w(p);
    w(train);
  }
};
namespace detail {
inline void check_probability(std::string_view op, double p) {
  if (!(p >= 0.0 && p <= 1.0)) {
    raise<argument_error>([&](auto& w) {
      w.put(op); w.put(": the probability "); w.put(std::to_string(p)); w.put(" is not in [0, 1]");
    });
  }
}
}  // namespace detail
template <tensor_like X>
auto dropout(const X& x, double p, bool train, const std::source_location& loc = std::source_location::current()) {
  detail::check_probability("typex::dropout", p);
  return apply_op(dropout_op{.p = p, .train = train}, &loc, x);
}

// The mask of a training-mode dropout, as a value: 0 where an element is dropped, 1 / (1 - p)
// where it is kept, in the input's dtype and shape (the input gives only those), from one draw.
// `dropout(x, p, true)` is `x * dropout_mask(x, p)` from the same state, bit for bit; a joint
// program computes it so, and its derivative multiplies by the mask the forward drew.
struct dropout_mask_op {
  static constexpr std::string_view target = "typex.dropout_mask.default";
  static constexpr std::string_view schema = "typex::dropout_mask(Tensor input, float p) -> Tensor";
  static constexpr bool random = true;  // (every call takes a draw)
  // the input's dtype and shape (floating-point)
  template <class R> static void infer(R& r) {
    const auto& x = r.input("input");
    if (!is_floating_point(x.scalar_type)) r.fail("the input must be floating-point");
    r.result(x);
  }
  static constexpr bool differentiable = false;  // (random: a constant of the input)
  double p = 0.5;
  constexpr bool draws() const noexcept { return true; }
  template <class X>
  static constexpr X result(const X& x) {
    static_assert(is_floating_point(X::dtype_type::value), "typex::dropout_mask: the input must be floating-point");
    return x;
  }
  template <class W>
  void attributes(W&& w) const {
    w(p);
  }
};

// The statistics attention's backward reads, for each query row i of each batch entry:
// [..., i, 0] = logsumexp_j s_ij (the row's scores q_i . k_j scale, masked as the forward masks
// them; -inf where every key is excluded) and [..., i, 1] = sum_c grad_ic out_ic (the output
// gradient's dot product with the forward's output). [..., L, 2] over the output's batch dims.
struct attention_stats_op {
  static constexpr std::string_view target = "typex.attention_stats.default";
  static constexpr std::string_view schema =
      "typex::attention_stats(Tensor query, Tensor key, Tensor grad, Tensor out, Tensor? attn_mask=None, bool is_causal=False, float scale=1.0) -> Tensor";
  static constexpr bool differentiable = false;  // (a value of the backward: no second derivative)
  template <class R> static void infer(R& r) {
    const auto& q = r.input("query");
    const auto& g = r.input("grad");
    if (!is_floating_point(q.scalar_type)) r.fail("the query must be floating-point");
    if (g.rank() < 2 || r.input("out").shape != g.shape) r.fail("the gradient and the output must be the attention's output, [..., L, Ev]");
    auto shape = g.shape;
    shape.back() = ir::sym_expr(2);
    r.result(q.scalar_type, shape);
  }
  template <class C> static void decompose(C& c);
};

// The gradient of one input of scaled_dot_product_attention (`input`: 0 the query, 1 the key, 2
// the value), from the output gradient `grad`, the inputs and typex.attention_stats: with
// p_ij = exp(s_ij - L_i) and ds_ij = p_ij (grad_i . v_j - D_i),
//   query: sum_j ds_ij k_j scale;  key: sum_i ds_ij q_i scale;  value: sum_i p_ij grad_i.
// Over the output's batch dims (a broadcast input's gradient is summed down by the caller).
struct attention_backward_op {
  static constexpr std::string_view target = "typex.scaled_dot_product_attention_backward.default";
  static constexpr std::string_view schema =
      "typex::scaled_dot_product_attention_backward(Tensor grad, Tensor query, Tensor key, Tensor value, Tensor stats, Tensor? attn_mask=None, bool is_causal=False, float scale=1.0, int input=0) -> Tensor";
  static constexpr bool differentiable = false;
  template <class R> static void infer(R& r) {
    const auto& g = r.input("grad");
    const std::int64_t which = r.args().integer("input");
    if (which < 0 || which > 2) r.fail("input must be 0 (the query), 1 (the key) or 2 (the value)");
    const auto& x = which == 0 ? r.input("query") : which == 1 ? r.input("key") : r.input("value");
    if (g.rank() < 2 || x.rank() < 2) r.fail("the gradient and the inputs must be at least 2-d");
    auto shape = g.shape;
    shape[shape.size() - 2] = x.shape[x.shape.size() - 2];
    shape.back() = x.shape.back();
    r.result(r.input("query").scalar_type, shape);
  }
  template <class C> static void decompose(C& c);
};

namespace detail {
// scaled_dot_product_attention's math path
template <class C>
auto attention_math(C& c) {
  auto q = c.input("query");
  auto k = c.input("key");
  auto v = c.input("value");
  auto w = c.mul(c.matmul(q, c.transpose(k, -2, -1)), attention_scale(c, q));
  const double minus_inf = -std::numeric_limits<double>::infinity();
  if (c.args().flag_or_default("is_causal")) {  // key position <= query position
    const auto keys = c.unsqueeze(c.arange(c.size(k, -2)), 0);  // (one op per statement: see gelu's)
    const auto queries = c.unsqueeze(c.arange(c.size(q, -2)), 1);
    const auto key_minus_query = c.sub(keys, queries);
    w = c.masked_fill(w, c.gt(key_minus_query, 0.0), minus_inf);
  }
  if (c.is_tensor("attn_mask")) {
    const auto m = c.input("attn_mask");
    w = c.scalar_type(m) == dtype::b8 ? c.masked_fill(w, c.logical_not(m), minus_inf) : c.add(w, c.to(m, c.scalar_type(w)));
  }
  w = c.softmax(w, -1);
  const double p = c.args().real_or_default("dropout_p");
  if (p > 0) w = c.mul(w, c.emit(op_id_of<dropout_mask_op>, {w, p}));
  return c.matmul(w, v);
}
}  // namespace detail

namespace detail {
// q k^T scale with the causal mask (-inf above the diagonal) and attn_mask (bool: -inf where false;
// float: added) of the node's arguments: the derivative's and its ops' decompositions share it,
// node for node, so that the copies merge
template <class C, class V>
V attention_masked_scores(C& c, V q, V k, double scale) {
  auto s = c.mul(c.matmul(q, c.mT(k)), scale);
  if (c.args().flag_or_default("is_causal")) {
    const auto above = c.triu(c.full({c.size(q, -2), c.size(k, -2)}, 1.0, dtype::b8), 1);
    s = c.masked_fill(s, above, -std::numeric_limits<double>::infinity());
  }
  if (c.is_tensor("attn_mask")) {
    const auto m = c.input("attn_mask");
    s = c.scalar_type(m) == dtype::b8 ? c.masked_fill(s, c.logical_not(m), -std::numeric_limits<double>::infinity()) : c.add(s, m);
  }
  return s;
}
// the math path's gradient of input `which` (0 query, 1 key, 2 value)
template <class C, class V>
V attention_math_grad(C& c, V g, V q, V k, V v, double scale, int which) {
  const auto p = c.softmax(attention_masked_scores(c, q, k, scale), -1);
  if (which == 2) return c.matmul(c.mT(p), g);
  const auto dp = c.matmul(g, c.mT(v));
  const auto ds = c.mul(p, c.sub(dp, c.sum(c.mul(dp, p), {-1}, true)));
  return which == 0 ? c.mul(c.matmul(ds, k), scale) : c.mul(c.matmul(c.mT(ds), q), scale);
}
}  // namespace detail

template <class C>
void scaled_dot_product_attention_op::vjp(C& c) {
  if (c.args().real_or_default("dropout_p") != 0.0) c.unsupported("attention with dropout_p > 0 (its dropout mask is not kept)");
  if (c.args().flag_or_default("enable_gqa")) c.unsupported("grouped-query attention (enable_gqa)");
  const auto q = c.input("query");
  const auto k = c.input("key");
  const auto v = c.input("value");
  const auto g = c.grad();
  const double scale = detail::attention_scale(c, q);
  if (c.wants("attn_mask")) {  // (a float mask that wants a gradient: the math path, the weights once)
    const auto p = c.softmax(detail::attention_masked_scores(c, q, k, scale), -1);
    if (c.wants("value")) c.accumulate("value", c.matmul(c.mT(p), g));
    const auto dp = c.matmul(g, c.mT(v));
    const auto ds = c.mul(p, c.sub(dp, c.sum(c.mul(dp, p), {-1}, true)));
    c.accumulate("attn_mask", ds);
    if (c.wants("query")) c.accumulate("query", c.mul(c.matmul(ds, k), scale));
    if (c.wants("key")) c.accumulate("key", c.mul(c.matmul(c.mT(ds), q), scale));
    return;
  }
  const bool causal = c.args().flag_or_default("is_causal");
  const auto fused = [&](auto mask) {  // (the mask: a tensor, or None)
    const auto stats = c.emit(op_id_of<attention_stats_op>, {q, k, g, c.result(), mask, causal, scale});
    const auto grad_of = [&](std::int64_t which) {
      return c.emit(op_id_of<attention_backward_op>, {g, q, k, v, stats, mask, causal, scale, which});
    };
    if (c.wants("query")) c.accumulate("query", grad_of(0));
    if (c.wants("key")) c.accumulate("key", grad_of(1));
    if (c.wants("value")) c.accumulate("value", grad_of(2));
  };
  if (c.is_tensor("attn_mask")) fused(c.input("attn_mask"));
  else fused(C::none());
}

template <class C>
void attention_stats_op::decompose(C& c) {
  const auto q = c.input("query");
  const auto g = c.input("grad");
  const auto s = detail::attention_masked_scores(c, q, c.input("key"), c.args().real("scale"));
  const auto d = c.sum(c.mul(g, c.input("out")), {-1});
  auto l = c.emit(op_id_of<aten::logsumexp>, {s, std::vector<std::int64_t>{-1}, false});
  l = c.expand(l, c.shape(d));
  c.produce(c.cat({c.unsqueeze(l, -1), c.unsqueeze(d, -1)}, -1));
}

template <class C>
void attention_backward_op::decompose(C& c) {
  c.produce(detail::attention_math_grad(c, c.input("grad"), c.input("query"), c.input("key"), c.input("value"), c.args().real("scale"),
                                        static_cast<int>(c.args().integer("input"))));
}

template <class C>
void dropout_op::decompose(C& c) {
  const auto x = c.input("input");
  const double p = c.args().real("p");
  if (!c.args().flag("train") || p == 0.0) {
    c.produce(x);
    return;
  }
  c.produce(c.mul(x, c.emit(op_id_of<dropout_mask_op>, {x, p})));
}
template <class C>
void scaled_dot_product_attention_op::decompose(C& c) { c.produce(detail::attention_math(c)); }
template <tensor_like X>
auto dropout_mask(const X& x, double p, const std::source_location& loc = std::source_location::current()) {
  detail::check_probability("typex::dropout_mask", p);
  return apply_op(dropout_mask_op{.p = p}, &loc, x);
}

// This header's ops, for the registry (ops/all.hpp).
using attention_ops = op_list<scaled_dot_product_attention_op, dropout_op, dropout_mask_op, attention_stats_op, attention_backward_op>;

}  // namespace typex
