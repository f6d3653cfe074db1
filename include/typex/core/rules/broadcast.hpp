// typex/core/rules/broadcast.hpp — broadcast_shapes: PyTorch's broadcasting, for every mix of dims.
//
// Shapes are aligned from the right; missing leading dims count as 1. Per aligned pair:
//   static vs static:     equal or one is 1, else a compile error naming the op, the shapes and the dim;
//   1 vs anything:        the other dim;
//   static N vs symbolic: the result is N; the symbol must be N or 1 at run time (checked, recorded),
//                         and a declared range holding neither is a compile error;
//   symbolic vs symbolic: the same named dim stays itself; two different ones give broadcast(a, b).
#pragma once

#include <typex/core/detail/shape_algebra.hpp>
#include <typex/core/dim_rules.hpp>
#include <typex/core/sentence.hpp>

namespace typex {

template <fixed_string Name>
struct op_name_t {
  static constexpr auto value = Name;
};
// The op a rule reports in its messages: broadcast_shapes(a, b, op_name<"add">).
template <fixed_string Name>
inline constexpr op_name_t<Name> op_name{};

namespace detail {
// The I-th dim of S once S is right-aligned into rank R (fix<1> in front).
template <class S, std::size_t R, std::size_t I, bool Missing = (I < R - S::rank)>
struct aligned_dim_impl {
  using type = fix<1>;
};
template <class S, std::size_t R, std::size_t I>
struct aligned_dim_impl<S, R, I, false> {
  using type = typename S::template dim_t<I - (R - S::rank)>;
};
template <class S, std::size_t R, std::size_t I>
using aligned_dim_t = typename aligned_dim_impl<S, R, I>::type;

template <class S, std::size_t R, std::size_t I>
constexpr auto aligned_dim(const S& s) {
  if constexpr (I < R - S::rank) return fix<1>{};
  else return s.template get<I - (R - S::rank)>();
}

template <fixed_string Op, class SA, class SB, std::size_t K>
constexpr auto fail_broadcast_static() {
  using A = aligned_dim_t<SA, (SA::rank > SB::rank ? SA::rank : SB::rank), K>;
  using B = aligned_dim_t<SB, (SA::rank > SB::rank ? SA::rank : SB::rank), K>;
  if constexpr (is_static_dim_v<A> && is_static_dim_v<B>) {
    TYPEX_STATIC_FAIL(static_shape_error, [](auto& w) {
      put_op(w, Op.view()); w.put(": shapes "); SA::write_type(w); w.put(" and "); SB::write_type(w);
      w.put(" are not broadcastable at dim "); w.put_int(K); w.put(" ("); w.put_int(A::value); w.put(" vs ");
      w.put_int(B::value); w.put("); aligned from the right, each pair of dims must be equal or one of them 1");
    });
  } else {
    TYPEX_STATIC_FAIL(static_constraint_violation, [](auto& w) {
      put_op(w, Op.view()); w.put(": shapes "); SA::write_type(w); w.put(" and "); SB::write_type(w);
      w.put(" can never broadcast at dim "); w.put_int(K); w.put(": ");
      write_dim_with_range<A>(w); w.put(" and "); write_dim_with_range<B>(w);
      w.put(" can be neither equal nor 1; widen the declared range so that it holds the other extent or 1");
    });
  }
}

template <fixed_string Op, class SA, class SB>
[[noreturn]] TYPEX_NOINLINE TYPEX_COLD void raise_broadcast(const SA& a, const SB& b, std::size_t k) {
  raise<shape_error>([&](auto& w) {
    put_op(w, Op.view()); w.put(": shapes "); a.write_values(w); w.put(" and "); b.write_values(w);
    w.put(" are not broadcastable at dim "); w.put_int(static_cast<long long>(k));
    w.put(" (types "); SA::write_type(w); w.put(" and "); SB::write_type(w);
    w.put("); aligned from the right, each pair of dims must be equal or one of them 1");
  });
}
}  // namespace detail

template <class... A, class... B, fixed_string Op = "broadcast">
constexpr auto broadcast_shapes(const shape<A...>& a, const shape<B...>& b, op_name_t<Op> = {}) {
  using SA = shape<A...>;
  using SB = shape<B...>;
  constexpr std::size_t R = SA::rank > SB::rank ? SA::rank : SB::rank;
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    constexpr std::array<verdict, R> vs{
        broadcast_verdict<detail::aligned_dim_t<SA, R, I>, detail::aligned_dim_t<SB, R, I>>()...};
    constexpr std::size_t bad = detail::find_verdict(vs, verdict::never);
    if constexpr (bad < R) detail::fail_broadcast_static<Op, SA, SB, bad>();
    [[maybe_unused]] auto one = [&]<std::size_t K>(std::integral_constant<std::size_t, K>) {
      const auto x = detail::aligned_dim<SA, R, K>(a);
      const auto y = detail::aligned_dim<SB, R, K>(b);
      if constexpr (vs[K] == verdict::never) {
        return dyn{};  // (after the error above: an extent no later op checks statically, so no cascade)
      } else {
        detail::require_broadcastable<vs[K]>(Op.view(), x, y, static_cast<int>(K),
                                             [&] { detail::raise_broadcast<Op>(a, b, K); });
        return broadcast_dim(x, y);
      }
    };
    return shape(one(std::integral_constant<std::size_t, I>{})...);
  }(std::make_index_sequence<R>{});
}

template <class SA, class SB>
using broadcast_shape_t = decltype(broadcast_shapes(std::declval<const SA&>(), std::declval<const SB&>()));

}  // namespace typex
