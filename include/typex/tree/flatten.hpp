// typex/tree/flatten.hpp — flattening pytrees: leaves in order, the spec, static leaf counts.
//
//   for_each_leaf(tree, f)      visits every leaf, depth first, left to right (torch's order);
//   spec_of(tree)               the tree_spec, including vector lengths and optional presence;
//   flatten(tree)               std::tuple of the leaves when the structure is static (no vector or
//                               optional inside), a std::vector when every leaf has the same type;
//   static_leaf_count_v<T>      the number of leaves, as a constant, for static structures.
#pragma once

#include <typex/tree/spec.hpp>

#include <boost/hana/unpack.hpp>

#include <array>

namespace typex {

namespace detail {
template <class T>
using field_t = std::remove_cvref_t<T>;

template <class T, class Acc>
using member_t = std::remove_cvref_t<decltype(boost::hana::second(std::declval<Acc>())(std::declval<T&>()))>;

template <class T>
constexpr auto struct_member_types() {
  return boost::hana::unpack(boost::hana::accessors<T>(), [](auto... acc) {
    return std::type_identity<std::tuple<member_t<T, decltype(acc)>...>>{};
  });
}

// The children's types of a tuple, pair or struct node, as a std::tuple<...> of types.
template <class T, node_kind K = node_kind_of<T>()>
struct children_types {
  using type = std::tuple<>;
};
template <class T>
struct children_types<T, node_kind::tuple> {
  using type = T;
};
template <class T>
struct children_types<T, node_kind::pair> {
  using type = std::tuple<typename T::first_type, typename T::second_type>;
};
template <class T>
struct children_types<T, node_kind::structure> {
  using type = typename decltype(struct_member_types<T>())::type;
};
template <class T>
using children_types_t = typename children_types<T>::type;

// The one leaf type of a structure whose leaves all have the same type; void when they differ.
template <class T>
constexpr auto uniform_leaf() {
  constexpr node_kind k = node_kind_of<T>();
  if constexpr (k == node_kind::leaf) {
    return std::type_identity<T>{};
  } else if constexpr (k == node_kind::array || k == node_kind::list || k == node_kind::optional) {
    return uniform_leaf<typename T::value_type>();
  } else {
    return []<class C0, class... C>(std::type_identity<std::tuple<C0, C...>>) {
      using L0 = typename decltype(uniform_leaf<C0>())::type;
      if constexpr ((std::same_as<L0, typename decltype(uniform_leaf<C>())::type> && ...)) return std::type_identity<L0>{};
      else return std::type_identity<void>{};
    }(std::type_identity<children_types_t<T>>{});
  }
}
}  // namespace detail

// True when the structure (and so the leaf count) is known from the type alone.
template <class T>
constexpr bool is_static_tree() {
  constexpr node_kind k = node_kind_of<T>();
  if constexpr (k == node_kind::leaf) return true;
  else if constexpr (k == node_kind::optional || k == node_kind::list) return false;
  else if constexpr (k == node_kind::array) return is_static_tree<typename T::value_type>();
  else
    return []<class... C>(std::type_identity<std::tuple<C...>>) {
      return (is_static_tree<C>() && ...);
    }(std::type_identity<detail::children_types_t<T>>{});
}

template <class T>
inline constexpr bool is_static_tree_v = is_static_tree<T>();

template <class T>
constexpr std::size_t static_leaf_count() {
  static_assert(is_static_tree_v<T>,
                "typex::static_leaf_count_v: the structure holds a std::vector or std::optional, so its leaf count is "
                "only known at run time; use leaf_count(tree)");
  constexpr node_kind k = node_kind_of<T>();
  if constexpr (k == node_kind::leaf) return 1;
  else if constexpr (k == node_kind::array) return std::tuple_size_v<T> * static_leaf_count<typename T::value_type>();
  else
    return []<class... C>(std::type_identity<std::tuple<C...>>) {
      return (std::size_t{0} + ... + static_leaf_count<C>());
    }(std::type_identity<detail::children_types_t<T>>{});
}

template <class T>
inline constexpr std::size_t static_leaf_count_v = static_leaf_count<T>();

// Visits each leaf of `tree` (const or not) in flattening order.
template <class T, class F>
constexpr void for_each_leaf(T& tree, F&& f) {
  using U = std::remove_const_t<T>;
  if constexpr (node_kind_of<U>() == node_kind::leaf) f(tree);
  else detail::for_each_child(tree, [&](auto& c, std::string_view, std::size_t) { for_each_leaf(c, f); });
}

template <class T>
std::size_t leaf_count(const T& tree) {
  if constexpr (is_static_tree_v<T>) {
    return static_leaf_count_v<T>;
  } else {
    std::size_t n = 0;
    for_each_leaf(tree, [&](const auto&) { ++n; });
    return n;
  }
}

namespace detail {
template <class T>
void write_spec(const T& tree, tree_spec& out) {
  constexpr node_kind k = node_kind_of<T>();
  if constexpr (k != node_kind::leaf) {
    spec_writer::begin(out, k, k == node_kind::structure ? raw_type_name<T>() : std::string_view{});
    for_each_child(tree, [&](const auto& c, std::string_view key, std::size_t) {
      write_spec(c, spec_writer::add_child(out, key));
    });
    spec_writer::end(out);
  }
}
}  // namespace detail

// The spec of a value (vector lengths and optional presence are read from it).
template <class T>
tree_spec spec_of(const T& tree) {
  tree_spec s;
  detail::write_spec(tree, s);
  return s;
}

// The spec of a static structure, from its type alone.
template <class T>
tree_spec static_spec() {
  static_assert(is_static_tree_v<T>, "typex::static_spec<T>: T holds a vector or optional; use spec_of(value)");
  constexpr node_kind k = node_kind_of<T>();
  if constexpr (k == node_kind::leaf) {
    return tree_spec::leaf();
  } else if constexpr (k == node_kind::array) {
    return tree_spec::node(k, {}, {}, std::vector<tree_spec>(std::tuple_size_v<T>, static_spec<typename T::value_type>()));
  } else {
    std::vector<std::string> keys;
    std::string type_name;
    if constexpr (k == node_kind::structure) {
      type_name = std::string(detail::raw_type_name<T>());
      boost::hana::for_each(boost::hana::accessors<T>(), [&](auto acc) {
        keys.emplace_back(boost::hana::to<const char*>(boost::hana::first(acc)));
      });
    }
    return [&]<class... C>(std::type_identity<std::tuple<C...>>) {
      return tree_spec::node(k, std::move(type_name), std::move(keys), std::vector<tree_spec>{static_spec<C>()...});
    }(std::type_identity<detail::children_types_t<T>>{});
  }
}

namespace detail {
template <class... T>
struct type_list {};
template <class... A, class... B>
constexpr type_list<A..., B...> operator+(type_list<A...>, type_list<B...>) {
  return {};
}

template <std::size_t, class T>
using repeat_t = T;

// The leaf types of a static structure, in flattening order: a fold, not a recursion over leaves.
template <class T>
constexpr auto leaf_types() {
  constexpr node_kind k = node_kind_of<T>();
  if constexpr (k == node_kind::leaf) {
    return type_list<T>{};
  } else if constexpr (k == node_kind::array) {
    return []<std::size_t... I>(std::index_sequence<I...>) {
      return (type_list<>{} + ... + decltype(leaf_types<repeat_t<I, typename T::value_type>>()){});
    }(std::make_index_sequence<std::tuple_size_v<T>>{});
  } else {
    return []<class... C>(std::type_identity<std::tuple<C...>>) {
      return (type_list<>{} + ... + decltype(leaf_types<C>()){});
    }(std::type_identity<children_types_t<T>>{});
  }
}

template <class List>
struct as_tuple;
template <class... L>
struct as_tuple<type_list<L...>> {
  using type = std::tuple<L...>;
};
}  // namespace detail

// The leaves' types of a static structure, as std::tuple<L...>.
template <class T>
using leaves_tuple_t = typename detail::as_tuple<decltype(detail::leaf_types<T>())>::type;

// Flattens into a std::vector<L>, converting each leaf with static_cast<L>.
template <class L, class T>
std::vector<L> flatten_as(const T& tree) {
  std::vector<L> out;
  out.reserve(leaf_count(tree));
  for_each_leaf(tree, [&](const auto& leaf) { out.push_back(static_cast<L>(leaf)); });
  return out;
}

// Flattens to a std::tuple (static structures) or to a std::vector<L> (when all leaves are L).
template <class T>
auto flatten(const T& tree) {
  if constexpr (is_static_tree_v<T>) {
    // collect the leaves' addresses in order, then copy them into the tuple
    constexpr std::size_t n = static_leaf_count_v<T>;
    std::array<const void*, n> at{};
    std::size_t i = 0;
    for_each_leaf(tree, [&](const auto& leaf) { at[i++] = &leaf; });
    return [&]<std::size_t... I, class... L>(std::index_sequence<I...>, detail::type_list<L...>) {
      return std::tuple<L...>{*static_cast<const L*>(at[I])...};
    }(std::make_index_sequence<n>{}, detail::leaf_types<T>());
  } else {
    using L = typename decltype(detail::uniform_leaf<T>())::type;
    static_assert(!std::is_void_v<L>,
                  "typex::flatten: this structure has a run-time length (vector/optional) and leaves of different "
                  "types; use flatten_as<L>(tree) to convert them, or for_each_leaf(tree, f) to visit them");
    if constexpr (std::is_void_v<L>) return std::vector<int>{};
    else return flatten_as<L>(tree);
  }
}

}  // namespace typex
