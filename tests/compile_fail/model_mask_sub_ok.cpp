// Compile-fail pair "model_mask_sub": the same file with the mistake fixed must build.
#define TYPEX_CF_FIXED
#include "model_mask_sub_ko.cpp"
