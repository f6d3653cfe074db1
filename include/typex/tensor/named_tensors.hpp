// typex/tensor/named_tensors.hpp — tensors by fully-qualified name, in insertion order.
//
// The state dict (parameters and persistent buffers) and the constants (non-persistent buffers,
// lifted constant tensors) of an exported program: a handful to thousands of entries, looked up
// by FQN at export and load time, iterated in order when printing or saving.
#pragma once

#include <typex/core/error.hpp>
#include <typex/tensor/host_tensor.hpp>

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
#endif  // TYPEX_HEADER_DEFINITIONS
