// typex/core/rules/expand.hpp — expand_shape(s, target): torch.Tensor.expand's shape rule.
//
// The target has at least s's rank; s is aligned to its right. Each aligned dim of s must be 1
// (it is repeated) or equal to the target's; the target's extra leading dims are new. The result
// is the target. Static and wrong is a compile error naming the op, both shapes and the dim; a
// symbolic dim is checked on its value (and recorded, as broadcasting is).
#pragma once

#include <typex/core/rules/broadcast.hpp>

namespace typex {

namespace detail {
template <fixed_string Op, class SX, class ST>
[[noreturn]] TYPEX_NOINLINE TYPEX_COLD void raise_expand(const SX& x, const ST& t, std::size_t k) {
  raise<shape_error>([&](auto& w) {
    put_op(w, Op.view()); w.put(": cannot expand "); x.write_values(w); w.put(" to "); t.write_values(w);
    w.put(": at dim "); w.put_int(static_cast<long long>(k));
    w.put(" the input's extent is neither 1 nor the target's (expand only repeats dims of extent 1)");
  });
}
template <fixed_string Op, class SX, class ST, std::size_t K>
constexpr auto fail_expand_static() {
  TYPEX_STATIC_FAIL(static_shape_error, [](auto& w) {
    put_op(w, Op.view()); w.put(": cannot expand "); SX::write_type(w); w.put(" to "); ST::write_type(w);
    w.put(": at dim "); w.put_int(K); w.put(" the input's extent is neither 1 nor the target's ");
    w.put_int(ST::template dim_t<K>::value); w.put(" (expand only repeats dims of extent 1)");
  });
}
}  // namespace detail

template <class... X, class... T, fixed_string Op = "expand">
constexpr auto expand_shape(const shape<X...>& x, const shape<T...>& target, op_name_t<Op> = {}) {
  using SX = shape<X...>;
  using ST = shape<T...>;
  constexpr std::size_t R = ST::rank;
  if constexpr (SX::rank > R) {
    TYPEX_STATIC_FAIL(static_shape_error, [](auto& w) {
      detail::put_op(w, Op.view()); w.put(": cannot expand "); SX::write_type(w); w.put(" to "); ST::write_type(w);
      w.put(": the target has fewer dims than the input");
    });
    return target;
  } else {
    // the rule is broadcasting whose result must be the target (a target dim of 1 cannot take an
    // input dim of 3): broadcast first (its checks and messages), then compare with the target.
    const auto b = broadcast_shapes(x, target, op_name<Op>);
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      [[maybe_unused]] auto one = [&]<std::size_t K>(std::integral_constant<std::size_t, K>) {  // (0-d: unused)
        using B = typename std::remove_cvref_t<decltype(b)>::template dim_t<K>;
        using TD = typename ST::template dim_t<K>;
        if constexpr (is_static_dim_v<B> && is_static_dim_v<TD>) {
          if constexpr (B::value != TD::value) detail::fail_expand_static<Op, SX, ST, K>();
        } else if (b.template get<K>().get() != target.template get<K>().get()) {
          detail::raise_expand<Op>(x, target, K);
        }
      };
      (one(std::integral_constant<std::size_t, I>{}), ...);
    }(std::make_index_sequence<R>{});
    return target;
  }
}

}  // namespace typex
