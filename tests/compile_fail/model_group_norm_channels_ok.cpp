// Compile-fail pair "model_group_norm_channels": this twin must build. See model_group_norm_channels_ko.cpp.
#define TYPEX_CF_FIXED
#include "model_group_norm_channels_ko.cpp"
