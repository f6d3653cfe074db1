// Compile-fail pair "arange_bounds": this twin must fail; the diagnostic's first line must match:
// expect: typex::arange: start 8 is past end 2 \(static bounds\); a range counts up from start to end: swap them
#include <typex/backend/eigen.hpp>
#include <typex/typex.hpp>

int main() {
  using namespace typex::literals;
  (void)typex::arange(8_c, 2_c);  // empty: start is past end
}
