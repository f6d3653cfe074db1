// Compile-fail pair "conv_channels": this twin must build. See conv_channels_ko.cpp.
#include <typex/typex.hpp>

int main() {
  (void)typex::conv2d_shape(typex::shape_c<8, 1, 28, 28>{}, typex::shape_c<32, 1, 3, 3>{});
}
