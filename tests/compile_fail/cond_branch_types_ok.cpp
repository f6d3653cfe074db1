// Compile-fail pair "cond_branch_types": the same file with the mistake fixed must build.
#define TYPEX_CF_FIXED
#include "cond_branch_types_ko.cpp"
