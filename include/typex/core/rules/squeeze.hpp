// typex/core/rules/squeeze.hpp — unsqueeze_shape and squeeze_shape.
//
// unsqueeze_shape<D>(s) inserts a 1 at D (D in [-rank-1, rank], as in PyTorch).
// squeeze_shape<D>(s) removes dim D, which must be 1. PyTorch silently leaves a non-1 dim in place;
// typex refuses, because the result's rank would then depend on a run-time value: a static extent
// other than 1 is a compile error, a symbolic one is checked at run time (and a declared range
// without 1 is a compile error).
#pragma once

#include <typex/core/rules/broadcast.hpp>

namespace typex {

template <long long Dim, class... D, fixed_string Op = "unsqueeze">
constexpr auto unsqueeze_shape(const shape<D...>& s, op_name_t<Op> = {}) {
  constexpr long long rank = sizeof...(D);
  constexpr std::size_t at = detail::checked_dim<Op, Dim, rank + 1>();
  if constexpr (detail::wrap_dim(Dim, rank + 1) < 0) {
    return s;
  } else {
    return detail::join(detail::take<0, at>(s), shape(fix<1>{}), detail::take<at, rank - at>(s));
  }
}

namespace detail {
template <fixed_string Op, class S>
[[noreturn]] TYPEX_NOINLINE TYPEX_COLD void raise_squeeze(const S& s, std::size_t k) {
  raise<shape_error>([&](auto& w) {
    put_op(w, Op.view()); w.put(": dim "); w.put_int(static_cast<long long>(k)); w.put(" of ");
    s.write_values(w); w.put(" (type "); S::write_type(w); w.put(") has extent ");
    w.put_int(s.extent(k)); w.put(", not 1; only a dim of extent 1 can be squeezed");
  });
}
}  // namespace detail

template <long long Dim, class... D, fixed_string Op = "squeeze">
constexpr auto squeeze_shape(const shape<D...>& s, op_name_t<Op> = {}) {
  using S = shape<D...>;
  constexpr long long rank = S::rank;
  constexpr std::size_t at = detail::checked_dim<Op, Dim, rank>();
  if constexpr (detail::wrap_dim(Dim, rank) < 0) {
    return s;
  } else {
    using X = typename S::template dim_t<at>;
    constexpr verdict v = equal_verdict<X, fix<1>>();
    if constexpr (v == verdict::never) {
      if constexpr (is_static_dim_v<X>) {
        TYPEX_STATIC_FAIL(static_shape_error, [](auto& w) {
          detail::put_op(w, Op.view()); w.put(": dim "); w.put_int(at); w.put(" of "); S::write_type(w);
          w.put(" has extent "); w.put_int(X::value);
          w.put(", not 1; only a dim of extent 1 can be squeezed (PyTorch would silently do nothing: remove the call)");
        });
      } else {
        TYPEX_STATIC_FAIL(static_constraint_violation, [](auto& w) {
          detail::put_op(w, Op.view()); w.put(": dim "); w.put_int(at); w.put(" of "); S::write_type(w);
          w.put(" is "); detail::write_dim_with_range<X>(w);
          w.put(", which can never be 1; only a dim of extent 1 can be squeezed");
        });
      }
      // (the shape the user's next ops are written for: the dim removed, so no cascade)
      return detail::join(detail::take<0, at>(s), detail::take<at + 1, rank - at - 1>(s));
    } else {
      detail::require_equal<v>(Op.view(), s.template get<at>(), fix<1>{}, static_cast<int>(at),
                               [&] { detail::raise_squeeze<Op>(s, at); });
      return detail::join(detail::take<0, at>(s), detail::take<at + 1, rank - at - 1>(s));
    }
  }
}

}  // namespace typex
