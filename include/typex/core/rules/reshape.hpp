// typex/core/rules/reshape.hpp — reshape_shape (and view): same elements, new extents.
//
//   reshape_shape(s, reshape_to(infer, fix<784>{}))      // x.reshape(-1, 784)
// The element count must stay the same. Both counts are split into a static factor and the product
// of the non-static dims: when the non-static parts are the same named dims (or both empty), the
// check is exact at compile time ([batch, 28, 28] -> [batch, 784] is fine, -> [batch, 780] is a
// compile error); otherwise it is checked at run time and recorded. At most one `infer` (PyTorch's
// -1) may appear; its dim is computed as exactly as the types allow (static, a named dim times a
// constant, or a derived quotient whose divisibility is checked at run time).
#pragma once

#include <typex/core/rules/broadcast.hpp>

namespace typex {

// PyTorch's -1 in a reshape target.
struct infer_dim {};
inline constexpr infer_dim infer{};

template <class... T>
struct reshape_target {
  static_assert(((dim<T> || std::same_as<T, infer_dim>) && ...),
                "typex::reshape_to: each target extent must be a dim (fix<N>{}, a symbolic or derived dim value) or "
                "typex::infer");
  shape<std::conditional_t<std::same_as<T, infer_dim>, fix<1>, T>...> dims;  // infer stands as 1 in the known part
};

template <class... T>
constexpr auto reshape_to(const T&... t) {
  auto as_dim = [](const auto& v) {
    if constexpr (std::same_as<std::remove_cvref_t<decltype(v)>, infer_dim>) return fix<1>{};
    else return v;
  };
  return reshape_target<T...>{shape(as_dim(t)...)};
}

namespace detail {
// A shape's element count as (static factor) * (product of its non-static dims, in order).
template <class S>
inline constexpr index_t static_factor_v = 1;
template <class... D>
inline constexpr index_t static_factor_v<shape<D...>> = (index_t{1} * ... * (is_static_dim_v<D> ? D{}.get() : 1));

template <class... D>
constexpr auto nonstatic_product(const shape<D...>& s) {
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    auto pick = [&]<std::size_t K>(std::integral_constant<std::size_t, K>) {
      using X = typename shape<D...>::template dim_t<K>;
      if constexpr (is_static_dim_v<X>) return fix<1>{};
      else return s.template get<K>();
    };
    return (fix<1>{} * ... * pick(std::integral_constant<std::size_t, I>{}));
  }(std::index_sequence_for<D...>{});
}

template <class S>
using nonstatic_product_t = decltype(nonstatic_product(std::declval<const S&>()));

// The non-static dims of src and target are the same symbols (so the check is exact by type), but
// tensors built separately may bind them differently: compare the values.
template <fixed_string Op, class Src, class Tgt>
constexpr void require_same_nonstatic(const Src& src, const Tgt& tgt) {
  const index_t a = nonstatic_product(src).get(), b = nonstatic_product(tgt).get();
  if (a != b) {
    raise<shape_error>([&](auto& w) {
      put_op(w, Op.view()); w.put(": cannot reshape "); src.write_values(w); w.put(" into "); tgt.write_values(w);
      w.put(": their symbolic dims "); Src::write_type(w); w.put(" and "); Tgt::write_type(w);
      w.put(" are bound to different values");
    });
  }
}

template <class W, class S>
constexpr void put_shape_and_count(W& w) {
  S::write_type(w);
  if constexpr (S::is_static) {
    w.put(" ("); w.put_int(S{}.numel()); w.put(" elements)");
  }
}
}  // namespace detail

template <class... S, class... T, fixed_string Op = "reshape">
constexpr auto reshape_shape(const shape<S...>& src, const reshape_target<T...>& target, op_name_t<Op> = {}) {
  using Src = shape<S...>;
  using Tgt = decltype(target.dims);
  constexpr std::size_t n_infer = (std::size_t{0} + ... + std::same_as<T, infer_dim>);
  constexpr std::size_t infer_at = [] {
    const bool is_inf[] = {std::same_as<T, infer_dim>..., false};
    for (std::size_t i = 0; i < sizeof...(T); ++i) if (is_inf[i]) return i;
    return sizeof...(T);
  }();
  constexpr index_t fs = detail::static_factor_v<Src>;
  constexpr index_t ft = detail::static_factor_v<Tgt>;
  using NS = detail::nonstatic_product_t<Src>;
  using NT = decltype(detail::nonstatic_product(Tgt{}));
  // The non-static parts are known equal when they are the same named product (or both empty).
  constexpr bool same_nonstatic = std::same_as<NS, NT> && is_named_dim_v<NS>;
  auto write_target = [](auto& w) {
    w.put('['); std::size_t i = 0;
    ((w.put(i++ ? ", " : ""), [&] { if constexpr (std::same_as<T, infer_dim>) w.put("-1"); else T::write_type(w, 0); }()), ...);
    w.put(']');
  };
  using WriteTarget = decltype(write_target);
  // After a static failure: the target with each -1 a run-time dim (no later op checks those
  // statically, so the mistake is one error and the next ops see the rank the user asked for).
  [[maybe_unused]] const auto target_after_error = [&] {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      [[maybe_unused]] auto one = [&]<std::size_t K>(std::integral_constant<std::size_t, K>) {
        if constexpr (std::same_as<std::remove_cvref_t<decltype(target.dims.template get<K>())>, infer_dim>) return dyn{};
        else return target.dims.template get<K>();
      };
      return shape(one(std::integral_constant<std::size_t, I>{})...);
    }(std::make_index_sequence<sizeof...(T)>{});
  };

  if constexpr (n_infer > 1) {
    TYPEX_STATIC_FAIL(static_argument_error, [](auto& w) {
      detail::put_op(w, Op.view()); w.put(": only one dim of the target "); WriteTarget{}(w);
      w.put(" can be inferred (-1)");
    });
    return target_after_error();
  } else if constexpr (n_infer == 0) {
    if constexpr (same_nonstatic && fs != ft) {
      TYPEX_STATIC_FAIL(static_shape_error, [](auto& w) {
        detail::put_op(w, Op.view()); w.put(": cannot reshape "); detail::put_shape_and_count<decltype(w), Src>(w);
        w.put(" into "); WriteTarget{}(w);
        if constexpr (Tgt::is_static) { w.put(" ("); w.put_int(detail::static_factor_v<Tgt>); w.put(" elements)"); }
        w.put("; the number of elements must stay the same");
      });
      return target_after_error();
    } else {
      // the non-static parts are the same symbols: their values must agree too
      if constexpr (same_nonstatic) detail::require_same_nonstatic<Op>(src, target.dims);
      if constexpr (!same_nonstatic) {
        const auto ns = detail::product(src);
        const auto nt = detail::product(target.dims);
        constexpr verdict v = equal_verdict<std::remove_cvref_t<decltype(ns)>, std::remove_cvref_t<decltype(nt)>>();
        if constexpr (v == verdict::never) {
          TYPEX_STATIC_FAIL(static_constraint_violation, [](auto& w) {
            detail::put_op(w, Op.view()); w.put(": cannot reshape "); Src::write_type(w); w.put(" into ");
            WriteTarget{}(w); w.put(" for any value in the declared ranges: ");
            detail::write_dim_with_range<decltype(detail::product(Src{}))>(w); w.put(" elements vs ");
            detail::write_dim_with_range<decltype(detail::product(Tgt{}))>(w);
          });
        } else {
          detail::require_equal<v>(Op.view(), ns, nt, -1, [&] {
            detail::raise<shape_error>([&](auto& w) {
              detail::put_op(w, Op.view()); w.put(": cannot reshape "); src.write_values(w); w.put(" (");
              w.put_int(ns.get()); w.put(" elements) into "); target.dims.write_values(w); w.put(" (");
              w.put_int(nt.get()); w.put(" elements); the number of elements must stay the same");
            });
          });
        }
      }
      return target.dims;
    }
  } else {
    // one inferred dim: its extent is numel(src) / (product of the other target dims)
    if constexpr (same_nonstatic && (ft == 0 || fs % ft != 0)) {
      TYPEX_STATIC_FAIL(static_shape_error, [](auto& w) {
        detail::put_op(w, Op.view()); w.put(": cannot reshape "); detail::put_shape_and_count<decltype(w), Src>(w);
        w.put(" into "); WriteTarget{}(w); w.put(": the static extents give ");
        w.put_int(detail::static_factor_v<Src>); w.put(" elements, which is not a multiple of ");
        w.put_int(detail::static_factor_v<Tgt>);
        w.put("; the element count must stay the same");
      });
      return target_after_error();
    } else {
      const auto inferred = [&] {
        if constexpr (same_nonstatic) {
          detail::require_same_nonstatic<Op>(src, target.dims);
          return fix<fs / ft>{};
        } else if constexpr (std::same_as<NT, fix<1>> && ft != 0 && fs % ft == 0) {
          return detail::nonstatic_product(src) * fix<fs / ft>{};
        } else {
          const auto ns = detail::product(src);
          const auto nt = detail::product(target.dims);
          if (nt.get() == 0 || ns.get() % nt.get() != 0) {
            detail::raise<shape_error>([&](auto& w) {
              detail::put_op(w, Op.view()); w.put(": cannot reshape "); src.write_values(w); w.put(" (");
              w.put_int(ns.get()); w.put(" elements) into "); WriteTarget{}(w); w.put(": ");
              w.put_int(ns.get()); w.put(" is not a multiple of "); w.put_int(nt.get());
            });
          }
          if (!std::is_constant_evaluated()) detail::record_requirement(Op.view(), relation::divisible, ns, nt, -1);
          return floordiv(ns, nt);
        }
      }();
      return [&]<std::size_t... I>(std::index_sequence<I...>) {
        auto one = [&]<std::size_t K>(std::integral_constant<std::size_t, K>) {
          if constexpr (K == infer_at) return inferred;
          else return target.dims.template get<K>();
        };
        return shape(one(std::integral_constant<std::size_t, I>{})...);
      }(std::make_index_sequence<sizeof...(T)>{});
    }
  }
}

// flatten_shape<Start, End>(s): dims [Start, End] become one (their product); a rank-0 shape becomes [1].
template <long long Start = 0, long long End = -1, class... D, fixed_string Op = "flatten">
constexpr auto flatten_shape(const shape<D...>& s, op_name_t<Op> = {}) {
  constexpr long long rank = sizeof...(D);
  if constexpr (rank == 0) {
    return shape(fix<1>{});
  } else {
    constexpr std::size_t a = detail::checked_dim<Op, Start, rank>();
    constexpr std::size_t b = detail::checked_dim<Op, End, rank>();
    if constexpr (detail::wrap_dim(Start, rank) < 0 || detail::wrap_dim(End, rank) < 0) {
      return s;
    } else if constexpr (a > b) {
      TYPEX_STATIC_FAIL(static_argument_error, [](auto& w) {
        detail::put_op(w, Op.view()); w.put(": start dim "); w.put_int(Start); w.put(" comes after end dim ");
        w.put_int(End); w.put(" in "); shape<D...>::write_type(w);
      });
      return s;
    } else {
      return detail::join(detail::take<0, a>(s), shape(detail::product(detail::take<a, b - a + 1>(s))),
                          detail::take<b + 1, rank - b - 1>(s));
    }
  }
}

}  // namespace typex
