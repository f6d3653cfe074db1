#!/usr/bin/env bash
# The CUDA checks that need a GPU (docs/cuda_backend.md, "Measured on a GPU"): one prepared script for
# a lent H100 / H200 (the device tool's `run`, or any GPU machine with the CUDA toolkit). It
#   1. prints the environment (GPU, driver, nvcc, PyTorch);
#   2. runs every CUDA test natively (typex_cuda_gpu_tests: the native device, the MLP against the
#      Eigen backend with graphs on and off, the reference models against PyTorch, the parity axis on
#      the GPU, the cuBLASLt contract, and with cuDNN its contract and the CNN through it);
#   3. runs compute-sanitizer's memcheck and racecheck over them (kernel errors only: the tests that
#      provoke out-of-memory and a failed capture make API errors on purpose);
#   4. measures the models (typex_models_cuda, graphs on and off) and PyTorch's peers on the same GPU
#      (benchmarks/cuda/peers_cuda.py: eager, torch.compile, max-autotune, AOTInductor, within
#      PEERS_BUDGET seconds of compiling and timing).
# The binaries come from BUILD (default build/gpu), built there when missing (that needs the
# project's build dependencies on the GPU machine; a machine without them runs binaries built
# elsewhere for x86-64 with the same CUDA major version: the device tool carries them).
#   OUT=<dir>   where the logs go (default $BUILD/logs)
#   SANITIZE_TESTS=<doctest -tc filter>   the test cases the sanitizers run (default: all)
#   SKIP_TESTS=1  measure only; PEERS_MODES, PEERS_BUDGET: peers_cuda.py's
set -uo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build/gpu}
out=${OUT:-$build/logs}
mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# (binaries built with cuDNN load libcudnn.so.9: where the toolkit has none, PyTorch's wheel's)
if ! ls /usr/local/cuda/lib64/libcudnn.so.9 /usr/local/cuda/lib/libcudnn.so.9 >/dev/null 2>&1; then
  cudnn_lib=$(python3 -c 'import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], "lib"))' 2>/dev/null || true)
  [[ -n $cudnn_lib ]] && export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$cudnn_lib
fi
{
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv || true
  nvcc --version | tail -2 || true
  python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.get_device_name())' || true
} 2>&1 | tee "$out/environment.txt"
tests=$build/tests/typex_cuda_gpu_tests
bench=$build/benchmarks/typex_models_cuda
if [[ ! -x $tests || ! -x $bench ]]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DTYPEX_BUILD_EXAMPLES=OFF -DTYPEX_BUILD_TOOLS=OFF >"$out/configure.txt" 2>&1 \
    || { tail -30 "$out/configure.txt"; exit 1; }
  cmake --build "$build" -j "$(nproc)" --target typex_cuda_gpu_tests typex_models_cuda >"$out/build.txt" 2>&1 \
    || { tail -40 "$out/build.txt"; exit 1; }
fi
status=0
if [[ ${SKIP_TESTS:-0} != 1 ]]; then
echo "== typex_cuda_gpu_tests"
timeout 300 "$tests" >"$out/gpu_tests.txt" 2>&1 || status=$?
grep -E "ERROR|FAILED|MESSAGE|test cases|assertions" "$out/gpu_tests.txt" | head -40
if command -v compute-sanitizer >/dev/null 2>&1; then
  for tool in memcheck racecheck; do
    echo "== compute-sanitizer --tool $tool"
    timeout 300 compute-sanitizer --tool "$tool" --report-api-errors no --error-exitcode 9 "$tests" ${SANITIZE_TESTS:+"-tc=$SANITIZE_TESTS"} \
      >"$out/sanitizer_$tool.txt" 2>&1 || status=$?
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY|test cases" "$out/sanitizer_$tool.txt" | head -5
  done
fi
fi
echo "== typex_models_cuda"
timeout 300 "$bench" 2>&1 | tee "$out/models_cuda.txt" || status=$?
echo "== PyTorch peers"
PYTHONUNBUFFERED=1 PEERS_BUDGET=${PEERS_BUDGET:-200} timeout 400 python3 benchmarks/cuda/peers_cuda.py >"$out/peers_cuda.txt" 2>"$out/peers_cuda_stderr.txt" \
  || status=$?
sed -n '/^model /,$p' "$out/peers_cuda.txt"
grep -E "^(aoti|default|max-autotune) " "$out/peers_cuda.txt" | head -10
exit "$status"
