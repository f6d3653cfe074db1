#!/usr/bin/env bash
# The CUDA checks that need a GPU (docs/cuda_backend.md, "Measured on a GPU, and still owed"): one
# prepared script for a lent H100 / H200 (a few minutes; the device tool's `run`, or any GPU machine
# with the CUDA toolkit and nvcc). Prints the environment, builds the CUDA targets, runs every CUDA
# test natively (label `cuda`: the native device, the MLP against the Eigen backend with graphs on
# and off, the parity axis on the GPU, the cuBLASLt contract), then compute-sanitizer's memcheck and
# racecheck over the GPU tests where the machine's runtime allows them.
#   OUT=<dir>   where the logs go (default build/gpu/logs)
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-build/gpu/logs}
mkdir -p "$out"
{
  nvidia-smi || true
  nvcc --version || true
} >"$out/environment.txt" 2>&1
cmake -S . -B build/gpu -DCMAKE_BUILD_TYPE=Release -DTYPEX_BUILD_EXAMPLES=OFF -DTYPEX_BUILD_BENCHMARKS=OFF \
      -DTYPEX_BUILD_TOOLS=OFF >"$out/configure.txt" 2>&1 || { tail -30 "$out/configure.txt"; exit 1; }
cmake --build build/gpu -j "$(nproc)" --target typex_cuda_gpu_tests typex_cuda_emulator_tests >"$out/build.txt" 2>&1 \
  || { tail -40 "$out/build.txt"; exit 1; }
status=0
build/gpu/tests/typex_cuda_gpu_tests >"$out/gpu_tests.txt" 2>&1 || status=$?
tail -5 "$out/gpu_tests.txt"
build/gpu/tests/typex_cuda_emulator_tests >"$out/emulator_tests.txt" 2>&1 || status=$?
tail -3 "$out/emulator_tests.txt"
if command -v compute-sanitizer >/dev/null 2>&1; then
  for tool in memcheck racecheck; do
    compute-sanitizer --tool "$tool" --error-exitcode 9 build/gpu/tests/typex_cuda_gpu_tests \
      >"$out/sanitizer_$tool.txt" 2>&1 || status=$?
    tail -3 "$out/sanitizer_$tool.txt"
  done
fi
cp build/gpu/cuda/resource-usage/*.txt "$out/" 2>/dev/null || true
exit "$status"
