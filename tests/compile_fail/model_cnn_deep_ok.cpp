// Compile-fail pair "model_cnn_deep": the same file with the mistake fixed must build.
#define TYPEX_CF_FIXED
#include "model_cnn_deep_ko.cpp"
