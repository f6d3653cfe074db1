// typex/core/rules/reduce.hpp — reduce_shape: the result of reducing over some dims (sum, mean, amax, ...).
//
// reduce_shape<KeepDim, Dims...>(s): Dims may be negative (PyTorch's wrap_dim); no Dims means every
// dim. Reduced dims are removed, or kept as 1 with KeepDim. A dim past the rank, or one named twice,
// is a compile error.
#pragma once

#include <typex/core/rules/broadcast.hpp>

namespace typex {

namespace detail {
template <std::size_t Rank, long long... Dims>
constexpr std::array<bool, Rank> reduced_mask() {
  std::array<bool, Rank> m{};
  if constexpr (sizeof...(Dims) == 0) {
    for (auto& b : m) b = true;
  } else {
    ((m[static_cast<std::size_t>(wrap_dim(Dims, Rank))] = true), ...);
  }
  return m;
}

template <long long... Dims>
constexpr bool has_duplicate_dims([[maybe_unused]] long long rank) {
  const long long ds[] = {wrap_dim(Dims, rank)..., rank};
  for (std::size_t i = 0; i < sizeof...(Dims); ++i)
    for (std::size_t j = i + 1; j < sizeof...(Dims); ++j)
      if (ds[i] == ds[j]) return true;
  return false;
}
}  // namespace detail

template <bool KeepDim, long long... Dims, class... D, fixed_string Op = "reduce">
constexpr auto reduce_shape(const shape<D...>& s, op_name_t<Op> = {}) {
  using S = shape<D...>;
  constexpr long long rank = S::rank;
  constexpr long long bad_at = [] {
    const long long ds[] = {Dims..., 0};
    for (std::size_t i = 0; i < sizeof...(Dims); ++i)
      if (detail::wrap_dim(ds[i], rank) < 0) return static_cast<long long>(i);
    return -1LL;  // none
  }();
  if constexpr (bad_at >= 0) {
    constexpr long long ds[] = {Dims..., 0};
    detail::fail_dim_out_of_range<Op, ds[bad_at], rank>();
    return s;
  } else if constexpr (sizeof...(Dims) > 1 && detail::has_duplicate_dims<Dims...>(rank)) {
    TYPEX_STATIC_FAIL(static_argument_error, [](auto& w) {
      detail::put_op(w, Op.view()); w.put(": a dim appears more than once in the reduced dims of ");
      S::write_type(w); w.put("; name each dim once");
    });
    return s;
  } else {
    constexpr auto mask = detail::reduced_mask<S::rank, Dims...>();
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      auto one = [&]<std::size_t K>(std::integral_constant<std::size_t, K>) {
        if constexpr (!mask[K]) return shape(s.template get<K>());
        else if constexpr (KeepDim) return shape(fix<1>{});
        else return shape<>{};
      };
      return detail::join(shape<>{}, shape<>{}, one(std::integral_constant<std::size_t, I>{})...);
    }(std::make_index_sequence<S::rank>{});
  }
}

}  // namespace typex
