// Compile-fail pair "slice_bounds": this twin must build. See slice_bounds_ko.cpp.
#include <typex/typex.hpp>
using namespace typex::literals;
using seq = typex::sym<"seq", 1, 512>;
int main() {
  (void)typex::slice_shape<0>(typex::shape_c<512, 16>{}, 0_c, seq(300));
}
