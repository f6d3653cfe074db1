// typex/tensor/safetensors.hpp — safetensors files: read (memory-mapped, validated) and write.
//
// The format Hugging Face and `safetensors.torch.save_file` write: an 8-byte little-endian header
// length N, N bytes of JSON ({"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [b, e]},
// ..., "__metadata__": {"key": "value"}}), then the data, each tensor's bytes at [b, e) of it,
// row-major, little-endian, the tensors covering the data exactly.
//
//   auto f = typex::safetensors_file::open("model.safetensors");   // mapped, validated
//   typex::any_tensor w = f.tensor("fc1.weight");                  // shares the mapping
//   typex::load_state_dict(model, f.tensors());                    // into a module, by FQN
//   typex::save_safetensors("out.safetensors", typex::state_dict(model));
//
// Reading validates everything before handing out a byte: the header length against the file, the
// JSON (nesting, duplicate names, types), every dtype, shape and byte range (sizes overflow-checked;
// ranges inside the data, neither overlapping nor leaving gaps), bool bytes (0 or 1) when a bool
// tensor is read. A file that breaks any of this is a typex::format_error naming the file and the
// first thing wrong; nothing outside the file's bytes is ever read. A tensor whose bytes are aligned
// for its dtype (always, in files typex or the reference writer makes) shares the file's memory; the
// mapping is private (copy-on-write), so writing to such a tensor never changes the file. A file
// changed by another process while mapped is undefined behaviour, as for any mapped reader: read it
// with read_mode::copy then.
#pragma once

#include <typex/core/dtype.hpp>
#include <typex/core/error.hpp>
#include <typex/tensor/named_tensors.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace typex {

// How a file's bytes reach memory: mapped (no copy; the default where the system maps files) or
// read into memory once.
enum class read_mode : unsigned char { map, copy };

// One tensor as a safetensors header lists it.
struct safetensors_entry {
  std::string name;
  std::string dtype_name;            // as the file spells it: "F32", "BF16", "F8_E4M3"
  std::optional<dtype> scalar_type;  // nullopt: a safetensors dtype typex does not hold (U16, F8_*, ...)
  std::vector<index_t> shape;
  std::uint64_t begin = 0, end = 0;  // the bytes [begin, end) of the data section
};

// The safetensors spelling of a dtype ("F32", "BOOL", "BF16").
constexpr std::string_view safetensors_dtype_name(dtype d) noexcept {
  switch (d) {
    case dtype::b8: return "BOOL";
    case dtype::u8: return "U8";
    case dtype::i8: return "I8";
    case dtype::i16: return "I16";
    case dtype::i32: return "I32";
    case dtype::i64: return "I64";
    case dtype::f16: return "F16";
    case dtype::bf16: return "BF16";
    case dtype::f32: return "F32";
    case dtype::f64: return "F64";
  }
  return "?";
}

// A string->string map kept in insertion order (a header's __metadata__).
using string_pairs = std::vector<std::pair<std::string, std::string>>;

class safetensors_file {
 public:
  // The reference reader's limit on the header: a larger length is refused before anything else.
  static constexpr std::uint64_t max_header_bytes = 100'000'000;

  // Opens and validates `path`. file_error when it cannot be opened or read; format_error when its
  // content is not a valid safetensors file.
  TYPEX_API static safetensors_file open(const std::filesystem::path& path, read_mode mode = read_mode::map);
  // Validates the bytes of a whole file held in `bytes` (kept alive by the result); `source` names
  // them in messages.
  TYPEX_API static safetensors_file parse(storage bytes, std::string source = "<buffer>");

  // The path given to open(), or parse()'s source.
  const std::string& source() const noexcept { return source_; }
  // The tensors, in the header's order.
  const std::vector<safetensors_entry>& entries() const noexcept { return entries_; }
  TYPEX_API const safetensors_entry* find(std::string_view name) const;
  bool contains(std::string_view name) const { return find(name) != nullptr; }
  // The header's __metadata__, in its order.
  const string_pairs& metadata() const noexcept { return metadata_; }
  TYPEX_API std::optional<std::string_view> metadata(std::string_view key) const;

  std::uint64_t header_bytes() const noexcept { return header_bytes_; }  // N
  std::uint64_t data_offset() const noexcept { return 8 + header_bytes_; }
  std::uint64_t size() const noexcept { return bytes_.bytes(); }  // the whole file
  bool mapped() const noexcept { return mapped_; }

  // The tensor `name` (argument_error naming the file when it has none): it shares the file's
  // memory when its bytes are aligned for its dtype, else it is a copy. unsupported_error for a
  // dtype typex does not hold; format_error for a bool byte other than 0 or 1.
  TYPEX_API any_tensor tensor(std::string_view name) const;
  TYPEX_API any_tensor tensor(const safetensors_entry& e) const;
  // Every tensor, in the header's order.
  TYPEX_API named_tensors tensors() const;
  // An entry's bytes, as they lie in the file.
  std::span<const std::byte> bytes(const safetensors_entry& e) const noexcept {
    return {bytes_.data() + data_offset() + e.begin, static_cast<std::size_t>(e.end - e.begin)};
  }
  // Whether the tensor would share the file's memory (its bytes are aligned for its dtype).
  TYPEX_API bool zero_copy(const safetensors_entry& e) const noexcept;

 private:
  safetensors_file() = default;

  storage bytes_;  // the whole file
  std::string source_;
  std::vector<safetensors_entry> entries_;
  std::unordered_map<std::string, std::size_t> index_;
  string_pairs metadata_;
  std::uint64_t header_bytes_ = 0;
  bool mapped_ = false;
};

// Every tensor of a safetensors file, by name (the file stays mapped while a tensor uses it).
TYPEX_API named_tensors load_safetensors(const std::filesystem::path& path, read_mode mode = read_mode::map);

// Writes `tensors` as a safetensors file that any safetensors reader reads: tensors in order of
// decreasing item size (so that each lies aligned for its dtype), the data starting at a multiple
// of 64 bytes, `metadata` as __metadata__. The file is written next to `path` and renamed over it
// once complete: a failure (file_error) leaves any previous file as it was. Tensors sharing storage
// (tied weights) are written under each name. argument_error for a tensor named "__metadata__", a
// name or metadata that is not UTF-8, or a metadata key given twice.
TYPEX_API void save_safetensors(const std::filesystem::path& path, const named_tensors& tensors, const string_pairs& metadata = {});
// The same file's bytes, in memory.
TYPEX_API std::vector<std::byte> to_safetensors(const named_tensors& tensors, const string_pairs& metadata = {});

namespace detail {
// The header's JSON must nest no deeper than `max_depth` (objects and arrays): checked before a
// parser recurses into hostile input. Counts outside strings only.
TYPEX_API bool json_depth_within(std::string_view text, int max_depth) noexcept;

// Writes the bytes of a file produced piecewise: a temporary beside `path`, renamed over it when
// complete (file_error on any failure, the temporary removed).
class file_writer {
 public:
  TYPEX_API explicit file_writer(const std::filesystem::path& path);
  TYPEX_API ~file_writer();
  file_writer(const file_writer&) = delete;
  file_writer& operator=(const file_writer&) = delete;
  TYPEX_API void write(const void* data, std::size_t n);
  TYPEX_API void commit();

 private:
  std::filesystem::path path_, tmp_;
  void* file_ = nullptr;  // (std::FILE*)
};
}  // namespace detail

}  // namespace typex

// ---- definitions: compiled once in typex::runtime, or inline here in header-only builds
// (config.hpp: TYPEX_SEPARATE_COMPILATION) ----
#if TYPEX_HEADER_DEFINITIONS
#include <typex/core/sizes.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <unordered_set>
#if TYPEX_HAS_MMAP
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

namespace typex::detail {
// Every dtype the format defines, with its size in bits (sub-byte ones pack several to a byte).
struct safetensors_dtype {
  std::string_view name;
  unsigned bits;
  std::optional<dtype> typex;
};
inline constexpr safetensors_dtype safetensors_dtypes[] = {
    {"BOOL", 8, dtype::b8},   {"U8", 8, dtype::u8},       {"I8", 8, dtype::i8},        {"I16", 16, dtype::i16},
    {"I32", 32, dtype::i32},  {"I64", 64, dtype::i64},    {"F16", 16, dtype::f16},     {"BF16", 16, dtype::bf16},
    {"F32", 32, dtype::f32},  {"F64", 64, dtype::f64},    {"U16", 16, std::nullopt},   {"U32", 32, std::nullopt},
    {"U64", 64, std::nullopt}, {"F8_E4M3", 8, std::nullopt}, {"F8_E5M2", 8, std::nullopt}, {"F8_E8M0", 8, std::nullopt},
    {"C64", 64, std::nullopt}, {"F4", 4, std::nullopt},   {"F6_E2M3", 6, std::nullopt}, {"F6_E3M2", 6, std::nullopt},
};

template <class F>
[[noreturn]] TYPEX_NOINLINE TYPEX_COLD void bad_file(std::string_view source, F&& f) {
  raise<format_error>([&](auto& w) {
    w.put("typex: "); w.put(source); w.put(": "); f(w);
  });
}

[[noreturn]] TYPEX_NOINLINE TYPEX_COLD inline void file_failed(std::string_view what, const std::filesystem::path& path, int err) {
  raise<file_error>([&](auto& w) {
    w.put("typex: cannot "); w.put(what); w.put(" '"); w.put(path.string()); w.put("': "); w.put(std::strerror(err));
  });
}

#if TYPEX_HAS_MMAP
// Memory for a whole file read in (read_mode::copy), not zeroed (every byte is read into it, or the
// read fails). A large one is its own anonymous mapping with transparent huge pages asked for:
// faulting in a gigabyte 4 KiB at a time costs several times the read itself.
inline storage read_buffer(std::size_t size) {
  constexpr std::size_t huge = std::size_t{32} << 20;  // (below it the allocator reuses freed memory well)
  if (size < huge) return storage::uninitialized(size);
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return storage::uninitialized(size);
#ifdef MADV_HUGEPAGE
  (void)::madvise(p, size, MADV_HUGEPAGE);  // (a hint: without it, ordinary pages)
#endif
  return storage::adopt(std::shared_ptr<std::byte>(static_cast<std::byte*>(p), [size](std::byte* q) { ::munmap(q, size); }), size);
}
#endif

inline void put_u64(auto& w, std::uint64_t v) {
  w.put(std::to_string(v));
}
}  // namespace typex::detail

TYPEX_API auto typex::detail::json_depth_within(std::string_view text, int max_depth) noexcept -> bool {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '{' || c == '[') {
      if (++depth > max_depth) return false;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return true;
}

TYPEX_API auto typex::safetensors_file::open(const std::filesystem::path& path, read_mode mode) -> safetensors_file {
  storage bytes;
  bool mapped = false;
#if TYPEX_HAS_MMAP
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) detail::file_failed("open", path, errno);
  struct ::stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    detail::file_failed("read the size of", path, err);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    detail::raise<file_error>([&](auto& w) { w.put("typex: '"); w.put(path.string()); w.put("' is not a regular file"); });
  }
  const auto size = static_cast<std::size_t>(st.st_size);
  if (mode == read_mode::map && size > 0) {
    // private and writable: a tensor written in place gets its own copy of the page (copy-on-write)
    void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      detail::file_failed("map", path, err);
    }
    ::close(fd);
    bytes = storage::adopt(std::shared_ptr<std::byte>(static_cast<std::byte*>(p), [size](std::byte* q) { ::munmap(q, size); }), size);
    mapped = true;
  } else {
    bytes = detail::read_buffer(size);
    std::size_t done = 0;
    while (done < size) {
      const ::ssize_t n = ::read(fd, bytes.data() + done, size - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int err = n < 0 ? errno : EIO;
        ::close(fd);
        detail::file_failed("read", path, err);
      }
      done += static_cast<std::size_t>(n);
    }
    ::close(fd);
  }
#else
  (void)mode;
  std::FILE* f = std::fopen(path.string().c_str(), "rb");
  if (f == nullptr) detail::file_failed("open", path, errno);
  std::error_code ec;
  const auto size = static_cast<std::size_t>(std::filesystem::file_size(path, ec));
  if (ec) {
    std::fclose(f);
    detail::file_failed("read the size of", path, ec.value());
  }
  bytes = storage::uninitialized(size);
  if (std::fread(bytes.data(), 1, size, f) != size) {
    std::fclose(f);
    detail::file_failed("read", path, EIO);
  }
  std::fclose(f);
#endif
  safetensors_file file = parse(std::move(bytes), path.string());
  file.mapped_ = mapped;
  return file;
}

TYPEX_API auto typex::safetensors_file::parse(storage bytes, std::string source) -> safetensors_file {
  using json = nlohmann::ordered_json;
  if constexpr (std::endian::native != std::endian::little) {
    detail::raise_message<unsupported_error>("typex: safetensors files are little-endian; reading them on a big-endian machine is not supported");
  }
  safetensors_file file;
  file.source_ = std::move(source);
  const std::string_view src = file.source_;
  const std::uint64_t size = bytes.bytes();
  if (size < 8) {
    detail::bad_file(src, [&](auto& w) {
      w.put("the file is "); detail::put_u64(w, size); w.put(" bytes long, too short for a safetensors file (it starts with an 8-byte header length)");
    });
  }
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<std::uint8_t>(bytes.data()[i]);
  if (n > max_header_bytes) {
    detail::bad_file(src, [&](auto& w) {
      w.put("the header length is "); detail::put_u64(w, n); w.put(" bytes, more than the format's limit of ");
      detail::put_u64(w, max_header_bytes); w.put(" (not a safetensors file, or a corrupted one)");
    });
  }
  if (n > size - 8) {
    detail::bad_file(src, [&](auto& w) {
      w.put("the header length is "); detail::put_u64(w, n); w.put(" bytes, but only "); detail::put_u64(w, size - 8);
      w.put(" follow the length (the file is truncated, or not a safetensors file)");
    });
  }
  const std::string_view text(reinterpret_cast<const char*>(bytes.data() + 8), static_cast<std::size_t>(n));
  if (text.empty() || text.front() != '{') {
    detail::bad_file(src, [&](auto& w) { w.put("the header does not start with '{' (a safetensors header is a JSON object)"); });
  }
  if (!detail::json_depth_within(text, 3)) {
    detail::bad_file(src, [&](auto& w) { w.put("the header nests deeper than a safetensors header does (objects of objects of lists)"); });
  }
  std::string duplicate;
  json header;
  try {
    std::unordered_set<std::string> seen;
    header = json::parse(text, [&](int depth, json::parse_event_t event, json& value) {
      if (depth == 1 && event == json::parse_event_t::key && duplicate.empty() && !seen.insert(value.get<std::string>()).second)
        duplicate = value.get<std::string>();
      return true;
    });
  } catch (const json::exception& e) {
    detail::bad_file(src, [&](auto& w) { w.put("the header is not valid JSON: "); w.put(e.what()); });
  }
  if (!duplicate.empty()) {
    detail::bad_file(src, [&](auto& w) { w.put("the header names '"); w.put(duplicate); w.put("' twice"); });
  }
  if (!header.is_object()) {
    detail::bad_file(src, [&](auto& w) { w.put("the header is not a JSON object"); });
  }
  const std::uint64_t data_size = size - 8 - n;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& key = it.key();
    const json& v = it.value();
    if (key == "__metadata__") {
      if (!v.is_object()) detail::bad_file(src, [&](auto& w) { w.put("__metadata__ is not an object of strings"); });
      for (auto m = v.begin(); m != v.end(); ++m) {
        if (!m.value().is_string()) {
          detail::bad_file(src, [&](auto& w) {
            w.put("__metadata__ '"); w.put(m.key()); w.put("' is not a string (the format's metadata maps strings to strings)");
          });
        }
        file.metadata_.emplace_back(m.key(), m.value().get<std::string>());
      }
      continue;
    }
    auto bad = [&](auto&& what) {
      detail::bad_file(src, [&](auto& w) { w.put("tensor '"); w.put(key); w.put("': "); what(w); });
    };
    if (!v.is_object()) bad([](auto& w) { w.put("its entry is not an object (dtype, shape, data_offsets)"); });
    safetensors_entry e;
    e.name = key;
    const auto dt = v.find("dtype");
    if (dt == v.end() || !dt->is_string()) bad([](auto& w) { w.put("no dtype string"); });
    e.dtype_name = dt->get<std::string>();
    const detail::safetensors_dtype* info = nullptr;
    for (const auto& d : detail::safetensors_dtypes)
      if (d.name == e.dtype_name) info = &d;
    if (info == nullptr) {
      bad([&](auto& w) {
        w.put("unknown dtype '"); w.put(e.dtype_name); w.put("' (the format's dtypes:");
        for (const auto& d : detail::safetensors_dtypes) { w.put(' '); w.put(d.name); }
        w.put(')');
      });
    }
    e.scalar_type = info->typex;
    const auto shape = v.find("shape");
    if (shape == v.end() || !shape->is_array()) bad([](auto& w) { w.put("no shape list"); });
    index_t numel = 1;
    for (const json& d : *shape) {
      if (!d.is_number_integer() || (d.is_number_integer() && !d.is_number_unsigned() && d.get<std::int64_t>() < 0)) {
        bad([&](auto& w) { w.put("shape "); w.put(shape->dump()); w.put(" has an entry that is not a non-negative integer"); });
      }
      const std::uint64_t x = d.get<std::uint64_t>();
      const auto prod = x > static_cast<std::uint64_t>(max_tensor_bytes) ? std::nullopt : detail::checked_mul(numel, static_cast<index_t>(x));
      if (!prod) bad([&](auto& w) { w.put("shape "); w.put(shape->dump()); w.put(" has more elements than memory can hold"); });
      numel = *prod;
      e.shape.push_back(static_cast<index_t>(x));
    }
    const auto offsets = v.find("data_offsets");
    if (offsets == v.end() || !offsets->is_array() || offsets->size() != 2 || !(*offsets)[0].is_number_unsigned() ||
        !(*offsets)[1].is_number_unsigned()) {
      bad([](auto& w) { w.put("data_offsets is not a list of two non-negative integers [begin, end]"); });
    }
    e.begin = (*offsets)[0].get<std::uint64_t>();
    e.end = (*offsets)[1].get<std::uint64_t>();
    const auto bits = detail::checked_mul(numel, static_cast<index_t>(info->bits));
    if (!bits || *bits / 8 > max_tensor_bytes) {
      bad([&](auto& w) { w.put("shape "); w.put(shape->dump()); w.put(" of "); w.put(e.dtype_name); w.put(" needs more bytes than memory can hold"); });
    }
    if (*bits % 8 != 0) {
      bad([&](auto& w) { w.put(e.dtype_name); w.put(" elements of shape "); w.put(shape->dump()); w.put(" do not fill whole bytes"); });
    }
    if (e.begin > e.end) {
      bad([&](auto& w) { w.put("data_offsets ["); detail::put_u64(w, e.begin); w.put(", "); detail::put_u64(w, e.end); w.put("] ends before it begins"); });
    }
    if (e.end > data_size) {
      bad([&](auto& w) {
        w.put("data_offsets ["); detail::put_u64(w, e.begin); w.put(", "); detail::put_u64(w, e.end); w.put("] reach past the data, which holds ");
        detail::put_u64(w, data_size); w.put(" bytes (the file is truncated, or the offsets are wrong)");
      });
    }
    if (e.end - e.begin != static_cast<std::uint64_t>(*bits / 8)) {
      bad([&](auto& w) {
        w.put("data_offsets ["); detail::put_u64(w, e.begin); w.put(", "); detail::put_u64(w, e.end); w.put("] hold ");
        detail::put_u64(w, e.end - e.begin); w.put(" bytes, but "); w.put(e.dtype_name); w.put(' '); w.put(shape->dump());
        w.put(" needs "); detail::put_u64(w, static_cast<std::uint64_t>(*bits / 8));
      });
    }
    file.index_.emplace(e.name, file.entries_.size());
    file.entries_.push_back(std::move(e));
  }
  // the tensors tile the data: sorted by offset, each begins where the previous ended, the last ends
  // at the end of the file (the reference reader's rule: no overlaps, no gaps, nothing after)
  std::vector<const safetensors_entry*> order;
  order.reserve(file.entries_.size());
  for (const auto& e : file.entries_) order.push_back(&e);
  std::sort(order.begin(), order.end(), [](const auto* a, const auto* b) { return a->begin != b->begin ? a->begin < b->begin : a->end < b->end; });
  std::uint64_t at = 0;
  const safetensors_entry* prev = nullptr;
  for (const auto* e : order) {
    if (e->begin < at) {
      detail::bad_file(src, [&](auto& w) {
        w.put("tensors '"); w.put(prev->name); w.put("' (bytes ["); detail::put_u64(w, prev->begin); w.put(", "); detail::put_u64(w, prev->end);
        w.put(")) and '"); w.put(e->name); w.put("' (bytes ["); detail::put_u64(w, e->begin); w.put(", "); detail::put_u64(w, e->end);
        w.put(")) overlap");
      });
    }
    if (e->begin > at) {
      detail::bad_file(src, [&](auto& w) {
        w.put("bytes ["); detail::put_u64(w, at); w.put(", "); detail::put_u64(w, e->begin); w.put(") of the data belong to no tensor (before '");
        w.put(e->name); w.put("'; the format has no gaps)");
      });
    }
    at = e->end;
    prev = e;
  }
  if (at != data_size) {
    detail::bad_file(src, [&](auto& w) {
      w.put("the tensors end at byte "); detail::put_u64(w, at); w.put(" of the data, but the file holds "); detail::put_u64(w, data_size);
      w.put(" bytes of data (trailing bytes belong to no tensor)");
    });
  }
  file.header_bytes_ = n;
  file.bytes_ = std::move(bytes);
  return file;
}

TYPEX_API auto typex::safetensors_file::find(std::string_view name) const -> const safetensors_entry* {
  const auto it = index_.find(std::string(name));
  return it == index_.end() ? nullptr : &entries_[it->second];
}

TYPEX_API auto typex::safetensors_file::metadata(std::string_view key) const -> std::optional<std::string_view> {
  for (const auto& [k, v] : metadata_)
    if (k == key) return std::string_view(v);
  return std::nullopt;
}

TYPEX_API auto typex::safetensors_file::zero_copy(const safetensors_entry& e) const noexcept -> bool {
  if (!e.scalar_type || e.end == e.begin) return false;
  return reinterpret_cast<std::uintptr_t>(bytes_.data() + data_offset() + e.begin) % itemsize(*e.scalar_type) == 0;
}

TYPEX_API auto typex::safetensors_file::tensor(std::string_view name) const -> any_tensor {
  const safetensors_entry* e = find(name);
  if (e == nullptr) {
    detail::raise<argument_error>([&](auto& w) { w.put("typex: "); w.put(source_); w.put(" has no tensor named '"); w.put(name); w.put('\''); });
  }
  return tensor(*e);
}

TYPEX_API auto typex::safetensors_file::tensor(const safetensors_entry& e) const -> any_tensor {
  if (!e.scalar_type) {
    detail::raise<unsupported_error>([&](auto& w) {
      w.put("typex: "); w.put(source_); w.put(": tensor '"); w.put(e.name); w.put("' is "); w.put(e.dtype_name);
      w.put(", a safetensors dtype typex does not hold (it holds BOOL, U8, I8, I16, I32, I64, F16, BF16, F32, F64)");
    });
  }
  const dtype dt = *e.scalar_type;
  const std::span<const std::byte> src = bytes(e);
  if (dt == dtype::b8) {  // (a bool byte other than 0 or 1 is undefined behaviour to read as bool)
    for (std::size_t i = 0; i < src.size(); ++i) {
      if (static_cast<unsigned char>(src[i]) > 1) {
        detail::bad_file(source_, [&](auto& w) {
          w.put("tensor '"); w.put(e.name); w.put("' is BOOL, but its element "); w.put_int(static_cast<long long>(i)); w.put(" is the byte ");
          w.put_int(static_cast<unsigned char>(src[i])); w.put(" (a bool is 0 or 1)");
        });
      }
    }
  }
  if (zero_copy(e)) {
    return any_tensor(dt, e.shape, storage::view(bytes_, static_cast<std::size_t>(data_offset() + e.begin), src.size()));
  }
  any_tensor t(dt, e.shape);  // (empty, or misaligned for its dtype: a copy)
  if (!src.empty()) std::memcpy(t.raw_data(), src.data(), src.size());
  return t;
}

TYPEX_API auto typex::safetensors_file::tensors() const -> named_tensors {
  named_tensors out;
  for (const auto& e : entries_) out.insert(e.name, tensor(e));
  return out;
}

TYPEX_API auto typex::load_safetensors(const std::filesystem::path& path, read_mode mode) -> named_tensors {
  return safetensors_file::open(path, mode).tensors();
}

namespace typex::detail {
// The header of a file holding `tensors` (in the order `order`), padded so that the data starts at
// a multiple of 64 bytes; each tensor's data offsets follow.
struct safetensors_layout {
  std::string header;  // the 8-byte length, then the JSON and its padding
  std::vector<std::size_t> order;
};

inline safetensors_layout layout_safetensors(const named_tensors& tensors, const string_pairs& metadata) {
  using json = nlohmann::ordered_json;
  if constexpr (std::endian::native != std::endian::little) {
    raise_message<unsupported_error>("typex: safetensors files are little-endian; writing them on a big-endian machine is not supported");
  }
  safetensors_layout out;
  std::vector<std::pair<std::string, const any_tensor*>> all;
  for (const auto& [name, t] : tensors) {
    if (name == "__metadata__") {
      raise_message<argument_error>("typex::save_safetensors: a tensor is named '__metadata__', the name the format keeps for its metadata");
    }
    t.check_storage("save_safetensors: tensor '" + name + "'");
    all.emplace_back(name, &t);
  }
  for (std::size_t i = 0; i < all.size(); ++i) out.order.push_back(i);
  std::stable_sort(out.order.begin(), out.order.end(),
                   [&](std::size_t a, std::size_t b) { return itemsize(all[a].second->scalar_type()) > itemsize(all[b].second->scalar_type()); });
  json h = json::object();
  if (!metadata.empty()) {
    json m = json::object();
    for (const auto& [k, v] : metadata) {
      if (m.contains(k)) {
        raise<argument_error>([&](auto& w) { w.put("typex::save_safetensors: metadata key '"); w.put(k); w.put("' is given twice"); });
      }
      m[k] = v;
    }
    h["__metadata__"] = std::move(m);
  }
  std::uint64_t at = 0;
  for (const std::size_t i : out.order) {
    const any_tensor& t = *all[i].second;
    json e = json::object();
    e["dtype"] = std::string(safetensors_dtype_name(t.scalar_type()));
    e["shape"] = t.extents();
    e["data_offsets"] = {at, at + t.nbytes()};
    at += t.nbytes();
    h[all[i].first] = std::move(e);
  }
  std::string text;
  try {
    text = h.dump();
  } catch (const json::exception& e) {  // (a name or value that is not UTF-8)
    raise<argument_error>([&](auto& w) { w.put("typex::save_safetensors: "); w.put(e.what()); });
  }
  while ((8 + text.size()) % 64 != 0) text += ' ';
  std::uint64_t n = text.size();
  out.header.resize(8);
  for (int i = 0; i < 8; ++i) out.header[static_cast<std::size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  out.header += text;
  return out;
}
}  // namespace typex::detail

TYPEX_API typex::detail::file_writer::file_writer(const std::filesystem::path& path) : path_(path) {
  // a name of its own (process, then a per-process count): two saves of one path at once, from two
  // threads or two processes, never write into one temporary; the last rename wins, whole
  static std::atomic<unsigned long> count{0};
  tmp_ = path;
  tmp_ += ".typex-partial-";
#if TYPEX_HAS_MMAP
  tmp_ += std::to_string(static_cast<long>(::getpid()));
  tmp_ += '-';
#endif
  tmp_ += std::to_string(count.fetch_add(1));
  file_ = std::fopen(tmp_.string().c_str(), "wbx");  // (x: never an existing file)
  if (file_ == nullptr) file_failed("write", tmp_, errno);
}

TYPEX_API typex::detail::file_writer::~file_writer() {
  if (file_ != nullptr) {  // (not committed: an exception is on its way; leave nothing behind)
    std::fclose(static_cast<std::FILE*>(file_));
    std::error_code ec;
    std::filesystem::remove(tmp_, ec);
  }
}

TYPEX_API auto typex::detail::file_writer::write(const void* data, std::size_t n) -> void {
  if (n != 0 && std::fwrite(data, 1, n, static_cast<std::FILE*>(file_)) != n) file_failed("write", tmp_, errno);
}

TYPEX_API auto typex::detail::file_writer::commit() -> void {
  std::FILE* f = static_cast<std::FILE*>(file_);
  file_ = nullptr;
  const bool flushed = std::fflush(f) == 0;
  const int err = errno;
  if (std::fclose(f) != 0 || !flushed) {
    std::error_code ec;
    std::filesystem::remove(tmp_, ec);
    file_failed("write", tmp_, flushed ? errno : err);
  }
  std::error_code ec;
  std::filesystem::rename(tmp_, path_, ec);
  if (ec) {
    std::filesystem::remove(tmp_, ec);
    file_failed("replace", path_, ec.value());
  }
}

TYPEX_API auto typex::save_safetensors(const std::filesystem::path& path, const named_tensors& tensors, const string_pairs& metadata) -> void {
  const detail::safetensors_layout l = detail::layout_safetensors(tensors, metadata);
  std::vector<const any_tensor*> all;
  for (const auto& kv : tensors) all.push_back(&kv.second);
  detail::file_writer out(path);
  out.write(l.header.data(), l.header.size());
  for (const std::size_t i : l.order) out.write(all[i]->raw_data(), all[i]->nbytes());
  out.commit();
}

TYPEX_API auto typex::to_safetensors(const named_tensors& tensors, const string_pairs& metadata) -> std::vector<std::byte> {
  const detail::safetensors_layout l = detail::layout_safetensors(tensors, metadata);
  std::vector<const any_tensor*> all;
  for (const auto& kv : tensors) all.push_back(&kv.second);
  std::vector<std::byte> out(reinterpret_cast<const std::byte*>(l.header.data()), reinterpret_cast<const std::byte*>(l.header.data()) + l.header.size());
  for (const std::size_t i : l.order) {
    const std::byte* p = all[i]->raw_data();
    out.insert(out.end(), p, p + all[i]->nbytes());
  }
  return out;
}
#endif  // TYPEX_HEADER_DEFINITIONS
