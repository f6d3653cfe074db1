# benchmarks/build_bench.sh — sourced by the run scripts (models/run_models.sh,
# training/run_training.sh): bench_build TYPEX_TARGET LIBTORCH_TARGET installs what the benchmarks
# and the LibTorch peer need (apt, as root: libbenchmark-dev, Debian's libtorch-dev, OpenBLAS),
# configures build/bench (Release, no tests or examples) and builds the typex target and, where
# LibTorch is installed, its LibTorch twin. Sets torch=ON|OFF.
bench_build() {
  # (the library's own build dependencies first: Boost, Eigen, nlohmann-json, CMake, ...)
  bash scripts/install-deps.sh
  local need=()
  dpkg -s libbenchmark-dev >/dev/null 2>&1 || need+=(libbenchmark-dev)
  dpkg -s libtorch-dev >/dev/null 2>&1 || need+=(libtorch-dev)
  # (without OpenBLAS, LibTorch's GEMMs fall back to the reference BLAS: 20x slower, not a fair peer)
  dpkg -s libopenblas0-openmp >/dev/null 2>&1 || need+=(libopenblas0-openmp libopenblas0-pthread)
  if ((${#need[@]})) && [ "$(id -u)" = 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${need[@]}" >/dev/null || true
  fi
  torch=OFF
  dpkg -s libtorch-dev >/dev/null 2>&1 && torch=ON
  CXX=${CXX:-g++} cmake -S . -B build/bench -DCMAKE_BUILD_TYPE=Release -DTYPEX_BUILD_TESTS=OFF \
    -DTYPEX_BUILD_EXAMPLES=OFF -DTYPEX_BENCHMARK_LIBTORCH=$torch >/dev/null
  local targets=("$1")
  [ $torch = ON ] && targets+=("$2")
  cmake --build build/bench -j2 --target "${targets[@]}" >/dev/null
}
