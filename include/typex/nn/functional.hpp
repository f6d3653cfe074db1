// typex/nn/functional.hpp — padding and upsampling as torch.nn.functional's, and their modules.
//
//   typex::pad<1, 2>(x)                                F.pad(x, (1, 2))            the last dim, zeros
//   typex::pad<1, 1, 2, 2>(x, pad_mode::reflect)       F.pad(x, (1, 1, 2, 2), mode="reflect")
//   typex::pad<0, 1>(x, pad_mode::constant, -1.0)      F.pad(x, (0, 1), value=-1)
//   typex::upsample_nearest<2>(x)                      F.interpolate(x, scale_factor=2)   [N, C, H, W]
//   typex::upsample_bilinear<7, 9, false>(x)           F.interpolate(x, size=(7, 9), mode="bilinear", align_corners=False)
//   typex::scaled_dot_product_attention(typex::enable_gqa, q, k, v, mask, {.is_causal = true})
//                                                      F.scaled_dot_product_attention(..., enable_gqa=True): q [B, Hq, L, E],
//                                                      k and v [B, Hkv, S, E] with Hq a multiple of Hkv (grouped-query attention)
//   nn::ZeroPad2d<l, r, t, b>, nn::ConstantPad2d<l, r, t, b> (value), nn::ReflectionPad2d<...>,
//   nn::ReplicationPad2d<...>, nn::Upsample<S> (nearest), nn::UpsamplingBilinear2d<S> (align_corners=True, torch's)
//
// They are written with typex's ops (slice, cat, expand, reshape, index_select, matmul), so they
// export, run on every backend and differentiate through those ops' derivatives; the graph shows
// those ops rather than aten.constant_pad_nd / aten.upsample_nearest2d. Pads are static (as they are
// in every model torch exports); the padded dims may be symbolic (reflect and replicate take the
// edge values with slices sized from the dim). A reflect pad flips through a literal index tensor
// (a constant of the program). Bilinear interpolation needs static spatial extents: it is a
// matmul on each side by an interpolation matrix computed from the sizes (two constants), exactly
// torch's weights (align_corners both ways).
#pragma once

#include <typex/nn/module_input.hpp>
#include <typex/ops/attention.hpp>
#include <typex/ops/binary.hpp>
#include <typex/ops/concat.hpp>
#include <typex/ops/factory.hpp>
#include <typex/ops/indexing.hpp>
#include <typex/ops/linear.hpp>
#include <typex/ops/shape_ops.hpp>
#include <typex/trace/context.hpp>

#include <boost/hana/define_struct.hpp>

#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

namespace typex {

enum class pad_mode : unsigned char { constant, reflect, replicate };

namespace impl {
// x's shape as a reshape_to target, dim D replaced by E (a dim value).
template <long long D, class X, class E, std::size_t... I>
auto with_dim(const X& x, const E& e, std::index_sequence<I...>) {
  const auto& sh = x.shape();
  const auto pick = [&]<std::size_t K>(std::integral_constant<std::size_t, K>) {
    if constexpr (K == static_cast<std::size_t>(D)) return e;
    else return sh.template get<K>();
  };
  return reshape_to(pick(std::integral_constant<std::size_t, I>{})...);
}
template <long long D, class X, class E>
auto with_dim(const X& x, const E& e) {
  return with_dim<D>(x, e, std::make_index_sequence<X::shape_type::rank>{});
}

// x reversed along D (x has a static extent N there): index_select by a literal index [N-1 .. 0].
template <long long D, index_t N, class X>
auto flip(const X& x) {
  std::vector<std::int64_t> order(static_cast<std::size_t>(N));
  for (index_t i = 0; i < N; ++i) order[static_cast<std::size_t>(i)] = N - 1 - i;
  const auto index = host_tensor<i64, shape<fix<N>>>::from_values(shape<fix<N>>{}, order);
  return typex::index_select<D>(x, index);
}

// The L values before and the R after x along dim D, then x between them. (Every mode gives the
// same type: each piece is x's shape with dim D = L or R.)
template <pad_mode Mode, long long D, index_t L, index_t R, class X>
auto pad_dim(const X& x, double value) {
  static_assert(L >= 0 && R >= 0, "typex::pad: pads must be non-negative");
  const auto n = x.shape().template get<D>();
  if (Mode == pad_mode::reflect && (n.get() <= L || n.get() <= R)) {
    detail::raise<shape_error>([&](auto& w) {
      w.put("typex::pad: reflect padding ("); w.put_int(L); w.put(", "); w.put_int(R); w.put(") of dim "); w.put_int(D);
      w.put(", whose extent is "); w.put_int(n.get()); w.put(": a pad must be smaller than the extent (PyTorch's rule)");
    });
  }
  if (Mode == pad_mode::replicate && n.get() == 0)
    detail::raise_message<shape_error>("typex::pad: replicate padding of an empty dim (it has no edge value to repeat)");
  // before: reflect x[1 .. L] reversed, replicate x[0]; after: reflect x[n-1-R .. n-2] reversed, replicate x[n-1]
  const auto piece = [&]<index_t W, bool Before>() {
    if constexpr (Mode == pad_mode::constant) {
      return typex::full_like(typex::expand(typex::slice<D>(x, fix<0>{}, fix<1>{}), with_dim<D>(x, fix<W>{})), value);
    } else if constexpr (Mode == pad_mode::replicate) {
      if constexpr (Before) return typex::expand(typex::slice<D>(x, fix<0>{}, fix<1>{}), with_dim<D>(x, fix<W>{}));
      else return typex::expand(typex::slice<D>(x, n - fix<1>{}, n), with_dim<D>(x, fix<W>{}));
    } else {
      if constexpr (Before) return flip<D, W>(typex::slice<D>(x, fix<1>{}, fix<W + 1>{}));
      else return flip<D, W>(typex::slice<D>(x, n - fix<W + 1>{}, n - fix<1>{}));
    }
  };
  if constexpr (L == 0 && R == 0) return x;
  else if constexpr (L == 0) return typex::cat<D>(tensors(x, piece.template operator()<R, false>()));
  else if constexpr (R == 0) return typex::cat<D>(tensors(piece.template operator()<L, true>(), x));
  else return typex::cat<D>(tensors(piece.template operator()<L, true>(), x, piece.template operator()<R, false>()));
}

template <pad_mode Mode, std::size_t K, index_t... P, class X>
auto pad_pairs(const X& x, double value) {
  constexpr std::array<index_t, sizeof...(P)> p{P...};
  if constexpr (2 * K == sizeof...(P)) {
    return x;
  } else {
    constexpr long long dim = static_cast<long long>(X::shape_type::rank) - 1 - static_cast<long long>(K);
    return pad_pairs<Mode, K + 1, P...>(pad_dim<Mode, dim, p[2 * K], p[2 * K + 1]>(x, value), value);
  }
}

// torch's bilinear weights along one dim: out x in, two taps per row.
template <index_t In, index_t Out, bool AlignCorners>
host_tensor<f32, shape<fix<Out>, fix<In>>> bilinear_matrix() {
  host_tensor<f32, shape<fix<Out>, fix<In>>> a;
  const float scale = AlignCorners ? (Out > 1 ? static_cast<float>(In - 1) / static_cast<float>(Out - 1) : 0.0f)
                                   : static_cast<float>(In) / static_cast<float>(Out);
  for (index_t o = 0; o < Out; ++o) {
    float src = AlignCorners ? scale * static_cast<float>(o) : scale * (static_cast<float>(o) + 0.5f) - 0.5f;
    if (src < 0) src = 0;
    const index_t i0 = static_cast<index_t>(src);
    const index_t i1 = i0 < In - 1 ? i0 + 1 : i0;
    const float l1 = src - static_cast<float>(i0), l0 = 1.0f - l1;
    a.data()[o * In + i0] += l0;
    a.data()[o * In + i1] += l1;
  }
  return a;
}
}  // namespace impl

// torch.nn.functional.pad(x, (P...), mode, value): P pairs (before, after), the last dim first.
template <index_t... P, tensor_like X>
auto pad(const X& x, pad_mode mode = pad_mode::constant, double value = 0.0) {
  static_assert(sizeof...(P) % 2 == 0 && sizeof...(P) >= 2, "typex::pad: give the pads in pairs (before, after), the last dim first, as F.pad");
  static_assert(sizeof...(P) / 2 <= X::shape_type::rank, "typex::pad: more pad pairs than the tensor has dims");
  static_assert(((P >= 0) && ...), "typex::pad: negative pads (cropping) are not supported: crop with typex::slice");
  using R = decltype(impl::pad_pairs<pad_mode::constant, 0, P...>(x, value));
  if (mode == pad_mode::reflect) return R(impl::pad_pairs<pad_mode::reflect, 0, P...>(x, value));
  if (mode == pad_mode::replicate) return R(impl::pad_pairs<pad_mode::replicate, 0, P...>(x, value));
  return impl::pad_pairs<pad_mode::constant, 0, P...>(x, value);
}

// F.interpolate(x, scale_factor=(SH, SW), mode="nearest") on [N, C, H, W], integer scales: each
// pixel repeated SH x SW times (the extents may be symbolic).
template <index_t SH, index_t SW = SH, tensor_like X>
auto upsample_nearest(const X& x) {
  static_assert(X::shape_type::rank == 4, "typex::upsample_nearest: the input must be [N, C, H, W]");
  static_assert(SH >= 1 && SW >= 1, "typex::upsample_nearest: the scale factors must be at least 1");
  const auto& s = x.shape();
  const auto n = s.template get<0>();
  const auto c = s.template get<1>();
  const auto h = s.template get<2>();
  const auto w = s.template get<3>();
  const auto rows = typex::reshape(typex::expand(typex::unsqueeze<3>(x), reshape_to(n, c, h, fix<SH>{}, w)), reshape_to(n, c, h * fix<SH>{}, w));
  const auto hs = h * fix<SH>{};
  return typex::reshape(typex::expand(typex::unsqueeze<4>(rows), reshape_to(n, c, hs, w, fix<SW>{})), reshape_to(n, c, hs, w * fix<SW>{}));
}

// F.interpolate(x, size=(OH, OW), mode="bilinear", align_corners=AlignCorners) on [N, C, H, W]
// with static H and W: A_h x A_w^T, torch's weights.
template <index_t OH, index_t OW, bool AlignCorners, tensor_like X>
auto upsample_bilinear(const X& x) {
  static_assert(X::shape_type::rank == 4, "typex::upsample_bilinear: the input must be [N, C, H, W]");
  using H = typename X::shape_type::template dim_t<2>;
  using W = typename X::shape_type::template dim_t<3>;
  static_assert(is_static_dim_v<H> && is_static_dim_v<W>,
                "typex::upsample_bilinear: the input's H and W must be static (its weights are computed from them)");
  static_assert(is_floating_point(X::dtype_type::value), "typex::upsample_bilinear: the input must be floating-point");
  const auto ah = impl::bilinear_matrix<H::value, OH, AlignCorners>();
  const auto awt = typex::transpose<0, 1>(impl::bilinear_matrix<W::value, OW, AlignCorners>());
  return typex::matmul(ah, typex::matmul(x, awt));
}

// Grouped-query attention: each of k's and v's Hkv heads serves Hq / Hkv query heads (torch's
// enable_gqa=True): the keys and values repeated to Hq heads (k[:, :, None].expand(...).reshape(...),
// as Llama's repeat_kv), then the attention.
struct enable_gqa_t {};
inline constexpr enable_gqa_t enable_gqa{};

namespace impl {
template <index_t Hq, class K>
auto repeat_kv(const K& k) {
  static_assert(K::shape_type::rank == 4, "typex::scaled_dot_product_attention(enable_gqa, ...): key and value must be [B, H, S, E]");
  using Hkv = typename K::shape_type::template dim_t<1>;
  static_assert(is_static_dim_v<Hkv>, "typex::scaled_dot_product_attention(enable_gqa, ...): the key/value head count must be static");
  static_assert(Hkv::value >= 1 && Hq % Hkv::value == 0,
                "typex::scaled_dot_product_attention(enable_gqa, ...): the query's head count must be a multiple of the key's and value's");
  if constexpr (Hkv::value == Hq) {
    return k;
  } else {
    const auto& s = k.shape();
    const auto b = s.template get<0>();
    const auto n = s.template get<2>();
    const auto e = s.template get<3>();
    constexpr index_t g = Hq / Hkv::value;
    return typex::reshape(typex::expand(typex::unsqueeze<2>(k), reshape_to(b, Hkv{}, fix<g>{}, n, e)), reshape_to(b, fix<Hq>{}, n, e));
  }
}
}  // namespace impl

template <tensor_like Q, tensor_like K, tensor_like V, class M = std::nullptr_t>
auto scaled_dot_product_attention(enable_gqa_t, const Q& q, const K& k, const V& v, const M& mask = nullptr, attention_options options = {},
                                  const std::source_location& loc = std::source_location::current()) {
  static_assert(Q::shape_type::rank == 4, "typex::scaled_dot_product_attention(enable_gqa, ...): the query must be [B, Hq, L, E]");
  using Hq = typename Q::shape_type::template dim_t<1>;
  static_assert(is_static_dim_v<Hq>, "typex::scaled_dot_product_attention(enable_gqa, ...): the query's head count must be static");
  const auto kr = impl::repeat_kv<Hq::value>(k);
  const auto vr = impl::repeat_kv<Hq::value>(v);
  return typex::scaled_dot_product_attention(q, kr, vr, mask, options, loc);
}

namespace nn {
template <index_t L, index_t R, index_t T, index_t B, pad_mode Mode, fixed_string Name>
struct pad2d_module {
  BOOST_HANA_DEFINE_STRUCT(pad2d_module);
  double value = 0.0;  // (ConstantPad2d's)
  template <class X>
  auto operator()(const X& x, const std::source_location& loc = std::source_location::current()) const {
    const library_call site(loc);
    const module_scope scope(*this, x);
    return scope.returns(typex::pad<L, R, T, B>(x, Mode, value));
  }
};
// torch.nn.ZeroPad2d((left, right, top, bottom)) and its relatives
template <index_t L, index_t R = L, index_t T = L, index_t B = T>
using ZeroPad2d = pad2d_module<L, R, T, B, pad_mode::constant, "ZeroPad2d">;
template <index_t L, index_t R = L, index_t T = L, index_t B = T>
using ConstantPad2d = pad2d_module<L, R, T, B, pad_mode::constant, "ConstantPad2d">;
template <index_t L, index_t R = L, index_t T = L, index_t B = T>
using ReflectionPad2d = pad2d_module<L, R, T, B, pad_mode::reflect, "ReflectionPad2d">;
template <index_t L, index_t R = L, index_t T = L, index_t B = T>
using ReplicationPad2d = pad2d_module<L, R, T, B, pad_mode::replicate, "ReplicationPad2d">;

// torch.nn.Upsample(scale_factor=S) (mode="nearest", its default)
template <index_t SH, index_t SW = SH>
struct Upsample {
  BOOST_HANA_DEFINE_STRUCT(Upsample);
  template <class X>
  auto operator()(const X& x, const std::source_location& loc = std::source_location::current()) const {
    const library_call site(loc);
    const module_scope scope(*this, x);
    return scope.returns(typex::upsample_nearest<SH, SW>(x));
  }
};
// torch.nn.UpsamplingBilinear2d(scale_factor=S): bilinear with align_corners=True (static H, W)
template <index_t S>
struct UpsamplingBilinear2d {
  BOOST_HANA_DEFINE_STRUCT(UpsamplingBilinear2d);
  template <class X>
  auto operator()(const X& x, const std::source_location& loc = std::source_location::current()) const {
    const library_call site(loc);
    const module_scope scope(*this, x);
    using Sh = typename X::shape_type;
    return scope.returns(typex::upsample_bilinear<Sh::template dim_t<2>::value * S, Sh::template dim_t<3>::value * S, true>(x));
  }
};
}  // namespace nn

}  // namespace typex
