// typex/export/range_constraints.hpp — the declared range of every symbol of an exported program.
//
// torch.export's range_constraints: symbol -> [lo, hi] ({s0: VR[1, 1024]}). Adding a range to a
// symbol that has one intersects them; an empty intersection is a constraint violation. check()
// validates bound symbols at run time and names the symbol, its value and the range.
#pragma once

#include <typex/core/dim.hpp>
#include <typex/core/symbol_table.hpp>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace typex {

struct value_range {
  index_t lo = 0;
  index_t hi = int_oo;
  bool contains(index_t v) const noexcept { return v >= lo && v <= hi; }
  std::string to_string() const {
    std::string s = "VR[";
    s += std::to_string(lo);
    s += ", ";
    s += hi >= int_oo ? std::string("int_oo") : std::to_string(hi);
    s += ']';
    return s;
  }
  friend bool operator==(const value_range&, const value_range&) = default;
};

class range_constraints {
 public:
  // Records (or narrows) the range of `symbol`.
  TYPEX_API void add(std::string_view symbol, value_range r);

  // Records the declared range of a symbolic dim type.
  template <class D>
    requires is_symbolic_dim_v<D>
  void add() {
    add(D::name.view(), value_range{D::lo, D::hi});
  }

  // Records the range of a derived dim of the inputs (2*seq: VR[2, 1024]), as torch.export lists
  // derived dims next to their roots. It follows from its symbols' ranges; the relation itself is
  // checked where the inputs bind the symbols.
  template <class D>
    requires is_derived_dim_v<D>
  void add_derived() {
    std::string text;
    detail::string_writer w{text};
    D::write_type(w, 0);
    for (const auto& e : entries_)
      if (e.first == text) return;
    entries_.emplace_back(std::move(text), value_range{D::lo, D::hi});
  }

  // Records a data-dependent symbol (torch.export's unbacked u0: the size of nonzero's result) with
  // its inline range; the program binds it when the op that makes it runs.
  void add_unbacked(std::string_view symbol, value_range r) {
    add(symbol, r);
    unbacked_.emplace_back(symbol);
  }
  bool is_unbacked(std::string_view symbol) const noexcept {
    for (const auto& u : unbacked_)
      if (u == symbol) return true;
    return false;
  }
  bool has_unbacked() const noexcept { return !unbacked_.empty(); }
  const std::vector<std::string>& unbacked() const noexcept { return unbacked_; }

  const value_range* find(std::string_view symbol) const noexcept {
    for (const auto& e : entries_)
      if (e.first == symbol) return &e.second;
    return nullptr;
  }
  const std::vector<std::pair<std::string, value_range>>& entries() const noexcept { return entries_; }
  bool empty() const noexcept { return entries_.empty(); }

  // Every bound symbol with a range must be inside it.
  TYPEX_API void check(const symbol_table& bound) const;

  // {s0: VR[1, 1024], seq: VR[1, 512]}
  TYPEX_API std::string to_string() const;

 private:
  std::vector<std::pair<std::string, value_range>> entries_;  // in the order symbols appear
  std::vector<std::string> unbacked_;
};

}  // namespace typex

// ---- definitions: compiled once in typex::runtime, or inline here in header-only builds
// (config.hpp: TYPEX_SEPARATE_COMPILATION) ----
#if TYPEX_HEADER_DEFINITIONS
TYPEX_API auto typex::range_constraints::add(std::string_view symbol, value_range r) -> void {
  for (auto& [name, range] : entries_) {
    if (name != symbol) continue;
    const value_range merged{range.lo > r.lo ? range.lo : r.lo, range.hi < r.hi ? range.hi : r.hi};
    if (merged.lo > merged.hi) {
      detail::raise<constraint_violation>([&](auto& w) {
        w.put("typex: symbol '"); w.put(symbol); w.put("' is constrained to both "); w.put(range.to_string());
        w.put(" and "); w.put(r.to_string()); w.put(", which have no value in common");
      });
    }
    range = merged;
    return;
  }
  entries_.emplace_back(std::string(symbol), r);
}

TYPEX_API auto typex::range_constraints::check(const symbol_table& bound) const -> void {
  for (const auto& e : bound.entries()) {
    const value_range* r = find(e.name);
    if (r == nullptr || r->contains(e.value)) continue;
    detail::raise<constraint_violation>([&](auto& w) {
      w.put("typex: "); w.put(e.bound_by); w.put(" binds symbol '"); w.put(e.name); w.put("' to ");
      w.put_int(e.value); w.put(", outside its range "); w.put(r->to_string());
    });
  }
}

TYPEX_API auto typex::range_constraints::to_string() const -> std::string {
  std::string s = "{";
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    if (i) s += ", ";
    s += entries_[i].first;
    s += ": ";
    s += entries_[i].second.to_string();
  }
  s += '}';
  return s;
}
#endif  // TYPEX_HEADER_DEFINITIONS
