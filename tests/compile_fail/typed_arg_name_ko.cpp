// Compile-fail pair "typed_arg_name": a kernel reads an argument its op's schema does not have (a
// typo: "alpah"). One error, no cascade: the value read is still used (* 2) without a second error.
// g++'s first line names the op and the name (the instantiation), the next the sentence.
// expect: static assertion failed: typex: the op.s schema has no argument of this name
// expect-clang: error: static assertion failed.*the op's schema has no argument of this name
#include <typex/ir/typed_call.hpp>
#include <typex/ops/all.hpp>

double alpha_of(const typex::ir::call_args& a) {
  const double alpha = typex::ir::arg<typex::add_op, "alpah">(a);
  return alpha * 2;
}

int main() { return 0; }
