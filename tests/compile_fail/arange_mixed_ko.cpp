// Compile-fail pair "arange_mixed": this twin must fail; the diagnostic's first line must match:
// expect: typex::arange: the bounds mix dims and numbers; pass them all as dims
#include <typex/backend/eigen.hpp>
#include <typex/typex.hpp>

int main() {
  using seq = typex::sym<"seq", 1, 64>;
  (void)typex::arange(1, seq(8));  // a number and a dim
}
