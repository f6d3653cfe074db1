// typex/core/rules/scatter.hpp — scatter_source_shape(src, region): select_scatter's and
// slice_scatter's rule, the source has the region's shape exactly (as torch: no broadcasting).
//
// The region is the shape the matching select or slice of the destination has. Same rank; each
// dim equal: a compile error naming the op, both shapes and the dim when static and different (or
// when the declared ranges can never agree), checked at run time otherwise.
#pragma once

#include <typex/core/rules/broadcast.hpp>

namespace typex {

namespace detail {
template <fixed_string Op, class SS, class SR, std::size_t K>
constexpr void fail_scatter_static() {
  using A = typename SS::template dim_t<K>;
  using B = typename SR::template dim_t<K>;
  if constexpr (is_static_dim_v<A> && is_static_dim_v<B>) {
    TYPEX_STATIC_FAIL(static_shape_error, [](auto& w) {
      put_op(w, Op.view()); w.put(": the source "); SS::write_type(w); w.put(" does not have the shape of the region it is written to, ");
      SR::write_type(w); w.put(", at dim "); w.put_int(K); w.put(" ("); w.put_int(A::value); w.put(" vs "); w.put_int(B::value);
      w.put("); give a source of the region's shape (expand it first to broadcast)");
    });
  } else {
    TYPEX_STATIC_FAIL(static_constraint_violation, [](auto& w) {
      put_op(w, Op.view()); w.put(": the source "); SS::write_type(w); w.put(" and the region "); SR::write_type(w);
      w.put(" can never agree at dim "); w.put_int(K); w.put(": "); write_dim_with_range<A>(w); w.put(" vs ");
      write_dim_with_range<B>(w); put_equal_fix<A, B>(w);
    });
  }
}
}  // namespace detail

template <fixed_string Op, class... A, class... B>
constexpr void scatter_source_shape(const shape<A...>& src, const shape<B...>& region) {
  using SS = shape<A...>;
  using SR = shape<B...>;
  if constexpr (SS::rank != SR::rank) {
    TYPEX_STATIC_FAIL(static_shape_error, [](auto& w) {
      detail::put_op(w, Op.view()); w.put(": the source "); SS::write_type(w); w.put(" does not have the rank of the region it is written to, ");
      SR::write_type(w); w.put("; give a source of the region's shape");
    });
  } else {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      constexpr std::array<verdict, sizeof...(I)> vs{
          equal_verdict<typename SS::template dim_t<I>, typename SR::template dim_t<I>>()...};
      constexpr std::size_t bad = detail::find_verdict(vs, verdict::never);
      if constexpr (bad < SS::rank) {
        detail::fail_scatter_static<Op, SS, SR, bad>();
      } else {
        (detail::require_equal<vs[I]>(Op.view(), src.template get<I>(), region.template get<I>(), static_cast<int>(I), [&] {
           detail::raise<shape_error>([&](auto& w) {
             detail::put_op(w, Op.view()); w.put(": the source "); src.write_values(w); w.put(" does not have the shape of the region ");
             region.write_values(w); w.put(" at dim "); w.put_int(static_cast<long long>(I));
           });
         }), ...);
      }
    }(std::make_index_sequence<SS::rank>{});
  }
}

}  // namespace typex
