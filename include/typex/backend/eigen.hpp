// typex/backend/eigen.hpp — the Eigen CPU backend's entry header (the only part of typex that
// includes Eigen): eager execution of ops on host tensors, and running exported programs.
#pragma once

#include <typex/backend/eigen/eager.hpp>
#include <typex/backend/eigen/program.hpp>
