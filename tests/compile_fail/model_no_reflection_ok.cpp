// Compile-fail pair "model_no_reflection": the same file with the reflection added must build.
#define TYPEX_CF_FIXED
#include "model_no_reflection_ko.cpp"
