// Compile-fail pair "conv_too_small": this twin must build. See conv_too_small_ko.cpp.
#include <typex/typex.hpp>

int main() {
  (void)typex::conv2d_shape<typex::conv2d_options{.padding = {1, 1}}>(typex::shape_c<8, 1, 2, 28>{}, typex::shape_c<32, 1, 3, 3>{});
}
