// Compile-fail pair "missing_kernel": this twin gives its op an Eigen kernel and must compile.
#include <typex/backend/eigen.hpp>
#include <typex/typex.hpp>

struct scale_op {  // a user-defined op: y = 2 x
  static constexpr std::string_view target = "my.scale.default";
};
template <>
struct typex::eigen::kernel<scale_op> {
  static typex::any_tensor run(const typex::eigen::kernel_args& a) {
    typex::any_tensor out = a.tensor(0).clone();
    for (typex::index_t i = 0; i < out.numel(); ++i) out.data<float>()[i] *= 2.0f;
    return out;
  }
};

int main() { typex::eigen::register_kernel<scale_op>(); }
