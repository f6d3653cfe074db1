// Malformed files: the corpus tests/data/malformed/ (tools/malformed_corpus.py), each file breaking
// one rule of the safetensors layer or of the program archive, each asserting its typed exception
// and message (EXPECTED). Then every prefix and single-byte corruption of two valid files: each must
// load or throw a typex::error, never crash or read outside the file (the sanitizer stages run this
// too). And valid.typex, written in Python from the documented format, must load and compute.
#include <doctest/doctest.h>
#include <typex/backend/eigen.hpp>
#include <typex/export/archive.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

using namespace typex;

namespace {
const std::string dir = std::string(TYPEX_TEST_SOURCE_DIR) + "/data/malformed/";

std::vector<std::byte> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "cannot open " << path);
  const std::vector<char> c{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  std::vector<std::byte> b(c.size());
  if (!c.empty()) std::memcpy(b.data(), c.data(), c.size());
  return b;
}

storage to_storage(const std::vector<std::byte>& b, std::size_t n) {
  storage s(n);
  if (n != 0) std::memcpy(s.data(), b.data(), n);
  return s;
}

// Reads `bytes` as the loader of its kind would, using everything it returns.
void read_all(storage bytes, bool archive) {
  if (archive) {
    const exported_program p = load_from_bytes(std::move(bytes), "corrupt");
    (void)p.to_string();
  } else {
    const safetensors_file f = safetensors_file::parse(std::move(bytes), "corrupt");
    for (const auto& [n, t] : f.tensors()) (void)t.to_string();
  }
}

// Every prefix (all under 256 bytes, then every 13th) and every single-byte change at `stride`
// positions: a typex::error or a successful read, nothing else.
void corrupt_everywhere(const std::vector<std::byte>& good, bool archive, std::size_t stride) {
  std::size_t errors = 0, reads = 0;
  auto attempt = [&](storage s) {
    try {
      read_all(std::move(s), archive);
      ++reads;
    } catch (const typex::error&) {
      ++errors;
    }
  };
  for (std::size_t n = 0; n < good.size(); n += n < 256 ? 1 : 13) attempt(to_storage(good, n));
  for (std::size_t i = 0; i < good.size(); i += stride) {
    for (const unsigned char v : {0x00, 0x7b, 0x22, 0xff}) {
      std::vector<std::byte> bad = good;
      bad[i] = std::byte(v);
      attempt(to_storage(bad, bad.size()));
    }
  }
  CHECK(errors > 0);
  CHECK(reads > 0);  // (changes inside tensor data still read)
}
}  // namespace

TEST_CASE("malformed files: every file of the corpus is refused with its typed exception and message") {
  std::ifstream expected(dir + "EXPECTED");
  REQUIRE(expected.good());
  std::string line;
  int checked = 0;
  while (std::getline(expected, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream in(line);
    std::string file, kind, message;
    in >> file >> kind;
    std::getline(in >> std::ws, message);
    const bool archive = file.ends_with(".typex");
    std::string got_kind = "(nothing)", got;
    try {
      if (archive) (void)load(dir + file);
      else (void)safetensors_file::open(dir + file).tensors();
    } catch (const format_error& e) {
      got_kind = "format";
      got = e.what();
    } catch (const unsupported_error& e) {
      got_kind = "unsupported";
      got = e.what();
    } catch (const typex::error& e) {
      got_kind = "other";
      got = e.what();
    }
    CHECK_MESSAGE(got_kind == kind, file << ": " << got);
    CHECK_MESSAGE(got.find(message) != std::string::npos, file << ": expected '" << message << "' in: " << got);
    CHECK_MESSAGE(got.find(file) != std::string::npos, file << ": the message names the file: " << got);
    ++checked;
  }
  CHECK(checked >= 45);
}

TEST_CASE("malformed files: an archive written from the documented format in Python loads and computes fc2(relu(fc1(x)))") {
  const exported_program p = load(dir + "valid.typex");
  CHECK(p.signature().parameters() == std::vector<std::string>{"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"});
  any_tensor x(dtype::f32, {2, 4});
  for (index_t i = 0; i < 8; ++i) x.data<float>()[i] = 0.25f * static_cast<float>(i) - 1.0f;
  const any_tensor y = program_module<eigen_backend>(p)({x})[0];
  REQUIRE(y.extents() == std::vector<index_t>{2, 3});
  const auto& sd = p.state_dict();
  const float* w1 = sd.at("fc1.weight").data<float>();
  const float* b1 = sd.at("fc1.bias").data<float>();
  const float* w2 = sd.at("fc2.weight").data<float>();
  const float* b2 = sd.at("fc2.bias").data<float>();
  for (index_t r = 0; r < 2; ++r) {
    float h[8];
    for (index_t j = 0; j < 8; ++j) {
      float s = b1[j];
      for (index_t k = 0; k < 4; ++k) s += x.data<float>()[r * 4 + k] * w1[j * 4 + k];
      h[j] = s > 0 ? s : 0;
    }
    for (index_t o = 0; o < 3; ++o) {
      float s = b2[o];
      for (index_t j = 0; j < 8; ++j) s += h[j] * w2[o * 8 + j];
      CHECK(y.data<float>()[r * 3 + o] == doctest::Approx(s).epsilon(1e-6));
    }
  }
}

TEST_CASE("malformed files: every prefix and single-byte corruption of a safetensors file and an archive: read or a typed error") {
  corrupt_everywhere(read_file(std::string(TYPEX_TEST_SOURCE_DIR) + "/data/safetensors/cnn_bn.safetensors"), false, 3);
  corrupt_everywhere(read_file(dir + "valid.typex"), true, 5);
}
