// typex/core/dim_rules.hpp — the two facts every shape rule is made of, for every mix of dim kinds.
//
//   equal:         a == b            (matmul inner dims, concat's other dims, reshape's element count)
//   broadcastable: a == b, a == 1, or b == 1
//
// For a pair of dim *types* each fact has a verdict known at compile time: always (static and
// fitting, or one side a static 1), same_symbol (the same named dim on both sides: holds by type,
// the values are still compared), never (static and not fitting, or declared ranges that exclude
// every fitting value), or runtime (decided by the values). Shape rules turn `never` into a compile
// error; require_equal / require_broadcastable do the run-time half for the other verdicts,
// recording `runtime` facts for the tracer.
#pragma once

#include <typex/core/dim.hpp>
#include <typex/core/requirement.hpp>

#include <array>

namespace typex {

// same_symbol: both sides are the same named non-static dim. Symbolically the fact holds (nothing
// to record), but two tensors built separately can still carry different values for one symbol,
// so the values are compared (a mismatch means inconsistent inputs, never a silent wrong answer).
enum class verdict : unsigned char { always, runtime, never, same_symbol };

namespace detail {
constexpr bool overlaps(index_t alo, index_t ahi, index_t blo, index_t bhi) noexcept {
  return alo <= bhi && blo <= ahi;
}
}  // namespace detail

template <dim A, dim B>
constexpr verdict equal_verdict() noexcept {
  if constexpr (is_static_dim_v<A> && is_static_dim_v<B>) {
    return A::value == B::value ? verdict::always : verdict::never;
  } else if constexpr (std::same_as<A, B> && is_named_dim_v<A>) {
    return verdict::same_symbol;
  } else {
    return detail::overlaps(A::lo, A::hi, B::lo, B::hi) ? verdict::runtime : verdict::never;
  }
}

template <dim A, dim B>
constexpr verdict broadcast_verdict() noexcept {
  if constexpr (std::same_as<A, fix<1>> || std::same_as<B, fix<1>>) {
    return verdict::always;
  } else if constexpr (is_static_dim_v<A> && is_static_dim_v<B>) {
    return A::value == B::value ? verdict::always : verdict::never;
  } else if constexpr (std::same_as<A, B> && is_named_dim_v<A>) {
    return verdict::same_symbol;
  } else {
    const bool can_be_one = (A::lo <= 1 && 1 <= A::hi) || (B::lo <= 1 && 1 <= B::hi);
    return (can_be_one || detail::overlaps(A::lo, A::hi, B::lo, B::hi)) ? verdict::runtime : verdict::never;
  }
}

// The dim that stands for both a and b once a == b is known: static beats symbolic beats derived
// beats dynamic (the result keeps the most informative type; ARCHITECTURE.md "Dims").
namespace detail {
template <class D>
constexpr int dim_rank_of() noexcept {
  if constexpr (is_static_dim_v<D>) return 0;
  else if constexpr (is_symbolic_dim_v<D>) return 1;
  else if constexpr (is_derived_dim_v<D>) return is_named_dim_v<D> ? 2 : 3;
  else return 4;
}
}  // namespace detail

template <dim A, dim B>
using unify_t = std::conditional_t<(detail::dim_rank_of<B>() < detail::dim_rank_of<A>()), B, A>;

template <dim A, dim B>
constexpr unify_t<A, B> unify(const A& a, const B& b) noexcept {
  if constexpr (std::same_as<unify_t<A, B>, A>) return a;
  else return b;
}

// The dim of broadcasting a with b.
template <dim A, dim B>
using broadcast_dim_t = std::conditional_t<
    std::same_as<A, fix<1>>, B,
    std::conditional_t<std::same_as<B, fix<1>> || is_static_dim_v<A> || (std::same_as<A, B> && is_named_dim_v<A>), A,
                       std::conditional_t<is_static_dim_v<B>, B, derived<dim_op::bcast, A, B>>>>;

template <dim A, dim B>
constexpr broadcast_dim_t<A, B> broadcast_dim(const A& a, const B& b) {
  using R = broadcast_dim_t<A, B>;
  if constexpr (std::same_as<R, derived<dim_op::bcast, A, B>>) return R(a, b);
  else if constexpr (std::same_as<R, A>) return a;
  else return b;
}

namespace detail {
// Run-time half of the checks, for each verdict: `runtime` compares the values and records the fact
// for the tracer; `same_symbol` compares the values only; `always` does nothing. `fail()` raises the
// rule's error. (`never` was a compile error already.)
template <verdict V, class A, class B, class Fail>
constexpr void require_equal(std::string_view op, const A& a, const B& b, int dim, Fail&& fail) {
  if constexpr (V == verdict::runtime || V == verdict::same_symbol) {
    if (a.get() != b.get() && (std::is_constant_evaluated() || !defer_to_export(op, relation::equal, a, b, dim))) fail();
  }
  if constexpr (V == verdict::runtime) {
    if (!std::is_constant_evaluated()) record_requirement(op, relation::equal, a, b, dim);
  }
}

template <verdict V, class A, class B, class Fail>
constexpr void require_broadcastable(std::string_view op, const A& a, const B& b, int dim, Fail&& fail) {
  if constexpr (V == verdict::runtime) {
    const index_t x = a.get(), y = b.get();
    if (x != y && x != 1 && y != 1 &&
        (std::is_constant_evaluated() || !defer_to_export(op, relation::broadcastable, a, b, dim)))
      fail();
    if (!std::is_constant_evaluated()) record_requirement(op, relation::broadcastable, a, b, dim);
  } else if constexpr (V == verdict::same_symbol) {
    if (a.get() != b.get()) fail();  // one symbol: the same value on both sides
  }
}

// First index holding `v`, or N.
template <std::size_t N>
constexpr std::size_t find_verdict(const std::array<verdict, N>& vs, verdict v) noexcept {
  for (std::size_t i = 0; i < N; ++i)
    if (vs[i] == v) return i;
  return N;
}
}  // namespace detail

}  // namespace typex
