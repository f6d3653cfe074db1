// typex/tree/map.hpp — the same structure with other leaves: specs -> traced values -> tensors.
//
//   map_tree<Family>(tree, f)    a tree of the same shape whose leaves are f(leaf)
//   rebind_tree_t<T, Family>     its type when each tensor leaf X<DT, S> becomes Family<DT, S>
//
// Containers (tuple, pair, array, optional, vector) map element by element. A struct maps when it
// is a template over its tensor type, the idiom for named-field inputs and outputs:
//
//   template <template <class, class> class Tensor>
//   struct batch_inputs {
//     using image_t = Tensor<f32, shape<batch, fix<3>, fix<32>, fix<32>>>;
//     using label_t = Tensor<i64, shape<batch>>;
//     BOOST_HANA_DEFINE_STRUCT(batch_inputs, (image_t, image), (label_t, label));
//   };
//
// batch_inputs<tensor_spec> describes an export's inputs, batch_inputs<traced> is what the model
// receives while traced, batch_inputs<host_tensor> what the exported program's module takes.
// Arithmetic leaves (non-tensor inputs) keep their type.
#pragma once

#include <typex/core/sentence.hpp>
#include <typex/tree/node.hpp>

#include <boost/hana/members.hpp>
#include <boost/hana/unpack.hpp>

#include <array>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

namespace typex {

namespace detail {
template <class T, template <class, class> class F, class = void>
struct rebind_tree {
  static_assert(sizeof(T) == 0,
                "typex::rebind_tree: a struct in an exported model's inputs or outputs must be a template over its "
                "tensor type (template <template <class, class> class Tensor> struct ...), "
                "so that the same fields can hold specs, traced values and tensors");
  using type = T;
};
template <class T, template <class, class> class F>
  requires std::is_arithmetic_v<T>
struct rebind_tree<T, F> {
  using type = T;
};
template <class T, template <class, class> class F>
  requires(!std::is_arithmetic_v<T> && requires { requires T::is_pytree_leaf; typename T::dtype_type; typename T::shape_type; })
struct rebind_tree<T, F> {
  using type = F<typename T::dtype_type, typename T::shape_type>;
};
template <class... T, template <class, class> class F>
struct rebind_tree<std::tuple<T...>, F> {
  using type = std::tuple<typename rebind_tree<T, F>::type...>;
};
template <class A, class B, template <class, class> class F>
struct rebind_tree<std::pair<A, B>, F> {
  using type = std::pair<typename rebind_tree<A, F>::type, typename rebind_tree<B, F>::type>;
};
template <class T, std::size_t N, template <class, class> class F>
struct rebind_tree<std::array<T, N>, F> {
  using type = std::array<typename rebind_tree<T, F>::type, N>;
};
template <class T, template <class, class> class F>
struct rebind_tree<std::optional<T>, F> {
  using type = std::optional<typename rebind_tree<T, F>::type>;
};
template <class T, class A, template <class, class> class F>
struct rebind_tree<std::vector<T, A>, F> {
  using type = std::vector<typename rebind_tree<T, F>::type>;
};
template <template <template <class, class> class> class S, template <class, class> class G,
          template <class, class> class F>
struct rebind_tree<S<G>, F> {
  using type = S<F>;
};
}  // namespace detail

template <class T, template <class, class> class F>
using rebind_tree_t = typename detail::rebind_tree<std::remove_cvref_t<T>, F>::type;

// The tree of f(leaf) for each leaf, in flattening order (elements are built left to right).
template <template <class, class> class F, class T, class Fn>
rebind_tree_t<T, F> map_tree(const T& tree, Fn&& f) {
  using R = rebind_tree_t<T, F>;
  constexpr node_kind k = node_kind_of<T>();
  if constexpr (k == node_kind::leaf) {
    return f(tree);
  } else if constexpr (k == node_kind::tuple || k == node_kind::pair) {
    return std::apply([&](const auto&... c) { return R{map_tree<F>(c, f)...}; }, tree);
  } else if constexpr (k == node_kind::array) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return R{map_tree<F>(tree[I], f)...};
    }(std::make_index_sequence<std::tuple_size_v<T>>{});
  } else if constexpr (k == node_kind::optional) {
    if (!tree.has_value()) return R{};
    return R{map_tree<F>(*tree, f)};
  } else if constexpr (k == node_kind::list) {
    R out;
    out.reserve(tree.size());
    for (const auto& c : tree) out.push_back(map_tree<F>(c, f));
    return out;
  } else {
    return boost::hana::unpack(boost::hana::members(tree), [&](const auto&... m) { return R{map_tree<F>(m, f)...}; });
  }
}

}  // namespace typex
