// libFuzzer target: the two file readers, on any bytes.
//
// Each input is read as a safetensors file (safetensors_file::parse, then every tensor) and as a
// program archive (typex::load_from_bytes, then printing the program and saving it again, whose
// bytes must load to the same program); a program that loads is then run on the Eigen backend with
// zero inputs of its recorded shapes (each symbol at 2, or its range's nearest end), small programs
// only, so that whatever a file can make the backend do (arguments out of their domain, recorded
// shapes that lie) is exercised too. Either reader must return or throw a typex::error; a crash,
// a sanitizer report, another exception or a save/load mismatch is a finding and aborts. Seeds:
// tests/robustness/files_corpus/ (tools/malformed_corpus.py: the malformed corpus, a valid archive,
// valid safetensors files).
//
//   build/clang/tests/typex_fuzz_files -runs=100000 <dir> tests/robustness/files_corpus
#include <typex/backend/eigen.hpp>
#include <typex/export/archive.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <optional>
#include <algorithm>

namespace {
using namespace typex;

[[noreturn]] void finding(const char* what) {
  std::fprintf(stderr, "typex fuzz finding: %s\n", what);
  std::abort();
}

// Zero inputs of the program's recorded user-input shapes, every symbol bound to 2 clamped into its
// range; nullopt when a shape cannot be made or is larger than a fuzz run should allocate.
std::optional<std::vector<any_tensor>> inputs_for(const exported_program& p) {
  symbol_table symbols;
  std::vector<any_tensor> out;
  for (const ir::node_id id : p.user_inputs()) {
    const ir::tensor_meta& m = p.graph()[id].vals.front();
    std::vector<index_t> extents;
    index_t numel = 1;
    for (const ir::sym_expr& e : m.shape) {
      if (e.is_symbol() && !symbols.value(e.name())) {
        index_t v = 2;
        if (const value_range* r = p.ranges().find(e.name())) v = std::clamp<index_t>(v, r->lo, std::min<index_t>(r->hi, 64));
        symbols.bind(e.name(), v, "fuzz");
      }
      const auto v = e.evaluate(symbols);
      if (!v || *v < 0 || *v > 64) return std::nullopt;
      numel *= *v;
      if (numel > 4096) return std::nullopt;
      extents.push_back(*v);
    }
    out.emplace_back(m.scalar_type, std::move(extents));
  }
  return out;
}

storage copy_of(const std::uint8_t* data, std::size_t size) {
  storage s(size);
  if (size != 0) std::memcpy(s.data(), data, size);
  return s;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const safetensors_file f = safetensors_file::parse(copy_of(data, size), "fuzz");
    for (const auto& e : f.entries()) {
      try {
        const any_tensor t = f.tensor(e);
        if (t.nbytes() != e.end - e.begin) finding("a tensor's size differs from its byte range");
      } catch (const unsupported_error&) {
      }
    }
  } catch (const typex::error&) {
  } catch (const std::bad_alloc&) {
  } catch (...) {
    finding("the safetensors reader threw something other than a typex::error");
  }
  try {
    const exported_program p = load_from_bytes(copy_of(data, size), "fuzz");
    const std::string printed = p.to_string();
    const std::vector<std::byte> again = save_to_bytes(p);
    const exported_program q = load_from_bytes(copy_of(reinterpret_cast<const std::uint8_t*>(again.data()), again.size()), "again");
    if (q.to_string() != printed || describe_archive(q) != describe_archive(p)) finding("a loaded archive saved again loads differently");
    if (p.graph().size() <= 96) {
      if (auto in = inputs_for(p)) {
        try {
          auto run = program_module<eigen_backend>(p);
          (void)run(*in);
          (void)run(*in);  // (the second call runs the plan the first one checked)
        } catch (const typex::error&) {
        }
      }
    }
  } catch (const typex::error&) {
  } catch (const std::bad_alloc&) {
  } catch (...) {
    finding("the archive reader threw something other than a typex::error");
  }
  return 0;
}
