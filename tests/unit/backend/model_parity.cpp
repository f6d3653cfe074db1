// Model-level parity with PyTorch: tests/data/parity/models.txt (tools/model_parity.py) holds the
// state dict, an input and PyTorch's output for a small MLP, CNN and transformer encoder block with
// torch's module names. Each is loaded into the typex model of the same structure, run eagerly and
// as a planned exported program, and compared with PyTorch's output.
#include "../model_cases.hpp"
#include "../support.hpp"

#include <typex/backend/eigen.hpp>

using namespace typex;
using parity_models::model_case;

namespace {
// Loads the state dict, runs eagerly and as a planned program, compares with PyTorch (atol 1e-5).
template <class M, class In>
void check_model(const model_case& c) {
  M m;
  load_state_dict(m, c.state);  // strict: every name of the typex model, as torch's
  const auto x = In::bind(c.input, "input");
  const any_tensor eager = m(x).erase();
  CHECK(typex_test::worst_abs_error(eager, c.output) <= 1e-5);
  const auto ep = export_program(m, input<"x">(x.spec()));
  auto run = program_module<eigen_backend>(ep);
  const auto out = run({c.input});
  CHECK(typex_test::worst_abs_error(out[0], c.output) <= 1e-5);
}
}  // namespace

TEST_CASE("model parity with PyTorch: MLP, CNN and transformer encoder block, eager and exported") {
  const auto models = parity_models::read_models();
  REQUIRE(models.size() == 3);
  check_model<parity_models::mlp, tensor<f32, fix<3>, fix<32>>>(models.at("mlp"));
  check_model<parity_models::cnn, tensor<f32, fix<2>, fix<1>, fix<12>, fix<12>>>(models.at("cnn"));
  check_model<parity_models::transformer, tensor<f32, fix<2>, fix<5>, fix<16>>>(models.at("transformer"));
}
