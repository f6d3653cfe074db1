// typex/tensor/named_tensors.hpp — tensors by fully-qualified name, in insertion order.
//
// The state dict (parameters and persistent buffers) and the constants (non-persistent buffers,
// lifted constant tensors) of an exported program: a handful to thousands of entries, looked up
// by FQN at export and load time, iterated in order when printing or saving.
#pragma once

#include <typex/core/error.hpp>
#include <typex/tensor/device_ops.hpp>
#include <typex/tensor/host_tensor.hpp>

#include <cstring>
#include <limits>
#include <type_traits>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace typex {

class named_tensors {
 public:
  // Adds `name`; a name already present throws argument_error (FQNs are unique).
  TYPEX_API void insert(std::string name, any_tensor t);

  const any_tensor* find(std::string_view name) const {
    const auto it = index_.find(std::string(name));
    return it == index_.end() ? nullptr : &entries_[it->second].second;
  }
  // The tensor named `name`; a missing name throws argument_error.
  const any_tensor& at(std::string_view name) const {
    if (const any_tensor* t = find(name)) return *t;
    detail::raise<argument_error>([&](auto& w) { w.put("typex: no tensor named '"); w.put(name); w.put('\''); });
  }
  bool contains(std::string_view name) const { return find(name) != nullptr; }

  std::size_t size() const noexcept { return entries_.size(); }
  bool empty() const noexcept { return entries_.empty(); }
  auto begin() const noexcept { return entries_.begin(); }
  auto end() const noexcept { return entries_.end(); }

 private:
  std::vector<std::pair<std::string, any_tensor>> entries_;
  std::unordered_map<std::string, std::size_t> index_;
};

// What load_state_dict did not match (torch: the _IncompatibleKeys it returns): the destination's
// names the state dict lacks, and the state dict's names the destination does not have. Under
// strict loading both are errors (nothing is loaded); otherwise every name both have is loaded and
// these are returned.
struct load_result {
  std::vector<std::string> missing_keys;
  std::vector<std::string> unexpected_keys;
  bool empty() const noexcept { return missing_keys.empty() && unexpected_keys.empty(); }
};

// How load_state_dict matches a state dict against the destination.
struct load_options {
  // Missing and unexpected names are errors (torch's strict=True); otherwise they are returned.
  bool strict = true;
  // A tensor of another dtype than its destination is converted (f16 or bf16 weights into an f32
  // model, as torch's copy_ does) instead of being refused. Off by default: a silent conversion can
  // hide a checkpoint meant for another model.
  bool convert_dtypes = false;
};

namespace detail {
// Loads `sd` into the tensors `dst` (name, tensor sharing the destination's storage), with
// PyTorch's rules, every problem found before anything is copied and reported at once, by name:
// wrong extents, wrong dtypes (unless options.convert_dtypes), and under options.strict missing and
// unexpected names. The exception is a shape_error when an extent is wrong, else a dtype_error when
// a dtype is, else an argument_error; its message lists every problem. Destinations sharing storage
// (tied weights) are filled once: any one of their names in `sd` is enough, and several present
// must hold the same values. `who` starts the messages.
TYPEX_API load_result load_named(const std::vector<std::pair<std::string, any_tensor>>& dst, const named_tensors& sd,
                                 const load_options& options, std::string_view who);
inline load_result load_named(const std::vector<std::pair<std::string, any_tensor>>& dst, const named_tensors& sd, bool strict,
                              std::string_view who) {
  return load_named(dst, sd, load_options{.strict = strict}, who);
}
// Copies src's elements into dst (same extents), converting as torch's copy_ does: floating to
// integral truncates toward zero, anything to bool is "not zero".
TYPEX_API void convert_elements(const any_tensor& src, const any_tensor& dst);
}  // namespace detail

}  // namespace typex

// ---- definitions: compiled once in typex::runtime, or inline here in header-only builds
// (config.hpp: TYPEX_SEPARATE_COMPILATION) ----
#if TYPEX_HEADER_DEFINITIONS
TYPEX_API auto typex::named_tensors::insert(std::string name, any_tensor t) -> void {
  if (index_.contains(name)) {
    detail::raise<argument_error>([&](auto& w) {
      w.put("typex: '"); w.put(name); w.put("' is already present; fully-qualified names are unique");
    });
  }
  index_.emplace(name, entries_.size());
  entries_.emplace_back(std::move(name), std::move(t));
}

namespace typex::detail {
template <class To, class From>
To convert_one(From v) noexcept {
  if constexpr (std::is_same_v<To, bool>) {
    if constexpr (std::is_same_v<From, half> || std::is_same_v<From, bfloat16>) return static_cast<float>(v) != 0.0f;
    else return v != From{};
  } else if constexpr (std::is_same_v<To, half> || std::is_same_v<To, bfloat16>) {
    if constexpr (std::is_same_v<From, half> || std::is_same_v<From, bfloat16>) return To(static_cast<float>(v));
    else return To(static_cast<float>(v));
  } else if constexpr (std::is_same_v<From, half> || std::is_same_v<From, bfloat16>) {
    return convert_one<To>(static_cast<float>(v));
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    // (out of range or NaN is undefined behaviour in C++; torch's result is unspecified too: 0 here)
    if (!(v > static_cast<From>(std::numeric_limits<To>::min()) - 1 && v < static_cast<From>(std::numeric_limits<To>::max()) + 1)) return To{};
    return static_cast<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

template <dtype To, dtype From>
void convert_run(const std::byte* src, std::byte* dst, std::size_t n) noexcept {
  using T = typename storage_of<To>::type;
  using F = typename storage_of<From>::type;
  for (std::size_t i = 0; i < n; ++i) {
    F v;
    std::memcpy(&v, src + i * sizeof(F), sizeof(F));
    const T r = convert_one<T>(v);
    std::memcpy(dst + i * sizeof(T), &r, sizeof(T));
  }
}

template <dtype To>
void convert_from(dtype from, const std::byte* src, std::byte* dst, std::size_t n) noexcept {
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    ((from == all_dtypes[I] ? convert_run<To, all_dtypes[I]>(src, dst, n) : void()), ...);
  }(std::make_index_sequence<std::size(all_dtypes)>{});
}
}  // namespace typex::detail

TYPEX_API auto typex::detail::convert_elements(const any_tensor& src, const any_tensor& dst) -> void {
  const std::size_t n = static_cast<std::size_t>(src.numel());
  if (src.scalar_type() == dst.scalar_type()) {
    if (src.raw_data() != dst.raw_data() && n != 0) std::memcpy(dst.raw_data(), src.raw_data(), src.nbytes());
    return;
  }
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    ((dst.scalar_type() == all_dtypes[I] ? convert_from<all_dtypes[I]>(src.scalar_type(), src.raw_data(), dst.raw_data(), n) : void()), ...);
  }(std::make_index_sequence<std::size(all_dtypes)>{});
}

TYPEX_API auto typex::detail::load_named(const std::vector<std::pair<std::string, any_tensor>>& dst, const named_tensors& sd,
                                         const load_options& options, std::string_view who) -> load_result {
  // (a state dict holding device tensors, a CUDA module's parameters(): read through host copies,
  // never through their pointers)
  for (const auto& [name, t] : sd)
    if (!t.device().is_host()) {
      named_tensors host;
      for (const auto& [n, u] : sd) host.insert(n, u.device().is_host() ? u : host_copy(u, who));
      return load_named(dst, host, options, who);
    }
  load_result r;
  std::vector<std::string> shape_problems, dtype_problems, tie_problems;
  std::vector<std::pair<const any_tensor*, const any_tensor*>> copies;  // (destination, source)
  std::unordered_map<std::string_view, bool> wanted;
  // destinations sharing storage (tied weights): one group per storage, in first-name order
  std::vector<std::vector<std::size_t>> groups;
  std::unordered_map<const std::byte*, std::size_t> group_of;
  for (std::size_t i = 0; i < dst.size(); ++i) {
    wanted.emplace(dst[i].first, true);
    const std::byte* id = dst[i].second.raw_data();
    if (id != nullptr && dst[i].second.nbytes() != 0) {
      const auto [it, fresh] = group_of.emplace(id, groups.size());
      if (!fresh) {
        groups[it->second].push_back(i);
        continue;
      }
    }
    groups.push_back({i});
  }
  auto describe = [&](const std::string& fqn, const any_tensor& t, const any_tensor& src) {
    std::string s = "'" + fqn + "' is " + t.to_string() + " in the module but " + src.to_string() + " in the state dict";
    return s;
  };
  for (const auto& group : groups) {
    const std::pair<std::string, any_tensor>* loaded = nullptr;  // (the name the group is filled from)
    const any_tensor* loaded_src = nullptr;
    for (const std::size_t i : group) {
      const auto& [fqn, t] = dst[i];
      const any_tensor* src = sd.find(fqn);
      if (src == nullptr) continue;
      src->check_storage("the state dict's '" + fqn + "'");  // (a moved-from tensor: state_error, before its lost extents mislead)
      if (src->extents() != t.extents()) {
        shape_problems.push_back(describe(fqn, t, *src));
        continue;
      }
      if (src->scalar_type() != t.scalar_type() && !options.convert_dtypes) {
        dtype_problems.push_back(describe(fqn, t, *src));
        continue;
      }
      if (loaded_src == nullptr) {
        loaded = &dst[i];
        loaded_src = src;
        copies.emplace_back(&t, src);
      } else if (src->raw_data() != loaded_src->raw_data() &&
                 (src->scalar_type() != loaded_src->scalar_type() || std::memcmp(src->raw_data(), loaded_src->raw_data(), src->nbytes()) != 0)) {
        tie_problems.push_back("'" + loaded->first + "' and '" + fqn + "' share storage in the module (tied weights) but differ in the state dict");
      }
    }
    if (loaded_src == nullptr)
      for (const std::size_t i : group)
        if (!sd.contains(dst[i].first)) r.missing_keys.push_back(dst[i].first);
  }
  for (const auto& [name, t] : sd)
    if (!wanted.contains(name)) r.unexpected_keys.push_back(name);
  const bool keys_fail = options.strict && !r.empty();
  if (keys_fail || !shape_problems.empty() || !dtype_problems.empty() || !tie_problems.empty()) {
    const std::size_t count = (options.strict ? r.missing_keys.size() + r.unexpected_keys.size() : 0) + shape_problems.size() +
                              dtype_problems.size() + tie_problems.size();
    auto write = [&](auto& w) {
      w.put(who); w.put(": ");
      w.put_int(static_cast<long long>(count)); w.put(count == 1 ? " problem, nothing was loaded: " : " problems, nothing was loaded: ");
      bool first = true;
      auto section = [&](std::string_view what, const std::vector<std::string>& items, bool quote) {
        if (items.empty()) return;
        if (!first) w.put("; ");
        first = false;
        w.put(what);
        for (std::size_t i = 0; i < items.size(); ++i) {
          w.put(i ? ", " : " ");
          if (quote) w.put('\'');
          w.put(items[i]);
          if (quote) w.put('\'');
        }
      };
      if (options.strict) {
        section("missing keys:", r.missing_keys, true);
        section("unexpected keys:", r.unexpected_keys, true);
      }
      section("size mismatch:", shape_problems, false);
      section("dtype mismatch:", dtype_problems, false);
      section("tied weights:", tie_problems, false);
      if (keys_fail) w.put(" (strict loading; pass strict = false to load the names that match)");
      if (!dtype_problems.empty()) w.put(" (pass convert_dtypes = true to convert)");
    };
    if (!shape_problems.empty()) raise<shape_error>(write);
    if (!dtype_problems.empty()) raise<dtype_error>(write);
    raise<argument_error>(write);
  }
  for (const auto& [d, src] : copies) convert_elements(*src, *d);
  return r;
}
#endif  // TYPEX_HEADER_DEFINITIONS
