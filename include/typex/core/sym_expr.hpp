// typex/core/sym_expr.hpp — symbolic integer expressions as run-time data (the IR's dims).
//
// (In the core layer, under the name typex::ir::sym_expr that the IR and its users know it by: the
// ops' run-time shape rules (ops/, below ir) compute with it, as the typed rules compute with dim
// types. <typex/ir/sym_expr.hpp> includes this header.)
//
// The typed front end knows a dim by its type (fix<784>, sym<"batch", 1, 1024>, 2*seq); the graph
// holds the same facts as data: a sym_expr is a constant, a symbol, or an operation on two
// expressions (the dim_ops of core/dim.hpp). Expressions are immutable and share their nodes, so
// copying one is a reference-count increment. They print as the typed dims do (2*seq + 1,
// (h - 1)//2 + 1) and evaluate against symbol bindings.
#pragma once

#include <typex/core/dim.hpp>
#include <typex/core/symbol_table.hpp>

#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace typex::ir {

class sym_expr {
 public:
  enum class kind : unsigned char { constant, symbol, op };

  sym_expr() : sym_expr(index_t{0}) {}
  sym_expr(index_t v) : node_(std::make_shared<const node>(node{kind::constant, v, {}, dim_op::add, {}, {}})) {}  // NOLINT
  static sym_expr constant(index_t v) { return sym_expr(v); }
  static sym_expr symbol(std::string name) {
    return sym_expr(std::make_shared<const node>(node{kind::symbol, 0, std::move(name), dim_op::add, {}, {}}));
  }
  // (a sum whose symbolic terms cancel is its constant, or its one remaining term: seq + (16 - seq)
  // is 16, (h - 1) + 1 is h, as the rules that pad and slice need; other sums keep their spelling)
  static sym_expr apply(dim_op op, sym_expr a, sym_expr b) {
    if (a.is_constant() && b.is_constant() && !((op == dim_op::floordiv || op == dim_op::ceildiv) && *b.value() <= 0))
      return sym_expr(detail::apply(op, *a.value(), *b.value()));
    if (op == dim_op::add || op == dim_op::sub) {
      linear_form f;
      if (f.collect(a.node_, 1) && f.collect(b.node_, op == dim_op::add ? 1 : -1)) {
        const linear_form::term* only = nullptr;
        std::size_t live = 0;
        for (const auto& t : f.terms)
          if (t.coefficient != 0) {
            only = &t;
            ++live;
          }
        if (live == 0) return sym_expr(f.constant);
        if (live == 1 && only->coefficient == 1 && f.constant == 0) return sym_expr(only->atom);
      }
    }
    return sym_expr(std::make_shared<const node>(node{kind::op, 0, {}, op, a.node_, b.node_}));
  }

  kind what() const noexcept { return node_->k; }
  bool is_constant() const noexcept { return node_->k == kind::constant; }
  bool is_symbol() const noexcept { return node_->k == kind::symbol; }
  // The constant's value; nullopt for anything else.
  std::optional<index_t> value() const noexcept {
    return is_constant() ? std::optional<index_t>(node_->value) : std::nullopt;
  }
  // The symbol's name; empty for anything else.
  std::string_view name() const noexcept { return node_->name; }
  dim_op op() const noexcept { return node_->op; }
  sym_expr lhs() const { return sym_expr(node_->lhs); }
  sym_expr rhs() const { return sym_expr(node_->rhs); }

  // Whether symbol `name` occurs in the expression.
  bool mentions(std::string_view symbol) const noexcept { return mentions(*node_, symbol); }

  // The value for the bound symbols; nullopt while a symbol is unbound.
  std::optional<index_t> evaluate(const symbol_table& t) const { return eval(*node_, t); }

  std::string to_string() const {
    std::string s;
    write(s, *node_, 0);
    return s;
  }

  friend bool operator==(const sym_expr& a, const sym_expr& b) noexcept { return equal(*a.node_, *b.node_); }

  friend sym_expr operator+(const sym_expr& a, const sym_expr& b) { return apply(dim_op::add, a, b); }
  friend sym_expr operator-(const sym_expr& a, const sym_expr& b) { return apply(dim_op::sub, a, b); }
  friend sym_expr operator*(const sym_expr& a, const sym_expr& b) { return apply(dim_op::mul, a, b); }

 private:
  struct node {
    kind k;
    index_t value;
    std::string name;
    dim_op op;
    std::shared_ptr<const node> lhs, rhs;
  };
  explicit sym_expr(std::shared_ptr<const node> n) : node_(std::move(n)) {}

  // An expression as constant + sum of coefficient * atom, where an atom is a symbol or an
  // operation other than +, - and * by a constant (atoms compared by structure). collect() is
  // false where a coefficient or the constant would overflow.
  struct linear_form {
    struct term {
      std::shared_ptr<const node> atom;
      index_t coefficient;
    };
    std::vector<term> terms;
    index_t constant = 0;
    bool collect(const std::shared_ptr<const node>& n, index_t k) {
      if (terms.size() > 16) return false;  // (a long sum keeps its spelling: no quadratic work)
      if (n->k == kind::constant) {
        index_t v = 0;
        return !__builtin_mul_overflow(n->value, k, &v) && !__builtin_add_overflow(constant, v, &constant);
      }
      if (n->k == kind::op && (n->op == dim_op::add || n->op == dim_op::sub))
        return collect(n->lhs, k) && (n->op == dim_op::add || k != std::numeric_limits<index_t>::min()) &&
               collect(n->rhs, n->op == dim_op::add ? k : -k);
      if (n->k == kind::op && n->op == dim_op::mul && (n->lhs->k == kind::constant || n->rhs->k == kind::constant)) {
        const bool left = n->lhs->k == kind::constant;
        index_t kk = 0;
        if (__builtin_mul_overflow(k, left ? n->lhs->value : n->rhs->value, &kk)) return false;
        return collect(left ? n->rhs : n->lhs, kk);
      }
      for (term& t : terms)
        if (equal(*t.atom, *n)) return !__builtin_add_overflow(t.coefficient, k, &t.coefficient);
      terms.push_back({n, k});
      return true;
    }
  };

  static std::optional<index_t> eval(const node& n, const symbol_table& t) {
    switch (n.k) {
      case kind::constant: return n.value;
      case kind::symbol: return t.value(n.name);
      case kind::op: {
        const auto a = eval(*n.lhs, t), b = eval(*n.rhs, t);
        if (!a || !b) return std::nullopt;
        if ((n.op == dim_op::floordiv || n.op == dim_op::ceildiv) && *b <= 0) return std::nullopt;
        return detail::apply(n.op, *a, *b);
      }
    }
    return std::nullopt;
  }

  static bool mentions(const node& n, std::string_view symbol) noexcept {
    switch (n.k) {
      case kind::constant: return false;
      case kind::symbol: return n.name == symbol;
      case kind::op: return mentions(*n.lhs, symbol) || mentions(*n.rhs, symbol);
    }
    return false;
  }

  static bool equal(const node& a, const node& b) noexcept {
    if (&a == &b) return true;
    if (a.k != b.k) return false;
    switch (a.k) {
      case kind::constant: return a.value == b.value;
      case kind::symbol: return a.name == b.name;
      case kind::op: return a.op == b.op && equal(*a.lhs, *b.lhs) && equal(*a.rhs, *b.rhs);
    }
    return false;
  }

  // The same notation as core/dim.hpp's derived dims (one spelling in types and in graphs).
  static void write(std::string& s, const node& n, int parent_prec) {
    switch (n.k) {
      case kind::constant: s += std::to_string(n.value); return;
      case kind::symbol: s += n.name; return;
      case kind::op: break;
    }
    detail::string_writer w{s};
    detail::write_dim_op(w, n.op, parent_prec, [&](int p) { write(s, *n.lhs, p); }, [&](int p) { write(s, *n.rhs, p); });
  }

  std::shared_ptr<const node> node_;
};

// Names the anonymous dims met while converting typed shapes: s0, s1, ... (torch.export's names).
class symbol_namer {
 public:
  std::string fresh() { return typex::detail::with_number("s", next_++); }

 private:
  int next_ = 0;
};

// The sym_expr of a dim type: fix<N> -> N, sym<"batch"> -> batch, derived -> its expression,
// dyn -> a fresh symbol from `namer`.
template <dim D>
sym_expr to_sym_expr(symbol_namer& namer) {
  if constexpr (is_static_dim_v<D>) return sym_expr(D::value);
  else if constexpr (is_symbolic_dim_v<D>) return sym_expr::symbol(std::string(D::name.view()));
  else if constexpr (is_derived_dim_v<D>)
    return sym_expr::apply(D::op, to_sym_expr<typename D::lhs_type>(namer), to_sym_expr<typename D::rhs_type>(namer));
  else return sym_expr::symbol(namer.fresh());
}

}  // namespace typex::ir
