#!/usr/bin/env bash
# The CUDA checks that need a GPU (docs/cuda_backend.md, "Measured on a GPU"): one prepared script for
# a lent H100 / H200 (the device tool's `run`, or any GPU machine with the CUDA toolkit). It
#   1. prints the environment (GPU, driver, nvcc, PyTorch);
#   2. starts PyTorch's peers compiling in the background (benchmarks/cuda/peers_cuda.py, phase 1:
#      torch.compile default and max-autotune, AOTInductor's packages, within PEERS_BUDGET seconds);
#   3. meanwhile, all at once (none of it is timed), runs every CUDA test natively (typex_cuda_gpu_tests: the native device, the MLP
#      against the Eigen backend with graphs on and off, the reference models against PyTorch, the
#      training steps and optimizers, the parity axis on the GPU, fused attention, matmul_precision,
#      the cuBLASLt contract, and with cuDNN its contract and the CNN through it), then
#      compute-sanitizer's memcheck and racecheck (kernel errors only: the tests that provoke out of
#      memory and a failed capture make API errors on purpose) over SANITIZE_TESTS, and the digits
#      examples trained on the GPU against the CPU; then, where time is left, the sanitizers over the
#      parity axis;
#   4. once the peers have compiled, with nothing else running: typex_models_cuda (graphs on and
#      off), then the peers' timings (phase 2), so that both sides are measured on a quiet GPU.
# Every stage has a time limit and the whole script a deadline (DEADLINE seconds, default 540): a
# stage that does not fit is reported as skipped. The logs go to OUT (default $BUILD/logs), packed at
# the end into OUT/logs.tgz (the device tool brings back at most 8 files).
# The binaries come from BUILD (default build/gpu), built there when missing (that needs the
# project's build dependencies on the GPU machine; a machine without them runs binaries built
# elsewhere for x86-64 with the same CUDA major version: the device tool carries them).
#   SANITIZE_TESTS=<doctest -tc filter>   the test cases the sanitizers run first
#   SKIP_TESTS=1  measure only; PEERS_MODES, PEERS_BUDGET: peers_cuda.py's
#   MODELS_TABLES="attention training"   typex_models_cuda's tables (default: every one)
set -uo pipefail
cd "$(dirname "$0")/.."
t0=$(date +%s)
deadline=${DEADLINE:-540}
build=${BUILD:-build/gpu}
out=${OUT:-$build/logs}
logs=$out/logs
mkdir -p "$logs"
left() { echo $((deadline - ($(date +%s) - t0))); }
# bounded <seconds> <command...>: runs the command for at most that long, and never past the deadline
bounded() {
  local want=$1
  shift
  local l
  l=$(left)
  ((l - 15 < want)) && want=$((l - 15))
  if ((want < 10)); then
    echo "skipped (deadline): $*"
    return 3
  fi
  timeout "$want" "$@"
}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# (binaries built with cuDNN load libcudnn.so.9: where the toolkit has none, PyTorch's wheel's)
if ! ls /usr/local/cuda/lib64/libcudnn.so.9 /usr/local/cuda/lib/libcudnn.so.9 >/dev/null 2>&1; then
  cudnn_lib=$(python3 -c 'import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], "lib"))' 2>/dev/null || true)
  [[ -n $cudnn_lib ]] && export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$cudnn_lib
fi
{
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv || true
  nvcc --version | tail -2 || true
  python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.get_device_name(), "cudnn", torch.backends.cudnn.version())' || true
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  nproc
} 2>&1 | tee "$logs/environment.txt"
tests=$build/tests/typex_cuda_gpu_tests
bench=$build/benchmarks/typex_models_cuda
if [[ ! -x $tests || ! -x $bench ]]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DTYPEX_BUILD_TOOLS=OFF >"$logs/configure.txt" 2>&1 \
    || { tail -30 "$logs/configure.txt"; exit 1; }
  cmake --build "$build" -j "$(nproc)" --target typex_cuda_gpu_tests typex_models_cuda train_digits_mlp train_digits_cnn >"$logs/build.txt" 2>&1 \
    || { tail -40 "$logs/build.txt"; exit 1; }
fi
status=0
go=/tmp/typex_peers_go
rm -f "$go" "$go.compiled"
peers_pid=
if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
  # (a process group of its own: stopping it stops its compile workers and AOTInductor children too)
  PYTHONUNBUFFERED=1 PEERS_GO=$go PEERS_BUDGET=${PEERS_BUDGET:-260} setsid python3 benchmarks/cuda/peers_cuda.py \
    >"$logs/peers_cuda.txt" 2>"$logs/peers_cuda_stderr.txt" &
  peers_pid=$!
else
  echo "PyTorch with CUDA is not here: the peers are skipped" | tee "$logs/peers_cuda.txt"
fi
# run_all <name:command>...: the commands at once (the GPU and 16 cores take them together; none of
# them is timed), each log in $logs/<name>.txt; the status of the last one that failed
run_all() {
  local pids=() names=() i rc=0
  for job in "$@"; do
    names+=("${job%%:*}")
    bash -c "${job#*:}" >"$logs/${job%%:*}.txt" 2>&1 &
    pids+=($!)
  done
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || { rc=$?; echo "${names[$i]}: exit $rc"; }
  done
  return $rc
}
export -f bounded left
export t0 deadline
if [[ ${SKIP_TESTS:-0} != 1 ]]; then
  echo "== typex_cuda_gpu_tests, compute-sanitizer, the digits examples, together ($(left) s left)"
  jobs=("gpu_tests:bounded 180 $tests --duration=true")
  if command -v compute-sanitizer >/dev/null 2>&1; then
    # (two halves each, so that a half that runs out of time leaves the other's result)
    filters=("${SANITIZE_TESTS:-*attention*,*cuDNN*,*matmul_precision*}" "*optimizers*,*training*,*dropout*")
    for tool in memcheck racecheck; do
      for half in 0 1; do
        jobs+=("sanitizer_${tool}_$half:bounded 220 compute-sanitizer --tool $tool --report-api-errors no --error-exitcode 9 $tests --duration=true '-tc=${filters[$half]}'")
      done
    done
  fi
  for example in mlp cnn; do
    jobs+=("digits_$example:bounded 150 $build/examples/train_digits_$example examples/data/digits.txt --device cuda --compare-cpu")
  done
  run_all "${jobs[@]}" || status=$?
  grep -E "ERROR|FAILED|MESSAGE|test cases|assertions|skipped" "$logs/gpu_tests.txt" | head -40
  command -v compute-sanitizer >/dev/null 2>&1 && for tool in memcheck racecheck; do
    for half in 0 1; do
      echo "-- $tool ${filters[$half]}:" $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY|test cases|skipped" "$logs/sanitizer_${tool}_$half.txt" 2>/dev/null | head -4)
    done
  done
  for example in mlp cnn; do echo "-- digits $example:"; tail -3 "$logs/digits_$example.txt"; done
  # (the parity runs' 120 s, then the 230 s the models and the peers' timings keep, and some slack)
  if command -v compute-sanitizer >/dev/null 2>&1 && (($(left) > 370)); then
    echo "== compute-sanitizer over the parity axis ($(left) s left)"
    jobs=()
    for tool in memcheck racecheck; do
      jobs+=("parity_$tool:bounded 120 compute-sanitizer --tool $tool --report-api-errors no --error-exitcode 9 $tests --duration=true '-tc=*parity case*'")
    done
    run_all "${jobs[@]}" || status=$?
    for tool in memcheck racecheck; do
      echo "-- parity $tool:" $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY|test cases|skipped" "$logs/parity_$tool.txt" 2>/dev/null | head -4)
    done
  fi
fi
if [[ -n $peers_pid ]]; then
  # (typex's timings wait for the peers to finish compiling, leaving time for both to be timed)
  echo "== waiting for the peers to compile ($(left) s left)"
  while [[ ! -e $go.compiled ]] && kill -0 "$peers_pid" 2>/dev/null && (($(left) > 230)); do sleep 1; done
  grep -E "^(compiled|default|max-autotune|aoti|\(phase)" "$logs/peers_cuda.txt" | head -30
  if [[ ! -e $go.compiled ]] && kill -0 "$peers_pid" 2>/dev/null; then
    # (still compiling: typex's timings must not share the GPU with max-autotune's benchmarking)
    echo "the peers were still compiling with $(left) s left: stopped, their rows are not measured"
    kill -TERM -- "-$peers_pid" 2>/dev/null
    wait "$peers_pid" 2>/dev/null
    peers_pid=
  fi
fi
echo "== typex_models_cuda ($(left) s left)"
# shellcheck disable=SC2086  # (MODELS_TABLES: the tables' names, split)
bounded 200 "$bench" ${MODELS_TABLES:-} 2>&1 | tee "$logs/models_cuda.txt" || status=$?
if [[ -n $peers_pid ]]; then
  echo "== PyTorch peers ($(left) s left)"
  touch "$go"
  while kill -0 "$peers_pid" 2>/dev/null && (($(left) > 12)); do sleep 1; done
  kill -TERM -- "-$peers_pid" 2>/dev/null && echo "the peers were stopped at the deadline (the rows timed by then are in the log)"
  wait "$peers_pid" || status=$?
  sed -n '/^model /,$p' "$logs/peers_cuda.txt"
  grep -E "^(aoti|default|max-autotune) " "$logs/peers_cuda.txt" | head -10
fi
tar -C "$out" -czf "$out/logs.tgz" logs && rm -rf "$logs"
# (124 is what a command killed at its time limit returns; a stage this script skipped or stopped is
# reported above, and the script's own status says only that something did not pass: 3)
[[ $status == 124 ]] && status=3
echo "(gpu-check took $(($(date +%s) - t0)) s, status $status)"
exit "$status"
