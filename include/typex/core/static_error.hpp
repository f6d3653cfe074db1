// typex/core/static_error.hpp — compile errors that read like sentences.
//
// C++20 static_assert only takes a string literal, so a message naming the actual shapes cannot go
// there. Instead a shape rule formats the sentence at compile time into a fixed_string and
// instantiates one of the class templates below with it. g++ then opens the diagnostic with
//
//   In instantiation of 'struct typex::static_shape_error<typex::fixed_string<..>{"typex::matmul:
//   inner extents differ (lhs [32, 784], rhs [512, 10]): 784 vs 512; ..."}>'
//
// and the static_assert line below names the class of error. (clang prints the string as character
// codes; its first error line still names the class of error, and its notes show the shape types.)
#pragma once

#include <typex/core/fixed_string.hpp>
#include <typex/core/text.hpp>

namespace typex {

// An error here means: every extent involved is static and they do not fit the op.
// The first line of this diagnostic (the "In instantiation of" line) names the op, the shapes and the dim.
template <fixed_string Message>
struct static_shape_error {
  static_assert(sizeof(Message) == 0,
                "typex: these static shapes do not fit the op; the diagnostic's first line names the op, the shapes and the dim");
};

// An error here means: a symbolic dim's declared range makes the op impossible for every value.
// The first line of this diagnostic names the op, the dim, its range and the value required.
template <fixed_string Message>
struct static_constraint_violation {
  static_assert(sizeof(Message) == 0,
                "typex: a symbolic dim's declared range makes this op impossible; the diagnostic's first line says which dim and why");
};

// An error here means: an argument known at compile time is out of its domain (a dim index past
// the rank, a permutation that repeats an axis, a zero stride, ...).
template <fixed_string Message>
struct static_argument_error {
  static_assert(sizeof(Message) == 0,
                "typex: an argument is invalid for this op; the diagnostic's first line says which and why");
};

// An error here means: the leaves given do not fit the pytree structure they are unflattened into.
template <fixed_string Message>
struct static_tree_error {
  static_assert(sizeof(Message) == 0,
                "typex: the leaves do not fit the tree structure; the diagnostic's first line says which leaf and why");
};

// An error here means: a type is used where typex cannot use it (not a pytree node or leaf, ...).
template <fixed_string Message>
struct static_type_error {
  static_assert(sizeof(Message) == 0,
                "typex: this type cannot be used here; the diagnostic's first line says which type and how to fix it");
};

namespace detail {

// Instantiates E (one of the templates above); the static_assert inside fires.
template <class E>
constexpr void static_fail() noexcept {
  (void)sizeof(E);
}

}  // namespace detail

// Fail compilation with Kind<"message written by F">. F is a capture-less lambda type taking a
// writer (see text.hpp). Used as: TYPEX_STATIC_FAIL(static_shape_error, [](auto& w) { ... });
#define TYPEX_STATIC_FAIL(Kind, ...) \
  ::typex::detail::static_fail<::typex::Kind<::typex::detail::make_text<decltype(__VA_ARGS__)>()>>()

}  // namespace typex
