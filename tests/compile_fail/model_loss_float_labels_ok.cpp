// Compile-fail pair "model_loss_float_labels": the same file with i64 labels must build.
#define TYPEX_CF_FIXED
#include "model_loss_float_labels_ko.cpp"
