// Compile-fail pair "model_no_transpose": the same file with the mistake fixed must build.
#define TYPEX_CF_FIXED
#include "model_no_transpose_ko.cpp"
