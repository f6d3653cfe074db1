// Compile-fail pair "broadcast_range": this twin must build. See broadcast_range_ko.cpp.
#include <typex/typex.hpp>
using batch = typex::sym<"batch", 2, 64>;
int main() {
  (void)typex::broadcast_shapes(typex::shape<batch, typex::fix<3>>{}, typex::shape_c<64, 3>{}, typex::op_name<"add">);
}
