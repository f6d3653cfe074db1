// libFuzzer target: the two file readers, on any bytes.
//
// Each input is read as a safetensors file (safetensors_file::parse, then every tensor) and as a
// program archive (typex::load_from_bytes, then printing the program and saving it again, whose
// bytes must load to the same program). Either reader must return or throw a typex::error; a crash,
// a sanitizer report, another exception or a save/load mismatch is a finding and aborts. Seeds:
// tests/robustness/files_corpus/ (tools/malformed_corpus.py: the malformed corpus, a valid archive,
// valid safetensors files).
//
//   build/clang/tests/typex_fuzz_files -runs=100000 <dir> tests/robustness/files_corpus
#include <typex/export/archive.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

namespace {
using namespace typex;

[[noreturn]] void finding(const char* what) {
  std::fprintf(stderr, "typex fuzz finding: %s\n", what);
  std::abort();
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
  } catch (const typex::error&) {
  } catch (const std::bad_alloc&) {
  } catch (...) {
    finding("the archive reader threw something other than a typex::error");
  }
  return 0;
}
