// Tests for typex/ir/sym_expr.hpp.
#include "../support.hpp"

using namespace typex;
using namespace typex::ir;
using seq = sym<"seq", 1, 512>;

TEST_CASE("sym_expr: constants fold, symbols stay, printing matches the typed dims") {
  CHECK((sym_expr(3) * sym_expr(4)).value() == 12);
  const sym_expr s = sym_expr::symbol("seq");
  CHECK(s.is_symbol());
  CHECK(s.name() == "seq");
  CHECK((sym_expr(2) * s + sym_expr(1)).to_string() == "2*seq + 1");
  CHECK(sym_expr::apply(dim_op::floordiv, s - sym_expr(1), sym_expr(2)).to_string() == "(seq - 1)//2");
  CHECK(sym_expr::apply(dim_op::max, s, sym_expr(3)).to_string() == "max(seq, 3)");
  CHECK(sym_expr(2) * s == sym_expr(2) * sym_expr::symbol("seq"));
  CHECK_FALSE(sym_expr(2) * s == s * sym_expr(2));  // structural, not algebraic, equality
}

TEST_CASE("sym_expr: from dim types, one spelling for types and data") {
  symbol_namer names;
  using D = decltype(floordiv(fix<2>{} * seq{} + fix<3>{}, fix<2>{}));
  const sym_expr e = to_sym_expr<D>(names);
  CHECK(e.to_string() == typex::detail::to_string_with([](auto& w) { D::write_type(w); }));
  CHECK(to_sym_expr<fix<784>>(names).value() == 784);
  CHECK(to_sym_expr<dyn>(names).to_string() == "s0");
  CHECK(to_sym_expr<dyn>(names).to_string() == "s1");
}

TEST_CASE("sym_expr: evaluation against bound symbols") {
  symbol_table t;
  const sym_expr e = sym_expr(2) * sym_expr::symbol("seq") + sym_expr(1);
  CHECK_FALSE(e.evaluate(t).has_value());
  t.bind("seq", 5, "input 'x'");
  CHECK(e.evaluate(t) == 11);
  CHECK_FALSE(sym_expr::apply(dim_op::floordiv, sym_expr(4), sym_expr::symbol("zero")).evaluate(t).has_value());
}
