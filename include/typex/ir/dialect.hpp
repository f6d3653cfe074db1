// typex/ir/dialect.hpp — which ops a program may call: its dialect.
//
// A program knows its dialect (exported_program::dialect()); the verifier refuses a call of an op
// outside it. Two are built in:
//   export   any op: what tracing records (the registry's ops, and user ops, registered or not:
//            a program built in memory may call an op no name look-up knows)
//   core     the core op set (ops/core_set.hpp), run-time assertions and the higher-order calls
//            (ir/control_flow.hpp; their subgraphs in the core set too): what every backend runs,
//            and what passes::run_decompositions with the default table gives
// A backend declares its own (the ops it runs) as a dialect object of its own; a dialect is a name
// and a predicate over op ids, so any set of ops can be one.
#pragma once

#include <typex/ir/control_flow.hpp>
#include <typex/ir/describe.hpp>
#include <typex/ops/core_set.hpp>

#include <string>
#include <string_view>

namespace typex::ir {

// (A value: copy it freely. Its name is a string_view: give a string with static storage, a literal.)
class dialect {
 public:
  using predicate = bool (*)(op_id);
  constexpr dialect(std::string_view name, predicate allows) noexcept : name_(name), allows_(allows) {}

  constexpr std::string_view name() const noexcept { return name_; }
  bool allows(op_id id) const { return allows_(id); }

  friend bool operator==(const dialect& a, const dialect& b) noexcept { return a.name_ == b.name_ && a.allows_ == b.allows_; }

 private:
  std::string_view name_;
  predicate allows_;
};

namespace detail {
inline bool any_op(op_id) { return true; }
inline bool core_op_or_assertion(op_id id) {
  return is_core_op(id) || id == op_id_of<assert_shape_op> || control_kind_of(id) != control_kind::none;
}
}  // namespace detail

inline constexpr dialect export_dialect{"export", &detail::any_op};
inline constexpr dialect core_dialect{"core", &detail::core_op_or_assertion};

// The built-in dialect called `name` ("export", "core"), or nullptr.
inline const dialect* find_dialect(std::string_view name) noexcept {
  if (name == export_dialect.name()) return &export_dialect;
  if (name == core_dialect.name()) return &core_dialect;
  return nullptr;
}

}  // namespace typex::ir
