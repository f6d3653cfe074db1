#!/usr/bin/env bash
# Runs the model benchmarks — typex vs hand-written Eigen (always), LibTorch eager (where it can be
# installed) — in one go and prints the table of benchmarks/README.md (median and min per row, over
# REPS repetitions). Installs what is missing (apt, as root): libbenchmark-dev, libtorch-dev.
#
#   bash benchmarks/models/run_models.sh            # REPS=5 MIN_TIME=0.5 by default
set -euo pipefail
cd "$(dirname "$0")/../.."
REPS=${REPS:-5}
MIN_TIME=${MIN_TIME:-0.5}
need=()
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
targets=(typex_models_eigen)
[ $torch = ON ] && targets+=(typex_models_libtorch)
cmake --build build/bench -j2 --target "${targets[@]}" >/dev/null
# The peers' best environment (../shared/peers/RESULTS.md, "tuned"): big buffers stay on the heap;
# OpenBLAS (behind LibTorch) picks its AVX-512 kernels instead of the ambient OPENBLAS_CORETYPE.
export GLIBC_TUNABLES=glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=4294967295
unset OPENBLAS_CORETYPE
[ -d /usr/lib/x86_64-linux-gnu/openblas-openmp ] && export LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp
out=build/bench/results
mkdir -p $out
args=(--benchmark_repetitions=$REPS --benchmark_min_time=$MIN_TIME --benchmark_format=json)
build/bench/benchmarks/typex_models_eigen "${args[@]}" >$out/eigen.json
[ $torch = ON ] && build/bench/benchmarks/typex_models_libtorch "${args[@]}" >$out/libtorch.json
python3 benchmarks/models/report.py $out/*.json
