// The Eigen backend's kernels, compiled once: the typex::eigen library (CMake) is this unit.
// Its users see only the declarations (TYPEX_EIGEN_SEPARATE_COMPILATION), so including
// <typex/backend/eigen.hpp> costs them neither Eigen nor the kernels' instantiations.
#define TYPEX_EIGEN_IMPLEMENTATION
#include <typex/backend/eigen.hpp>
