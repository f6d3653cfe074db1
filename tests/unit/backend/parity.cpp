// The Eigen backend's kernels against PyTorch: every case of tests/data/parity/ops.txt (written by
// tools/op_parity.py from the ATen overloads themselves) is run through eigen::run_kernel with the
// arguments in the schema's order, as typex's graphs record them, and compared within the case's
// tolerance; and every target the backend registers must have a case.
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
struct parity_case {
  std::string name, target;
  double atol = 0, rtol = 0;
  std::vector<ir::argument> args;
  std::vector<std::optional<any_tensor>> tensors;  // by argument position
  std::vector<any_tensor> list;                     // a tensor-list argument's tensors
  any_tensor expected;
};

dtype parse_dtype(const std::string& s) {
  for (dtype d : {dtype::f32, dtype::f64, dtype::i64, dtype::i32, dtype::b8})
    if (name(d) == s) return d;
  throw std::runtime_error("parity data: unknown dtype " + s);
}

double parse_real(const std::string& s) {
  if (s == "nan") return std::nan("");
  if (s == "inf") return INFINITY;
  if (s == "-inf") return -INFINITY;
  return std::stod(s);
}

any_tensor read_tensor(std::istringstream& in) {
  std::string ds;
  std::size_t rank = 0;
  in >> ds >> rank;
  std::vector<index_t> extents(rank);
  for (auto& e : extents) in >> e;
  any_tensor t(parse_dtype(ds), extents);
  for (index_t i = 0; i < t.numel(); ++i) {
    std::string v;
    in >> v;
    switch (t.scalar_type()) {
      case dtype::f32: t.data<float>()[i] = static_cast<float>(parse_real(v)); break;
      case dtype::f64: t.data<double>()[i] = parse_real(v); break;
      case dtype::i64: t.data<std::int64_t>()[i] = std::stoll(v); break;
      case dtype::i32: t.data<std::int32_t>()[i] = static_cast<std::int32_t>(std::stol(v)); break;
      case dtype::b8: t.data<bool>()[i] = v == "1"; break;
      default: break;
    }
  }
  if (!in) throw std::runtime_error("parity data: a tensor is cut short");
  return t;
}

std::vector<parity_case> read_cases() {
  const std::string path = std::string(TYPEX_TEST_SOURCE_DIR) + "/data/parity/ops.txt";
  std::ifstream file(path);
  REQUIRE_MESSAGE(file.good(), "cannot open " << path);
  std::vector<parity_case> cases;
  std::string line;
  while (std::getline(file, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream in(line);
    std::string word;
    in >> word;
    if (word == "case") {
      cases.emplace_back();
      in >> cases.back().name >> cases.back().target >> cases.back().atol >> cases.back().rtol;
    } else if (word == "arg") {
      parity_case& c = cases.back();
      std::string kind;
      in >> kind;
      std::optional<any_tensor> tensor;
      if (kind == "t") {
        tensor = read_tensor(in);
        c.args.emplace_back(ir::value_ref{static_cast<ir::node_id>(c.args.size())});
      } else if (kind == "i") {
        std::int64_t v = 0;
        in >> v;
        c.args.emplace_back(v);
      } else if (kind == "f") {
        std::string v;
        in >> v;
        c.args.emplace_back(parse_real(v));
      } else if (kind == "b") {
        int v = 0;
        in >> v;
        c.args.emplace_back(v != 0);
      } else if (kind == "n") {
        c.args.emplace_back(ir::none_t{});
      } else if (kind == "s") {
        std::string v;
        in >> v;
        c.args.emplace_back(v);
      } else if (kind == "d") {
        std::string v;
        in >> v;
        c.args.emplace_back(parse_dtype(v));
      } else if (kind == "L") {
        std::size_t n = 0;
        in >> n;
        for (std::size_t k = 0; k < n; ++k) c.list.push_back(read_tensor(in));
        c.args.emplace_back(std::vector<ir::value_ref>(n));
      } else if (kind == "l") {
        std::size_t n = 0;
        in >> n;
        std::vector<std::int64_t> v(n);
        for (auto& x : v) in >> x;
        c.args.emplace_back(std::move(v));
      } else {
        FAIL("parity data: unknown argument kind " << kind << " in " << c.name);
      }
      c.tensors.push_back(std::move(tensor));
    } else if (word == "out") {
      cases.back().expected = read_tensor(in);
    } else if (word != "end") {
      FAIL("parity data: unexpected line: " << line);
    }
  }
  return cases;
}

double element(const any_tensor& t, index_t i) {
  switch (t.scalar_type()) {
    case dtype::f32: return t.data<float>()[i];
    case dtype::f64: return t.data<double>()[i];
    case dtype::i64: return static_cast<double>(t.data<std::int64_t>()[i]);
    case dtype::i32: return t.data<std::int32_t>()[i];
    case dtype::b8: return t.data<bool>()[i] ? 1.0 : 0.0;
    default: return std::nan("");
  }
}

// "" when got matches the case, else what differs.
std::string compare(const parity_case& c, const any_tensor& got) {
  const any_tensor& want = c.expected;
  if (got.scalar_type() != want.scalar_type() || got.extents() != want.extents())
    return "got " + got.to_string() + ", PyTorch gives " + want.to_string();
  for (index_t i = 0; i < want.numel(); ++i) {
    const double g = element(got, i), w = element(want, i);
    const bool same = (std::isnan(g) && std::isnan(w)) || g == w || std::abs(g - w) <= c.atol + c.rtol * std::abs(w);
    if (!same) {
      std::ostringstream s;
      s.precision(17);
      s << "element " << i << ": got " << g << ", PyTorch gives " << w << " (atol " << c.atol << ", rtol " << c.rtol << ")";
      return s.str();
    }
  }
  return "";
}
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
      problem = compare(c, eigen::run_kernel(eigen::kernel_args(typex::find_op(c.target), c.args, tensors, nullptr, list)));
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
    CHECK_MESSAGE(name.starts_with("aten."), name);
    CHECK(!id.short_name().empty());
    CHECK(typex::find_op(name) == id);
  });
  CHECK(ops == typex::builtin_ops::size);
  REQUIRE(ops >= 95);
  // the backend runs exactly the registry's ops (no kernel keyed by a name the registry lacks)
  const auto kernels = eigen::kernel_ops();
  CHECK(kernels.size() == ops);
  // and every case names a registered op (a renamed op must not leave its cases unrun)
  for (const std::string& t : covered) CHECK_MESSAGE(typex::find_op(t), "parity cases for unknown " << t);
}
