// typex/tensor/named_tensors.hpp — tensors by fully-qualified name, in insertion order.
//
// The state dict (parameters and persistent buffers) and the constants (non-persistent buffers,
// lifted constant tensors) of an exported program: a handful to thousands of entries, looked up
// by FQN at export and load time, iterated in order when printing or saving.
#pragma once

#include <typex/core/error.hpp>
#include <typex/tensor/host_tensor.hpp>

#include <cstring>
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

namespace detail {
// Loads `sd` into the tensors `dst` (name, tensor sharing the destination's storage), with
// PyTorch's rules: a name in both must have the same dtype (else dtype_error) and extents (else
// shape_error), checked for every name before anything is copied; strict: missing or unexpected
// names are an argument_error naming them all. `who` starts the messages.
TYPEX_API load_result load_named(const std::vector<std::pair<std::string, any_tensor>>& dst, const named_tensors& sd, bool strict,
                                 std::string_view who);
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

TYPEX_API auto typex::detail::load_named(const std::vector<std::pair<std::string, any_tensor>>& dst, const named_tensors& sd,
                                         bool strict, std::string_view who) -> load_result {
  load_result r;
  std::vector<std::pair<const any_tensor*, const any_tensor*>> copies;  // (destination, source)
  std::unordered_map<std::string_view, bool> wanted;
  for (const auto& [fqn, t] : dst) {
    wanted.emplace(fqn, true);
    const any_tensor* src = sd.find(fqn);
    if (src == nullptr) {
      r.missing_keys.push_back(fqn);
      continue;
    }
    src->check_storage("the state dict's '" + fqn + "'");  // (a moved-from tensor: state_error, before its lost extents mislead)
    if (src->scalar_type() != t.scalar_type()) {
      raise<dtype_error>([&](auto& w) {
        w.put(who); w.put(": '"); w.put(fqn); w.put("' is "); w.put(t.to_string()); w.put(" in the module but ");
        w.put(src->to_string()); w.put(" in the state dict");
      });
    }
    if (src->extents() != t.extents()) {
      raise<shape_error>([&](auto& w) {
        w.put(who); w.put(": '"); w.put(fqn); w.put("' is "); w.put(t.to_string()); w.put(" in the module but ");
        w.put(src->to_string()); w.put(" in the state dict");
      });
    }
    copies.emplace_back(&t, src);
  }
  for (const auto& [name, t] : sd)
    if (!wanted.contains(name)) r.unexpected_keys.push_back(name);
  if (strict && !r.empty()) {
    raise<argument_error>([&](auto& w) {
      w.put(who); w.put(": ");
      auto list = [&](std::string_view what, const std::vector<std::string>& names) {
        w.put(what);
        for (std::size_t i = 0; i < names.size(); ++i) { w.put(i ? ", '" : " '"); w.put(names[i]); w.put('\''); }
      };
      if (!r.missing_keys.empty()) list("missing keys:", r.missing_keys);
      if (!r.missing_keys.empty() && !r.unexpected_keys.empty()) w.put("; ");
      if (!r.unexpected_keys.empty()) list("unexpected keys:", r.unexpected_keys);
      w.put(" (strict loading; pass strict = false to load the names that match)");
    });
  }
  for (const auto& [d, src] : copies)
    if (d->raw_data() != src->raw_data()) std::memcpy(d->raw_data(), src->raw_data(), src->nbytes());
  return r;
}
#endif  // TYPEX_HEADER_DEFINITIONS
