// The emulator's execution modes for tests: a test that runs kernels under for_each_execution runs
// them once per mode this build has (host threads; fibers where available), so that both modes are
// held to the same results and the same diagnostics.
#pragma once

#include <doctest/doctest.h>

#include <typex/backend/cuda/emulator.hpp>

namespace typex_test {

template <class F>
void for_each_execution(F&& f) {
  namespace emu = typex::cuda::emu;
  struct restore {
    emu::execution before = emu::current_execution();
    ~restore() { emu::set_execution(before); }
  } r;
  for (const emu::execution e : {emu::execution::threads, emu::execution::fibers}) {
    if (e == emu::execution::fibers && !emu::fibers_available) continue;
    emu::set_execution(e);
    const char* const mode = e == emu::execution::fibers ? "fibers" : "threads";
    CAPTURE(mode);
    f();
  }
}

}  // namespace typex_test
