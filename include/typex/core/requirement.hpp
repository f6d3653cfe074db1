// typex/core/requirement.hpp — what a shape rule needs to hold at run time, as data.
//
// When a shape rule cannot decide a fact from the types alone (a symbolic dim must equal 784, two
// dims must broadcast), it checks the fact against the run-time values it has and, if a recorder is
// installed on this thread, reports it as a shape_requirement. The tracer installs one while
// exporting, turning these into the program's guards and range constraints; eager code pays one
// thread-local load per non-static fact and nothing else.
#pragma once

#include <typex/core/text.hpp>

#include <string>
#include <string_view>

namespace typex {

enum class relation : unsigned char {
  equal,          // lhs == rhs
  broadcastable,  // lhs == rhs || lhs == 1 || rhs == 1
  divisible,      // lhs % rhs == 0
  at_least,       // lhs >= rhs
};

constexpr std::string_view to_string(relation r) noexcept {
  switch (r) {
    case relation::equal: return "==";
    case relation::broadcastable: return "broadcasts with";
    case relation::divisible: return "is divisible by";
    case relation::at_least: return ">=";
  }
  return "?";
}

struct shape_requirement {
  std::string op;         // the public op that needs the fact, e.g. "typex::matmul"
  relation rel;
  std::string lhs, rhs;   // symbolic text of both sides, e.g. "batch", "784", "2*seq"
  long long lhs_value;    // the values seen when the fact was recorded
  long long rhs_value;
  int dim;                // the dim of the op's result (or operand) the fact is about; -1 if none
};

class requirement_recorder {
 public:
  virtual ~requirement_recorder() = default;
  virtual void record(shape_requirement r) = 0;
};

namespace detail {
inline requirement_recorder*& current_recorder() noexcept {
  thread_local requirement_recorder* r = nullptr;
  return r;
}
}  // namespace detail

// Installs a recorder on this thread for its lifetime (nesting restores the previous one).
class scoped_requirement_recorder {
 public:
  explicit scoped_requirement_recorder(requirement_recorder& r) noexcept : prev_(detail::current_recorder()) {
    detail::current_recorder() = &r;
  }
  ~scoped_requirement_recorder() { detail::current_recorder() = prev_; }
  scoped_requirement_recorder(const scoped_requirement_recorder&) = delete;
  scoped_requirement_recorder& operator=(const scoped_requirement_recorder&) = delete;

 private:
  requirement_recorder* prev_;
};

namespace detail {
// Records the fact `A rel B` about dims a, b if a recorder is installed.
template <class A, class B>
void record_requirement(std::string_view op, relation rel, const A& a, const B& b, int dim) {
  requirement_recorder* r = current_recorder();
  if (r == nullptr) return;
  shape_requirement req{std::string(op), rel, {}, {}, a.get(), b.get(), dim};
  string_writer wl{req.lhs};
  A::write_type(wl, 0);
  string_writer wr{req.rhs};
  B::write_type(wr, 0);
  r->record(std::move(req));
}
}  // namespace detail

}  // namespace typex
