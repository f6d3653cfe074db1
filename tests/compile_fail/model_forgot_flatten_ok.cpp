// Compile-fail pair "model_forgot_flatten": the same file with the mistake fixed must build.
#define TYPEX_CF_FIXED
#include "model_forgot_flatten_ko.cpp"
