// typex/passes/argument_hash.hpp — exact equality and hashing of call arguments (ir::argument),
// for passes that look calls up by what they compute (common subexpression elimination, pattern
// matching).
//
// ir::argument's operator== compares doubles as numbers: 0.0 == -0.0, and a NaN equals nothing,
// not even itself. A pass that merges `mul(x, 0.0)` with `mul(x, -0.0)` changes the sign of the
// zeros the program computes, so passes compare arguments exactly instead:
//
//   passes::same_argument(a, b)   doubles by their bits (0.0 and -0.0 differ, a NaN equals the same
//                                 NaN), everything else by its operator== (a sym_expr by structure)
//   passes::hash_argument(a)      consistent with same_argument: equal arguments hash equal
//
// The function objects argument_equal and argument_hasher make them usable as the key of an
// unordered container.
#pragma once

#include <typex/ir/graph.hpp>
#include <typex/ir/sym_expr.hpp>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

namespace typex::passes {

// Whether two arguments are the same argument: same alternative, doubles bit for bit, the others
// by their operator== (a sym_expr by structure: `s0 + 1` and `1 + s0` differ).
TYPEX_API bool same_argument(const ir::argument& a, const ir::argument& b) noexcept;

// A hash of the expression's structure (equal expressions hash equal).
TYPEX_API std::size_t hash_sym_expr(const ir::sym_expr& e) noexcept;

// A hash consistent with same_argument.
TYPEX_API std::size_t hash_argument(const ir::argument& a) noexcept;

struct argument_equal {
  bool operator()(const ir::argument& a, const ir::argument& b) const noexcept { return same_argument(a, b); }
};
struct argument_hasher {
  std::size_t operator()(const ir::argument& a) const noexcept { return hash_argument(a); }
};

namespace detail {
// boost::hash_combine's mixing, on 64 bits.
constexpr std::size_t hash_mix(std::size_t seed, std::size_t v) noexcept {
  return seed ^ (v + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2));
}
}  // namespace detail

}  // namespace typex::passes

// ---- definitions: compiled once in typex::runtime, or inline here in header-only builds
// (config.hpp: TYPEX_SEPARATE_COMPILATION) ----
#if TYPEX_HEADER_DEFINITIONS
TYPEX_API auto typex::passes::same_argument(const ir::argument& a, const ir::argument& b) noexcept -> bool {
  if (a.index() != b.index()) return false;
  if (const auto* x = std::get_if<double>(&a)) return std::bit_cast<std::uint64_t>(*x) == std::bit_cast<std::uint64_t>(std::get<double>(b));
  return a == b;
}

TYPEX_API auto typex::passes::hash_sym_expr(const ir::sym_expr& e) noexcept -> std::size_t {
  switch (e.what()) {
    case ir::sym_expr::kind::constant: return detail::hash_mix(0x51, std::hash<index_t>{}(*e.value()));
    case ir::sym_expr::kind::symbol: return detail::hash_mix(0x53, std::hash<std::string_view>{}(e.name()));
    case ir::sym_expr::kind::op: {
      std::size_t h = detail::hash_mix(0x4f, static_cast<std::size_t>(e.op()));
      h = detail::hash_mix(h, hash_sym_expr(e.lhs()));
      return detail::hash_mix(h, hash_sym_expr(e.rhs()));
    }
  }
  return 0;
}

TYPEX_API auto typex::passes::hash_argument(const ir::argument& a) noexcept -> std::size_t {
  const std::size_t seed = detail::hash_mix(0x7a, a.index());
  return std::visit(
      [&](const auto& v) -> std::size_t {
        using T = std::remove_cvref_t<decltype(v)>;
        if constexpr (std::is_same_v<T, ir::value_ref>) {
          return detail::hash_mix(detail::hash_mix(seed, v.node), v.index);
        } else if constexpr (std::is_same_v<T, ir::none_t>) {
          return seed;
        } else if constexpr (std::is_same_v<T, double>) {
          return detail::hash_mix(seed, std::hash<std::uint64_t>{}(std::bit_cast<std::uint64_t>(v)));
        } else if constexpr (std::is_same_v<T, ir::sym_expr>) {
          return detail::hash_mix(seed, hash_sym_expr(v));
        } else if constexpr (std::is_same_v<T, dtype>) {
          return detail::hash_mix(seed, static_cast<std::size_t>(v));
        } else if constexpr (std::is_same_v<T, std::vector<std::int64_t>>) {
          std::size_t h = detail::hash_mix(seed, v.size());
          for (std::int64_t x : v) h = detail::hash_mix(h, std::hash<std::int64_t>{}(x));
          return h;
        } else if constexpr (std::is_same_v<T, std::vector<ir::value_ref>>) {
          std::size_t h = detail::hash_mix(seed, v.size());
          for (const ir::value_ref& r : v) h = detail::hash_mix(detail::hash_mix(h, r.node), r.index);
          return h;
        } else if constexpr (std::is_same_v<T, std::vector<ir::sym_expr>>) {
          std::size_t h = detail::hash_mix(seed, v.size());
          for (const ir::sym_expr& e : v) h = detail::hash_mix(h, hash_sym_expr(e));
          return h;
        } else {  // bool, std::int64_t, std::string
          return detail::hash_mix(seed, std::hash<T>{}(v));
        }
      },
      a);
}
#endif  // TYPEX_HEADER_DEFINITIONS
