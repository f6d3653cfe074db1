// Fixture for the layering checker: Eigen in the core, and a compiler test outside config.hpp.
#pragma once
#include <Eigen/Core>
#if defined(__clang__)
#endif
