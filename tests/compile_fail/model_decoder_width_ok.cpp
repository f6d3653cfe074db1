// Compile-fail pair "model_decoder_width": this twin must build. See model_decoder_width_ko.cpp.
#define TYPEX_CF_FIXED
#include "model_decoder_width_ko.cpp"
