// typex/tree/node.hpp — what kind of pytree node a C++ type is.
//
// Leaves: arithmetic scalars, and any type that says so (tensors declare `is_pytree_leaf`; other
// types specialize typex::tree_leaf<T>). Containers: std::tuple, std::pair, std::array,
// std::optional, std::vector, and user structs adapted with one line of Boost.Hana
// (BOOST_HANA_ADAPT_STRUCT(ns::my_inputs, x, mask);) whose field names become the keys.
// Anything else is a compile error that says how to make it a node or a leaf.
#pragma once

#include <typex/core/error.hpp>
#include <typex/core/sentence.hpp>
#include <typex/core/type_name.hpp>

#include <boost/hana/accessors.hpp>
#include <boost/hana/concept/struct.hpp>
#include <boost/hana/first.hpp>
#include <boost/hana/for_each.hpp>
#include <boost/hana/second.hpp>
#include <boost/hana/string.hpp>
#include <boost/hana/core/to.hpp>

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace typex {

// Specialize (with `: std::true_type`) to make T a pytree leaf.
template <class T>
struct tree_leaf : std::bool_constant<std::is_arithmetic_v<T> || requires { requires T::is_pytree_leaf; }> {};

template <class T>
concept tree_leaf_type = tree_leaf<T>::value;

// Kinds of node, as torch's pytree names them where there is a match.
enum class node_kind : unsigned char { leaf, tuple, pair, array, optional, list, structure };

constexpr std::string_view name(node_kind k) noexcept {
  switch (k) {
    case node_kind::leaf: return "leaf";
    case node_kind::tuple: return "tuple";
    case node_kind::pair: return "pair";
    case node_kind::array: return "array";
    case node_kind::optional: return "optional";
    case node_kind::list: return "list";
    case node_kind::structure: return "struct";
  }
  return "?";
}

namespace detail {
template <class T> struct node_of { static constexpr bool known = false; };

template <class... T> struct node_of<std::tuple<T...>> {
  static constexpr bool known = true;
  static constexpr node_kind kind = node_kind::tuple;
};
template <class A, class B> struct node_of<std::pair<A, B>> {
  static constexpr bool known = true;
  static constexpr node_kind kind = node_kind::pair;
};
template <class T, std::size_t N> struct node_of<std::array<T, N>> {
  static constexpr bool known = true;
  static constexpr node_kind kind = node_kind::array;
};
template <class T> struct node_of<std::optional<T>> {
  static constexpr bool known = true;
  static constexpr node_kind kind = node_kind::optional;
};
template <class T, class A> struct node_of<std::vector<T, A>> {
  static constexpr bool known = true;
  static constexpr node_kind kind = node_kind::list;
};
}  // namespace detail

template <class T>
concept tree_struct_type = !tree_leaf_type<T> && boost::hana::Struct<T>::value;

template <class T>
concept tree_type = tree_leaf_type<T> || detail::node_of<T>::known || tree_struct_type<T>;

namespace detail {
// An error here means: T is used in a pytree but is neither a leaf nor a node typex knows.
template <class T>
constexpr auto require_tree_type() {
  if constexpr (!tree_type<T>) {
    TYPEX_STATIC_FAIL(static_type_error, [](auto& w) {
      w.put("typex: "); w.put(raw_type_name<T>());
      w.put(" is not a pytree: adapt a struct with BOOST_HANA_ADAPT_STRUCT(type, fields...), mark a leaf type with "
            "`static constexpr bool is_pytree_leaf = true;`, or specialize typex::tree_leaf<T>");
    });
  }
}

}  // namespace detail

// For a type that is not a pytree this is a compile error (naming the type), after which the type
// counts as a leaf so that no second wall of errors follows.
template <class T>
constexpr node_kind node_kind_of() noexcept {
  if constexpr (!tree_type<T>) {
    detail::require_tree_type<T>();
    return node_kind::leaf;
  } else if constexpr (tree_leaf_type<T>) return node_kind::leaf;
  else if constexpr (detail::node_of<T>::known) return detail::node_of<T>::kind;
  else return node_kind::structure;
}

namespace detail {
// Calls f(child) for each child of node `v` (T not a leaf), with the child's key for structs.
// Used by flatten, spec_of and unflatten so that each container is described once.
template <class T, class F>
constexpr void for_each_child(T& v, F&& f) {
  using U = std::remove_const_t<T>;
  constexpr node_kind k = node_kind_of<U>();
  if constexpr (k == node_kind::tuple || k == node_kind::pair) {
    std::apply([&](auto&... c) { std::size_t i = 0; (f(c, std::string_view{}, i++), ...); }, v);
  } else if constexpr (k == node_kind::array || k == node_kind::list) {
    std::size_t i = 0;
    for (auto& c : v) f(c, std::string_view{}, i++);
  } else if constexpr (k == node_kind::optional) {
    if (v.has_value()) f(*v, std::string_view{}, 0);
  } else if constexpr (k == node_kind::structure) {
    std::size_t i = 0;
    boost::hana::for_each(boost::hana::accessors<U>(), [&](auto acc) {
      constexpr auto key = boost::hana::first(acc);
      f(boost::hana::second(acc)(v), std::string_view(boost::hana::to<const char*>(key)), i++);
    });
  }
}
}  // namespace detail

}  // namespace typex
