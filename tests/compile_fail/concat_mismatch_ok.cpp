// Compile-fail pair "concat_mismatch": this twin must build. See concat_mismatch_ko.cpp.
#include <typex/typex.hpp>

int main() {
  (void)typex::concat_shapes<1>(typex::shape_c<2, 3>{}, typex::shape_c<2, 4>{});
}
