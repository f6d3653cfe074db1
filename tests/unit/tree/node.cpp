#include "../support.hpp"

#include <boost/hana/adapt_struct.hpp>

using namespace typex;

namespace demo {
using batch = sym<"batch", 1, 64>;
using x_t = tensor<f32, batch, fix<4>>;
using mask_t = tensor<b8, batch>;

struct inputs {
  x_t x;
  std::optional<mask_t> mask;
};
struct pair_of {
  std::pair<float, int> p;
  std::array<double, 2> a;
};
}  // namespace demo
BOOST_HANA_ADAPT_STRUCT(demo::inputs, x, mask);
BOOST_HANA_ADAPT_STRUCT(demo::pair_of, p, a);

TEST_CASE("node kinds") {
  static_assert(node_kind_of<float>() == node_kind::leaf);
  static_assert(node_kind_of<demo::x_t>() == node_kind::leaf);
  static_assert(node_kind_of<std::tuple<float>>() == node_kind::tuple);
  static_assert(node_kind_of<std::vector<float>>() == node_kind::list);
  static_assert(node_kind_of<demo::inputs>() == node_kind::structure);
  static_assert(!tree_type<std::string>);
}
