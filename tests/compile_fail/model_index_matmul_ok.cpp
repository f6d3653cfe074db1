// Compile-fail pair "model_index_matmul": the same file with the mistake fixed must build.
#define TYPEX_CF_FIXED
#include "model_index_matmul_ko.cpp"
