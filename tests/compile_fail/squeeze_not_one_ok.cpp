// Compile-fail pair "squeeze_not_one": this twin must build. See squeeze_not_one_ko.cpp.
#include <typex/typex.hpp>

int main() {
  (void)typex::squeeze_shape<0>(typex::shape_c<1, 3>{});
}
