// Compile-fail pair "permute_invalid": this twin must build. See permute_invalid_ko.cpp.
#include <typex/typex.hpp>

int main() {
  (void)typex::permute_shape<1, 0, 2>(typex::shape_c<2, 3, 4>{});
}
