// Compile-fail pair "model_conv1d_channels": this twin must build. See model_conv1d_channels_ko.cpp.
#define TYPEX_CF_FIXED
#include "model_conv1d_channels_ko.cpp"
