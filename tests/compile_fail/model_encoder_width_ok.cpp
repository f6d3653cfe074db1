// Compile-fail pair "model_encoder_width": the same file with the mistake fixed must build.
#define TYPEX_CF_FIXED
#include "model_encoder_width_ko.cpp"
