// typex/core/static_error.hpp — compile errors that read like sentences.
//
// C++20 static_assert only takes a string literal, so a message naming the actual shapes cannot go
// there. Instead a shape rule formats the sentence at compile time into a fixed_string and
// instantiates one of the class templates below with it. g++ then opens the diagnostic with
//
//   In instantiation of 'struct typex::static_shape_error<typex::fixed_string<..>{"typex::matmul:
//   inner extents differ (lhs [32, 784], rhs [512, 10]): 784 vs 512; ..."}>'
//
// and the static_assert line below names the class of error. clang 16 names the class of error on
// its first line and shows the sentence in the next note, in pieces (it elides long strings).
#pragma once

#include <typex/core/fixed_string.hpp>
#include <typex/core/text.hpp>

#include <cstddef>
#include <utility>

namespace typex {

// An error here means: every extent involved is static and they do not fit the op.
// The first line of this diagnostic (the "In instantiation of" line) names the op, the shapes and the dim.
template <fixed_string... Message>
struct static_shape_error {
  static_assert(sizeof...(Message) == 0,
                "typex: these static shapes do not fit the op; the diagnostic's first line names the op, the shapes and the dim");
};

// An error here means: a symbolic dim's declared range makes the op impossible for every value.
// The first line of this diagnostic names the op, the dim, its range and the value required.
template <fixed_string... Message>
struct static_constraint_violation {
  static_assert(sizeof...(Message) == 0,
                "typex: a symbolic dim's declared range makes this op impossible; the diagnostic's first line says which dim and why");
};

// An error here means: an argument known at compile time is out of its domain (a dim index past
// the rank, a permutation that repeats an axis, a zero stride, ...).
template <fixed_string... Message>
struct static_argument_error {
  static_assert(sizeof...(Message) == 0,
                "typex: an argument is invalid for this op; the diagnostic's first line says which and why");
};

// An error here means: the leaves given do not fit the pytree structure they are unflattened into.
template <fixed_string... Message>
struct static_tree_error {
  static_assert(sizeof...(Message) == 0,
                "typex: the leaves do not fit the tree structure; the diagnostic's first line says which leaf and why");
};

// An error here means: a type is used where typex cannot use it (not a pytree node or leaf, ...).
template <fixed_string... Message>
struct static_type_error {
  static_assert(sizeof...(Message) == 0,
                "typex: this type cannot be used here; the diagnostic's first line says which type and how to fix it");
};

namespace detail {

// Pieces of the message (the last padded with spaces) for compilers that elide long strings.
inline constexpr std::size_t static_message_piece = TYPEX_STATIC_MESSAGE_PIECE;

template <class F, std::size_t I>
consteval auto static_message_part() {
  constexpr auto text = make_text<F>();
  constexpr std::size_t n = static_message_piece;
  fixed_string<n> part;
  for (std::size_t k = 0; k < n; ++k) part.data[k] = I * n + k < text.size() ? text.data[I * n + k] : ' ';
  return part;
}

// Calls fail.template operator()<parts of F's message...>(), which instantiates the error type.
template <class F, class Fail>
constexpr void static_fail_with(Fail fail) {
  if constexpr (static_message_piece == 0) {
    fail.template operator()<make_text<F>()>();
  } else {
    constexpr std::size_t n = (make_text<F>().size() + static_message_piece - 1) / static_message_piece;
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      fail.template operator()<static_message_part<F, I>()...>();
    }(std::make_index_sequence<n>{});
  }
}

}  // namespace detail

// Fail compilation with Kind<"message written by F">. F is a capture-less lambda taking a writer
// (see text.hpp). Used as: TYPEX_STATIC_FAIL(static_shape_error, [](auto& w) { ... });
#define TYPEX_STATIC_FAIL(Kind, ...)                                 \
  ::typex::detail::static_fail_with<decltype(__VA_ARGS__)>(          \
      []<::typex::fixed_string... Parts>() { (void)sizeof(::typex::Kind<Parts...>); })

}  // namespace typex
