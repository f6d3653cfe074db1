#!/usr/bin/env bash
# The test command (README, .ci/run): installs what is missing, then three stages, built by Ninja.
#   1. g++ 12, Release: the whole suite (unit, robustness, concurrency, static, compile-fail pairs,
#      headers, layering, install consumers, docs); the libraries and examples at -O3, the test
#      units and the benchmarks (built, not run) at -O0 (TYPEX_TEST_OPT, TYPEX_BENCHMARK_OPT), the
#      headers syntax only.                                                    build/gcc
#   2. clang 16 with AddressSanitizer + UndefinedBehaviorSanitizer (LeakSanitizer included): unit,
#      robustness, concurrency, the bounded libFuzzer run, and clang's compile-fail diagnostics
#      (TYPEX_TEST_SCOPE=runtime); -O0, the Eigen kernels -O1 (TYPEX_EIGEN_OPT). build/clang
#   3. clang 16 with ThreadSanitizer: the concurrency tests (8 threads sharing modules, copies,
#      buffers written, the pool resized while programs run), and the CUDA kernels on the emulator
#      (one host thread per CUDA thread under TSan: it is their race detector; the other stages
#      run a block's CUDA threads as fibers, docs/cuda_backend.md).           build/tsan
# CUDA (cmake/typexCuda.cmake; optional, found in /usr/local/cuda on this project's machines, nothing
# installed for it): stage 1 builds typex::cuda with nvcc (the kernels for sm_80 / sm_90a, ptxas's
# spill and local-memory errors) and runs the CUDA tests (those needing a GPU report themselves
# skipped); stages 2 and 3 build the emulated CUDA tests with clang and no nvcc (-DTYPEX_CUDA=OFF:
# nvcc takes none of the sanitizer flags, and the sanitizers check host code only).
# DEVELOPERS.md gives what each stage costs.
#   TYPEX_SKIP_CLANG=1   only stage 1
#   TYPEX_JOBS=N         parallel jobs (default: number of cores)
set -euo pipefail
cd "$(dirname "$0")/.."

with_clang=1
[ "${TYPEX_SKIP_CLANG:-0}" = 1 ] && with_clang=0
TYPEX_WITH_CLANG=$with_clang bash scripts/install-deps.sh

jobs="${TYPEX_JOBS:-$(nproc)}"
launcher=()
if command -v ccache >/dev/null 2>&1; then
  # (ccache caches nvcc's units too; ptxas's resource report is replayed on a hit)
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  # (the test units are compiled against a precompiled header, TYPEX_TEST_PCH: ccache caches such
  # units only with these sloppinesses, and compiles them uncached otherwise)
  export CCACHE_SLOPPINESS="${CCACHE_SLOPPINESS:+$CCACHE_SLOPPINESS,}pch_defines,time_macros,include_file_mtime,include_file_ctime"
fi

stage() { echo "== typex: $1 ($(date -u +%H:%M:%S))"; }

# Ninja: a unit compiles as soon as its own inputs are there, while the libraries it links are still
# compiling (make builds a target's objects only after the targets it links are built: on 2 cores,
# typex::runtime's and typex::eigen's units one after the other, one core idle).
# (a build tree configured with another generator by an earlier version of this script is started
# afresh: CMake refuses to switch generators in place)
generator=(-G Ninja)
fresh_tree() {  # build dir
  if [ -f "$1/CMakeCache.txt" ] && ! grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja$' "$1/CMakeCache.txt"; then
    rm -rf "$1"
  fi
}

run_suite() {  # name compiler [cmake args...]
  local name=$1 cxx=$2
  shift 2
  stage "$name build ($cxx $*)"
  fresh_tree "build/$name"
  cmake -S . -B "build/$name" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER="$cxx" "${launcher[@]}" "$@" >/dev/null
  cmake --build "build/$name" -j "$jobs"
  stage "$name tests"
  ctest --test-dir "build/$name" -j "$jobs" --output-on-failure
}

# (the test units at -O0: a heavy unit's compile time is mostly code generation (nn/modules.cpp:
# -O0 31 s, -O3 81 s), a small one's mostly parsing: the 76 units took 1,328 CPU-s at -O0 against
# 1,602 at -O1; the libraries, examples and benchmarks at the build type's -O3: the code users run)
# (the benchmarks at -O0 too: built here only to keep them compiling, TYPEX_BENCHMARK_OPT)
run_suite gcc g++ -DTYPEX_SANITIZE= -DTYPEX_TEST_SCOPE=all -DTYPEX_TEST_OPT=-O0 -DTYPEX_BENCHMARK_OPT=-O0
if [ "$with_clang" = 1 ]; then
  # (halt on the first report, symbolized; the fuzz run's length is TYPEX_FUZZ_RUNS)
  # (allocator_may_return_null: a huge allocation throws std::bad_alloc as it does without ASan)
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1:allocator_may_return_null=1
  for s in /usr/lib/llvm-16/bin/llvm-symbolizer /usr/bin/llvm-symbolizer; do
    if [ -x "$s" ]; then export ASAN_SYMBOLIZER_PATH=$s; break; fi
  done
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  # (the code that runs, instrumented, and clang's compile-fail diagnostics; the headers, static,
  # consumer, docs, example and benchmark builds are stage 1's: DEVELOPERS.md)
  # (-O0 but the Eigen kernels, at -O1 (TYPEX_EIGEN_OPT; the fuzz units, which compile them in,
  # too): instrumented, a unit compiles in a fifth of its -O1 time (clang 16, ASan + UBSan: 36 s
  # against 165 s), and the Eigen kernels, where most of the tests' work is done, stay fast; the
  # emulated CUDA kernels compile into their test units, -O0 here: 263 s in one process)
  run_suite clang clang++-16 -DTYPEX_SANITIZE=address,undefined -DTYPEX_TEST_SCOPE=runtime -DTYPEX_BUILD_EXAMPLES=OFF \
            -DTYPEX_BUILD_BENCHMARKS=OFF -DTYPEX_CUDA=OFF "-DCMAKE_CXX_FLAGS_RELEASE=-O0 -DNDEBUG" -DTYPEX_EIGEN_OPT=-O1
  unset ASAN_OPTIONS UBSAN_OPTIONS
  stage "tsan build (clang++-16 -fsanitize=thread)"
  fresh_tree build/tsan
  cmake -S . -B build/tsan "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=clang++-16 "${launcher[@]}" \
        -DTYPEX_SANITIZE=thread -DTYPEX_BUILD_EXAMPLES=OFF -DTYPEX_BUILD_BENCHMARKS=OFF -DTYPEX_CUDA=OFF \
        "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -DNDEBUG" >/dev/null
  tsan_targets=(typex_concurrency_tests)
  # (the emulated CUDA tests exist where the CUDA toolkit is: cmake/typexCuda.cmake)
  # (the list read whole: `| grep -q` would stop reading early, and pipefail would take the broken
  # pipe for a missing target)
  build_targets=$(cmake --build build/tsan --target help)
  if [[ $build_targets == *typex_cuda_emulator_tests* ]]; then
    tsan_targets+=(typex_cuda_emulator_tests)
  fi
  cmake --build build/tsan -j "$jobs" --target "${tsan_targets[@]}"
  stage "tsan tests"
  for t in "${tsan_targets[@]}"; do
    TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 "build/tsan/tests/$t"
  done
fi
stage "done"
