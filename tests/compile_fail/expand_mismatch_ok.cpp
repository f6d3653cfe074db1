// Compile-fail pair "expand_mismatch": this twin must build. See expand_mismatch_ko.cpp.
#include <typex/typex.hpp>

int main() {
  (void)typex::expand_shape(typex::shape_c<1>{}, typex::shape_c<2, 3>{});
}
