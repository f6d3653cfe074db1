// Compile-fail pair "reshape_count": this twin must build. See reshape_count_ko.cpp.
#include <typex/typex.hpp>

int main() {
  (void)typex::reshape_shape(typex::shape_c<2, 3>{}, typex::reshape_to(typex::fix<3>{}, typex::fix<2>{}));
}
