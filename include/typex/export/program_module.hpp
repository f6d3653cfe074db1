// typex/export/program_module.hpp — how an exported program reaches a backend that runs it.
//
// exported_program::module() returns program_module<Backend>: a callable with the program's
// calling convention. The export layer only names it; a backend defines it (<typex/backend/eigen.hpp>
// for eigen_backend, the default).
#pragma once

namespace typex {

// The Eigen CPU backend (<typex/backend/eigen.hpp>).
struct eigen_backend {};

// An error here means: no backend that runs exported programs is included. Include
// <typex/backend/eigen.hpp> to run them on the CPU.
template <class Backend>
class program_module {
  static_assert(sizeof(Backend) == 0,
                "typex: exported_program::module() needs a backend: include <typex/backend/eigen.hpp>");
};

}  // namespace typex
