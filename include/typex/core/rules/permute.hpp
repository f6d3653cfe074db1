// typex/core/rules/permute.hpp — permute_shape and transpose_shape.
//
// permute_shape<P...>(s): P must be a permutation of the dims (negative indices allowed); anything
// else is a compile error naming the permutation. transpose_shape<D0, D1>(s) swaps two dims.
#pragma once

#include <typex/core/rules/broadcast.hpp>

namespace typex {

template <long long... P, class... D, fixed_string Op = "permute">
constexpr auto permute_shape(const shape<D...>& s, op_name_t<Op> = {}) {
  using S = shape<D...>;
  constexpr long long rank = S::rank;
  constexpr bool valid = [] {
    if (sizeof...(P) != static_cast<std::size_t>(rank)) return false;
    bool seen[sizeof...(P) + 1]{};
    const long long ps[] = {P..., 0};
    for (std::size_t i = 0; i < sizeof...(P); ++i) {
      const long long w = detail::wrap_dim(ps[i], rank);
      if (w < 0 || seen[w]) return false;
      seen[w] = true;
    }
    return true;
  }();
  if constexpr (!valid) {
    TYPEX_STATIC_FAIL(static_argument_error, [](auto& w) {
      detail::put_op(w, Op.view()); w.put(": ("); std::size_t i = 0;
      ((w.put(i++ ? ", " : ""), w.put_int(P)), ...);
      w.put(") is not a permutation of the dims of "); S::write_type(w);
      w.put("; name every dim from 0 to "); w.put_int(rank - 1); w.put(" exactly once");
    });
    return s;
  } else {
    return shape(s.template get<static_cast<std::size_t>(detail::wrap_dim(P, rank))>()...);
  }
}

template <long long D0, long long D1, class... D, fixed_string Op = "transpose">
constexpr auto transpose_shape(const shape<D...>& s, op_name_t<Op> = {}) {
  constexpr long long rank = sizeof...(D);
  constexpr std::size_t a = detail::checked_dim<Op, D0, rank>();
  constexpr std::size_t b = detail::checked_dim<Op, D1, rank>();
  if constexpr (detail::wrap_dim(D0, rank) < 0 || detail::wrap_dim(D1, rank) < 0) {
    return s;
  } else {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return shape(s.template get<(I == a ? b : I == b ? a : I)>()...);
    }(std::make_index_sequence<rank>{});
  }
}

}  // namespace typex
