#!/usr/bin/env bash
# One training step (forward, backward, SGD) of the MLP, the CNN and the transformer block: typex (a
# joint program on the Eigen backend) against LibTorch eager in the same run, 1 and 2 threads:
# Debian's LibTorch 1.13 (libtorch-dev, installed here when missing, as root) and, where a Python
# with torch 2.x is given (TORCH2_PY, default build/peers/venv/bin/python, the model benchmarks'
# peer venv), LibTorch 2.x built from that wheel. Prints the table of benchmarks/README.md.
# Judged by paired rounds (issue 39): ROUNDS rounds (default 15), each running every binary once
# for >= MIN_TIME s a row (default 0.2), the order rotated; per row the median and quartiles of
# peer / typex over the rounds, typex's GFLOP/s against the FMA peak measured in the same run, the
# first step's loss of each side, and the steal time (benchmarks/rounds.py).
#   bash benchmarks/training/run_training.sh          # ROUNDS=15 MIN_TIME=0.2 [FILTER=cnn]
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-15}
MIN_TIME=${MIN_TIME:-0.2}
source benchmarks/build_bench.sh
bench_build typex_training typex_training_libtorch
# LibTorch 2.x: the same peer source, built against the wheel's LibTorch
py=${TORCH2_PY:-$PWD/build/peers/venv/bin/python}
torch2=OFF
if [ -x "$py" ] && info=$("$py" -c "import torch, os; print(os.path.dirname(torch.__file__)); print(int(torch._C._GLIBCXX_USE_CXX11_ABI))" 2>/dev/null); then
  dir=$(echo "$info" | sed -n 1p)
  abi=$(echo "$info" | sed -n 2p)
  mkdir -p build/bench-torch2
  # (the wheel's headers and libtorch_cpu + c10 named directly, as ../shared/peers/torch2/cpp does: the
  # wheel's CMake config of a CUDA build pulls in libtorch_cuda and needs a matching CUDA toolkit)
  cat >build/bench-torch2/CMakeLists.txt <<CMAKE
cmake_minimum_required(VERSION 3.21)
project(typex_training_torch2 CXX)
find_package(benchmark REQUIRED)
add_executable(typex_training_libtorch2 $PWD/benchmarks/training/training_libtorch.cpp)
target_include_directories(typex_training_libtorch2 SYSTEM PRIVATE $dir/include $dir/include/torch/csrc/api/include)
target_compile_definitions(typex_training_libtorch2 PRIVATE _GLIBCXX_USE_CXX11_ABI=$abi)
target_link_directories(typex_training_libtorch2 PRIVATE $dir/lib)
target_link_libraries(typex_training_libtorch2 PRIVATE torch_cpu c10 benchmark::benchmark)
target_link_options(typex_training_libtorch2 PRIVATE -Wl,-rpath,$dir/lib)
target_compile_features(typex_training_libtorch2 PRIVATE cxx_std_20)
target_compile_options(typex_training_libtorch2 PRIVATE -O2 -march=native -Wno-deprecated-declarations)
CMAKE
  if cmake -S build/bench-torch2 -B build/bench-torch2/build -DCMAKE_BUILD_TYPE=Release >/dev/null 2>&1 &&
     cmake --build build/bench-torch2/build -j2 >/dev/null 2>&1; then
    torch2=ON
  else
    echo "(LibTorch 2.x from $py did not build: its rows are left out)"
  fi
fi
export GLIBC_TUNABLES=glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=4294967295
unset OPENBLAS_CORETYPE
[ -d /usr/lib/x86_64-linux-gnu/openblas-openmp ] && export LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp
# Paired rounds (benchmarks/rounds.py): every round runs typex and each LibTorch once, the order
# rotated, every row >= MIN_TIME s; a row's figure is the median over the rounds of peer / typex.
runs=(--run "typex=build/bench/benchmarks/typex_training")
[ $torch = ON ] && runs+=(--run "LibTorch 1.13=build/bench/benchmarks/typex_training_libtorch")
[ $torch2 = ON ] && runs+=(--run "LibTorch $("$py" -c 'import torch; print(torch.__version__.split("+")[0])')=env LD_LIBRARY_PATH= build/bench-torch2/build/typex_training_libtorch2")
mkdir -p build/bench/results
echo "$(lscpu | awk -F: '/Model name/{gsub(/^ +/,"",$2); print $2}'), $(nproc) CPUs, $(grep -o -w -E 'avx512f|avx2' /proc/cpuinfo | sort -u | tr '\n' ' ')$(date -u +%Y-%m-%dT%H:%MZ)"
python3 benchmarks/rounds.py "${runs[@]}" --rounds "$ROUNDS" --min-time "$MIN_TIME" --filter "${FILTER:-.}" \
  --strip BM_train_ _typex _libtorch /real_time \
  --json build/bench/results/training_rounds.json
