// typex/nn/attention.hpp — nn::MultiheadAttention<E, H>, nn::TransformerEncoderLayer<D, H, FF> and
// nn::TransformerDecoderLayer, the TransformerEncoder / TransformerDecoder stacks,
// as torch.nn's (parameter names, shapes, defaults, initialization).
//
// MultiheadAttention: in_proj_weight [3E, E] (xavier_uniform), in_proj_bias [3E] (zeros), out_proj
// (a Linear whose bias starts at zero). Inputs are [L, N, E] by default, [N, L, E] with BatchFirst,
// as in PyTorch. Masks follow torch.nn.MultiheadAttention (not F.scaled_dot_product_attention,
// whose bool mask means the opposite):
//   attn(q, k, v)                      the output (torch's need_weights=False)
//   attn(q, k, v, attn_mask)           attn_mask [L, S] or [N*H, L, S]: bool true = may NOT attend;
//                                      floating: added to the scores
//   attn.forward<NeedWeights, Average>(q, k, v, key_padding_mask, attn_mask, is_causal)
//       torch's forward(query, key, value, key_padding_mask, need_weights, attn_mask,
//       average_attn_weights, is_causal): key_padding_mask [N, S] (bool true = ignore that key;
//       floating: added), either mask may be nullptr; NeedWeights returns std::tuple(output,
//       weights), the weights [N, L, S] averaged over heads (Average) or [N, H, L, S]; is_causal
//       is torch's hint that attn_mask is the causal mask (it needs one, as in torch).
// TransformerEncoderLayer: self_attn, linear1, dropout, linear2, norm1, norm2, dropout1, dropout2;
// post-norm by default (NormFirst for pre-norm); activation ReLU (PyTorch's default) or GELU;
// dropout 0.1 as torch's (in training mode only: typex::train(model); set_dropout(p) changes it).
#pragma once

#include <typex/nn/activation.hpp>
#include <typex/nn/linear.hpp>
#include <typex/nn/normalization.hpp>
#include <typex/ops/binary.hpp>
#include <typex/ops/indexing.hpp>
#include <typex/ops/reduce.hpp>
#include <typex/ops/linear.hpp>
#include <typex/ops/normalization.hpp>
#include <typex/ops/shape_ops.hpp>
#include <typex/trace/record.hpp>

#include <boost/hana/accessors.hpp>
#include <boost/hana/basic_tuple.hpp>
#include <boost/hana/define_struct.hpp>
#include <boost/hana/pair.hpp>
#include <boost/hana/string.hpp>

#include <cmath>
#include <array>
#include <cstddef>
#include <tuple>
#include <type_traits>

namespace typex::nn {

// torch.nn.modules.linear.NonDynamicallyQuantizableLinear: a Linear whose bias starts at zero
// (MultiheadAttention's out_proj).
template <index_t E, dtype_tag_type DT = f32, bool Bias = true>
struct NonDynamicallyQuantizableLinear : Linear<E, E, Bias, DT> {
  using base = Linear<E, E, Bias, DT>;
  void reset_parameters(init::generator& g) const {
    base::reset_parameters(g);
    if constexpr (Bias) init::zeros_(this->bias);
  }
};

// (Bias = false: torch's MultiheadAttention(..., bias=False): no in_proj_bias, no out_proj.bias)
template <index_t E, index_t H, bool BatchFirst = false, dtype_tag_type DT = f32, bool Bias = true>
struct MultiheadAttention {
  static_assert(H >= 1 && E % H == 0, "typex::nn::MultiheadAttention: embed_dim must be divisible by num_heads");
  static constexpr index_t head_dim = E / H;
  using in_weight_t = parameter<DT, fix<3 * E>, fix<E>>;
  using in_bias_t = std::conditional_t<Bias, parameter<DT, fix<3 * E>>, absent>;
  using out_proj_t = NonDynamicallyQuantizableLinear<E, DT, Bias>;
  BOOST_HANA_DEFINE_STRUCT(MultiheadAttention, (in_weight_t, in_proj_weight), (in_bias_t, in_proj_bias),
                           (out_proj_t, out_proj));
  double dropout = 0.0;   // on the attention weights, in training mode (torch's dropout argument)
  bool training = false;  // as torch's module.train() (typex::train / typex::eval)

  template <class Q, class K, class V>
  auto operator()(const Q& query, const K& key, const V& value,
                  const std::source_location& loc = std::source_location::current()) const {
    const library_call site(loc);
    return forward(query, key, value);
  }
  // With attn_mask [L, S] or [N*H, L, S]: bool true where a query may NOT look at a key (torch's
  // MultiheadAttention convention), or floating values added to the scores (-inf: may not look).
  template <class Q, class K, class V, class M>
  auto operator()(const Q& query, const K& key, const V& value, const M& attn_mask,
                  const std::source_location& loc = std::source_location::current()) const {
    const library_call site(loc);
    return forward(query, key, value, nullptr, attn_mask);
  }

  // torch.nn.MultiheadAttention.forward, with need_weights and average_attn_weights as template
  // arguments (they decide the result's type).
  template <bool NeedWeights = false, bool AverageWeights = true, class Q, class K, class V, class KPM = std::nullptr_t,
            class AM = std::nullptr_t>
  auto forward(const Q& query, const K& key, const V& value, const KPM& key_padding_mask = nullptr, const AM& attn_mask = nullptr,
               bool is_causal = false, const std::source_location& loc = std::source_location::current()) const {
    const library_call site(loc);
    if constexpr (std::is_null_pointer_v<AM>) {
      if (is_causal)
        detail::raise_message<argument_error>(
            "typex::nn::MultiheadAttention: is_causal is a hint that attn_mask is the causal mask, and there is no attn_mask "
            "(as torch: pass the causal mask too, or use scaled_dot_product_attention with is_causal)");
    }
    const auto scope = make_scope(query, key, value, key_padding_mask, attn_mask);
    return scope.returns(attend<NeedWeights, AverageWeights>(query, key, value, key_padding_mask, attn_mask));
  }

  void reset_parameters(init::generator& g) const {
    init::xavier_uniform_(in_proj_weight, 1.0, g);
    if constexpr (Bias) init::zeros_(in_proj_bias);
  }

 private:
  // x [N, L, E] -> [N, H, L, head_dim]
  template <class X>
  static auto split_heads(const X& x) {
    const auto n = x.shape().template get<0>();
    const auto l = x.shape().template get<1>();
    return typex::transpose<1, 2>(typex::view(x, reshape_to(n, l, fix<H>{}, fix<head_dim>{})));
  }

  template <class Q, class K, class V, class KPM, class AM>
  auto make_scope(const Q& q, const K& k, const V& v, const KPM& kpm, const AM& am) const {
    if constexpr (std::is_null_pointer_v<KPM> && std::is_null_pointer_v<AM>) return module_scope(*this, q, k, v);
    else if constexpr (std::is_null_pointer_v<KPM>) return module_scope(*this, q, k, v, am);
    else if constexpr (std::is_null_pointer_v<AM>) return module_scope(*this, q, k, v, kpm);
    else return module_scope(*this, q, k, v, kpm, am);
  }

  template <bool NeedWeights, bool Average, class Q, class K, class V, class KPM, class AM>
  auto attend(const Q& query, const K& key, const V& value, const KPM& kpm, const AM& am) const {
    if constexpr (!BatchFirst) {
      const auto q = typex::transpose<0, 1>(query);
      const auto k = typex::transpose<0, 1>(key);
      const auto v = typex::transpose<0, 1>(value);
      if constexpr (NeedWeights) {
        const auto r = attend_batch_first<true, Average>(q, k, v, kpm, am);
        return std::tuple(typex::transpose<0, 1>(std::get<0>(r)), std::get<1>(r));  // (weights stay [N, ...], as torch's)
      } else {
        return typex::transpose<0, 1>(attend_batch_first<false, Average>(q, k, v, kpm, am));
      }
    } else {
      return attend_batch_first<NeedWeights, Average>(query, key, value, kpm, am);
    }
  }

  // scores [N, H, L, S] with a mask applied: bool true -> -inf (torch.nn.MultiheadAttention's
  // convention), floating -> added.
  template <class S, class M>
  static auto masked(const S& scores, const M& mask) {
    if constexpr (M::dtype_type::value == dtype::b8) return typex::masked_fill(scores, mask, -INFINITY);
    else return typex::add(scores, mask);
  }

  template <bool NeedWeights, bool Average, class Q, class K, class V, class KPM, class AM>
  auto attend_batch_first(const Q& q, const K& k, const V& v, const KPM& kpm, const AM& am) const {
    const auto w = as_traced(in_proj_weight, q);
    // (one op per statement: the order of function arguments is unspecified, the graph's is not)
    const auto project = [&]<index_t Begin>(const auto& x) {
      const auto wp = typex::slice<0, Begin, Begin + E>(w);
      if constexpr (Bias) {
        const auto bp = typex::slice<0, Begin, Begin + E>(as_traced(in_proj_bias, q));
        return typex::linear(x, wp, bp);
      } else {
        return typex::linear(x, wp);
      }
    };
    const auto qp = project.template operator()<0>(q);
    const auto kp = project.template operator()<E>(k);
    const auto vp = project.template operator()<2 * E>(v);
    const auto qh = split_heads(qp);
    const auto kh = split_heads(kp);
    const auto vh = split_heads(vp);
    const auto kt = typex::transpose<-2, -1>(kh);
    const auto scores = typex::mul(typex::matmul(qh, kt), 1.0 / std::sqrt(static_cast<double>(head_dim)));  // [N, H, L, S]
    const auto with_attn_mask = [&] {
      if constexpr (std::is_null_pointer_v<AM>) {
        return scores;
      } else {
        static_assert(AM::dtype_type::value == dtype::b8 || is_floating_point(AM::dtype_type::value),
                      "typex::nn::MultiheadAttention: attn_mask must be bool (true: may not attend) or floating-point (added)");
        static_assert(AM::shape_type::rank == 2 || AM::shape_type::rank == 3,
                      "typex::nn::MultiheadAttention: attn_mask must be [L, S] or [N*num_heads, L, S]");
        if constexpr (AM::shape_type::rank == 2) {
          return masked(scores, am);
        } else {
          const auto& sh = scores.shape();
          const auto m4 = typex::reshape(am, reshape_to(sh.template get<0>(), fix<H>{}, sh.template get<2>(), sh.template get<3>()));
          return masked(scores, m4);
        }
      }
    }();
    const auto with_masks = [&] {
      if constexpr (std::is_null_pointer_v<KPM>) {
        return with_attn_mask;
      } else {
        static_assert(KPM::dtype_type::value == dtype::b8 || is_floating_point(KPM::dtype_type::value),
                      "typex::nn::MultiheadAttention: key_padding_mask must be bool (true: ignore the key) or floating-point (added)");
        static_assert(KPM::shape_type::rank == 2, "typex::nn::MultiheadAttention: key_padding_mask must be [N, S]");
        const auto& ks = kpm.shape();
        const auto m4 = typex::reshape(kpm, reshape_to(ks.template get<0>(), fix<1>{}, fix<1>{}, ks.template get<1>()));
        return masked(with_attn_mask, m4);
      }
    }();
    const auto probabilities = typex::softmax<-1>(with_masks);
    // (torch drops attention weights in training mode; the weights returned are the dropped ones)
    using W = std::remove_cvref_t<decltype(probabilities)>;
    const W weights = training && dropout > 0 ? W(typex::dropout(probabilities, dropout, true)) : probabilities;
    const auto o = typex::transpose<1, 2>(typex::matmul(weights, vh));  // [N, L, H, head_dim]
    const auto merged = typex::reshape(o, reshape_to(o.shape().template get<0>(), o.shape().template get<1>(), fix<E>{}));
    if constexpr (NeedWeights) {
      if constexpr (Average) return std::tuple(out_proj(merged), typex::mean<1>(weights));
      else return std::tuple(out_proj(merged), weights);
    } else {
      return out_proj(merged);
    }
  }
};

enum class activation : unsigned char { relu, gelu };

namespace impl {
struct no_norm {};  // (TransformerEncoder without a final norm)

// A transformer layer's feed-forward block: out_dropout(linear2(dropout(act(linear1(x))))).
template <activation Act, class X, class L1, class L2>
auto feed_forward(const X& x, const L1& linear1, const Dropout& dropout, const L2& linear2, const Dropout& out_dropout) {
  const auto h = linear1(x);
  const auto a = [&] {
    if constexpr (Act == activation::gelu) return typex::gelu(h);
    else return typex::relu(h);
  }();
  return out_dropout(linear2(dropout(a)));
}
}  // namespace impl

// (Bias = false: torch's bias=False, none in the attention, the linears or the norms)
template <index_t D, index_t H, index_t FF = 2048, activation Act = activation::relu, bool NormFirst = false,
          bool BatchFirst = false, dtype_tag_type DT = f32, bool Bias = true>
struct TransformerEncoderLayer {
  using attn_t = MultiheadAttention<D, H, BatchFirst, DT, Bias>;
  using linear1_t = Linear<D, FF, Bias, DT>;
  using linear2_t = Linear<FF, D, Bias, DT>;
  using norm_t = LayerNorm<D, DT, true, Bias>;
  BOOST_HANA_DEFINE_STRUCT(TransformerEncoderLayer, (attn_t, self_attn), (linear1_t, linear1), (Dropout, dropout),
                           (linear2_t, linear2), (norm_t, norm1), (norm_t, norm2), (Dropout, dropout1),
                           (Dropout, dropout2));

  static constexpr nn::input_rule input_rule{.module = "nn::TransformerEncoderLayer", .parameter = "d_model", .dim = -1,
                                             .extent = D, .layout = "[..., #]"};

  // torch's dropout=0.1, in its four places (used in training mode only)
  TransformerEncoderLayer() noexcept { set_dropout(0.1); }
  void set_dropout(double p) noexcept { self_attn.dropout = dropout.p = dropout1.p = dropout2.p = p; }

  template <class X>
  auto operator()(const X& x, const std::source_location& loc = std::source_location::current()) const {
    return (*this)(x, nullptr, loc);
  }
  // torch's forward(src, src_mask): src_mask [L, S] or [N*H, L, S], bool true where a position
  // may NOT attend (the causal mask: typex::triu of ones above the diagonal), or floating values
  // added to the attention scores.
  template <class X, class M>
    requires(!std::is_same_v<std::remove_cvref_t<M>, std::source_location>)
  auto operator()(const X& x, const M& src_mask, const std::source_location& loc = std::source_location::current()) const {
    return checked_call(*this, x, [&](const auto& src) {
      const library_call site(loc);
      const module_scope scope(*this, src);
      const auto attend = [&](const auto& q) { return self_attn.forward(q, q, q, nullptr, src_mask); };
      if constexpr (NormFirst) {
        const auto h = typex::add(src, dropout1(attend(norm1(src))));
        return scope.returns(typex::add(h, feed_forward(norm2(h))));
      } else {
        const auto h = norm1(typex::add(src, dropout1(attend(src))));
        return scope.returns(norm2(typex::add(h, feed_forward(h))));
      }
    });
  }

 private:
  template <class X>
  auto feed_forward(const X& x) const {
    return impl::feed_forward<Act>(x, linear1, dropout, linear2, dropout2);
  }
};

// torch.nn.TransformerDecoderLayer: self_attn (masked self-attention), multihead_attn (attention
// over the encoder's output, `memory`), linear1, dropout, linear2, norm1, norm2, norm3, dropout1,
// dropout2, dropout3; post-norm by default (NormFirst for pre-norm); ReLU or GELU.
//   layer(tgt, memory)                               no masks
//   layer(tgt, memory, tgt_mask)                     tgt_mask [T, T] (the causal mask: bool true above the diagonal)
//   layer.forward(tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask)
// Masks follow torch.nn.MultiheadAttention's conventions (bool true: may NOT attend; floating: added);
// any of them may be nullptr. tgt and memory share the batch and d_model; their lengths may differ.
template <index_t D, index_t H, index_t FF = 2048, activation Act = activation::relu, bool NormFirst = false,
          bool BatchFirst = false, dtype_tag_type DT = f32, bool Bias = true>
struct TransformerDecoderLayer {
  using attn_t = MultiheadAttention<D, H, BatchFirst, DT, Bias>;
  using linear1_t = Linear<D, FF, Bias, DT>;
  using linear2_t = Linear<FF, D, Bias, DT>;
  using norm_t = LayerNorm<D, DT, true, Bias>;
  BOOST_HANA_DEFINE_STRUCT(TransformerDecoderLayer, (attn_t, self_attn), (attn_t, multihead_attn), (linear1_t, linear1),
                           (Dropout, dropout), (linear2_t, linear2), (norm_t, norm1), (norm_t, norm2), (norm_t, norm3),
                           (Dropout, dropout1), (Dropout, dropout2), (Dropout, dropout3));

  static constexpr nn::input_rule input_rule{.module = "nn::TransformerDecoderLayer", .parameter = "d_model", .dim = -1,
                                             .extent = D, .layout = "[..., #]"};

  TransformerDecoderLayer() noexcept { set_dropout(0.1); }  // torch's dropout=0.1 (training mode only)
  void set_dropout(double p) noexcept {
    self_attn.dropout = multihead_attn.dropout = dropout.p = dropout1.p = dropout2.p = dropout3.p = p;
  }

  template <class T, class M>
  auto operator()(const T& tgt, const M& memory, const std::source_location& loc = std::source_location::current()) const {
    return forward(tgt, memory, nullptr, nullptr, nullptr, nullptr, loc);
  }
  template <class T, class M, class TM>
    requires(!std::is_same_v<std::remove_cvref_t<TM>, std::source_location>)
  auto operator()(const T& tgt, const M& memory, const TM& tgt_mask, const std::source_location& loc = std::source_location::current()) const {
    return forward(tgt, memory, tgt_mask, nullptr, nullptr, nullptr, loc);
  }

  template <class T, class M, class TM = std::nullptr_t, class MM = std::nullptr_t, class TK = std::nullptr_t, class MK = std::nullptr_t>
  auto forward(const T& tgt, const M& memory, const TM& tgt_mask = nullptr, const MM& memory_mask = nullptr,
               const TK& tgt_key_padding_mask = nullptr, const MK& memory_key_padding_mask = nullptr,
               const std::source_location& loc = std::source_location::current()) const {
    static_assert(M::shape_type::rank == T::shape_type::rank,
                  "typex::nn::TransformerDecoderLayer: memory must have tgt's rank ([N, S, E] with [N, T, E], batch_first, or "
                  "[S, N, E] with [T, N, E])");
    return checked_call(*this, tgt, [&](const auto& x) {
      const library_call site(loc);
      const module_scope scope(*this, x, memory);
      const auto self_block = [&](const auto& q) { return dropout1(self_attn.forward(q, q, q, tgt_key_padding_mask, tgt_mask)); };
      const auto cross_block = [&](const auto& q) {
        return dropout2(multihead_attn.forward(q, memory, memory, memory_key_padding_mask, memory_mask));
      };
      if constexpr (NormFirst) {
        const auto a = typex::add(x, self_block(norm1(x)));
        const auto b = typex::add(a, cross_block(norm2(a)));
        return scope.returns(typex::add(b, feed_forward(norm3(b))));
      } else {
        const auto a = norm1(typex::add(x, self_block(x)));
        const auto b = norm2(typex::add(a, cross_block(a)));
        return scope.returns(norm3(typex::add(b, feed_forward(b))));
      }
    });
  }

 private:
  template <class X>
  auto feed_forward(const X& x) const {
    return impl::feed_forward<Act>(x, linear1, dropout, linear2, dropout3);
  }
};

// torch.nn.TransformerDecoder(decoder_layer, num_layers, norm): `layers.0` ... each with its own
// parameters, every layer given the same memory and masks, then `norm` (or none: Norm = void).
template <class Layer, std::size_t N, class Norm = void>
struct TransformerDecoder {
  static_assert(N >= 1, "typex::nn::TransformerDecoder: num_layers must be at least 1");
  using layers_t = std::array<Layer, N>;
  using norm_t = std::conditional_t<std::is_void_v<Norm>, impl::no_norm, Norm>;
  layers_t layers;
  [[no_unique_address]] norm_t norm;

  template <class T, class M, class TM = std::nullptr_t, class MM = std::nullptr_t, class TK = std::nullptr_t, class MK = std::nullptr_t>
  auto operator()(const T& tgt, const M& memory, const TM& tgt_mask = nullptr, const MM& memory_mask = nullptr,
                  const TK& tgt_key_padding_mask = nullptr, const MK& memory_key_padding_mask = nullptr,
                  const std::source_location& loc = std::source_location::current()) const {
    const library_call site(loc);
    const module_scope scope(*this, tgt, memory);
    const auto h = run<0>(tgt, [&](const Layer& l, const auto& x) {
      return l.forward(x, memory, tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask);
    });
    if constexpr (std::is_void_v<Norm>) return scope.returns(h);
    else return scope.returns(norm(h));
  }

 private:
  template <std::size_t I, class X, class F>
  auto run(const X& x, const F& f) const {
    if constexpr (I == N) return x;
    else return run<I + 1>(f(layers[I], x), f);
  }
};

// torch.nn.TransformerEncoder(encoder_layer, num_layers, norm): N layers of one type, each with
// parameters of its own (`layers.0.self_attn.in_proj_weight`, ...), called in order with the same
// mask, then `norm` (a LayerNorm<D>, or none: Norm = void, torch's norm=None).
//   nn::TransformerEncoder<nn::TransformerEncoderLayer<16, 2, 32, nn::activation::gelu, true, true>, 2, nn::LayerNorm<16>>
template <class Layer, std::size_t N, class Norm = void>
struct TransformerEncoder {
  static_assert(N >= 1, "typex::nn::TransformerEncoder: num_layers must be at least 1");
  using layers_t = std::array<Layer, N>;
  using norm_t = std::conditional_t<std::is_void_v<Norm>, impl::no_norm, Norm>;
  layers_t layers;
  [[no_unique_address]] norm_t norm;

  template <class X>
  auto operator()(const X& x, const std::source_location& loc = std::source_location::current()) const {
    return (*this)(x, nullptr, loc);
  }
  // torch's forward(src, mask): the mask every layer gets (see TransformerEncoderLayer)
  template <class X, class M>
    requires(!std::is_same_v<std::remove_cvref_t<M>, std::source_location>)
  auto operator()(const X& x, const M& mask, const std::source_location& loc = std::source_location::current()) const {
    const library_call site(loc);
    const module_scope scope(*this, x);
    const auto h = run<0>(x, mask);
    if constexpr (std::is_void_v<Norm>) return scope.returns(h);
    else return scope.returns(norm(h));
  }

 private:
  template <std::size_t I, class X, class M>
  auto run(const X& x, const M& mask) const {
    if constexpr (I == N) return x;
    else return run<I + 1>(layers[I](x, mask), mask);
  }
};

}  // namespace typex::nn

// (reflection: `layers` and, where there is one, `norm`)
namespace typex::nn::impl {
template <class Norm>
constexpr auto stack_accessors() {
  namespace hana = boost::hana;
  const auto layers = hana::make_pair(BOOST_HANA_STRING("layers"), [](auto&& t) -> decltype(auto) { return (static_cast<decltype(t)&&>(t).layers); });
  if constexpr (std::is_void_v<Norm>)
    return hana::make_basic_tuple(layers);
  else
    return hana::make_basic_tuple(layers, hana::make_pair(BOOST_HANA_STRING("norm"), [](auto&& t) -> decltype(auto) { return (static_cast<decltype(t)&&>(t).norm); }));
}
}  // namespace typex::nn::impl
namespace boost::hana {
template <class Layer, std::size_t N, class Norm>
struct accessors_impl<typex::nn::TransformerDecoder<Layer, N, Norm>> {
  static constexpr auto apply() { return typex::nn::impl::stack_accessors<Norm>(); }
};
template <class Layer, std::size_t N, class Norm>
struct accessors_impl<typex::nn::TransformerEncoder<Layer, N, Norm>> {
  static constexpr auto apply() { return typex::nn::impl::stack_accessors<Norm>(); }
};
}  // namespace boost::hana
