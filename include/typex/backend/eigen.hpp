// typex/backend/eigen.hpp — the Eigen CPU backend's entry header (the only part of typex that
// includes Eigen). Today: eager execution of ops on host tensors.
#pragma once

#include <typex/backend/eigen/eager.hpp>
