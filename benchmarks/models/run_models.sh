#!/usr/bin/env bash
# Runs the model benchmarks in one go — typex vs hand-written Eigen (always), Debian's LibTorch 1.13
# eager (where it can be installed), then the peers of ../shared/peers (ONNX Runtime 1.32 from C++;
# LibTorch 2.15 eager and AOTInductor from C++, torch.compile max-autotune from Python) — and prints
# the one table of benchmarks/README.md (every peer's median per row, the best peer / typex, typex's
# spread, % of the FMA peak, bytes against the measured bandwidth). Installs what is missing (apt, as
# root): libbenchmark-dev, libtorch-dev, OpenBLAS; the peers install theirs from PyPI into one venv
# (build/peers/venv: torch 2.15, onnxruntime 1.32; ~5 GB the first time). PyTorch and ONNX Runtime
# stay out of the library's build and tests: they are benchmark peers only.
#
#   bash benchmarks/models/run_models.sh            # REPS=5 MIN_TIME=0.5 by default
#   PEERS=none bash benchmarks/models/run_models.sh  # typex, hand Eigen and LibTorch 1.13 only
#
# Knobs: REPS, MIN_TIME, ROUNDS (default 1: more rounds repeat typex / hand Eigen and ONNX Runtime in
# turns, ~3 min each), PEERS (all | none | onnxruntime | torch2), PEERS_DIR (default ../shared/peers
# next to the repository; a peer whose folder is missing is left out, and the table says so),
# TORCH2_PY_PEERS (default compile-max-autotune: the torch.compile row; torch2's run.sh takes ~15 min).
set -euo pipefail
cd "$(dirname "$0")/../.."
REPS=${REPS:-5}
MIN_TIME=${MIN_TIME:-0.5}
source benchmarks/build_bench.sh
bench_build typex_models_eigen typex_models_libtorch
# The peers' best environment (../shared/peers/RESULTS.md, "tuned"): big buffers stay on the heap;
# OpenBLAS (behind LibTorch) picks its AVX-512 kernels instead of the ambient OPENBLAS_CORETYPE.
export GLIBC_TUNABLES=glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=4294967295
unset OPENBLAS_CORETYPE
[ -d /usr/lib/x86_64-linux-gnu/openblas-openmp ] && export LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp
out=build/bench/results
mkdir -p $out
rm -f $out/*.json
args=(--benchmark_repetitions=$REPS --benchmark_min_time=$MIN_TIME --benchmark_format=json)
build/bench/benchmarks/typex_models_eigen "${args[@]}" >$out/eigen.json
[ $torch = ON ] && build/bench/benchmarks/typex_models_libtorch "${args[@]}" >$out/libtorch.json
# the peers, one after the other on the same machine (their own scripts; one shared venv)
PEERS=${PEERS:-all}
PEERS_DIR=${PEERS_DIR:-$(cd .. && pwd)/shared/peers}
venv=$PWD/build/peers/venv
mkdir -p build/peers
want() { [[ $PEERS == all || $PEERS == *$1* ]]; }
if want onnxruntime; then
  if [ -x "$PEERS_DIR/onnxruntime/run.sh" ]; then
    ORT_PEER_BUILD=$PWD/build/peers/ort ORT_PEER_VENV=$venv REPS=$REPS MIN_TIME=$MIN_TIME \
      "$PEERS_DIR/onnxruntime/run.sh" >build/peers/ort.log 2>&1 &&
      cp build/peers/ort/results/onnxruntime.json $out/onnxruntime.json ||
      { tail -20 build/peers/ort.log; echo "(the ONNX Runtime peer failed: its rows are left out; log: build/peers/ort.log)"; }
  else
    echo "(no ONNX Runtime peer: $PEERS_DIR/onnxruntime/run.sh is missing)"
  fi
fi
if want torch2; then
  if [ -x "$PEERS_DIR/torch2/run.sh" ]; then
    TORCH2_BUILD=$PWD/build/peers/torch2 TORCH2_VENV=$venv TORCH2_RESULTS=$PWD/build/peers/torch2/results \
      SECTIONS="cpp-eager aoti py" PY_PEERS=${TORCH2_PY_PEERS:-compile-max-autotune} REPS=$REPS MIN_TIME=$MIN_TIME \
      "$PEERS_DIR/torch2/run.sh" >build/peers/torch2.log 2>&1 &&
      cp build/peers/torch2/results/torch2.json $out/torch2.json ||
      { tail -20 build/peers/torch2.log; echo "(the PyTorch 2 peer failed: its rows are left out; log: build/peers/torch2.log)"; }
  else
    echo "(no PyTorch 2 peer: $PEERS_DIR/torch2/run.sh is missing)"
  fi
fi
# More rounds (ROUNDS, default 1): typex / hand Eigen and ONNX Runtime again, in turns, so that the
# medians of the rows that decide the verdict come from the same minutes of a noisy machine rather
# than from whichever minute each ran in (every round's repetitions enter the medians and spreads;
# LibTorch 1.13 and the PyTorch 2 peers run once).
for ((round = 2; round <= ${ROUNDS:-1}; round++)); do
  build/bench/benchmarks/typex_models_eigen "${args[@]}" --benchmark_filter='BM_(mlp|cnn|transformer)_(typex|hand_eigen)/' \
    >$out/eigen.round$round.json
  if want onnxruntime && [ -f $out/onnxruntime.json ]; then
    ORT_PEER_BUILD=$PWD/build/peers/ort ORT_PEER_VENV=$venv REPS=$REPS MIN_TIME=$MIN_TIME \
      "$PEERS_DIR/onnxruntime/run.sh" >>build/peers/ort.log 2>&1 &&
      cp build/peers/ort/results/onnxruntime.json $out/onnxruntime.round$round.json ||
      echo "(the ONNX Runtime peer failed in round $round: that round has typex only)"
  fi
done
echo "$(lscpu | awk -F: '/Model name/{gsub(/^ +/,"",$2); print $2}'), $(nproc) CPUs, $(grep -o -w -E 'avx512f|avx2' /proc/cpuinfo | sort -u | tr '\n' ' ')$(date -u +%Y-%m-%dT%H:%MZ), load at end $(cut -d' ' -f1-3 /proc/loadavg)"
python3 benchmarks/models/report.py $out/*.json
