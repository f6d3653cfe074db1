// Compile-fail pair "typed_arg_name": this twin must build. See typed_arg_name_ko.cpp.
#include <typex/ir/typed_call.hpp>
#include <typex/ops/all.hpp>

double alpha_of(const typex::ir::call_args& a) {
  const double alpha = typex::ir::arg<typex::add_op, "alpha">(a);
  return alpha * 2;
}

int main() { return 0; }
