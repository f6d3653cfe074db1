// Tests for typex/tree/node.hpp.
#include "demo_types.hpp"

using namespace typex;

TEST_CASE("node kinds") {
  static_assert(node_kind_of<float>() == node_kind::leaf);
  static_assert(node_kind_of<demo::x_t>() == node_kind::leaf);
  static_assert(node_kind_of<std::tuple<float>>() == node_kind::tuple);
  static_assert(node_kind_of<std::vector<float>>() == node_kind::list);
  static_assert(node_kind_of<demo::inputs>() == node_kind::structure);
  static_assert(!tree_type<std::string>);
}
