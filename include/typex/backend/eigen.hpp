// typex/backend/eigen.hpp — the Eigen CPU backend's entry header: eager execution of ops on host
// tensors, and running exported programs. Eigen itself is included only where the kernels are
// compiled (backend/eigen/kernels_impl.hpp): in every unit by default, in one place under
// TYPEX_EIGEN_SEPARATE_COMPILATION (see config.hpp; CMake's typex::eigen).
#pragma once

#include <typex/backend/eigen/eager.hpp>
#include <typex/backend/eigen/program.hpp>
