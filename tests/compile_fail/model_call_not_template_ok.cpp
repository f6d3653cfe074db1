// Compile-fail pair "model_call_not_template": the same file with a template call operator must build.
#define TYPEX_CF_FIXED
#include "model_call_not_template_ko.cpp"
