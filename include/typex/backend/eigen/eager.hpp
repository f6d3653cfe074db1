// typex/backend/eigen/eager.hpp — ops on host tensors, run now (eager mode), on the CPU with Eigen.
//
// Including this header makes typex::relu(x), x + y, typex::linear(x, w, b) ... compute when their
// arguments are host tensors (module tensors included). The op's rule gives the result's type
// (static mistakes are compile errors, as when tracing); the call's arguments are laid out as the
// graph would record them and run by the same kernel the program runner uses; the result is bound
// to the rule's type (a host_tensor), which checks the kernel's extents against it.
#pragma once

#include <typex/backend/eigen/kernels.hpp>
#include <typex/backend/kit/eager.hpp>

namespace typex {

// (the backend kit's eager runner, backend/kit/eager.hpp, with this backend's kernels for host tensors)
template <>
struct op_runner<eager_mode> : kit::eager_runner<&eigen::run_kernel> {};

}  // namespace typex
