// Compile-fail pair "split_symbolic": the same file with the mistake fixed must build.
#define TYPEX_CF_FIXED
#include "split_symbolic_ko.cpp"
