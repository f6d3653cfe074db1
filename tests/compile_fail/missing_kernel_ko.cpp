// Compile-fail pair "missing_kernel": this twin registers an op that has no Eigen kernel. The build
// fails where the kernel is taken; the first error line, under both compilers, is the sentence
// naming the op's ATen target and the fix. The registry's own ops go through the same check when
// typex::eigen builds its table.
// expect: typex::eigen: no kernel for my.scale.default: specialize typex::eigen::kernel<Op> with
#include <typex/backend/eigen.hpp>
#include <typex/typex.hpp>

struct scale_op {  // a user-defined op without a kernel
  static constexpr std::string_view target = "my.scale.default";
};

int main() { typex::eigen::register_kernel<scale_op>(); }
