// Compile-fail pair "model_mlp_width": the same file with the mistake fixed must build.
#define TYPEX_CF_FIXED
#include "model_mlp_width_ko.cpp"
