// typex/core/shape.hpp — shape<D...>: a list of dims, static ones taking no space.
//
// `shape<sym<"batch", 1, 1024>, fix<784>>` is 8 bytes: only the batch extent is stored. Its type
// prints as "[batch, 784]"; its value as "[32, 784]". Shapes are built from run-time extents with
// make_shape<S>(extents, what), which validates rank, static extents and symbolic ranges and throws
// an exception that names `what` (the input) when they do not fit.
#pragma once

#include <typex/core/dim.hpp>
#include <typex/core/sizes.hpp>

#include <array>
#include <cstddef>
#include <initializer_list>
#include <span>
#include <string>
#include <utility>

namespace typex {

namespace detail {
// Storage: one base per dim; empty bases (static dims) take no space.
// Storage: one base per dim. A static dim's slot has no data member at all (its value is in the
// type), so every such base is empty and distinct (the index differs): the empty-base optimization
// applies to all of them. ([[no_unique_address]] members were not used: g++ 12 copies an empty
// member's byte over its neighbour when the slots are aggregate-initialized.)
template <std::size_t I, class D, bool Empty = is_static_dim_v<D>>
struct dim_slot {
  D d;
  constexpr dim_slot() = default;
  constexpr explicit dim_slot(const D& v) : d(v) {}
  constexpr const D& value() const noexcept { return d; }
};
template <std::size_t I, class D>
struct dim_slot<I, D, true> {
  constexpr dim_slot() = default;
  constexpr explicit dim_slot(const D&) {}
  static constexpr D value() noexcept { return D{}; }
};

template <class Seq, class... D>
struct dim_slots;

template <std::size_t... I, class... D>
struct dim_slots<std::index_sequence<I...>, D...> : dim_slot<I, D>... {
  constexpr dim_slots() = default;
  constexpr explicit dim_slots(const D&... d) requires(sizeof...(D) > 0) : dim_slot<I, D>(d)... {}
};

template <std::size_t I, class D, bool E>
D dim_type_at(const dim_slot<I, D, E>&);  // declaration only: picks the I-th type by base deduction
}  // namespace detail

template <class... D>
struct shape : detail::dim_slots<std::index_sequence_for<D...>, D...> {
  static_assert((dim<D> && ...),
                "typex::shape<D...>: every D must be a dim: typex::fix<N>, typex::sym<\"name\", min, max>, typex::dyn "
                "or a derived dim");
  using base = detail::dim_slots<std::index_sequence_for<D...>, D...>;

  static constexpr std::size_t rank = sizeof...(D);
  static constexpr bool is_static = (is_static_dim_v<D> && ...);

  constexpr shape() = default;
  constexpr explicit shape(const D&... d) requires(sizeof...(D) > 0) : base(d...) {}

  template <std::size_t I>
  using dim_t = decltype(detail::dim_type_at<I>(std::declval<const shape&>()));

  template <std::size_t I>
  constexpr dim_t<I> get() const noexcept {
    return static_cast<const detail::dim_slot<I, dim_t<I>>&>(*this).value();
  }

  constexpr std::array<index_t, rank> extents() const noexcept {
    return extents_impl(std::index_sequence_for<D...>{});
  }
  constexpr index_t extent(std::size_t i) const noexcept { return extents()[i]; }

  // The element count. Computed without undefined behaviour for any extents, but meaningful only
  // when it fits: make_shape and host_tensor reject shapes whose count (or byte count) does not
  // (core/sizes.hpp), so a tensor's shape always has a true numel().
  constexpr index_t numel() const noexcept { return detail::unchecked_numel(extents()); }

  // Type-level text: "[batch, 784]".
  template <class W>
  static constexpr void write_type(W& w) {
    w.put('[');
    std::size_t i = 0;
    ((w.put(i++ ? ", " : ""), D::write_type(w, 0)), ...);
    w.put(']');
  }
  // Value text: "[32, 784]".
  template <class W>
  constexpr void write_values(W& w) const {
    w.put('[');
    std::size_t i = 0;
    for (index_t e : extents()) { if (i++) w.put(", "); w.put_int(e); }
    w.put(']');
  }

  static std::string type_string() { return detail::to_string_with([](auto& w) { write_type(w); }); }
  std::string to_string() const { return detail::to_string_with([&](auto& w) { write_values(w); }); }

  template <class... E>
  constexpr bool operator==(const shape<E...>& o) const noexcept {
    if constexpr (sizeof...(E) != rank) return false;
    else return extents() == o.extents();
  }

 private:
  template <std::size_t... I>
  constexpr std::array<index_t, rank> extents_impl(std::index_sequence<I...>) const noexcept {
    return {get<I>().get()...};
  }
};

template <class... D>
shape(D...) -> shape<D...>;

namespace detail {
template <class T> struct is_shape : std::false_type {};
template <class... D> struct is_shape<shape<D...>> : std::true_type {};
}  // namespace detail

template <class S>
concept shape_type = detail::is_shape<S>::value;

// shape_c<2, 3> == shape<fix<2>, fix<3>>.
template <index_t... N>
using shape_c = shape<fix<N>...>;

template <shape_type S>
inline constexpr index_t static_numel_v = [] {
  static_assert(S::is_static, "typex::static_numel_v: the shape has non-static dims");
  return S{}.numel();
}();

namespace detail {
template <class S, std::size_t K>
[[noreturn]] TYPEX_NOINLINE TYPEX_COLD void raise_shape_misfit(std::span<const index_t> e, std::string_view what) {
  using D = typename S::template dim_t<K>;
  auto describe = [&](auto& w) {
    w.put("typex: "); w.put(what); w.put(" has shape [");
    for (std::size_t i = 0; i < e.size(); ++i) { if (i) w.put(", "); w.put_int(e[i]); }
    w.put("], which does not fit its type "); S::write_type(w);
    w.put(" at dim "); w.put_int(static_cast<long long>(K)); w.put(": ");
    write_dim_misfit<D>(w, e[K]);
  };
  raise<misfit_error_t<D>>(describe);
}

template <class S, std::size_t K>
typename S::template dim_t<K> checked_dim(std::span<const index_t> e, std::string_view what) {
  using D = typename S::template dim_t<K>;
  if (!dim_fits<D>(e[K])) raise_shape_misfit<S, K>(e, what);
  if constexpr (is_static_dim_v<D>) return D{};
  else return D(e[K]);
}

template <class S, std::size_t... I>
S make_shape_impl([[maybe_unused]] std::span<const index_t> e, [[maybe_unused]] std::string_view what,
                  std::index_sequence<I...>) {
  return S(checked_dim<S, I>(e, what)...);  // (rank 0: e and what go unused)
}
}  // namespace detail

// Build an S from run-time extents. `what` names the value in messages ("input 'x'", "weight").
template <shape_type S>
S make_shape(std::span<const index_t> extents, std::string_view what = "tensor") {
  if (extents.size() != S::rank) {
    detail::raise<shape_error>([&](auto& w) {
      w.put("typex: "); w.put(what); w.put(" has rank "); w.put_int(static_cast<long long>(extents.size()));
      w.put(", but its type "); S::write_type(w); w.put(" has rank "); w.put_int(S::rank);
    });
  }
  S s = detail::make_shape_impl<S>(extents, what, std::make_index_sequence<S::rank>{});
  (void)detail::checked_numel(extents, what);
  return s;
}

template <shape_type S>
S make_shape(std::initializer_list<index_t> extents, std::string_view what = "tensor") {
  return make_shape<S>(std::span<const index_t>(extents.begin(), extents.size()), what);
}

// Free-function access for generic code, where a member template needs `s.template get<I>()`:
// typex::get<I>(s) (negative I counts from the end, as torch does).
template <long long I, class... D>
constexpr auto get(const shape<D...>& s) noexcept {
  constexpr long long rank = sizeof...(D);
  static_assert(I >= -rank && I < rank, "typex::get<I>(shape): I is out of range for this shape's rank");
  return s.template get<static_cast<std::size_t>(I < 0 ? I + rank : I)>();
}

}  // namespace typex
