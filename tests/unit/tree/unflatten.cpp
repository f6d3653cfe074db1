// Tests for typex/tree/unflatten.hpp.
#include "demo_types.hpp"

using namespace typex;

TEST_CASE("unflatten against a spec that does not fit throws, naming the path") {
  const std::tuple<std::vector<int>, int> v{{1, 2}, 3};
  const auto s = spec_of(v);
  const std::vector<int> leaves{1, 2, 3};
  CHECK(std::get<0>(unflatten<std::tuple<std::vector<int>, int>>(s, leaves)).size() == 2);
  CHECK(typex_test::message_of<tree_error>([&] { (void)unflatten<std::tuple<int, int>>(s, leaves); }) ==
        "typex::unflatten: at tree[0]: the spec has a list where the type int has a leaf");
  CHECK(typex_test::message_of<tree_error>([&] { (void)unflatten<std::tuple<std::vector<int>, int>>(s, std::vector<int>{1}); }) ==
        "typex::unflatten: the spec TreeSpec(tuple, None, [TreeSpec(list, None, [*, *]), *]) has 3 leaves, but 1 were given");
  const demo::pair_of p{{1.f, 2}, {3.0, 4.0}};
  using other = std::tuple<std::pair<float, int>, std::array<double, 2>>;  // same leaves, another structure
  CHECK(typex_test::message_of<tree_error>([&] { (void)unflatten<other>(spec_of(p), flatten_as<double>(p)); }) ==
        "typex::unflatten: at tree: the spec has a struct where the type " +
            std::string(detail::raw_type_name<other>()) + " has a tuple");
}
