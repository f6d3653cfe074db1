// Compile-fail pair "arange_mixed": this twin must build. See arange_mixed_ko.cpp.
#include <typex/backend/eigen.hpp>
#include <typex/typex.hpp>

int main() {
  using namespace typex::literals;
  using seq = typex::sym<"seq", 1, 64>;
  (void)typex::arange(1_c, seq(8));  // both dims
}
