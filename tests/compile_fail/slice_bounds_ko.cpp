// Compile-fail pair "slice_bounds": this twin must fail; the diagnostic's first line must match:
// expect: typex::slice: the slice bounds can never fit dim 0: 512 < seq \(declared in \[600, 1024\]\) for every value in the declared ranges
#include <typex/typex.hpp>
using namespace typex::literals;
using seq = typex::sym<"seq", 600, 1024>;
int main() {
  (void)typex::slice_shape<0>(typex::shape_c<512, 16>{}, 0_c, seq(700));
}
