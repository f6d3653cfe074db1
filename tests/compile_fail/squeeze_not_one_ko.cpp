// Compile-fail pair "squeeze_not_one": this twin must fail; the diagnostic's first line must match:
// expect: typex::squeeze: dim 0 of \[2, 3\] has extent 2, not 1
#include <typex/typex.hpp>

int main() {
  (void)typex::squeeze_shape<0>(typex::shape_c<2, 3>{});
}
