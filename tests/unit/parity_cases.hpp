// The parity cases of tests/data/parity/ops.txt (written by tools/op_parity.py from the ATen
// overloads themselves): each an op, its arguments in the schema's order and PyTorch's result.
// Read by the kernel parity test and by the gradient check (tests/unit/passes/autodiff.cpp).
#pragma once

#include "support.hpp"

#include <typex/ir/graph.hpp>
#include <typex/tensor/host_tensor.hpp>

#include <cmath>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace parity {
using namespace typex;

struct parity_case {
  std::string name, target;
  double atol = 0, rtol = 0;
  std::vector<ir::argument> args;
  std::vector<std::optional<any_tensor>> tensors;  // by argument position
  std::vector<any_tensor> list;                     // a tensor-list argument's tensors
  any_tensor expected;
};

inline dtype parse_dtype(const std::string& s) {
  for (dtype d : {dtype::f32, dtype::f64, dtype::i64, dtype::i32, dtype::b8})
    if (name(d) == s) return d;
  throw std::runtime_error("parity data: unknown dtype " + s);
}

inline double parse_real(const std::string& s) {
  if (s == "nan") return std::nan("");
  if (s == "inf") return INFINITY;
  if (s == "-inf") return -INFINITY;
  return std::stod(s);
}

inline any_tensor read_tensor(std::istringstream& in) {
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

// Element i of t as a double (NaN for a dtype the cases do not use).
inline double element(const any_tensor& t, index_t i) {
  switch (t.scalar_type()) {
    case dtype::f32: return t.data<float>()[i];
    case dtype::f64: return t.data<double>()[i];
    case dtype::i64: return static_cast<double>(t.data<std::int64_t>()[i]);
    case dtype::i32: return t.data<std::int32_t>()[i];
    case dtype::b8: return t.data<bool>()[i] ? 1.0 : 0.0;
    default: return std::nan("");
  }
}

inline std::vector<parity_case> read_cases() {
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

}  // namespace parity
