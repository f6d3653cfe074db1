// Compile-fail pair "typed_arg_name": a kernel reads an argument its op's schema does not have (a
// typo: "alpah"). One error, no cascade: the value read is still used (* 2) without a second error.
// The first error line, under both compilers, names the op, the name and the schema.
// expect: typex::ir::arg: aten.add.Tensor has no argument named alpah; its schema: aten::add.Tensor\(Tensor self, Tensor other, \*, Scalar alpha=1\) -> Tensor
#include <typex/ir/typed_call.hpp>
#include <typex/ops/all.hpp>

double alpha_of(const typex::ir::call_args& a) {
  const double alpha = typex::ir::arg<typex::add_op, "alpah">(a);
  return alpha * 2;
}

int main() { return 0; }
