// typex/core/sentence.hpp — compile errors that read like sentences.
//
// (Named so that no line of a diagnostic above the error itself contains the word "error": g++
// prints this file's path on its "In instantiation of" context lines. <typex/core/static_error.hpp>
// includes it, for code written against the old name.)
//
// C++20 static_assert only takes a string literal, so a message naming the actual shapes cannot go
// there. Instead a shape rule formats the sentence at compile time into a fixed_string and names a
// class template below with it as argument. The classes are declared and never defined: the rule
// asks for the size of its error class, and the compiler's first error line is the sentence:
//
//   g++ 12:   error: invalid application of 'sizeof' to incomplete type 'typex::static_shape_error<
//             typex::fixed_string<144>{"typex::linear: inner extents differ (lhs [batch, 512], rhs
//             [256, 512]): 512 vs 256; the last dim of lhs must equal the second-to-last dim of rhs"}>'
//   clang 16: error: implicit instantiation of undefined template 'typex::static_shape_error<
//             typex::fixed_string<31>{"typex::linear: inner extents di"}, typex::fixed_string<31>{
//             "ffer (lhs [batch, 512], rhs [25"}, ...>'
//
// Measured alternatives (docs/compile_errors.md): a static_assert inside a defined class puts the
// sentence on an "In instantiation of" line above the error under g++ and in a note below it under
// clang; clang 16 prints at most 32 characters of a string template argument ("...diffe[...]"),
// so clang gets the sentence in pieces of TYPEX_STATIC_MESSAGE_PIECE characters, all on the error
// line; a computed static_assert message is C++26 (clang 17, g++ 14). The error is instantiated
// where the rule is (a class template, not a function body, which g++ defers to the end of the
// unit and so printed the sentence after every error that followed from it).
//
// After the error the rule returns the shape the op would have had if the extents fitted (the
// extents it cannot know as run-time dims): later ops and the user's uses of the result compile,
// so one mistake is one error.
#pragma once

#include <typex/core/fixed_string.hpp>
#include <typex/core/text.hpp>

#include <cstddef>
#include <type_traits>
#include <utility>

namespace typex {

// An error here means: every extent involved is static and they do not fit the op. The error
// line names the op, the shapes and the dim.
template <fixed_string... Message>
struct static_shape_error;

// An error here means: a symbolic dim's declared range makes the op impossible for every value.
// The error line names the op, the dim, its range and the value required.
template <fixed_string... Message>
struct static_constraint_violation;

// An error here means: an argument known at compile time is out of its domain (a dim index past
// the rank, a permutation that repeats an axis, a zero stride, ...).
template <fixed_string... Message>
struct static_argument_error;

// An error here means: the leaves given do not fit the pytree structure they are unflattened into.
template <fixed_string... Message>
struct static_tree_error;

// An error here means: a type is used where typex cannot use it (not a pytree node or leaf, a
// model without reflection, a call operator that is not a template, ...).
template <fixed_string... Message>
struct static_type_error;

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

template <class F, std::size_t I>
consteval auto static_message_arg() {
  if constexpr (static_message_piece == 0) return make_text<F>();
  else return static_message_part<F, I>();
}

template <class F>
consteval std::size_t static_message_pieces() {
  if constexpr (static_message_piece == 0) return 1;
  else return (make_text<F>().size() + static_message_piece - 1) / static_message_piece;
}

// Which class a failure names (an enum, not the class template itself, so that g++'s "In
// instantiation of" line above the error does not already contain the word "error").
enum class sentence_kind { shape, constraint, argument, tree, type };
template <template <fixed_string...> class Kind>
inline constexpr sentence_kind sentence_kind_of = sentence_kind::type;
template <> inline constexpr sentence_kind sentence_kind_of<static_shape_error> = sentence_kind::shape;
template <> inline constexpr sentence_kind sentence_kind_of<static_constraint_violation> = sentence_kind::constraint;
template <> inline constexpr sentence_kind sentence_kind_of<static_argument_error> = sentence_kind::argument;
template <> inline constexpr sentence_kind sentence_kind_of<static_tree_error> = sentence_kind::tree;

// The error class with the message F writes, whole or in pieces, named in a class template (not a
// function body, which g++ instantiates at the end of the unit: the sentence came after every error
// that followed from it), and spelled out in each specialization (g++ prints an alias as written).
template <sentence_kind K, class F, class = std::make_index_sequence<static_message_pieces<F>()>>
struct static_failure;
#define TYPEX_STATIC_FAILURE_OF(kind, Class)                                    \
  template <class F, std::size_t... I>                                          \
  struct static_failure<sentence_kind::kind, F, std::index_sequence<I...>>      \
      : std::integral_constant<std::size_t, sizeof(Class<static_message_arg<F, I>()...>)> {};
TYPEX_STATIC_FAILURE_OF(shape, static_shape_error)
TYPEX_STATIC_FAILURE_OF(constraint, static_constraint_violation)
TYPEX_STATIC_FAILURE_OF(argument, static_argument_error)
TYPEX_STATIC_FAILURE_OF(tree, static_tree_error)
TYPEX_STATIC_FAILURE_OF(type, static_type_error)
#undef TYPEX_STATIC_FAILURE_OF

}  // namespace detail

// Fail compilation with Kind<"message written by F">. F is a capture-less lambda taking a writer
// (see text.hpp). Used as: TYPEX_STATIC_FAIL(static_shape_error, [](auto& w) { ... });
// and followed by what the rule returns instead (see above: no cascade).
// (An alias declaration, not an expression: a function whose body holds a failed expression is no
// longer a constant expression under clang, so every constant computed from it failed too.)
#define TYPEX_STATIC_FAIL(Kind, ...)                                                                     \
  using TYPEX_STATIC_FAIL_NAME(__COUNTER__) [[maybe_unused]] = decltype(sizeof(                          \
      ::typex::detail::static_failure<::typex::detail::sentence_kind_of<::typex::Kind>, decltype(__VA_ARGS__)>))
#define TYPEX_STATIC_FAIL_NAME(n) TYPEX_STATIC_FAIL_NAME2(n)
#define TYPEX_STATIC_FAIL_NAME2(n) typex_static_failure_##n

}  // namespace typex
