// typex/core/rules/slice.hpp — slice_shape: x[start:end:step] along one dim, as PyTorch computes it.
//
// Negative bounds count from the end; bounds are clamped to [0, n]; step must be >= 1. With a static
// dim and static bounds (template arguments) the result is static; a named dim sliced from a static
// start to its end (x[2:] with seq >= 2) stays symbolic (seq - 2); otherwise it is a dyn holding the
// computed extent. With bounds that are dims (slice<0>(pos, 0_c, seq): x[start:end] where start and
// end are fix, symbolic or derived dims) the result is end - start, and the bounds must lie in the
// dim (start <= end <= n): facts that are compile errors when no value in the declared ranges fits,
// and otherwise checked and recorded for export (which decides them against the ranges: seq <= 512).
#pragma once

#include <typex/core/rules/broadcast.hpp>

namespace typex {

namespace detail {
constexpr index_t slice_length(index_t n, index_t start, index_t end, index_t step) noexcept {
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = start < 0 ? 0 : (start > n ? n : start);
  end = end < 0 ? 0 : (end > n ? n : end);
  return end <= start ? 0 : (end - start + step - 1) / step;
}

template <std::size_t At, class S>
constexpr auto replace_dim(const S& s, const auto& d) {
  return join(take<0, At>(s), shape(d), take<At + 1, S::rank - At - 1>(s));
}
}  // namespace detail

template <long long Dim, index_t Start = 0, index_t End = int_oo, index_t Step = 1, class... D,
          fixed_string Op = "slice">
constexpr auto slice_shape(const shape<D...>& s, op_name_t<Op> = {}) {
  using S = shape<D...>;
  constexpr long long rank = S::rank;
  constexpr std::size_t at = detail::checked_dim<Op, Dim, rank>();
  if constexpr (detail::wrap_dim(Dim, rank) < 0) {
    return s;
  } else if constexpr (Step < 1) {
    TYPEX_STATIC_FAIL(static_argument_error, [](auto& w) {
      detail::put_op(w, Op.view()); w.put(": step "); w.put_int(Step); w.put(" is not positive; slices need step >= 1");
    });
    return s;
  } else {
    using X = typename S::template dim_t<at>;
    if constexpr (is_static_dim_v<X>) {
      return detail::replace_dim<at>(s, fix<detail::slice_length(X::value, Start, End, Step)>{});
    } else if constexpr (is_named_dim_v<X> && Start >= 0 && End >= int_oo && Step == 1 && X::lo >= Start) {
      return detail::replace_dim<at>(s, s.template get<at>() - fix<Start>{});  // x[2:]: seq - 2
    } else {
      return detail::replace_dim<at>(s, dyn(detail::slice_length(s.template get<at>().get(), Start, End, Step)));
    }
  }
}

// Run-time bounds: the sliced dim becomes a dyn.
template <long long Dim, class... D, fixed_string Op = "slice">
constexpr auto slice_shape(const shape<D...>& s, index_t start, index_t end, index_t step = 1, op_name_t<Op> = {}) {
  constexpr long long rank = sizeof...(D);
  constexpr std::size_t at = detail::checked_dim<Op, Dim, rank>();
  if constexpr (detail::wrap_dim(Dim, rank) < 0) {
    return s;
  } else {
    if (step < 1) {
      detail::raise<argument_error>([step](auto& w) {
        detail::put_op(w, Op.view()); w.put(": step "); w.put_int(step); w.put(" is not positive; slices need step >= 1");
      });
    }
    return detail::replace_dim<at>(s, dyn(detail::slice_length(s.template get<at>().get(), start, end, step)));
  }
}

namespace detail {
// The fact `a >= b` of a slice's bounds: a compile error when no values in the ranges allow it,
// otherwise checked (shape_error) and recorded unless the ranges imply it.
template <fixed_string Op, std::size_t At, class A, class B, class Fail>
constexpr auto require_at_least(const A& a, const B& b, Fail&& fail) {
  if constexpr (A::hi < B::lo) {
    TYPEX_STATIC_FAIL(static_constraint_violation, [](auto& w) {
      put_op(w, Op.view()); w.put(": the slice bounds can never fit dim "); w.put_int(static_cast<long long>(At));
      w.put(": "); write_dim_with_range<A>(w); w.put(" < "); write_dim_with_range<B>(w);
      w.put(" for every value in the declared ranges; a slice [start, end) needs start <= end <= the dim's extent");
    });
  } else if constexpr (A::lo < B::hi) {  // (otherwise implied by the ranges)
    if (a.get() < b.get()) fail();
    if (!std::is_constant_evaluated()) record_requirement(Op.view(), relation::at_least, a, b, static_cast<int>(At));
  }
}
}  // namespace detail

// Bounds as dims: x[start:end] along Dim, with 0 <= start <= end <= n required.
template <long long Dim, class... D, class B, class E, fixed_string Op = "slice">
  requires(dim<B> && dim<E>)
constexpr auto slice_shape(const shape<D...>& s, const B& start, const E& end, op_name_t<Op> = {}) {
  using S = shape<D...>;
  constexpr std::size_t at = detail::checked_dim<Op, Dim, S::rank>();
  using X = typename S::template dim_t<at>;
  const X n = s.template get<at>();
  auto out_of_dim = [&] {
    detail::raise<shape_error>([&](auto& w) {
      detail::put_op(w, Op.view()); w.put(": slice ["); w.put_int(start.get()); w.put(", "); w.put_int(end.get());
      w.put(") of dim "); w.put_int(static_cast<long long>(at)); w.put(" of "); s.write_values(w);
      w.put(": the bounds must satisfy 0 <= start <= end <= "); w.put_int(n.get());
    });
  };
  detail::require_at_least<Op, at>(n, end, out_of_dim);
  detail::require_at_least<Op, at>(end, start, out_of_dim);
  return detail::replace_dim<at>(s, end - start);
}

}  // namespace typex
