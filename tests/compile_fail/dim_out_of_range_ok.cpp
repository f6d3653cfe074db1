// Compile-fail pair "dim_out_of_range": this twin must build. See dim_out_of_range_ko.cpp.
#include <typex/typex.hpp>

int main() {
  (void)typex::reduce_shape<false, -3>(typex::shape_c<2, 3, 4>{});
}
