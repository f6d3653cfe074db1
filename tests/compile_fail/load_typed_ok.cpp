// Compile-fail pair "load_typed": this twin must build. See load_typed_ko.cpp: the untyped load,
// typex::load(path), gives the exported_program.
#define TYPEX_CF_FIXED
#include "load_typed_ko.cpp"
