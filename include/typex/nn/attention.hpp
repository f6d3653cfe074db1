// typex/nn/attention.hpp — nn::MultiheadAttention<E, H> and nn::TransformerEncoderLayer<D, H, FF>,
// as torch.nn's (parameter names, shapes, defaults, initialization).
//
// MultiheadAttention: in_proj_weight [3E, E] (xavier_uniform), in_proj_bias [3E] (zeros), out_proj
// (a Linear whose bias starts at zero). Its call takes (query, key, value[, additive mask [L, S]])
// and returns the attention output (torch's need_weights=False). Inputs are [L, N, E] by default,
// [N, L, E] with BatchFirst, as in PyTorch.
// TransformerEncoderLayer: self_attn, linear1, dropout, linear2, norm1, norm2, dropout1, dropout2;
// post-norm by default (NormFirst for pre-norm); activation ReLU (PyTorch's default) or GELU.
#pragma once

#include <typex/nn/activation.hpp>
#include <typex/nn/linear.hpp>
#include <typex/nn/normalization.hpp>
#include <typex/ops/binary.hpp>
#include <typex/ops/linear.hpp>
#include <typex/ops/normalization.hpp>
#include <typex/ops/shape_ops.hpp>
#include <typex/trace/record.hpp>

#include <boost/hana/define_struct.hpp>

#include <cmath>

namespace typex::nn {

// torch.nn.modules.linear.NonDynamicallyQuantizableLinear: a Linear whose bias starts at zero
// (MultiheadAttention's out_proj).
template <index_t E, dtype_tag_type DT = f32>
struct NonDynamicallyQuantizableLinear : Linear<E, E, true, DT> {
  using base = Linear<E, E, true, DT>;
  void reset_parameters(init::generator& g) const {
    base::reset_parameters(g);
    init::zeros_(this->bias);
  }
};

template <index_t E, index_t H, bool BatchFirst = false, dtype_tag_type DT = f32>
struct MultiheadAttention {
  static_assert(H >= 1 && E % H == 0, "typex::nn::MultiheadAttention: embed_dim must be divisible by num_heads");
  static constexpr index_t head_dim = E / H;
  using in_weight_t = parameter<DT, fix<3 * E>, fix<E>>;
  using in_bias_t = parameter<DT, fix<3 * E>>;
  using out_proj_t = NonDynamicallyQuantizableLinear<E, DT>;
  BOOST_HANA_DEFINE_STRUCT(MultiheadAttention, (in_weight_t, in_proj_weight), (in_bias_t, in_proj_bias),
                           (out_proj_t, out_proj));

  template <class Q, class K, class V>
  auto operator()(const Q& query, const K& key, const V& value) const {
    const module_scope scope(*this, query, key, value);
    return scope.returns(attend(query, key, value, static_cast<const std::nullptr_t*>(nullptr)));
  }
  // With an additive float mask [L, S] (-inf where a query must not look).
  template <class Q, class K, class V, class M>
  auto operator()(const Q& query, const K& key, const V& value, const M& mask) const {
    const module_scope scope(*this, query, key, value, mask);
    return scope.returns(attend(query, key, value, &mask));
  }

  void reset_parameters(init::generator& g) const {
    init::xavier_uniform_(in_proj_weight, 1.0, g);
    init::zeros_(in_proj_bias);
  }

 private:
  // x [N, L, E] -> [N, H, L, head_dim]
  template <class X>
  static auto split_heads(const X& x) {
    const auto n = x.shape().template get<0>();
    const auto l = x.shape().template get<1>();
    return typex::transpose<1, 2>(typex::view(x, reshape_to(n, l, fix<H>{}, fix<head_dim>{})));
  }

  template <class Q, class K, class V, class M>
  auto attend(const Q& query, const K& key, const V& value, const M* mask) const {
    if constexpr (!BatchFirst) {
      const auto q = typex::transpose<0, 1>(query);
      const auto k = typex::transpose<0, 1>(key);
      const auto v = typex::transpose<0, 1>(value);
      return typex::transpose<0, 1>(attend_batch_first(q, k, v, mask));
    } else {
      return attend_batch_first(query, key, value, mask);
    }
  }

  template <class Q, class K, class V, class M>
  auto attend_batch_first(const Q& q, const K& k, const V& v, const M* mask) const {
    const auto w = as_traced(in_proj_weight, q);
    const auto b = as_traced(in_proj_bias, q);
    // (one op per statement: the order of function arguments is unspecified, the graph's is not)
    const auto wq = typex::slice<0, 0, E>(w);
    const auto bq = typex::slice<0, 0, E>(b);
    const auto qp = typex::linear(q, wq, bq);
    const auto wk = typex::slice<0, E, 2 * E>(w);
    const auto bk = typex::slice<0, E, 2 * E>(b);
    const auto kp = typex::linear(k, wk, bk);
    const auto wv = typex::slice<0, 2 * E, 3 * E>(w);
    const auto bv = typex::slice<0, 2 * E, 3 * E>(b);
    const auto vp = typex::linear(v, wv, bv);
    const auto qh = split_heads(qp);
    const auto kh = split_heads(kp);
    const auto vh = split_heads(vp);
    const auto kt = typex::transpose<-2, -1>(kh);
    const auto scores = typex::mul(typex::matmul(qh, kt), 1.0 / std::sqrt(static_cast<double>(head_dim)));
    const auto weights = [&] {
      if constexpr (std::is_null_pointer_v<M>) return typex::softmax<-1>(scores);
      else return typex::softmax<-1>(typex::add(scores, *mask));
    }();
    const auto o = typex::transpose<1, 2>(typex::matmul(weights, vh));  // [N, L, H, head_dim]
    const auto merged = typex::reshape(o, reshape_to(o.shape().template get<0>(), o.shape().template get<1>(), fix<E>{}));
    return out_proj(merged);
  }
};

enum class activation : unsigned char { relu, gelu };

template <index_t D, index_t H, index_t FF = 2048, activation Act = activation::relu, bool NormFirst = false,
          bool BatchFirst = false, dtype_tag_type DT = f32>
struct TransformerEncoderLayer {
  using attn_t = MultiheadAttention<D, H, BatchFirst, DT>;
  using linear1_t = Linear<D, FF, true, DT>;
  using linear2_t = Linear<FF, D, true, DT>;
  using norm_t = LayerNorm<D, DT>;
  BOOST_HANA_DEFINE_STRUCT(TransformerEncoderLayer, (attn_t, self_attn), (linear1_t, linear1), (Dropout, dropout),
                           (linear2_t, linear2), (norm_t, norm1), (norm_t, norm2), (Dropout, dropout1),
                           (Dropout, dropout2));

  template <class X>
  auto operator()(const X& src) const {
    const module_scope scope(*this, src);
    if constexpr (NormFirst) {
      const auto n1 = norm1(src);
      const auto x = typex::add(src, dropout1(self_attn(n1, n1, n1)));
      return scope.returns(typex::add(x, feed_forward(norm2(x))));
    } else {
      const auto x = norm1(typex::add(src, dropout1(self_attn(src, src, src))));
      return scope.returns(norm2(typex::add(x, feed_forward(x))));
    }
  }

 private:
  template <class X>
  auto feed_forward(const X& x) const {
    const auto h = linear1(x);
    const auto a = [&] {
      if constexpr (Act == activation::gelu) return typex::gelu(h);
      else return typex::relu(h);
    }();
    return dropout2(linear2(dropout(a)));
  }
};

}  // namespace typex::nn
