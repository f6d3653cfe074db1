// Compile-fail pair "matmul_inner": this twin must build. See matmul_inner_ko.cpp.
#include <typex/typex.hpp>

int main() {
  (void)typex::matmul_shape(typex::shape_c<32, 784>{}, typex::shape_c<784, 10>{});
}
