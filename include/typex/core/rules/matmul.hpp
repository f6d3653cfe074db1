// typex/core/rules/matmul.hpp — matmul_shape: torch.matmul's shape rule.
//
//   [k] @ [k] -> []          [n, k] @ [k] -> [n]          [k] @ [k, m] -> [m]
//   [..., n, k] @ [..., k, m] -> [broadcast(...), n, m]   (batch dims broadcast)
// The inner extents must be equal: a compile error when both are static and differ (or when a
// symbolic dim's declared range excludes the other extent), otherwise checked at run time.
#pragma once

#include <typex/core/rules/broadcast.hpp>

namespace typex {

namespace detail {
// Whether lhs is an unflattened input whose dims after the first, all static, hold KB elements
// ([N, C, H, W] given to a linear of C*H*W in_features: a forgotten flatten).
template <class SA, class KB>
consteval bool unflattened_input() {
  if constexpr (SA::rank >= 3 && is_static_dim_v<KB>) {
    using T = decltype(take<1, SA::rank - 1>(SA{}));
    if constexpr (T::is_static) return static_numel_v<T> == KB::value;
  }
  return false;
}

template <fixed_string Op, class SA, class SB, class KA, class KB>
constexpr auto fail_matmul_static() {
  if constexpr (is_static_dim_v<KA> && is_static_dim_v<KB>) {
    TYPEX_STATIC_FAIL(static_shape_error, [](auto& w) {
      put_op(w, Op.view()); w.put(": inner extents differ (lhs "); SA::write_type(w); w.put(", rhs ");
      SB::write_type(w); w.put("): "); w.put_int(KA::value); w.put(" vs "); w.put_int(KB::value);
      if constexpr (unflattened_input<SA, KB>()) {
        w.put("; the dims of the input after the first hold "); w.put_int(KB::value);
        w.put(" elements: flatten them first (typex::flatten<1>(x), or nn::Flatten before this layer)");
      } else {
        w.put("; the last dim of lhs must equal the ");
        w.put(SB::rank == 1 ? "only" : "second-to-last"); w.put(" dim of rhs");
      }
    });
  } else {
    TYPEX_STATIC_FAIL(static_constraint_violation, [](auto& w) {
      put_op(w, Op.view()); w.put(": inner extents can never be equal (lhs "); SA::write_type(w); w.put(", rhs ");
      SB::write_type(w); w.put("): "); write_dim_with_range<KA>(w); w.put(" vs "); write_dim_with_range<KB>(w);
      put_equal_fix<KA, KB>(w);
    });
  }
}

template <fixed_string Op, class SA, class SB>
[[noreturn]] TYPEX_NOINLINE TYPEX_COLD void raise_matmul(const SA& a, const SB& b, index_t ka, index_t kb) {
  raise<shape_error>([&](auto& w) {
    put_op(w, Op.view()); w.put(": inner extents differ (lhs "); a.write_values(w); w.put(", rhs ");
    b.write_values(w); w.put("): "); w.put_int(ka); w.put(" vs "); w.put_int(kb); w.put(" (types ");
    SA::write_type(w); w.put(" and "); SB::write_type(w); w.put(')');
  });
}
}  // namespace detail

template <class... A, class... B, fixed_string Op = "matmul">
constexpr auto matmul_shape(const shape<A...>& a, const shape<B...>& b, op_name_t<Op> = {}) {
  using SA = shape<A...>;
  using SB = shape<B...>;
  constexpr std::size_t ra = SA::rank, rb = SB::rank;
  if constexpr (ra == 0 || rb == 0) {
    TYPEX_STATIC_FAIL(static_argument_error, [](auto& w) {
      detail::put_op(w, Op.view()); w.put(": both arguments need at least one dimension (lhs ");
      SA::write_type(w); w.put(", rhs "); SB::write_type(w); w.put("); use mul for scalars");
    });
    // (what mul would give: the other operand's shape; no later error follows from this one)
    if constexpr (ra == 0) return b;
    else return a;
  } else {
    using KA = typename SA::template dim_t<ra - 1>;
    using KB = typename SB::template dim_t<(rb == 1 ? 0 : rb - 2)>;
    constexpr verdict v = equal_verdict<KA, KB>();
    {
      const KA ka = a.template get<ra - 1>();
      const KB kb = b.template get<(rb == 1 ? 0 : rb - 2)>();
      // (after a static failure the result is computed as if the inner extents fitted: it does not
      // depend on them, so the mistake is one error, not one per later op)
      if constexpr (v == verdict::never) detail::fail_matmul_static<Op, SA, SB, KA, KB>();
      else detail::require_equal<v>(Op.view(), ka, kb, -1, [&] { detail::raise_matmul<Op>(a, b, ka.get(), kb.get()); });
      // rows of lhs and columns of rhs (absent for 1-d operands)
      constexpr std::size_t ba = ra >= 2 ? ra - 2 : 0, bb = rb >= 2 ? rb - 2 : 0;
      const auto rows = [&] {
        if constexpr (ra >= 2) return detail::take<ra - 2, 1>(a);
        else return shape<>{};
      }();
      // (after a mismatch, which operand is wrong is unknown — x @ W without W's transpose — so
      // the columns become a run-time dim that no later op checks statically; linear_op puts its
      // weight's output width back)
      const auto cols = [&] {
        if constexpr (rb < 2) return shape<>{};
        else if constexpr (v == verdict::never) return shape(dyn{});
        else return detail::take<rb - 1, 1>(b);
      }();
      if constexpr (v == verdict::never && detail::unflattened_input<SA, KB>()) {
        return detail::join(detail::take<0, 1>(a), cols);  // (a forgotten flatten: the shape meant)
      } else {
        const auto batch = broadcast_shapes(detail::take<0, ba>(a), detail::take<0, bb>(b), op_name<Op>);
        return detail::join(batch, rows, cols);
      }
    }
  }
}

template <class SA, class SB>
using matmul_shape_t = decltype(matmul_shape(std::declval<const SA&>(), std::declval<const SB&>()));

}  // namespace typex
