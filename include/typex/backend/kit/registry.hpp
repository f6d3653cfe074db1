// typex/backend/kit/registry.hpp — a backend's kernels, keyed by op type (ggml-backend's split:
// the backend interface, the scheduler and allocator, and the kernels; this is the kernels' table).
//
// Every backend keeps one table from op id to what it runs for that op: a function for the Eigen
// backend (kernel<Op>::run), a lowering for the CUDA backend. The table is filled from the op
// registry (ops/all.hpp: builtin_ops) when first used, so a registered op a backend has no entry
// for is that backend's build error, not a run-time surprise; users add their ops at run time
// (register_kernel<Op>()). Look-ups and registrations may come from several threads at once.
#pragma once

#include <typex/ops/all.hpp>

#include <mutex>
#include <unordered_map>
#include <vector>

namespace typex::kit {

template <class Entry>
class kernel_registry {
 public:
  // Adds `e` for `op` unless the op has an entry already (the first registration wins: built-in
  // kernels are not replaced by a user's second registration). Returns whether it was added.
  bool add(op_id op, Entry e) {
    const std::lock_guard lock(mutex_);
    if (!entries_.emplace(op, e).second) return false;
    order_.push_back(op);
    return true;
  }
  // The entry for `op`, or `fallback` (a null function) where the backend has none.
  Entry find(op_id op, Entry fallback = Entry{}) const {
    const std::lock_guard lock(mutex_);
    const auto it = entries_.find(op);
    return it == entries_.end() ? fallback : it->second;
  }
  bool contains(op_id op) const {
    const std::lock_guard lock(mutex_);
    return entries_.contains(op);
  }
  // Every op with an entry: the registry's, in its order, then those users added.
  std::vector<op_id> ops() const {
    const std::lock_guard lock(mutex_);
    return order_;
  }

 private:
  mutable std::mutex mutex_;
  std::unordered_map<op_id, Entry> entries_;
  std::vector<op_id> order_;
};

}  // namespace typex::kit
