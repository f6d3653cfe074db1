// check_round_trip(program, inputs): the archive round trip every exported program of the suite
// goes through (typex::save / typex::load). The loaded program must print as the original, describe
// itself identically (graph, arguments, metadata, signature, specs, ranges, module call graph), hold
// the same tensors (tied ones still shared) and run on `inputs` to the same outputs, bit for bit,
// writing the same values into mutated inputs. A typed program also goes through a file and the
// typed load, typex::load<decltype(program)>.
#pragma once

#include "../support.hpp"

#include <typex/backend/eigen.hpp>
#include <typex/export/archive.hpp>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

namespace typex_test {

inline bool same_bytes(const typex::any_tensor& a, const typex::any_tensor& b) {
  return a.scalar_type() == b.scalar_type() && a.extents() == b.extents() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

inline void check_same_tensors(const typex::named_tensors& a, const typex::named_tensors& b) {
  REQUIRE(a.size() == b.size());
  auto ia = a.begin();
  auto ib = b.begin();
  for (; ia != a.end(); ++ia, ++ib) {
    CHECK(ia->first == ib->first);
    CHECK_MESSAGE(same_bytes(ia->second, ib->second), ia->first);
  }
}

inline std::vector<typex::any_tensor> clones(const std::vector<typex::any_tensor>& in) {
  std::vector<typex::any_tensor> out;
  for (const auto& t : in) out.emplace_back(t.scalar_type(), t.extents(), t.get_storage().clone());
  return out;
}

// (untyped part: also the whole check for a plain exported_program)
inline typex::exported_program check_round_trip_untyped(const typex::exported_program& ep, const std::vector<typex::any_tensor>& inputs,
                                                        const std::vector<std::byte>& bytes) {
  using namespace typex;
  storage s(bytes.size());
  std::memcpy(s.data(), bytes.data(), bytes.size());
  exported_program loaded = load_from_bytes(std::move(s), "round-trip");
  CHECK(loaded.to_string() == ep.to_string());
  CHECK(describe_archive(loaded) == describe_archive(ep));
  check_same_tensors(loaded.state_dict(), ep.state_dict());
  check_same_tensors(loaded.constants(), ep.constants());
  REQUIRE(loaded.example_inputs().size() == ep.example_inputs().size());
  for (std::size_t i = 0; i < ep.example_inputs().size(); ++i) CHECK(same_bytes(loaded.example_inputs()[i], ep.example_inputs()[i]));
  // tensors the program shares (tied weights) are shared again
  for (const auto& [n, t] : ep.state_dict())
    for (const auto& [m, u] : ep.state_dict())
      if (n < m && t.raw_data() == u.raw_data() && t.nbytes() != 0)
        CHECK_MESSAGE(loaded.state_dict().at(n).raw_data() == loaded.state_dict().at(m).raw_data(), n << " and " << m << " are tied");
  if (!inputs.empty()) {
    std::vector<any_tensor> a = clones(inputs), b = clones(inputs);
    program_module<eigen_backend> original(ep), reloaded(loaded);
    const rng_state draws = get_rng_state();  // (a program that draws: the same masks for both)
    const std::vector<any_tensor> want = original(a);
    set_rng_state(draws);
    const std::vector<any_tensor> got = reloaded(b);
    REQUIRE(got.size() == want.size());
    for (std::size_t i = 0; i < want.size(); ++i) CHECK_MESSAGE(same_bytes(got[i], want[i]), "output " << i);
    for (std::size_t i = 0; i < a.size(); ++i) CHECK_MESSAGE(same_bytes(a[i], b[i]), "mutated input " << i);
    check_same_tensors(reloaded.state_dict(), original.state_dict());  // (buffers the program wrote)
  }
  return loaded;
}

inline void check_round_trip(const typex::exported_program& ep, const std::vector<typex::any_tensor>& inputs = {}) {
  (void)check_round_trip_untyped(ep, inputs, typex::save_to_bytes(ep));
}

template <class In, class Out>
void check_round_trip(const typex::typed_program<In, Out>& ep, const std::vector<typex::any_tensor>& inputs = {}) {
  using namespace typex;
  (void)check_round_trip_untyped(ep, inputs, save_to_bytes(ep));
  const auto path = std::filesystem::temp_directory_path() / ("typex_round_trip_" + std::to_string(::getpid()) + ".typex");
  save(ep, path);
  const auto typed = load<typed_program<In, Out>>(path);
  CHECK(typed.to_string() == ep.to_string());
  CHECK(typed.specialized_numbers().size() == ep.specialized_numbers().size());
  for (std::size_t i = 0; i < ep.specialized_numbers().size(); ++i) CHECK(typed.specialized_numbers()[i] == ep.specialized_numbers()[i]);
  std::filesystem::remove(path);
}

}  // namespace typex_test
