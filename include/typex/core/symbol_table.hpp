// typex/core/symbol_table.hpp — the values bound to named symbolic dims across several inputs.
//
// One symbol on several inputs means they must agree (torch.export: the same Dim object). When a
// program's inputs are bound, every shape goes through bind_symbols with one table: the first use
// of `batch` fixes its value, later uses must match, and a derived dim (2*seq) must equal its
// expression once its symbols are known. Violations throw typex::constraint_violation naming both
// inputs.
#pragma once

#include <typex/core/shape.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace typex {

class symbol_table {
 public:
  struct entry {
    std::string name;
    index_t value;
    std::string bound_by;  // the input that first bound it
  };

  const entry* find(std::string_view name) const noexcept {
    for (const auto& e : entries_)
      if (e.name == name) return &e;
    return nullptr;
  }
  std::optional<index_t> value(std::string_view name) const noexcept {
    const entry* e = find(name);
    return e ? std::optional<index_t>(e->value) : std::nullopt;
  }
  const std::vector<entry>& entries() const noexcept { return entries_; }

  // Binds `name` to `v`, or checks that it is already bound to `v`.
  TYPEX_API void bind(std::string_view name, index_t v, std::string_view what);

 private:
  std::vector<entry> entries_;  // few symbols per program: a vector beats a map
};

namespace detail {
// The value of dim type D given the bound symbols, when it is determined by them.
template <class D>
std::optional<index_t> evaluate(const symbol_table& t) {
  if constexpr (is_static_dim_v<D>) {
    return D::value;
  } else if constexpr (is_symbolic_dim_v<D>) {
    return t.value(D::name.view());
  } else if constexpr (is_derived_dim_v<D>) {
    const auto a = evaluate<typename D::lhs_type>(t);
    const auto b = evaluate<typename D::rhs_type>(t);
    if (!a || !b) return std::nullopt;
    if ((D::op == dim_op::floordiv || D::op == dim_op::ceildiv) && *b <= 0) return std::nullopt;
    return apply(D::op, *a, *b);
  } else {
    return std::nullopt;
  }
}
}  // namespace detail

// Records the symbols of shape s in t (as seen on input `what`): the first use binds, later uses
// must agree. Bind every input first, then check_derived_dims on each, so that a derived dim on one
// input is checked against a symbol bound by another.
template <class... D>
void bind_symbols(const shape<D...>& s, symbol_table& t, std::string_view what) {
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    auto bind_one = [&]<std::size_t K>(std::integral_constant<std::size_t, K>) {
      using X = typename shape<D...>::template dim_t<K>;
      if constexpr (is_symbolic_dim_v<X>) t.bind(X::name.view(), s.template get<K>().get(), what);
    };
    (bind_one(std::integral_constant<std::size_t, I>{}), ...);
  }(std::index_sequence_for<D...>{});
}

// Checks each derived dim of s (2*seq, seq + 1) against its expression over the bound symbols.
template <class... D>
void check_derived_dims(const shape<D...>& s, const symbol_table& t, std::string_view what) {
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    auto check_one = [&]<std::size_t K>(std::integral_constant<std::size_t, K>) {
      using X = typename shape<D...>::template dim_t<K>;
      if constexpr (is_derived_dim_v<X>) {
        const auto want = detail::evaluate<X>(t);
        const index_t got = s.template get<K>().get();
        if (want && *want != got) {
          detail::raise<constraint_violation>([&](auto& w) {
            w.put("typex: "); w.put(what); w.put(" has extent "); w.put_int(got); w.put(" at dim ");
            w.put_int(static_cast<long long>(K)); w.put(", but its type says "); X::write_type(w, 0);
            w.put(", which is "); w.put_int(*want); w.put(" for the bound symbols");
          });
        }
      }
    };
    (check_one(std::integral_constant<std::size_t, I>{}), ...);
  }(std::index_sequence_for<D...>{});
}

}  // namespace typex

// ---- definitions: compiled once in typex::runtime, or inline here in header-only builds
// (config.hpp: TYPEX_SEPARATE_COMPILATION) ----
#if TYPEX_HEADER_DEFINITIONS
TYPEX_API auto typex::symbol_table::bind(std::string_view name, index_t v, std::string_view what) -> void {
  if (const entry* e = find(name)) {
    if (e->value != v) {
      detail::raise<constraint_violation>([&](auto& w) {
        w.put("typex: "); w.put(what); w.put(" binds symbolic dim '"); w.put(name); w.put("' to "); w.put_int(v);
        w.put(", but "); w.put(e->bound_by); w.put(" bound it to "); w.put_int(e->value);
        w.put("; inputs that share a symbol must agree on its value");
      });
    }
    return;
  }
  entries_.push_back({std::string(name), v, std::string(what)});
}
#endif  // TYPEX_HEADER_DEFINITIONS
