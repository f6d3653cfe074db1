#include "../support.hpp"

#include <cstdint>
#include <sstream>

using namespace typex;
using batch = sym<"batch", 1, 64>;
using X = tensor<f32, batch, fix<3>>;

TEST_CASE("tensor_spec prints like torch.export") {
  using S = tensor_spec<f32, shape<batch, fix<784>>>;
  CHECK(S::type_string() == "f32[batch, 784]");
  CHECK(S(shape<batch, fix<784>>(batch(32), {})).to_string() == "f32[32, 784]");
  CHECK(tensor_spec<b8, shape<>>::type_string() == "b8[]");
}
