// Compile-fail pair "missing_kernel": this twin registers an op that has no Eigen kernel. The build
// fails where the kernel is taken; the first line names the op's kernel, the next the sentence
// ("typex::eigen: no kernel for this op: specialize typex::eigen::kernel<Op> ..."). The registry's
// own ops go through the same check when typex::eigen builds its table.
// expect: static assertion failed: typex::eigen: no kernel for this op: specialize typex::eigen::kernel<Op>
// expect-clang: error: static assertion failed.*typex::eigen: no kernel for this op
#include <typex/backend/eigen.hpp>
#include <typex/typex.hpp>

struct scale_op {  // a user-defined op without a kernel
  static constexpr std::string_view target = "my.scale.default";
};

int main() { typex::eigen::register_kernel<scale_op>(); }
