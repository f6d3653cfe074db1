// Compile-fail pair "arange_bounds": this twin must build. See arange_bounds_ko.cpp.
#include <typex/backend/eigen.hpp>
#include <typex/typex.hpp>

int main() {
  using namespace typex::literals;
  (void)typex::arange(2_c, 8_c);  // 2 3 4 5 6 7
}
