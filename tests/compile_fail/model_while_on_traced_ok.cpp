// Compile-fail pair "model_while_on_traced": the same file with the mistake fixed must build.
#define TYPEX_CF_FIXED
#include "model_while_on_traced_ko.cpp"
