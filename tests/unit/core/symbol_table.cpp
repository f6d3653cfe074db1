#include "../support.hpp"

using namespace typex;
using batch = sym<"batch", 1, 64>;
using seq = sym<"seq", 1, 512>;

TEST_CASE("inputs sharing a symbol must agree") {
  symbol_table t;
  bind_symbols(shape<batch, fix<3>>(batch(8), {}), t, "input 'x'");
  bind_symbols(shape<batch>(batch(8)), t, "input 'mask'");
  CHECK(t.value("batch") == 8);
  CHECK(t.entries().size() == 1);
  CHECK(typex_test::message_of<constraint_violation>([&] { bind_symbols(shape<batch>(batch(9)), t, "input 'y'"); }) ==
        "typex: input 'y' binds symbolic dim 'batch' to 9, but input 'x' bound it to 8; inputs that share a symbol "
        "must agree on its value");
}

TEST_CASE("derived dims are checked against their expression once the symbols are bound") {
  using seq2 = dim_mul_t<fix<2>, seq>;
  symbol_table t;
  const shape<seq2> doubled(seq2(10));
  bind_symbols(doubled, t, "input 'y'");  // binds nothing: seq is not on y
  bind_symbols(shape<seq>(seq(5)), t, "input 'x'");
  check_derived_dims(doubled, t, "input 'y'");  // 10 == 2*5
  const shape<seq2> wrong(seq2(12));
  CHECK(typex_test::message_of<constraint_violation>([&] { check_derived_dims(wrong, t, "input 'y'"); }) ==
        "typex: input 'y' has extent 12 at dim 0, but its type says 2*seq, which is 10 for the bound symbols");
}
