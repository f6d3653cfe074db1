// typex/core/detail/shape_algebra.hpp — slicing and joining shapes, dim-index normalization.
// Private to the core layer's shape rules.
#pragma once

#include <typex/core/shape.hpp>
#include <typex/core/sentence.hpp>

#include <cstddef>
#include <utility>

namespace typex::detail {

// The sub-shape [Start, Start + Len).
template <std::size_t Start, std::size_t Len, class S>
constexpr auto take(const S& s) {
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return shape<typename S::template dim_t<Start + I>...>(s.template get<Start + I>()...);
  }(std::make_index_sequence<Len>{});
}

template <class... A, class... B>
constexpr auto join(const shape<A...>& a, const shape<B...>& b) {
  return [&]<std::size_t... I, std::size_t... J>(std::index_sequence<I...>, std::index_sequence<J...>) {
    return shape<A..., B...>(a.template get<I>()..., b.template get<J>()...);
  }(std::index_sequence_for<A...>{}, std::index_sequence_for<B...>{});
}

template <class A, class B, class... Rest>
constexpr auto join(const A& a, const B& b, const Rest&... rest) {
  if constexpr (sizeof...(Rest) == 0) return join(a, b);
  else return join(join(a, b), rest...);
}

// Product of all dims of s (fix<1> for rank 0), with dim arithmetic: static stays static.
template <class S>
constexpr auto product(const S& s) {
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return (fix<1>{} * ... * s.template get<I>());
  }(std::make_index_sequence<S::rank>{});
}

// Normalize a possibly negative dim index against a rank (PyTorch's wrap_dim), as a constant.
// Returns -1 when out of range; the rule turns that into a static_argument_error.
constexpr long long wrap_dim(long long d, long long rank) noexcept {
  const long long w = d < 0 ? d + rank : d;
  return (w < 0 || w >= rank) ? -1 : w;
}

template <class W>
constexpr void put_op(W& w, std::string_view op) {
  w.put("typex::");
  w.put(op);
}

// "784", "batch (declared in [2, 64])", "2*seq (in [2, 1024])": a dim and what is known of it.
template <class D, class W>
constexpr void write_dim_with_range(W& w) {
  if constexpr (is_static_dim_v<D>) {
    w.put_int(D::value);
  } else {
    D::write_type(w, 0);
    w.put(is_symbolic_dim_v<D> ? " (declared in [" : " (in [");
    w.put_int(D::lo); w.put(", "); put_bound(w, D::hi); w.put("])");
  }
}

// The fix for two dims that must be equal but whose declared ranges exclude it. When one is static
// N, N is the only value that could ever work: declare the symbolic one fix<N> (widening its range
// to hold N would still leave N the only value that runs); otherwise widen a range.
template <class A, class B, class W>
constexpr void put_equal_fix(W& w) {
  if constexpr (is_static_dim_v<A> != is_static_dim_v<B>) {
    using N = std::conditional_t<is_static_dim_v<A>, A, B>;
    using S = std::conditional_t<is_static_dim_v<A>, B, A>;
    w.put("; the only extent that fits is "); w.put_int(N::value); w.put(": declare ");
    if constexpr (is_symbolic_dim_v<S>) { S::write_type(w, 0); w.put(" as "); }
    else w.put("that dim ");
    w.put("typex::fix<"); w.put_int(N::value); w.put("> (a range holding only "); w.put_int(N::value);
    w.put(" says the same at run time)");
  } else {
    w.put("; widen the declared range of the symbolic dim so that the two can be equal");
  }
}

// "typex::<op>: dim <d> is out of range for a tensor of rank <r> (valid: [-r, r-1])".
template <fixed_string Op, long long D, long long Rank>
constexpr auto fail_dim_out_of_range() {
  TYPEX_STATIC_FAIL(static_argument_error, [](auto& w) {
    put_op(w, Op.view());
    w.put(": dim "); w.put_int(D); w.put(" is out of range for a tensor of rank "); w.put_int(Rank);
    w.put(" (valid dims: "); w.put_int(-Rank); w.put(" to "); w.put_int(Rank - 1); w.put(')');
  });
}

// wrap_dim that is a compile error when out of range.
template <fixed_string Op, long long D, long long Rank>
constexpr std::size_t checked_dim() {
  constexpr long long w = wrap_dim(D, Rank);
  if constexpr (w < 0) {
    fail_dim_out_of_range<Op, D, Rank>();
    return 0;
  } else {
    return static_cast<std::size_t>(w);
  }
}

}  // namespace typex::detail
