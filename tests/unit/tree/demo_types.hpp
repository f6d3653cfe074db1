// Structures shared by the pytree tests.
#pragma once

#include "../support.hpp"

#include <boost/hana/adapt_struct.hpp>

namespace demo {
using batch = typex::sym<"batch", 1, 64>;
using x_t = typex::tensor<typex::f32, batch, typex::fix<4>>;
using mask_t = typex::tensor<typex::b8, batch>;

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
