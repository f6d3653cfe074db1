// The Eigen backend's kernels against PyTorch: every case of tests/data/parity/ops.txt (written by
// tools/op_parity.py from the ATen overloads themselves) is run through eigen::run_kernel with the
// arguments in the schema's order, as typex's graphs record them, and compared within the case's
// tolerance; and every target the backend registers must have a case.
#include "../backend_axis.hpp"
#include "../parity_cases.hpp"
#include "../support.hpp"

#include <typex/backend/eigen.hpp>
#include <typex/ir/verifier.hpp>

#include <cmath>
#include <fstream>
#include <map>
#include <algorithm>
#include <set>
#include <sstream>

using namespace typex;

namespace {
using parity::parity_case;
using parity::read_cases;


using typex_test::parity_difference;  // ("" when got matches the case, else what differs)
}  // namespace

TEST_CASE("parity: every kernel case matches PyTorch within its tolerance") {
  const std::vector<parity_case> cases = read_cases();
  REQUIRE(cases.size() >= 90);
  for (const parity_case& c : cases) {
    std::vector<const any_tensor*> tensors;
    for (const auto& t : c.tensors) tensors.push_back(t ? &*t : nullptr);
    std::vector<const any_tensor*> list;
    for (const auto& t : c.list) list.push_back(&t);
    // the case's arguments are a call its op's schema accepts (PyTorch wrote them, in ATen's order)
    const std::string mismatch = ir::argument_mismatch(typex::find_op(c.target), c.args);
    CHECK_MESSAGE(mismatch.empty(), c.name << " (" << c.target << "): " << mismatch);
    std::string problem;
    try {
      problem = parity_difference(c, eigen::run_kernel(eigen::kernel_args(typex::find_op(c.target), c.args, tensors, nullptr, list)));
    } catch (const std::exception& e) {
      problem = std::string("threw: ") + e.what();
    }
    CHECK_MESSAGE(problem.empty(), c.name << " (" << c.target << "): " << problem);
  }
}

TEST_CASE("registry: every op has a parity case, an Eigen kernel and a printed name") {
  std::set<std::string> covered;
  for (const parity_case& c : read_cases()) covered.insert(c.target);
  std::size_t ops = 0;
  typex::for_each_op(typex::builtin_ops{}, [&](auto type) {
    using Op = typename decltype(type)::type;
    constexpr typex::op_id id = typex::op_id_of<Op>;
    const std::string name(id.name());
    ++ops;
    CHECK_MESSAGE(covered.contains(name), "no parity case for " << name);
    const bool has_kernel = eigen::find_kernel(id) != nullptr;
    CHECK_MESSAGE(has_kernel, "no Eigen kernel registered for " << name);
    // printed as torch.export prints it: aten.<op>.<overload>, and found again by that name
    CHECK_MESSAGE(std::count(name.begin(), name.end(), '.') == 2, name);
    // (typex's own ops, which no ATen overload matches, are typex.<op>.<overload>: the max-pool
    // gradient that finds its maxima again)
    CHECK_MESSAGE((name.starts_with("aten.") || name.starts_with("typex.")), name);
    CHECK(!id.short_name().empty());
    CHECK(typex::find_op(name) == id);
  });
  CHECK(ops == typex::builtin_ops::size);
  REQUIRE(ops >= 103);
  // the backend runs exactly the registry's ops (no kernel keyed by a name the registry lacks)
  const auto kernels = eigen::kernel_ops();
  CHECK(kernels.size() == ops);
  // and every case names a registered op (a renamed op must not leave its cases unrun)
  for (const std::string& t : covered) CHECK_MESSAGE(typex::find_op(t), "parity cases for unknown " << t);
}

// The per-backend axis (tests/unit/backend_axis.hpp) on the Eigen backend: each case as a one-node
// program through program_module's path (supports(), the planner, the lowering), not the eager
// kernel the test above calls. The Eigen backend runs every op: no case is left out.
TEST_CASE("backend axis: every parity case as a program on the Eigen backend") {
  const typex_test::axis_result r = typex_test::run_parity_axis(typex_test::eigen_backend_under_test());
  for (const std::string& f : r.failures) FAIL_CHECK(f);
  CHECK(r.not_run.empty());
  CHECK(r.run >= 90);
  MESSAGE("eigen: " << r.run << " cases run");
}
