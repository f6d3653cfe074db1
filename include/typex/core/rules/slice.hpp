// typex/core/rules/slice.hpp — slice_shape: x[start:end:step] along one dim, as PyTorch computes it.
//
// Negative bounds count from the end; bounds are clamped to [0, n]; step must be >= 1. With a static
// dim and static bounds (template arguments) the result is static; otherwise it is a dyn holding the
// computed extent (symbolic slice bounds are the dynamic-shapes issue's business).
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

}  // namespace typex
