// The CUDA backend's planned engine compiled once (typex::cuda; its users see the declarations:
// TYPEX_CUDA_SEPARATE_COMPILATION): the lowering, the plans and the records of
// backend/cuda/detail/engine_impl.hpp. Host code, no nvcc. The constant folding it does at planning
// time runs the Eigen backend's kernels, which typex::eigen compiles.
#define TYPEX_CUDA_IMPLEMENTATION
#include <typex/backend/cuda/program.hpp>
