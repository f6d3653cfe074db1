// Compile-fail pair "model_up_conv_channels": this twin must build. See model_up_conv_channels_ko.cpp.
#define TYPEX_CF_FIXED
#include "model_up_conv_channels_ko.cpp"
