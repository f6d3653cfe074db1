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
#include <map>
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
  // Submodules (by FQN: "layers.3.self_attn") whose calls keep their exact input/output signature in
  // the program (torch.export's preserve_module_call_signature): their outputs stay values of the
  // program even where nothing else reads them, and unflatten may swap the module for another
  // implementation of the same signature. Each must state its signature (module_scope with its
  // arguments, scope.returns(result)); an FQN that no call has is an export error.
  std::vector<std::string> preserve_module_call_signature = {};
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

// Proving a fact for every value of its symbols' ranges, by reasoning rather than sampling:
//  - sound interval bounds of each side (saturating at +-int_oo, which stands for infinity;
//    floordiv/ceildiv by a positive interval are monotone, so the corners bound them);
//  - each side as a polynomial over its symbols (+, -, * expanded; any other op an opaque atom
//    keyed by its canonical text): two sides with the same polynomial are equal for every value,
//    and a polynomial whose coefficients are all multiples of k is divisible by k.
// fact_proven is true only for a proof; false means "not proven" (the fact may still hold).
struct sound_interval {
  index_t lo, hi;
};
TYPEX_API std::optional<sound_interval> bound_terms(const dim_terms& terms, std::span<const fact_symbol> syms);
TYPEX_API bool fact_proven(const shape_requirement& r, std::span<const fact_symbol> syms);

// What a fact is, given the declared ranges. `implied` is a proof (fact_proven, or every value of
// a small enough range tried); `unproven` holds for every value sampled but no proof was found:
// export keeps it as a run-time assertion, checked on every call.
struct fact_verdict {
  enum class kind : unsigned char { implied, narrows, relation, undecided, unproven } k = kind::undecided;
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

// (terms_expr, a fact's side as the IR's symbolic expression: trace/context.hpp)

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
  if (fact_proven(r, syms)) return {fact_verdict::kind::implied, {}, 0, 0};
  // (sampling below finds counterexamples, and is a proof only where it tries every value)
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
    if (count == xs.size()) return static_cast<index_t>(xs.size()) == s.hi - s.lo + 1 ? fact_verdict{fact_verdict::kind::implied, {}, 0, 0} : fact_verdict{fact_verdict::kind::unproven, {}, 0, 0};
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
  if (syms.size() > 3) return {fact_verdict::kind::unproven, {}, 0, 0};
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
  // (every value tried when the grids hold all of each range)
  bool all = true;
  for (std::size_t i = 0; i < syms.size(); ++i) all = all && static_cast<index_t>(grids[i].size()) == syms[i].hi - syms[i].lo + 1;
  return {all ? fact_verdict::kind::implied : fact_verdict::kind::unproven, {}, 0, 0};
}

namespace typex::detail::proof {
constexpr index_t clamp_oo(index_t v) noexcept { return v >= int_oo ? int_oo : (v <= -int_oo ? -int_oo : v); }
inline index_t ext_add(index_t a, index_t b) noexcept {
  if (a >= int_oo || b >= int_oo) return (a <= -int_oo || b <= -int_oo) ? 0 : int_oo;  // (inf - inf: never asked for)
  if (a <= -int_oo || b <= -int_oo) return -int_oo;
  return clamp_oo(a + b);  // (|a|, |b| < 2^62: no overflow)
}
inline index_t ext_neg(index_t a) noexcept { return -a; }
inline index_t ext_mul(index_t a, index_t b) noexcept {
  if (a == 0 || b == 0) return 0;
  const bool neg = (a < 0) != (b < 0);
  if (a >= int_oo || a <= -int_oo || b >= int_oo || b <= -int_oo) return neg ? -int_oo : int_oo;
  index_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return neg ? -int_oo : int_oo;
  return clamp_oo(r);
}
inline index_t ext_div(index_t a, index_t b, bool ceil) noexcept {  // b > 0 finite or int_oo
  if (b >= int_oo) return a >= int_oo ? int_oo : (a <= -int_oo ? -int_oo : (a > 0 && ceil ? 1 : (a < 0 && !ceil ? -1 : 0)));
  if (a >= int_oo) return int_oo;
  if (a <= -int_oo) return -int_oo;
  return ceil ? ceildiv(a, b) : floordiv(a, b);
}

// A polynomial with integer coefficients: monomial (sorted atom names, repeated for powers) -> coefficient.
using monomial = std::vector<std::string>;
using polynomial = std::map<monomial, index_t>;

inline std::optional<polynomial> poly_add(polynomial a, const polynomial& b, index_t sign) {
  for (const auto& [m, c] : b) {
    index_t t = 0, sum = 0;
    if (__builtin_mul_overflow(c, sign, &t) || __builtin_add_overflow(a[m], t, &sum)) return std::nullopt;
    if (sum == 0) a.erase(m);
    else a[m] = sum;
  }
  return a;
}
inline std::optional<polynomial> poly_mul(const polynomial& a, const polynomial& b) {
  polynomial out;
  for (const auto& [ma, ca] : a)
    for (const auto& [mb, cb] : b) {
      monomial m = ma;
      m.insert(m.end(), mb.begin(), mb.end());
      std::sort(m.begin(), m.end());
      index_t c = 0, sum = 0;
      if (__builtin_mul_overflow(ca, cb, &c) || __builtin_add_overflow(out[m], c, &sum)) return std::nullopt;
      if (sum == 0) out.erase(m);
      else out[m] = sum;
    }
  return out;
}
inline std::string poly_text(const polynomial& p) {
  std::string s = "{";
  for (const auto& [m, c] : p) {
    s += std::to_string(c);
    for (const auto& a : m) { s += '*'; s += a; }
    s += ';';
  }
  return s + '}';
}

// Postfix terms as a polynomial; ops other than + - * become atoms named by their operands' polynomials.
inline std::optional<polynomial> as_polynomial(const dim_terms& terms) {
  std::vector<polynomial> stack;
  for (const dim_term& t : terms) {
    switch (t.k) {
      case dim_term::kind::constant: {
        polynomial p;
        if (t.value != 0) p[{}] = t.value;
        stack.push_back(std::move(p));
        break;
      }
      case dim_term::kind::symbol: stack.push_back(polynomial{{monomial{std::string(t.name)}, 1}}); break;
      case dim_term::kind::anonymous: return std::nullopt;
      case dim_term::kind::op: {
        if (stack.size() < 2) return std::nullopt;
        polynomial b = std::move(stack.back());
        stack.pop_back();
        polynomial& a = stack.back();
        std::optional<polynomial> r;
        switch (t.op) {
          case dim_op::add: r = poly_add(a, b, 1); break;
          case dim_op::sub: r = poly_add(a, b, -1); break;
          case dim_op::mul: r = poly_mul(a, b); break;
          default: {
            std::string atom = "(" + poly_text(a) + (t.op == dim_op::floordiv ? "//" : t.op == dim_op::ceildiv ? "ceildiv" : t.op == dim_op::max ? "max" : "bcast") + poly_text(b) + ")";
            r = polynomial{{monomial{std::move(atom)}, 1}};
          }
        }
        if (!r) return std::nullopt;
        a = std::move(*r);
      }
    }
  }
  if (stack.size() != 1) return std::nullopt;
  return stack.front();
}
}  // namespace typex::detail::proof

TYPEX_API auto typex::detail::bound_terms(const dim_terms& terms, std::span<const fact_symbol> syms) -> std::optional<sound_interval> {
  using namespace proof;
  std::vector<sound_interval> stack;
  for (const dim_term& t : terms) {
    switch (t.k) {
      case dim_term::kind::constant: stack.push_back({t.value, t.value}); break;
      case dim_term::kind::symbol: {
        std::size_t i = 0;
        while (i < syms.size() && syms[i].name != t.name) ++i;
        if (i == syms.size()) return std::nullopt;
        stack.push_back({syms[i].lo, syms[i].hi});
        break;
      }
      case dim_term::kind::anonymous: return std::nullopt;
      case dim_term::kind::op: {
        if (stack.size() < 2) return std::nullopt;
        const sound_interval b = stack.back();
        stack.pop_back();
        sound_interval& a = stack.back();
        switch (t.op) {
          case dim_op::add: a = {ext_add(a.lo, b.lo), ext_add(a.hi, b.hi)}; break;
          case dim_op::sub: a = {ext_add(a.lo, ext_neg(b.hi)), ext_add(a.hi, ext_neg(b.lo))}; break;
          case dim_op::mul: {
            const index_t c[4] = {ext_mul(a.lo, b.lo), ext_mul(a.lo, b.hi), ext_mul(a.hi, b.lo), ext_mul(a.hi, b.hi)};
            a = {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
            break;
          }
          case dim_op::floordiv:
          case dim_op::ceildiv: {
            if (b.lo <= 0) return std::nullopt;  // (a divisor that may be 0 or negative: no bound)
            const bool ceil = t.op == dim_op::ceildiv;
            const index_t c[4] = {ext_div(a.lo, b.lo, ceil), ext_div(a.lo, b.hi, ceil), ext_div(a.hi, b.lo, ceil), ext_div(a.hi, b.hi, ceil)};
            a = {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
            break;
          }
          case dim_op::max: a = {std::max(a.lo, b.lo), std::max(a.hi, b.hi)}; break;
          case dim_op::bcast: a = {std::min(a.lo, b.lo), std::max(a.hi, b.hi)}; break;
        }
      }
    }
  }
  if (stack.size() != 1) return std::nullopt;
  return stack.front();
}

TYPEX_API auto typex::detail::fact_proven(const shape_requirement& r, std::span<const fact_symbol> syms) -> bool {
  using namespace proof;
  const auto L = bound_terms(r.lhs_terms, syms), R = bound_terms(r.rhs_terms, syms);
  const auto finite_point = [](const std::optional<sound_interval>& x, index_t v) { return x && x->lo == v && x->hi == v; };
  const auto same_polynomial = [&] {
    const auto a = as_polynomial(r.lhs_terms), b = as_polynomial(r.rhs_terms);
    return a && b && *a == *b;
  };
  switch (r.rel) {
    case relation::equal:
      return (L && R && L->lo == L->hi && R->lo == R->hi && L->lo == R->lo && L->lo < int_oo && L->lo > -int_oo) || same_polynomial();
    case relation::broadcastable: return finite_point(L, 1) || finite_point(R, 1) || same_polynomial() || (L && R && L->lo == L->hi && L->lo == R->lo && R->lo == R->hi && L->lo < int_oo);
    case relation::at_least: return L && R && L->lo > -int_oo && R->hi < int_oo && L->lo >= R->hi;
    case relation::divisible: {
      if (finite_point(R, 1)) return true;
      if (!R || R->lo != R->hi || R->lo <= 0 || R->lo >= int_oo) return false;
      const index_t k = R->lo;
      const auto p = as_polynomial(r.lhs_terms);
      if (!p) return false;
      for (const auto& [m, c] : *p)
        if (c % k != 0) return false;
      return true;
    }
  }
  return false;
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
    if (v.k == fact_verdict::kind::unproven) {  // (true wherever tried, not proven: checked on every call)
      out.assertions.push_back(&r);
      continue;
    }
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
