// Helpers shared by the unit tests.
#pragma once

#include <doctest/doctest.h>
#include <typex/typex.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace typex_test {

// Heap allocations so far in this process (tests/unit/alloc_counter.cpp).
long allocation_count() noexcept;

// A host tensor of type T with values uniform in [-1, 1) from a seeded generator.
template <class T>
T random_tensor(std::initializer_list<typex::index_t> extents, std::uint64_t seed) {
  T t(extents);
  typex::init::generator g(seed, "input");
  typex::init::uniform_(t, -1.0, 1.0, g);
  return t;
}

// Collects the shape requirements recorded while it is alive.
struct recorder : typex::requirement_recorder {
  std::vector<typex::shape_requirement> seen;
  typex::scoped_requirement_recorder guard{*this};
  void record(typex::shape_requirement r) override { seen.push_back(std::move(r)); }
};

template <class S>
std::string type_str() {
  return S::type_string();
}

template <class A, class B>
inline constexpr bool same = std::is_same_v<std::remove_cvref_t<A>, std::remove_cvref_t<B>>;

// The largest |got - want| over two f32 tensors of one shape (a PyTorch reference's error).
inline double worst_abs_error(const typex::any_tensor& got, const typex::any_tensor& want) {
  REQUIRE(got.extents() == want.extents());
  double worst = 0;
  for (typex::index_t i = 0; i < want.numel(); ++i) {
    const double d = double(got.data<float>()[i]) - double(want.data<float>()[i]);
    worst = d > worst ? d : (-d > worst ? -d : worst);
  }
  return worst;
}

// What a thrown exception says; empty when nothing was thrown.
template <class E, class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return {};
}

// Compares `actual` with tests/golden/<name>. TYPEX_UPDATE_GOLDEN=1 in the environment rewrites the
// file instead (then review the diff and commit it).
inline void check_golden_file(const std::string& path, const std::string& actual);
inline void check_golden(const std::string& name, const std::string& actual) {
  check_golden_file(std::string(TYPEX_TEST_SOURCE_DIR) + "/golden/" + name, actual);
}
// (the same for a file anywhere: docs/reference_table.md)
inline void check_golden_file(const std::string& path, const std::string& actual) {
  if (const char* update = std::getenv("TYPEX_UPDATE_GOLDEN"); update != nullptr && std::string(update) == "1") {
    std::ofstream(path, std::ios::binary) << actual;
    return;
  }
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "missing golden file " << path << " (run with TYPEX_UPDATE_GOLDEN=1 to create it)");
  std::ostringstream expected;
  expected << in.rdbuf();
  CHECK_MESSAGE(expected.str() == actual, "output differs from " << path << ":\n" << actual);
}

// Dims used by the shape-rule tests: one test body runs over a static, a symbolic and a dynamic
// version of the same extent (STYLE.md 11).
using m_sym = typex::sym<"m", 1, 4096>;
using k_sym = typex::sym<"k", 1, 4096>;

// The extent 4 as a dim of kind D.
template <class D>
D rows() {
  if constexpr (typex::is_static_dim_v<D>) return D{};
  else return D(4);
}

}  // namespace typex_test
