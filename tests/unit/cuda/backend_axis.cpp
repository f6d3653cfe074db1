// The per-backend axis (tests/unit/backend_axis.hpp) on every backend this executable has: the
// Eigen backend and the CUDA backend on the emulated device, from one list of cases (the PyTorch
// parity cases), against the same reference. The CUDA backend's supports() decides which cases it
// runs; the rest are listed by name.
#include "../backend_axis.hpp"
#include "../cuda_axis.hpp"
#include "../support.hpp"

#include <typex/backend/cuda.hpp>
#include <typex/backend/cuda/emulated_device.hpp>

using namespace typex;

namespace {
typex_test::backend_under_test cuda_emulated_under_test() {
  return typex_test::cuda_backend_under_test("cuda (emulated device)", cuda::make_emulated_device());
}
}  // namespace

TEST_CASE("backend axis: every parity case on every backend present (Eigen, CUDA on the emulated device)") {
  for (const typex_test::backend_under_test& b : {typex_test::eigen_backend_under_test(), cuda_emulated_under_test()}) {
    const typex_test::axis_result r = typex_test::run_parity_axis(b);
    INFO("backend " << b.name);
    for (const std::string& f : r.failures) FAIL_CHECK(f);
    CHECK(r.run > 0);
    // (the CUDA backend runs every case: f32 and f64 products, convolutions and pooling (forward
    // and backward); integer, bool and f64 reductions; relu of integers; cross entropy over spatial
    // scores; a cat of mixed dtypes (promoted by the map kernel); embedding gradients scaled by
    // frequency; nonzero and masked_select on the stepwise engine, masked_scatter planned; and the
    // ops it has no kernel for (training-mode batch norm, addmm, label smoothing, ...) through their
    // decompositions, as program_module gives them (cuda::fallback_decompositions). A case not run
    // is a regression of supports(), of the lowering or of the fallback.)
    CHECK(r.not_run.empty());
    std::string skipped;
    for (const std::string& n : r.not_run) skipped += "\n  " + n;
    MESSAGE(b.name << ": " << r.run << " cases run, " << r.not_run.size() << " not run by this backend:" << skipped);
  }
}
