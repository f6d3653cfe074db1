// typex/tree/unflatten.hpp — leaves back into a structure.
//
//   unflatten<T>(std::tuple<L...>)        static structures: the leaf count and each leaf's type are
//                                         checked at compile time (a sentence naming the leaf);
//   unflatten<T>(spec, std::span<const L>) any structure: the spec gives vector lengths and optional
//                                         presence; the spec is checked against T and the leaves
//                                         are converted with static_cast, all at run time, and a
//                                         mismatch throws typex::tree_error naming the path.
#pragma once

#include <typex/core/sentence.hpp>
#include <typex/tree/flatten.hpp>

#include <span>
#include <string>

namespace typex {

namespace detail {
// Leaves before child I of a node whose children have types C...
template <std::size_t I, class... C>
constexpr std::size_t leaf_offset() {
  constexpr std::size_t counts[] = {static_leaf_count_v<C>..., 0};
  std::size_t o = 0;
  for (std::size_t j = 0; j < I; ++j) o += counts[j];
  return o;
}

template <class T, std::size_t Offset, class Leaves>
constexpr T build_static(const Leaves& leaves) {
  constexpr node_kind k = node_kind_of<T>();
  if constexpr (k == node_kind::leaf) {
    return static_cast<T>(std::get<Offset>(leaves));
  } else if constexpr (k == node_kind::array) {
    using C = typename T::value_type;
    constexpr std::size_t n = static_leaf_count_v<C>;
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return T{build_static<C, Offset + I * n>(leaves)...};
    }(std::make_index_sequence<std::tuple_size_v<T>>{});
  } else {
    using Cs = children_types_t<T>;
    return [&]<class... C>(std::type_identity<std::tuple<C...>>) {
      return [&]<std::size_t... I>(std::index_sequence<I...>) {
        if constexpr (k == node_kind::structure) {
          T out{};
          boost::hana::unpack(boost::hana::accessors<T>(), [&](auto... acc) {
            ((boost::hana::second(acc)(out) = build_static<C, Offset + leaf_offset<I, C...>()>(leaves)), ...);
          });
          return out;
        } else {
          return T{build_static<C, Offset + leaf_offset<I, C...>()>(leaves)...};
        }
      }(std::index_sequence_for<C...>{});
    }(std::type_identity<Cs>{});
  }
}
}  // namespace detail

template <class T, class... L>
constexpr T unflatten(const std::tuple<L...>& leaves) {
  if constexpr (!is_static_tree_v<T>) {
    TYPEX_STATIC_FAIL(static_tree_error, [](auto& w) {
      w.put("typex::unflatten: "); w.put(detail::raw_type_name<T>());
      w.put(" holds a std::vector or std::optional, so its shape is run-time data; call unflatten<T>(spec, leaves)");
    });
    return T{};
  } else if constexpr (static_leaf_count_v<T> != sizeof...(L)) {
    TYPEX_STATIC_FAIL(static_tree_error, [](auto& w) {
      w.put("typex::unflatten: the structure "); w.put(detail::raw_type_name<T>()); w.put(" has ");
      w.put_int(static_leaf_count_v<T>); w.put(" leaves, but "); w.put_int(sizeof...(L));
      w.put(" leaves were given");
    });
    return T{};
  } else {
    using Want = leaves_tuple_t<T>;
    constexpr std::size_t bad = []<std::size_t... I>(std::index_sequence<I...>) {
      const bool ok[] = {std::is_constructible_v<std::tuple_element_t<I, Want>, const L&>..., true};
      for (std::size_t i = 0; i < sizeof...(L); ++i) if (!ok[i]) return i;
      return sizeof...(L);
    }(std::index_sequence_for<L...>{});
    if constexpr (bad < sizeof...(L)) {
      TYPEX_STATIC_FAIL(static_tree_error, [](auto& w) {
        w.put("typex::unflatten: leaf "); w.put_int(bad); w.put(" of the structure "); w.put(detail::raw_type_name<T>());
        w.put(" is a "); detail::write_type_name<std::tuple_element_t<bad, Want>>(w); w.put(", but a ");
        detail::write_type_name<std::tuple_element_t<bad, std::tuple<L...>>>(w);
        w.put(" was given, which does not convert to it");
      });
      return T{};
    } else {
      return detail::build_static<T, 0>(leaves);
    }
  }
}

namespace detail {
template <class T, class L>
T build_dynamic(const tree_spec& spec, std::span<const L> leaves, std::size_t& next, std::string& path) {
  constexpr node_kind k = node_kind_of<T>();
  auto fail = [&](auto&& why) {
    raise<tree_error>([&](auto& w) {
      w.put("typex::unflatten: at "); w.put(path); w.put(": "); why(w);
    });
  };
  if (spec.kind() != k) {
    fail([&](auto& w) {
      w.put("the spec has a "); w.put(name(spec.kind())); w.put(" where the type "); w.put(raw_type_name<T>());
      w.put(" has a "); w.put(name(k));
    });
  }
  if constexpr (k == node_kind::leaf) {
    if (next >= leaves.size()) {
      fail([&](auto& w) { w.put("ran out of leaves ("); w.put_int(static_cast<long long>(leaves.size())); w.put(" given)"); });
    }
    return static_cast<T>(leaves[next++]);
  } else {
    auto child = [&]<class C>(std::type_identity<C>, std::size_t i, std::string_view key) -> C {
      const std::size_t mark = path.size();
      if (key.empty()) { path += '['; path += std::to_string(i); path += ']'; }
      else { path += '.'; path += key; }
      C c = build_dynamic<C>(spec.children()[i], leaves, next, path);
      path.resize(mark);
      return c;
    };
    auto require_children = [&](std::size_t n) {
      if (spec.num_children() != n) {
        fail([&](auto& w) {
          w.put("the spec has "); w.put_int(static_cast<long long>(spec.num_children())); w.put(" children where the type ");
          w.put(raw_type_name<T>()); w.put(" has "); w.put_int(static_cast<long long>(n));
        });
      }
    };
    if constexpr (k == node_kind::list) {
      T out;
      out.reserve(spec.num_children());
      for (std::size_t i = 0; i < spec.num_children(); ++i)
        out.push_back(child(std::type_identity<typename T::value_type>{}, i, {}));
      return out;
    } else if constexpr (k == node_kind::optional) {
      if (spec.num_children() > 1) require_children(1);
      if (spec.num_children() == 0) return T{};
      return T{child(std::type_identity<typename T::value_type>{}, 0, {})};
    } else if constexpr (k == node_kind::array) {
      require_children(std::tuple_size_v<T>);
      return [&]<std::size_t... I>(std::index_sequence<I...>) {
        return T{child(std::type_identity<typename T::value_type>{}, I, {})...};
      }(std::make_index_sequence<std::tuple_size_v<T>>{});
    } else if constexpr (k == node_kind::structure) {
      T out{};
      std::size_t n = 0;
      for_each_child(out, [&](auto&, std::string_view, std::size_t) { ++n; });
      require_children(n);
      for_each_child(out, [&](auto& field, std::string_view key, std::size_t i) {
        if (spec.keys().size() != n || spec.keys()[i] != key) {
          fail([&](auto& w) {
            w.put("field "); w.put_int(static_cast<long long>(i)); w.put(" of "); w.put(raw_type_name<T>());
            w.put(" is '"); w.put(key); w.put("', but the spec names it '");
            w.put(i < spec.keys().size() ? std::string_view(spec.keys()[i]) : std::string_view("(none)")); w.put('\'');
          });
        }
        field = child(std::type_identity<std::remove_cvref_t<decltype(field)>>{}, i, key);
      });
      return out;
    } else {
      using Cs = children_types_t<T>;
      require_children(std::tuple_size_v<Cs>);
      return [&]<class... C, std::size_t... I>(std::type_identity<std::tuple<C...>>, std::index_sequence<I...>) {
        return T{child(std::type_identity<C>{}, I, {})...};
      }(std::type_identity<Cs>{}, std::make_index_sequence<std::tuple_size_v<Cs>>{});
    }
  }
}
}  // namespace detail

template <class T, class L>
T unflatten(const tree_spec& spec, std::span<const L> leaves) {
  if (spec.num_leaves() != leaves.size()) {
    detail::raise<tree_error>([&](auto& w) {
      w.put("typex::unflatten: the spec "); w.put(spec.to_string()); w.put(" has ");
      w.put_int(static_cast<long long>(spec.num_leaves())); w.put(" leaves, but ");
      w.put_int(static_cast<long long>(leaves.size())); w.put(" were given");
    });
  }
  std::size_t next = 0;
  std::string path = "tree";
  return detail::build_dynamic<T>(spec, leaves, next, path);
}

template <class T, class L>
T unflatten(const tree_spec& spec, const std::vector<L>& leaves) {
  return unflatten<T>(spec, std::span<const L>(leaves));
}

}  // namespace typex
