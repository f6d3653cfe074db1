// typex/export/shape_facts.hpp — deciding the shape facts a traced program needs.
//
// While a module is traced, every fact a shape rule could not decide from the types alone
// (core/requirement.hpp: `batch == 784`, `seq % 4 == 0`, `h >= 7`) is recorded with the op, the
// node and the user's source line. export_program then decides each one against the declared
// ranges (torch.export's constraint solving, done once, on data):
//
//   implied     the fact holds for every value the ranges allow: nothing to do;
//   narrows     it holds on a smaller interval of a single symbol (`seq <= 512`), or one value
//               (`batch == 4`: a specialization): a constraint violation whose fix is the corrected
//               declaration (typex::sym<"seq", 1, 512>, typex::fix<4>);
//   relation    it holds for some values and not others, and no range says which (`seq % 4 == 0`,
//               `s0*s1 == s2`, `a == b` between two symbols): a violation proposing the derived or
//               shared declaration that makes it true by construction, or — when the export asked
//               for run-time assertions — an assertion node in the graph, checked on every call.
//
// Facts about anonymous dims (typex::dyn) are left to the kernels, which check them on every call
// (a shape_error naming the op): an anonymous dim has no declaration to correct.
#pragma once

#include <typex/core/requirement.hpp>
#include <typex/export/range_constraints.hpp>
#include <typex/ir/sym_expr.hpp>
#include <typex/trace/context.hpp>

#include <algorithm>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace typex {

// How export_program treats what it finds (torch.export's export(..., prefer_deferred_runtime_asserts_over_guards)).
struct export_options {
  // Keep facts that no range expresses as run-time assertion nodes (checked on every call)
  // instead of failing the export.
  bool runtime_assertions = false;
};

namespace detail {

// A symbol of a fact, with the range it is declared in (narrowed by the program's range constraints).
struct fact_symbol {
  std::string_view name;
  index_t lo, hi;
};

TYPEX_API void collect_symbols(const dim_terms& terms, const range_constraints& ranges, std::vector<fact_symbol>& out);

inline bool has_anonymous(const dim_terms& terms) {
  return std::any_of(terms.begin(), terms.end(), [](const dim_term& t) { return t.k == dim_term::kind::anonymous; });
}

// The value of postfix terms when symbol syms[i] is vals[i]; nullopt where undefined (division by 0).
TYPEX_API std::optional<index_t> eval_terms(const dim_terms& terms, std::span<const fact_symbol> syms,
                                         std::span<const index_t> vals);

inline std::optional<bool> fact_holds(const shape_requirement& r, std::span<const fact_symbol> syms,
                                      std::span<const index_t> vals) {
  const auto a = eval_terms(r.lhs_terms, syms, vals), b = eval_terms(r.rhs_terms, syms, vals);
  if (!a || !b) return std::nullopt;
  return holds(r.rel, *a, *b);
}

// Values of [lo, hi] to try: all of them when there are few; otherwise both ends densely and the
// middle geometrically (each point with its neighbours, so that parity-like facts show).
TYPEX_API std::vector<index_t> sample_range(index_t lo, index_t hi, index_t dense);

// At most n of the values, both ends and the first few kept, the rest evenly spaced.
TYPEX_API std::vector<index_t> thin(std::vector<index_t> v, std::size_t n);

// What a fact is, given the declared ranges.
struct fact_verdict {
  enum class kind : unsigned char { implied, narrows, relation, undecided } k = kind::undecided;
  fact_symbol symbol{};       // narrows, relation of one symbol: the symbol
  index_t lo = 0, hi = 0;     // narrows: the interval where the fact holds
  index_t multiple = 0;       // relation: it holds exactly for the multiples of this (> 1), if so
};

inline index_t gcd_of(index_t a, index_t b) noexcept {
  while (b != 0) {
    const index_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

TYPEX_API fact_verdict classify(const shape_requirement& r, const range_constraints& ranges);

// C++ spellings of declarations, for the suggested fixes.
inline std::string sym_declaration(std::string_view name, index_t lo, index_t hi) {
  std::string s = "typex::sym<\"";
  s += name;
  s += "\", ";
  s += std::to_string(lo);
  if (hi < int_oo) {
    s += ", ";
    s += std::to_string(hi);
  }
  s += '>';
  return s;
}

// The C++ type of postfix terms (typex::dim_mul_t<typex::fix<2>, typex::sym<"seq", 1, 512>>), or
// nullopt where no alias spells an op.
TYPEX_API std::optional<std::string> terms_declaration(const dim_terms& terms, const range_constraints& ranges);

inline bool lone_symbol(const dim_terms& t) { return t.size() == 1 && t.front().k == dim_term::kind::symbol; }
inline bool mentions(const dim_terms& terms, std::string_view name) {
  return std::any_of(terms.begin(), terms.end(), [&](const dim_term& t) { return t.k == dim_term::kind::symbol && t.name == name; });
}

// `seq is divisible by 4` / `batch == 4` / `h + 2 >= 7`
inline std::string fact_text(const shape_requirement& r) {
  std::string s = r.lhs;
  s += ' ';
  s += to_string(r.rel);
  s += ' ';
  s += r.rhs;
  return s;
}

// "typex::matmul (node 'matmul_1' in module 'layers.0', at model.cpp:21 in forward)"
TYPEX_API std::string fact_origin(const shape_requirement& r);

// The violation's lines for one fact: what, why, and the fix.
// "  - typex::matmul (node 'matmul', at model.cpp:21 in forward) needs batch == 4": a violation's head.
inline std::string violation_head(const shape_requirement& r) {
  std::string s = "  - ";
  s += fact_origin(r);
  s += " needs ";
  s += fact_text(r);
  return s;
}

TYPEX_API std::string describe_violation(const shape_requirement& r, const fact_verdict& v, const range_constraints& ranges);

// A fact's side as the IR's symbolic expression.
TYPEX_API ir::sym_expr terms_expr(const dim_terms& terms);

// The outcome of deciding a trace's facts: the assertions to keep, or a violation raised.
struct decided_facts {
  std::vector<const shape_requirement*> assertions;  // (when runtime_assertions was asked for)
};

// The violation's lines for a fact about a data-dependent size that the ranges do not imply.
TYPEX_API std::string describe_data_dependent(const shape_requirement& r, const tracing_context::unbacked_symbol& u);

TYPEX_API decided_facts decide_facts(const std::vector<shape_requirement>& facts, const range_constraints& ranges,
                                  const export_options& options,
                                  const std::vector<tracing_context::unbacked_symbol>& unbacked = {});

}  // namespace detail
}  // namespace typex

// ---- definitions: compiled once in typex::runtime, or inline here in header-only builds
// (config.hpp: TYPEX_SEPARATE_COMPILATION) ----
#if TYPEX_HEADER_DEFINITIONS
TYPEX_API void typex::detail::collect_symbols(const dim_terms& terms, const range_constraints& ranges, std::vector<fact_symbol>& out) {
  for (const dim_term& t : terms) {
    if (t.k != dim_term::kind::symbol) continue;
    if (std::any_of(out.begin(), out.end(), [&](const fact_symbol& s) { return s.name == t.name; })) continue;
    fact_symbol s{t.name, t.lo, t.hi};
    if (const value_range* r = ranges.find(t.name)) {
      s.lo = std::max(s.lo, r->lo);
      s.hi = std::min(s.hi, r->hi);
    }
    out.push_back(s);
  }
}

TYPEX_API auto typex::detail::eval_terms(const dim_terms& terms, std::span<const fact_symbol> syms,
                                         std::span<const index_t> vals) -> std::optional<index_t> {
  index_t stack[64];
  std::size_t top = 0;
  for (const dim_term& t : terms) {
    if (top == 64) return std::nullopt;
    switch (t.k) {
      case dim_term::kind::constant: stack[top++] = t.value; break;
      case dim_term::kind::symbol: {
        std::size_t i = 0;
        while (i < syms.size() && syms[i].name != t.name) ++i;
        if (i == syms.size()) return std::nullopt;
        stack[top++] = vals[i];
        break;
      }
      case dim_term::kind::anonymous: return std::nullopt;
      case dim_term::kind::op: {
        if (top < 2) return std::nullopt;
        const index_t b = stack[--top], a = stack[top - 1];
        if ((t.op == dim_op::floordiv || t.op == dim_op::ceildiv) && b <= 0) return std::nullopt;
        stack[top - 1] = detail::apply(t.op, a, b);
        break;
      }
    }
  }
  return top == 1 ? std::optional<index_t>(stack[0]) : std::nullopt;
}

TYPEX_API auto typex::detail::sample_range(index_t lo, index_t hi, index_t dense) -> std::vector<index_t> {
  std::vector<index_t> v;
  if (hi - lo < 4 * dense) {
    for (index_t x = lo; x <= hi; ++x) v.push_back(x);
    return v;
  }
  for (index_t x = lo; x < lo + dense; ++x) v.push_back(x);
  const index_t top = hi >= int_oo ? index_t{1} << 40 : hi;
  for (index_t x = lo + dense; x < top - dense; x += std::max<index_t>(3, x / 8))
    for (index_t d = -1; d <= 1; ++d) v.push_back(x + d);
  for (index_t x = top - dense; x <= top; ++x) v.push_back(x);
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

TYPEX_API auto typex::detail::thin(std::vector<index_t> v, std::size_t n) -> std::vector<index_t> {
  if (v.size() <= n || n < 16) return v;
  std::vector<index_t> out(v.begin(), v.begin() + 8);
  const std::size_t rest = n - 9;
  for (std::size_t i = 1; i <= rest; ++i) out.push_back(v[8 + (v.size() - 9) * i / (rest + 1)]);
  out.push_back(v.back());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

TYPEX_API auto typex::detail::classify(const shape_requirement& r, const range_constraints& ranges) -> fact_verdict {
  if (has_anonymous(r.lhs_terms) || has_anonymous(r.rhs_terms)) return {};
  std::vector<fact_symbol> syms;
  collect_symbols(r.lhs_terms, ranges, syms);
  collect_symbols(r.rhs_terms, ranges, syms);
  if (syms.empty()) return {};
  if (syms.size() == 1) {
    const fact_symbol s = syms.front();
    const std::vector<index_t> xs = sample_range(s.lo, s.hi, 4096);
    auto at = [&](index_t x) { return fact_holds(r, syms, std::span<const index_t>(&x, 1)).value_or(false); };
    std::size_t first = xs.size(), last = 0, count = 0;
    for (std::size_t i = 0; i < xs.size(); ++i)
      if (at(xs[i])) {
        first = std::min(first, i);
        last = i;
        ++count;
      }
    if (count == xs.size()) return {fact_verdict::kind::implied, {}, 0, 0};
    if (count == 0 || count != last - first + 1) {
      // a divisibility in disguise (reshape of seq*8 into 32-wide rows: seq % 4 == 0)?
      index_t m = 0;
      for (const index_t x : xs)
        if (x > 0 && at(x)) m = gcd_of(m, x);
      bool exact = m > 1;
      for (std::size_t i = 0; exact && i < xs.size(); ++i) exact = xs[i] <= 0 || at(xs[i]) == (xs[i] % m == 0);
      return {fact_verdict::kind::relation, s, 0, 0, exact ? m : 0};
    }
    // one run of values: find its exact ends between the samples (the fact is monotone there)
    index_t a = xs[first], b = xs[last];
    if (first > 0) {
      index_t no = xs[first - 1];
      while (a - no > 1) {
        const index_t mid = no + (a - no) / 2;
        (at(mid) ? a : no) = mid;
      }
    }
    if (last + 1 < xs.size()) {
      index_t no = xs[last + 1];
      while (no - b > 1) {
        const index_t mid = b + (no - b) / 2;
        (at(mid) ? b : no) = mid;
      }
    } else if (s.hi >= int_oo && xs.back() < s.hi) {
      b = int_oo;  // holds as far as sampled: unbounded above
    }
    return {fact_verdict::kind::narrows, s, a, b};
  }
  // several symbols: a grid over each one's samples (at most ~2^17 points in all)
  if (syms.size() > 3) return {fact_verdict::kind::relation, {}, 0, 0};
  const std::size_t per_symbol = syms.size() == 2 ? 362 : 50;
  std::vector<std::vector<index_t>> grids;
  for (const fact_symbol& s : syms) grids.push_back(thin(sample_range(s.lo, s.hi, syms.size() == 2 ? 24 : 8), per_symbol));
  std::vector<std::size_t> idx(syms.size(), 0);
  std::vector<index_t> vals(syms.size());
  while (true) {
    for (std::size_t i = 0; i < syms.size(); ++i) vals[i] = grids[i][idx[i]];
    if (!fact_holds(r, syms, vals).value_or(false)) return {fact_verdict::kind::relation, {}, 0, 0};
    std::size_t i = 0;
    while (i < idx.size() && ++idx[i] == grids[i].size()) idx[i++] = 0;
    if (i == idx.size()) break;
  }
  return {fact_verdict::kind::implied, {}, 0, 0};
}

TYPEX_API auto typex::detail::terms_declaration(const dim_terms& terms, const range_constraints& ranges) -> std::optional<std::string> {
  std::vector<std::string> stack;
  for (const dim_term& t : terms) {
    switch (t.k) {
      case dim_term::kind::constant: stack.push_back("typex::fix<" + std::to_string(t.value) + ">"); break;
      case dim_term::kind::symbol: {
        std::vector<fact_symbol> one;
        collect_symbols(dim_terms{t}, ranges, one);
        stack.push_back(sym_declaration(t.name, one.front().lo, one.front().hi));
        break;
      }
      case dim_term::kind::anonymous: return std::nullopt;
      case dim_term::kind::op: {
        const char* alias = nullptr;
        switch (t.op) {
          case dim_op::add: alias = "typex::dim_add_t<"; break;
          case dim_op::sub: alias = "typex::dim_sub_t<"; break;
          case dim_op::mul: alias = "typex::dim_mul_t<"; break;
          case dim_op::floordiv: alias = "typex::dim_floordiv_t<"; break;
          case dim_op::max: alias = "typex::dim_max_t<"; break;
          default: return std::nullopt;
        }
        if (stack.size() < 2) return std::nullopt;
        std::string b = std::move(stack.back());
        stack.pop_back();
        stack.back() = alias + stack.back() + ", " + b + ">";
        break;
      }
    }
  }
  if (stack.size() != 1) return std::nullopt;
  return stack.front();
}

TYPEX_API auto typex::detail::fact_origin(const shape_requirement& r) -> std::string {
  std::string s = r.op.find("::") == std::string::npos && r.op.find('.') == std::string::npos ? "typex::" : "";
  s += r.op;
  if (!r.node.empty() || !r.site.empty()) {
    s += " (";
    if (!r.node.empty()) {
      s += "node '";
      s += r.node;
      s += '\'';
      if (!r.module.empty()) {
        s += " in module '";
        s += r.module;
        s += '\'';
      }
      if (!r.site.empty()) s += ", ";
    }
    if (!r.site.empty()) {
      s += "at ";
      s += r.site;
    }
    s += ')';
  }
  return s;
}

TYPEX_API auto typex::detail::describe_violation(const shape_requirement& r, const fact_verdict& v, const range_constraints& ranges) -> std::string {
  std::string s = violation_head(r);
  if (v.k == fact_verdict::kind::narrows) {
    const fact_symbol& x = v.symbol;
    const std::string declared = sym_declaration(x.name, x.lo, x.hi);
    s += ", but ";
    s += x.name;
    s += " is declared ";
    s += declared;
    if (v.lo == v.hi) {
      s += ": the program only works for ";
      s += x.name;
      s += " == ";
      s += std::to_string(v.lo);
      s += " (it specializes the dim)\n    fix: declare the dim typex::fix<";
      s += std::to_string(v.lo);
      s += "> in place of ";
      s += declared;
      s += ", or change the model so that it works for every ";
      s += x.name;
    } else {
      s += ": the program only works for ";
      s += x.name;
      s += " in ";
      s += value_range{v.lo, v.hi}.to_string();
      s += "\n    fix: declare ";
      s += sym_declaration(x.name, v.lo, v.hi);
      s += " in place of ";
      s += declared;
    }
    return s;
  }
  s += ", which holds for some values of the symbols in their declared ranges and not for others, and no range "
       "says which";
  std::string fix;
  auto solved_as = [&](const dim_terms& lone, const dim_terms& other) {
    const dim_term& x = lone.front();
    if (mentions(other, x.name)) return;
    const auto decl = terms_declaration(other, ranges);
    if (!decl) return;
    fix = "declare ";
    fix += x.name;
    fix += " as ";
    fix += *decl;
    fix += " in place of ";
    std::vector<fact_symbol> one;
    collect_symbols(lone, ranges, one);
    fix += sym_declaration(x.name, one.front().lo, one.front().hi);
    if (lone_symbol(other)) fix += " (one symbol for both dims)";
  };
  if (r.rel == relation::equal && lone_symbol(r.lhs_terms)) solved_as(r.lhs_terms, r.rhs_terms);
  if (fix.empty() && r.rel == relation::equal && lone_symbol(r.rhs_terms)) solved_as(r.rhs_terms, r.lhs_terms);
  if (fix.empty() && v.multiple > 1) {
    const index_t k = v.multiple;
    const fact_symbol& x = v.symbol;
    std::string inner = "_";
    inner += x.name;
    fix = "declare ";
    fix += x.name;
    fix += " as a multiple of ";
    fix += std::to_string(k);
    fix += ": typex::dim_mul_t<typex::fix<";
    fix += std::to_string(k);
    fix += ">, ";
    fix += sym_declaration(inner, detail::ceildiv(x.lo, k), x.hi >= int_oo ? int_oo : detail::floordiv(x.hi, k));
    fix += "> in place of ";
    fix += sym_declaration(x.name, x.lo, x.hi);
    fix += " (";
    fix += x.name;
    fix += " % ";
    fix += std::to_string(k);
    fix += " == 0 by construction)";
  }
  s += "\n    fix: ";
  if (!fix.empty()) {
    s += fix;
    s += "; or export with typex::export_options{.runtime_assertions = true} to check it on every call";
  } else {
    s += "export with typex::export_options{.runtime_assertions = true} to check it on every call";
  }
  return s;
}

TYPEX_API auto typex::detail::terms_expr(const dim_terms& terms) -> ir::sym_expr {
  std::vector<ir::sym_expr> stack;
  for (const dim_term& t : terms) {
    switch (t.k) {
      case dim_term::kind::constant: stack.emplace_back(t.value); break;
      case dim_term::kind::symbol: stack.push_back(ir::sym_expr::symbol(std::string(t.name))); break;
      case dim_term::kind::anonymous: stack.push_back(ir::sym_expr::symbol("?")); break;
      case dim_term::kind::op: {
        ir::sym_expr b = std::move(stack.back());
        stack.pop_back();
        stack.back() = ir::sym_expr::apply(t.op, stack.back(), b);
        break;
      }
    }
  }
  return stack.front();
}

TYPEX_API auto typex::detail::describe_data_dependent(const shape_requirement& r, const tracing_context::unbacked_symbol& u) -> std::string {
  std::string s = violation_head(r);
  s += ", but ";
  s += u.name;
  s += " is data-dependent (the size of ";
  s += u.op;
  s += "'s result, node '";
  s += u.node;
  s += "', in ";
  s += value_range{u.lo, u.hi}.to_string();
  s += "): it is known only when the program runs, and the op needs it to be a concrete value at export";
  s += "\n    fix: export with typex::export_options{.runtime_assertions = true} to check ";
  s += fact_text(r);
  s += " when the program runs (torch._check's role), or keep the ops after ";
  s += u.op;
  s += " free of facts about ";
  s += u.name;
  return s;
}

TYPEX_API auto typex::detail::decide_facts(const std::vector<shape_requirement>& facts, const range_constraints& ranges,
                                  const export_options& options,
                                  const std::vector<tracing_context::unbacked_symbol>& unbacked) -> decided_facts {
  decided_facts out;
  std::vector<std::string> seen;  // one verdict per distinct fact
  std::string violations;
  int count = 0;
  for (const shape_requirement& r : facts) {
    std::string key = fact_text(r);
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
    seen.push_back(std::move(key));
    const fact_verdict v = classify(r, ranges);
    if (v.k == fact_verdict::kind::implied || v.k == fact_verdict::kind::undecided) continue;
    const tracing_context::unbacked_symbol* data = nullptr;
    for (const auto& u : unbacked)
      if (mentions(r.lhs_terms, u.name) || mentions(r.rhs_terms, u.name)) data = &u;
    if ((v.k == fact_verdict::kind::relation || data != nullptr) && options.runtime_assertions) {
      out.assertions.push_back(&r);
      continue;
    }
    violations += '\n';
    violations += data != nullptr ? describe_data_dependent(r, *data) : describe_violation(r, v, ranges);
    ++count;
  }
  if (count != 0) {
    raise<constraint_violation>([&](auto& w) {
      w.put("typex::export_program: constraint violation: the program needs ");
      w.put(count == 1 ? "a fact" : "facts");
      w.put(" about its symbolic dims that the declared ranges do not guarantee:");
      w.put(violations);
    });
  }
  return out;
}
#endif  // TYPEX_HEADER_DEFINITIONS
