// Compile-fail pair "model_dtype_mixed": the same file with the mistake fixed must build.
#define TYPEX_CF_FIXED
#include "model_dtype_mixed_ko.cpp"
