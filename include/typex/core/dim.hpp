// typex/core/dim.hpp — the four kinds of dim, and arithmetic on them.
//
// The type says what kind of dim it is (ARCHITECTURE.md, "Dims"):
//   fix<N>                 a static extent: an empty type carrying N (like CuTe's C<N>);
//   sym<"batch", 1, 1024>  a named symbolic dim: static identity and declared range, run-time value
//                          (the C++ twin of torch.export.Dim("batch", min=1, max=1024));
//   dyn                    an anonymous dynamic dim: run-time value, range [0, int_oo];
//   derived<op, A, B>      a dim computed from others (2*seq, seq+1, (h+2)//2, max(a, b)): its
//                          range follows from its operands' by interval arithmetic.
// Every non-static dim holds exactly one index_t; static ones hold nothing.
//
// Arithmetic (`+ - * floordiv ceildiv max`) on two static dims stays static; otherwise it gives a
// derived dim. Values are checked where they enter: constructing a sym outside its range throws
// typex::constraint_violation (and is a compile error in a constant expression).
#pragma once

#include <typex/core/error.hpp>
#include <typex/core/fixed_string.hpp>

#include <concepts>
#include <cstdint>
#include <type_traits>

namespace typex {

using index_t = std::int64_t;

// "No upper bound" (torch.export: int_oo). Arithmetic on ranges saturates here.
inline constexpr index_t int_oo = index_t{1} << 62;

namespace detail {
constexpr index_t sat(index_t v) noexcept { return v >= int_oo ? int_oo : (v <= -int_oo ? -int_oo : v); }
constexpr index_t sat_add(index_t a, index_t b) noexcept {
  if (a >= int_oo || b >= int_oo) return int_oo;
  return sat(a + b);
}
constexpr index_t sat_sub(index_t a, index_t b) noexcept {
  if (a >= int_oo) return int_oo;
  if (b >= int_oo) return -int_oo;
  return sat(a - b);
}
constexpr index_t sat_mul(index_t a, index_t b) noexcept {
  if (a == 0 || b == 0) return 0;
  if (a >= int_oo || b >= int_oo) return int_oo;
  if (a > int_oo / b) return int_oo;
  return a * b;
}
constexpr index_t floordiv(index_t a, index_t b) noexcept {
  index_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
constexpr index_t ceildiv(index_t a, index_t b) noexcept { return -floordiv(-a, b); }
constexpr index_t max_of(index_t a, index_t b) noexcept { return a < b ? b : a; }
constexpr index_t min_of(index_t a, index_t b) noexcept { return a < b ? a : b; }

template <class W>
constexpr void put_bound(W& w, index_t v) {
  if (v >= int_oo) w.put("int_oo");
  else w.put_int(v);
}
}  // namespace detail

// ---------------------------------------------------------------------------------------------
// static extent
template <index_t N>
struct fix {
  static_assert(N >= 0, "typex::fix<N>: an extent cannot be negative");
  static constexpr index_t value = N;
  static constexpr index_t lo = N;
  static constexpr index_t hi = N;

  constexpr fix() noexcept = default;
  static constexpr index_t get() noexcept { return N; }

  template <class W>
  static constexpr void write_type(W& w, int = 0) { w.put_int(N); }
};

// ---------------------------------------------------------------------------------------------
// named symbolic dim
template <fixed_string Name, index_t Min = 0, index_t Max = int_oo>
struct sym {
  static_assert(Name.size() > 0, "typex::sym: a symbolic dim needs a name, e.g. typex::sym<\"batch\", 1, 1024>");
  static_assert(Min >= 0, "typex::sym: the declared minimum of a symbolic dim cannot be negative");
  static_assert(Min <= Max, "typex::sym: the declared range is empty (min > max)");
  static constexpr auto name = Name;
  static constexpr index_t lo = Min;
  static constexpr index_t hi = Max;

  index_t value = Min;

  constexpr sym() noexcept = default;
  // Checked: a value outside [Min, Max] throws typex::constraint_violation.
  constexpr explicit sym(index_t v) : value(v) {
    if (v < Min || v > Max) out_of_range(v);
  }
  constexpr index_t get() const noexcept { return value; }

  template <class W>
  static constexpr void write_type(W& w, int = 0) { w.put(Name.view()); }
  template <class W>
  static constexpr void write_range(W& w) {
    w.put('['); w.put_int(Min); w.put(", "); detail::put_bound(w, Max); w.put(']');
  }

 private:
  [[noreturn]] static void out_of_range(index_t v) {
    detail::raise<constraint_violation>([v](auto& w) {
      w.put("typex: symbolic dim '"); w.put(Name.view()); w.put("' was given ");
      w.put_int(v); w.put(", outside its declared range "); write_range(w);
      w.put("; pass a value in range, or widen the declaration typex::sym<\"");
      w.put(Name.view()); w.put("\", min, max>");
    });
  }
};

// ---------------------------------------------------------------------------------------------
// anonymous dynamic dim
struct dyn {
  static constexpr index_t lo = 0;
  static constexpr index_t hi = int_oo;

  index_t value = 0;

  constexpr dyn() noexcept = default;
  constexpr explicit dyn(index_t v) : value(v) {
    if (v < 0) negative(v);
  }
  constexpr index_t get() const noexcept { return value; }

  template <class W>
  static constexpr void write_type(W& w, int = 0) { w.put('?'); }

 private:
  [[noreturn]] static void negative(index_t v) {
    detail::raise<argument_error>([v](auto& w) { w.put("typex::dyn: an extent cannot be negative, got "); w.put_int(v); });
  }
};

// ---------------------------------------------------------------------------------------------
// derived dim
// bcast is the extent of broadcasting a with b: (a == 1 ? b : a), valid when a == b or either is 1.
enum class dim_op : unsigned char { add, sub, mul, floordiv, ceildiv, max, bcast };

template <dim_op Op, class A, class B>
struct derived;

namespace detail {
template <class T> struct is_fix : std::false_type {};
template <index_t N> struct is_fix<fix<N>> : std::true_type {};
template <class T> struct is_sym : std::false_type {};
template <fixed_string S, index_t L, index_t H> struct is_sym<sym<S, L, H>> : std::true_type {};
template <class T> struct is_derived : std::false_type {};
template <dim_op O, class A, class B> struct is_derived<derived<O, A, B>> : std::true_type {};
}  // namespace detail

// A dim type: one of fix, sym, dyn, derived.
template <class D>
concept dim = detail::is_fix<D>::value || detail::is_sym<D>::value || std::same_as<D, dyn> ||
              detail::is_derived<D>::value;

// A dim compares with an integer by its value (`y.shape().get<1>() == 10`; `10 == d` by C++20's
// rewriting). Dims with dims: compare their get().
template <class D, std::integral I>
  requires dim<D>
constexpr bool operator==(const D& d, I v) noexcept {
  return d.get() == static_cast<index_t>(v);
}

// The type says whether a dim is static: static dims are empty (CuTe: is_static is is_empty).
template <class D>
inline constexpr bool is_static_dim_v = detail::is_fix<D>::value;

template <class D>
inline constexpr bool is_symbolic_dim_v = detail::is_sym<D>::value;

template <class D>
inline constexpr bool is_dynamic_dim_v = std::same_as<D, dyn>;

template <class D>
inline constexpr bool is_derived_dim_v = detail::is_derived<D>::value;

// A dim is "named" when two values of its type are provably equal: static, symbolic, or derived
// from named dims only. Two anonymous dyn dims say nothing about each other.
template <class D>
inline constexpr bool is_named_dim_v = !is_dynamic_dim_v<D>;
template <dim_op O, class A, class B>
inline constexpr bool is_named_dim_v<derived<O, A, B>> = is_named_dim_v<A> && is_named_dim_v<B>;

namespace detail {
constexpr int precedence(dim_op op) noexcept {
  switch (op) {
    case dim_op::add: case dim_op::sub: return 1;
    case dim_op::mul: case dim_op::floordiv: case dim_op::ceildiv: return 2;
    case dim_op::max: case dim_op::bcast: return 3;
  }
  return 0;
}

// Writes `lhs op rhs` with the parentheses precedence needs; write_lhs/write_rhs(prec) write the
// operands. Shared by derived dims (types) and the IR's symbolic expressions (data).
template <class W, class L, class R>
constexpr void write_dim_op(W& w, dim_op op, int parent_prec, L&& write_lhs, R&& write_rhs) {
  const int p = precedence(op);
  if (op == dim_op::max || op == dim_op::bcast) {
    w.put(op == dim_op::max ? "max(" : "broadcast(");
    write_lhs(0);
    w.put(", ");
    write_rhs(0);
    w.put(')');
    return;
  }
  const bool parens = p < parent_prec || (op != dim_op::add && op != dim_op::mul && p == parent_prec);
  if (parens) w.put('(');
  write_lhs(p);
  switch (op) {
    case dim_op::add: w.put(" + "); break;
    case dim_op::sub: w.put(" - "); break;
    case dim_op::mul: w.put('*'); break;
    case dim_op::floordiv: w.put("//"); break;
    case dim_op::ceildiv: w.put(" ceildiv "); break;
    default: break;
  }
  write_rhs(p + 1);
  if (parens) w.put(')');
}

// One step of a derived dim's value. +, - and * saturate at +-int_oo instead of wrapping (extents
// come from users: 2*seq with seq = 2^62 must not become negative); a value at int_oo is rejected
// where a derived dim is made (derived(v)) and by the size checks (core/sizes.hpp).
constexpr index_t apply(dim_op op, index_t a, index_t b) noexcept {
  index_t r = 0;
  switch (op) {
    case dim_op::add: return __builtin_add_overflow(a, b, &r) ? (a > 0 ? int_oo : -int_oo) : sat(r);
    case dim_op::sub: return __builtin_sub_overflow(a, b, &r) ? (a > 0 ? int_oo : -int_oo) : sat(r);
    case dim_op::mul: return __builtin_mul_overflow(a, b, &r) ? ((a < 0) != (b < 0) ? -int_oo : int_oo) : sat(r);
    case dim_op::floordiv: return floordiv(a, b);
    case dim_op::ceildiv: return ceildiv(a, b);
    case dim_op::max: return max_of(a, b);
    case dim_op::bcast: return a == 1 ? b : a;
  }
  return 0;
}

// Interval arithmetic on [lo, hi] (extents are >= 0, divisors >= 1 where used).
struct interval { index_t lo, hi; };
constexpr interval apply_range(dim_op op, interval a, interval b) noexcept {
  switch (op) {
    case dim_op::add: return {sat_add(a.lo, b.lo), sat_add(a.hi, b.hi)};
    case dim_op::sub: return {max_of(0, sat_sub(a.lo, b.hi)), max_of(0, sat_sub(a.hi, b.lo))};
    case dim_op::mul: return {sat_mul(a.lo, b.lo), sat_mul(a.hi, b.hi)};
    case dim_op::floordiv:
      return {b.hi >= int_oo ? 0 : floordiv(a.lo, b.hi), a.hi >= int_oo ? int_oo : floordiv(a.hi, max_of(b.lo, 1))};
    case dim_op::ceildiv:
      return {b.hi >= int_oo ? 0 : ceildiv(a.lo, b.hi), a.hi >= int_oo ? int_oo : ceildiv(a.hi, max_of(b.lo, 1))};
    case dim_op::max: return {max_of(a.lo, b.lo), max_of(a.hi, b.hi)};
    case dim_op::bcast: return {min_of(a.lo, b.lo), max_of(a.hi, b.hi)};
  }
  return {0, int_oo};
}
}  // namespace detail

template <dim_op Op, class A, class B>
struct derived {
  static_assert(dim<A> && dim<B>, "typex::derived: operands must be dims (fix, sym, dyn or derived)");
  static constexpr detail::interval range_ = detail::apply_range(Op, {A::lo, A::hi}, {B::lo, B::hi});
  static constexpr index_t lo = range_.lo;
  static constexpr index_t hi = range_.hi;
  static constexpr dim_op op = Op;
  using lhs_type = A;
  using rhs_type = B;

  index_t value = 0;
  // The left operand's value, when it is recoverable from ours (x + c, x - c with a static c).
  constexpr A lhs_value() const requires(is_static_dim_v<B> && (Op == dim_op::add || Op == dim_op::sub)) {
    if constexpr (is_static_dim_v<A>) return A{};
    else return A(Op == dim_op::add ? value - B::value : value + B::value);
  }

  constexpr derived() noexcept = default;
  constexpr derived(const A& a, const B& b) : derived(detail::apply(Op, a.get(), b.get())) {}
  // Checked: a derived extent must be >= 0 (e.g. h - k + 1 for a kernel larger than the input).
  constexpr explicit derived(index_t v) : value(v) {
    if (v < 0 || v >= int_oo) out_of_range(v);
  }
  constexpr index_t get() const noexcept { return value; }

  // Prints like torch's sympy output: 2*seq, seq + 1, (h + 2)//2, max(a, b).
  template <class W>
  static constexpr void write_type(W& w, int parent_prec = 0) {
    detail::write_dim_op(w, Op, parent_prec, [&](int p) { A::write_type(w, p); }, [&](int p) { B::write_type(w, p); });
  }

 private:
  [[noreturn]] static void out_of_range(index_t v) {
    detail::raise<shape_error>([v](auto& w) {
      w.put("typex: derived dim "); write_type(w);
      if (v >= int_oo) {
        w.put(" overflows: its value reaches 2^62, the largest extent");
      } else {
        w.put(" evaluates to "); w.put_int(v); w.put(", and an extent cannot be negative");
      }
    });
  }
};

// ---------------------------------------------------------------------------------------------
// arithmetic: static op static stays static; identities fold (x*1, x+0, x//1); otherwise derived.
namespace detail {
template <dim_op Op, class A, class B>
constexpr auto fold_constant(const A& a, const B& b);
template <dim_op Op, class A, class B>
constexpr auto combine(const A& a, const B& b) {
  if constexpr (is_static_dim_v<A> && is_static_dim_v<B>) {
    if constexpr ((Op == dim_op::floordiv || Op == dim_op::ceildiv) && B::value == 0) {
      static_assert(B::value != 0, "typex: dim division by a static zero");
      return a;
    } else {
      return fix<apply(Op, A::value, B::value)>{};
    }
  } else if constexpr ((Op == dim_op::mul || Op == dim_op::floordiv || Op == dim_op::ceildiv) &&
                       std::same_as<B, fix<1>>) {
    return a;
  } else if constexpr (Op == dim_op::mul && std::same_as<A, fix<1>>) {
    return b;
  } else if constexpr ((Op == dim_op::add || Op == dim_op::sub) && std::same_as<B, fix<0>>) {
    return a;
  } else if constexpr (Op == dim_op::add && std::same_as<A, fix<0>>) {
    return b;
  } else if constexpr (Op == dim_op::max && std::same_as<A, B> && is_named_dim_v<A>) {
    return a;
  } else if constexpr (Op == dim_op::add && std::same_as<A, B> && is_named_dim_v<A> && !is_derived<A>::value) {
    return derived<dim_op::mul, fix<2>, A>(fix<2>{}, a);  // seq + seq -> 2*seq
  } else if constexpr ((Op == dim_op::add || Op == dim_op::sub) && is_static_dim_v<B> && is_derived<A>::value) {
    // (x + c1) + c2 -> x + (c1 + c2), and the like, so that conv arithmetic prints as (h - 1)//2 + 1.
    return fold_constant<Op>(a, b);
  } else {
    if constexpr (Op == dim_op::floordiv || Op == dim_op::ceildiv) {
      if (b.get() <= 0) {
        raise<argument_error>([d = b.get()](auto& w) {
          w.put("typex: dim division by "); w.put_int(d); w.put("; a divisor must be >= 1");
        });
      }
    }
    return derived<Op, A, B>(a, b);
  }
}

template <dim_op Op, class A, class B>
constexpr auto fold_constant(const A& a, const B& b) {
  using L = typename A::lhs_type;
  using R = typename A::rhs_type;
  constexpr dim_op inner = A::op;
  if constexpr ((inner == dim_op::add || inner == dim_op::sub) && is_static_dim_v<R>) {
    constexpr index_t c = (inner == dim_op::add ? R::value : -R::value) + (Op == dim_op::add ? B::value : -B::value);
    const L x = a.lhs_value();
    if constexpr (c == 0) return x;
    else if constexpr (c > 0) return combine<dim_op::add>(x, fix<c>{});
    else return combine<dim_op::sub>(x, fix<-c>{});
  } else {
    return derived<Op, A, B>(a, b);
  }
}
}  // namespace detail

template <class A, class B> requires(dim<A> && dim<B>)
constexpr auto operator+(const A& a, const B& b) { return detail::combine<dim_op::add>(a, b); }
template <class A, class B> requires(dim<A> && dim<B>)
constexpr auto operator-(const A& a, const B& b) { return detail::combine<dim_op::sub>(a, b); }
template <class A, class B> requires(dim<A> && dim<B>)
constexpr auto operator*(const A& a, const B& b) { return detail::combine<dim_op::mul>(a, b); }

template <class A, class B> requires(dim<A> && dim<B>)
constexpr auto floordiv(const A& a, const B& b) { return detail::combine<dim_op::floordiv>(a, b); }
template <class A, class B> requires(dim<A> && dim<B>)
constexpr auto ceildiv(const A& a, const B& b) { return detail::combine<dim_op::ceildiv>(a, b); }
template <class A, class B> requires(dim<A> && dim<B>)
constexpr auto max(const A& a, const B& b) { return detail::combine<dim_op::max>(a, b); }

// Type-level spellings, for declaring derived dims in input types: using seq2 = dim_mul_t<fix<2>, seq>;
template <class A, class B> using dim_add_t = decltype(detail::combine<dim_op::add>(A{}, B{}));
template <class A, class B> using dim_sub_t = decltype(detail::combine<dim_op::sub>(A{}, B{}));
template <class A, class B> using dim_mul_t = decltype(detail::combine<dim_op::mul>(A{}, B{}));
template <class A, class B> using dim_floordiv_t = decltype(detail::combine<dim_op::floordiv>(A{}, B{}));
template <class A, class B> using dim_max_t = decltype(detail::combine<dim_op::max>(A{}, B{}));

namespace detail {
// Whether extent v fits dim type D: equal to a static extent, inside a declared or derived range.
template <class D>
constexpr bool dim_fits(index_t v) noexcept {
  return v >= D::lo && v <= D::hi;  // for fix<N>, lo == hi == N
}

// Says why extent v does not fit dim type D ("expected 784, got 783", "symbolic dim 'batch' was
// given 65, outside its declared range [1, 64]").
template <class D, class W>
constexpr void write_dim_misfit(W& w, index_t v) {
  if constexpr (is_static_dim_v<D>) {
    w.put("expected "); w.put_int(D::value); w.put(", got "); w.put_int(v);
  } else if constexpr (is_symbolic_dim_v<D>) {
    w.put("symbolic dim '"); w.put(D::name.view()); w.put("' was given "); w.put_int(v);
    w.put(", outside its declared range "); D::write_range(w);
  } else {
    w.put("extent "); w.put_int(v); w.put(" is outside the range of "); D::write_type(w, 0);
    w.put(" ["); w.put_int(D::lo); w.put(", "); put_bound(w, D::hi); w.put(']');
  }
}

// A declared range (symbolic or derived) is a constraint; a static or anonymous dim is a shape fact.
template <class D>
using misfit_error_t = std::conditional_t<is_static_dim_v<D> || is_dynamic_dim_v<D>, shape_error, constraint_violation>;
}  // namespace detail

// Make a dim of type D from a run-time extent, checking it: a static D must match exactly, a
// symbolic or derived D must be in its range, every extent must be >= 0. (A derived dim's relation
// to its operands is checked where the operands are known: check_derived_dims.)
template <dim D>
constexpr D make_dim(index_t v) {
  if (!detail::dim_fits<D>(v)) {
    detail::raise<detail::misfit_error_t<D>>([v](auto& w) {
      w.put("typex: ");
      detail::write_dim_misfit<D>(w, v);
    });
  }
  if constexpr (is_static_dim_v<D>) return D{};
  else return D(v);
}

namespace detail {
template <char... C>
consteval index_t parse_extent() {
  index_t v = 0;
  ((v = v * 10 + (C - '0')), ...);
  return v;
}
}  // namespace detail

namespace literals {
// 784_c is fix<784>{}: static extents in dim arithmetic read like numbers (2_c * seq{} + 1_c).
template <char... C>
constexpr auto operator""_c() {
  static_assert(((C >= '0' && C <= '9') && ...), "typex: _c takes a decimal integer literal, e.g. 784_c");
  return fix<detail::parse_extent<C...>()>{};
}
}  // namespace literals

// Name of a dim type as written in shapes: "784", "batch", "?", "2*seq".
template <dim D, class W>
constexpr void write_dim_type(W& w) { D::write_type(w, 0); }

}  // namespace typex
