// typex/core/requirement.hpp — what a shape rule needs to hold at run time, as data.
//
// When a shape rule cannot decide a fact from the types alone (a symbolic dim must equal 784, two
// dims must broadcast), it checks the fact against the run-time values it has and, if a recorder is
// installed on this thread, reports it as a shape_requirement. The tracer installs one while
// exporting, turning these into the program's guards and range constraints; eager code pays one
// thread-local load per non-static fact and nothing else.
#pragma once

#include <typex/core/dim.hpp>
#include <typex/core/text.hpp>

#include <string>
#include <string_view>
#include <vector>

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

// One side of a fact as data, in postfix order: what the dim type says (784, batch with its
// declared range, 2*seq), so that export can decide the fact for every value of the symbols.
struct dim_term {
  enum class kind : unsigned char { constant, symbol, anonymous, op };
  kind k = kind::constant;
  index_t value = 0;       // constant
  std::string_view name;   // symbol (a view of the sym type's static name)
  index_t lo = 0, hi = 0;  // symbol: its declared range
  dim_op op = dim_op::add; // op: applies to the two terms before it
};
using dim_terms = std::vector<dim_term>;

// The relation's negation, as a sentence part: "!=", "does not broadcast with", ...
constexpr std::string_view to_negated_string(relation r) noexcept {
  switch (r) {
    case relation::equal: return "!=";
    case relation::broadcastable: return "does not broadcast with";
    case relation::divisible: return "is not divisible by";
    case relation::at_least: return "<";
  }
  return "?";
}

// Whether `a rel b` holds.
constexpr bool holds(relation r, long long a, long long b) noexcept {
  switch (r) {
    case relation::equal: return a == b;
    case relation::broadcastable: return a == b || a == 1 || b == 1;
    case relation::divisible: return b != 0 && a % b == 0;
    case relation::at_least: return a >= b;
  }
  return false;
}

// The relation written as to_string writes it, or false.
constexpr bool parse_relation(std::string_view text, relation& out) noexcept {
  for (relation r : {relation::equal, relation::broadcastable, relation::divisible, relation::at_least})
    if (to_string(r) == text) {
      out = r;
      return true;
    }
  return false;
}

struct shape_requirement {
  std::string op;         // the public op that needs the fact, e.g. "typex::matmul"
  relation rel;
  std::string lhs, rhs;   // symbolic text of both sides, e.g. "batch", "784", "2*seq"
  long long lhs_value;    // the values seen when the fact was recorded
  long long rhs_value;
  int dim;                // the dim of the op's result (or operand) the fact is about; -1 if none
  dim_terms lhs_terms, rhs_terms;  // both sides as data
  std::string site;       // where the user's code called the op ("model.cpp:21 in forward"), if known
  std::string node;       // the graph node the op recorded, if known
  std::string module;     // the submodule it was recorded in ("layers.0.attn"), if any
};

class requirement_recorder {
 public:
  virtual ~requirement_recorder() = default;
  virtual void record(shape_requirement r) = 0;
  // Whether `symbol` is data-dependent (its value unknown until the program runs): a fact about it
  // that the traced placeholder values do not satisfy is recorded for export, not raised.
  virtual bool is_unbacked(std::string_view /*symbol*/) const { return false; }
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
// Appends dim type D's terms (postfix).
template <class D>
void append_terms(dim_terms& out) {
  if constexpr (is_static_dim_v<D>) {
    out.push_back({dim_term::kind::constant, D::value, {}, D::value, D::value, dim_op::add});
  } else if constexpr (is_symbolic_dim_v<D>) {
    out.push_back({dim_term::kind::symbol, 0, D::name.view(), D::lo, D::hi, dim_op::add});
  } else if constexpr (is_derived_dim_v<D>) {
    append_terms<typename D::lhs_type>(out);
    append_terms<typename D::rhs_type>(out);
    out.push_back({dim_term::kind::op, 0, {}, D::lo, D::hi, D::op});
  } else {
    out.push_back({dim_term::kind::anonymous, 0, {}, D::lo, D::hi, dim_op::add});
  }
}

// Records the fact `A rel B` about dims a, b if a recorder is installed.
template <class A, class B>
void record_requirement(std::string_view op, relation rel, const A& a, const B& b, int dim) {
  requirement_recorder* r = current_recorder();
  if (r == nullptr) return;
  shape_requirement req{std::string(op), rel, {}, {}, a.get(), b.get(), dim, {}, {}, {}, {}, {}};
  append_terms<A>(req.lhs_terms);
  append_terms<B>(req.rhs_terms);
  string_writer wl{req.lhs};
  A::write_type(wl, 0);
  string_writer wr{req.rhs};
  B::write_type(wr, 0);
  r->record(std::move(req));
}

// A fact that fails on the values seen while tracing, about a data-dependent symbol (whose traced
// value is a placeholder): recorded for export to decide, and true; false otherwise (raise it).
template <class A, class B>
bool defer_to_export(std::string_view op, relation rel, const A& a, const B& b, int dim) {
  const requirement_recorder* r = current_recorder();
  if (r == nullptr) return false;
  dim_terms t;
  append_terms<A>(t);
  append_terms<B>(t);
  for (const dim_term& x : t) {
    if (x.k == dim_term::kind::symbol && r->is_unbacked(x.name)) {
      record_requirement(op, rel, a, b, dim);
      return true;
    }
  }
  return false;
}
}  // namespace detail

}  // namespace typex
