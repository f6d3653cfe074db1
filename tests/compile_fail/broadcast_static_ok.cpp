// Compile-fail pair "broadcast_static": this twin must build. See broadcast_static_ko.cpp.
#include <typex/typex.hpp>

int main() {
  (void)typex::broadcast_shapes(typex::shape_c<1, 3>{}, typex::shape_c<4, 3>{}, typex::op_name<"add">);
}
