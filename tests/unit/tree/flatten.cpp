// Tests for typex/tree/flatten.hpp.
#include "demo_types.hpp"

using namespace typex;

TEST_CASE("static structures: constexpr leaf count, tuple of leaves, round trip") {
  using T = std::tuple<float, demo::pair_of, std::array<std::tuple<int, int>, 2>>;
  static_assert(is_static_tree_v<T>);
  static_assert(static_leaf_count_v<T> == 1 + 4 + 4);
  const T v{1.5f, demo::pair_of{{2.5f, 3}, {4.0, 5.0}}, {{{6, 7}, {8, 9}}}};
  const auto leaves = flatten(v);
  static_assert(std::is_same_v<std::remove_cvref_t<decltype(leaves)>,
                               std::tuple<float, float, int, double, double, int, int, int, int>>);
  CHECK(std::get<2>(leaves) == 3);
  CHECK(std::get<8>(leaves) == 9);
  const T back = unflatten<T>(leaves);
  CHECK(std::get<1>(back).a[1] == 5.0);
  CHECK(std::get<1>(std::get<2>(back)[1]) == 9);
  CHECK(spec_of(v).to_string() ==
        "TreeSpec(tuple, None, [*, TreeSpec(demo::pair_of, ['p', 'a'], [TreeSpec(pair, None, [*, *]), "
        "TreeSpec(array, None, [*, *])]), TreeSpec(array, None, [TreeSpec(tuple, None, [*, *]), "
        "TreeSpec(tuple, None, [*, *])])])");
  CHECK(static_spec<T>() == spec_of(v));
}

TEST_CASE("a 50-leaf structure flattens and unflattens") {
  using row = std::array<float, 10>;
  using T = std::tuple<row, row, row, row, row>;
  static_assert(static_leaf_count_v<T> == 50);
  T v{};
  float k = 0;
  for_each_leaf(v, [&](float& f) { f = k++; });
  const auto back = unflatten<T>(flatten(v));
  CHECK(std::get<4>(back)[9] == 49.0f);
}

TEST_CASE("dynamic structures: vector lengths and optionals live in the spec") {
  demo::inputs in{demo::x_t({3, 4}), demo::mask_t({3})};
  in.x(2, 3) = 7.0f;
  CHECK_FALSE(is_static_tree_v<demo::inputs>);
  CHECK(leaf_count(in) == 2);
  const tree_spec s = spec_of(in);
  CHECK(s.to_string() == "TreeSpec(demo::inputs, ['x', 'mask'], [*, TreeSpec(optional, None, [*])])");
  CHECK(s.num_leaves() == 2);

  // leaves of different types: flatten_as converts (here: to type-erased tensors)
  std::vector<any_tensor> erased;
  for_each_leaf(in, [&](const auto& t) { erased.push_back(t.erase()); });
  CHECK(erased[0].to_string() == "f32[3, 4]");
  CHECK(erased[1].to_string() == "b8[3]");

  const demo::inputs none{demo::x_t({2, 4}), std::nullopt};
  CHECK(spec_of(none).to_string() == "TreeSpec(demo::inputs, ['x', 'mask'], [*, TreeSpec(optional, None, [])])");
  CHECK(spec_of(none).num_leaves() == 1);

  const std::vector<std::vector<int>> nested{{1, 2}, {}, {3}};
  const auto flat = flatten(nested);
  CHECK(flat == std::vector<int>{1, 2, 3});
  const auto back = unflatten<std::vector<std::vector<int>>>(spec_of(nested), flat);
  CHECK(back == nested);
}
