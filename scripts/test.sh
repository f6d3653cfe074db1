#!/usr/bin/env bash
# The test command (README, .ci/run): installs what is missing, builds everything with g++ 12 and
# runs the whole suite; then does the same with clang 16. Build trees: build/gcc, build/clang.
#   TYPEX_SKIP_CLANG=1   only the g++ build
#   TYPEX_JOBS=N         parallel jobs (default: number of cores)
set -euo pipefail
cd "$(dirname "$0")/.."

with_clang=1
[ "${TYPEX_SKIP_CLANG:-0}" = 1 ] && with_clang=0
TYPEX_WITH_CLANG=$with_clang bash scripts/install-deps.sh

jobs="${TYPEX_JOBS:-$(nproc)}"
launcher=()
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi

run_suite() {  # name compiler
  local name=$1 cxx=$2
  echo "== typex: $name build ($cxx)"
  cmake -S . -B "build/$name" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER="$cxx" "${launcher[@]}" >/dev/null
  cmake --build "build/$name" -j "$jobs"
  ctest --test-dir "build/$name" -j "$jobs" --output-on-failure
}

run_suite gcc g++
if [ "$with_clang" = 1 ]; then
  run_suite clang clang++-16
fi
