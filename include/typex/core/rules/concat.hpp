// typex/core/rules/concat.hpp — concat_shapes<Dim>(a, b, ...): torch.cat's shape rule.
//
// Every shape must have the same rank; every dim but Dim must be equal across the shapes (a compile
// error when static and different, checked at run time otherwise); the result's Dim is the sum.
#pragma once

#include <typex/core/rules/broadcast.hpp>

namespace typex {

namespace detail {
template <fixed_string Op, long long Dim, class SA, class SB, std::size_t K>
constexpr auto fail_concat_static() {
  using A = typename SA::template dim_t<K>;
  using B = typename SB::template dim_t<K>;
  if constexpr (is_static_dim_v<A> && is_static_dim_v<B>) {
    TYPEX_STATIC_FAIL(static_shape_error, [](auto& w) {
      put_op(w, Op.view()); w.put(": shapes "); SA::write_type(w); w.put(" and "); SB::write_type(w);
      w.put(" differ at dim "); w.put_int(K); w.put(" ("); w.put_int(A::value); w.put(" vs "); w.put_int(B::value);
      w.put("); every dim except the concatenated dim "); w.put_int(Dim); w.put(" must be equal");
    });
  } else {
    TYPEX_STATIC_FAIL(static_constraint_violation, [](auto& w) {
      put_op(w, Op.view()); w.put(": shapes "); SA::write_type(w); w.put(" and "); SB::write_type(w);
      w.put(" can never agree at dim "); w.put_int(K); w.put(": "); write_dim_with_range<A>(w); w.put(" vs ");
      write_dim_with_range<B>(w); put_equal_fix<A, B>(w);
    });
  }
}

template <fixed_string Op, long long Dim, class... A, class... B>
constexpr auto concat2(const shape<A...>& a, const shape<B...>& b) {
  using SA = shape<A...>;
  using SB = shape<B...>;
  constexpr long long rank = SA::rank;
  if constexpr (SA::rank != SB::rank) {
    TYPEX_STATIC_FAIL(static_shape_error, [](auto& w) {
      put_op(w, Op.view()); w.put(": shapes "); SA::write_type(w); w.put(" and "); SB::write_type(w);
      w.put(" have different ranks ("); w.put_int(SA::rank); w.put(" vs "); w.put_int(SB::rank);
      w.put("); concatenated tensors must have the same rank");
    });
    return a;
  } else {
    constexpr std::size_t at = checked_dim<Op, Dim, rank>();
    if constexpr (wrap_dim(Dim, rank) < 0) {
      return a;
    } else {
      return [&]<std::size_t... I>(std::index_sequence<I...>) {
        constexpr std::array<verdict, SA::rank> vs{
            (I == at ? verdict::always
                     : equal_verdict<typename SA::template dim_t<I>, typename SB::template dim_t<I>>())...};
        constexpr std::size_t bad = find_verdict(vs, verdict::never);
        if constexpr (bad < SA::rank) fail_concat_static<Op, Dim, SA, SB, bad>();
        {
          auto one = [&]<std::size_t K>(std::integral_constant<std::size_t, K>) {
            const auto x = a.template get<K>();
            const auto y = b.template get<K>();
            if constexpr (K == at) {
              return x + y;
            } else if constexpr (vs[K] == verdict::never) {
              return dyn{};  // (after the error above: no later op checks it statically, so no cascade)
            } else {
              require_equal<vs[K]>(Op.view(), x, y, static_cast<int>(K), [&] {
                  raise<shape_error>([&](auto& w) {
                    put_op(w, Op.view()); w.put(": shapes "); a.write_values(w); w.put(" and "); b.write_values(w);
                    w.put(" differ at dim "); w.put_int(K); w.put("; every dim except the concatenated dim ");
                    w.put_int(Dim); w.put(" must be equal");
                  });
                });
              return unify(x, y);
            }
          };
          return shape(one(std::integral_constant<std::size_t, I>{})...);
        }
      }(std::make_index_sequence<SA::rank>{});
    }
  }
}
}  // namespace detail

template <long long Dim, class S0>
  requires shape_type<S0>
constexpr S0 concat_shapes(const S0& only) {
  constexpr long long rank = S0::rank;
  (void)detail::checked_dim<"cat", Dim, rank>();
  return only;
}

template <long long Dim, class S0, class S1, class... S>
  requires(shape_type<S0> && shape_type<S1> && (shape_type<S> && ...))
constexpr auto concat_shapes(const S0& a, const S1& b, const S&... rest) {
  if constexpr (sizeof...(S) == 0) return detail::concat2<"cat", Dim>(a, b);
  else return concat_shapes<Dim>(detail::concat2<"cat", Dim>(a, b), rest...);
}

}  // namespace typex
