// Compile-fail pair "symbolic_range": this twin must build. See symbolic_range_ko.cpp.
#include <typex/typex.hpp>
using batch = typex::sym<"batch", 1, 64>;
int main() {
  (void)typex::matmul_shape(typex::shape<typex::fix<8>, batch>{}, typex::shape_c<64, 10>{});
}
