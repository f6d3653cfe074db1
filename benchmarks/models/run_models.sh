#!/usr/bin/env bash
# The model benchmarks (inference: MLP, CNN, transformer block; 1 and 2 threads), typex against every
# peer, judged by paired rounds (issue 39; benchmarks/rounds.py): ROUNDS rounds (default 15), each
# running every side once for >= MIN_TIME s a row (default 0.2), the order rotated; per row every
# side's median, the best peer, the median of peer / typex over the rounds and its quartiles, the
# verdict (won: against every peer the median >= 1.0 and the lower quartile >= 0.95), typex's GFLOP/s
# against the FMA peak measured in the same run, and the steal time. The table of benchmarks/README.md.
#
# The sides: typex (typex_models_eigen); Debian's LibTorch 1.13 eager (typex_models_libtorch, where
# libtorch-dev installs); then the peers of ../shared/peers, through benchmarks/models/peer_rows.py:
# ONNX Runtime 1.32 from C++ (onnxruntime/), LibTorch 2.15 eager from C++ and AOTInductor's packages
# from C++ (torch2/cpp), and torch.compile max-autotune from Python (benchmarks/models/
# torch_compile_rows.py, compiled once per thread count and served to the rounds). Installs what is
# missing (apt, as root): libbenchmark-dev, libtorch-dev, OpenBLAS; the peers install theirs from
# PyPI into one venv (build/peers/venv: torch 2.15, onnxruntime 1.32; ~5 GB the first time). PyTorch
# and ONNX Runtime stay out of the library's build and tests: they are benchmark peers only.
#
#   bash benchmarks/models/run_models.sh            # ~25 min the first time (the peers' set-up), then ~15-20
#   PEERS=none bash benchmarks/models/run_models.sh  # typex against LibTorch 1.13 only
#
# Knobs: ROUNDS, MIN_TIME, FILTER (a regex over the rows, default every model row:
# '^BM_(mlp|cnn|transformer)_[a-z0-9]+/'; e.g. '^BM_transformer_[a-z0-9]+/batch:8'), PEERS (all |
# none | a list of onnxruntime, torch2, aoti, compile), PEERS_DIR (default ../shared/peers next to the
# repository; a peer whose folder is missing is left out, and the output says so), SETUP=1 (set the
# peers up again: export the ONNX models, build the C++ runners and the AOTInductor packages; by
# default that is done once and kept in build/peers).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-15}
MIN_TIME=${MIN_TIME:-0.2}
FILTER=${FILTER:-'^BM_(mlp|cnn|transformer)_[a-z0-9]+/'}
source benchmarks/build_bench.sh
bench_build typex_models_eigen typex_models_libtorch
# The peers' best environment (../shared/peers/RESULTS.md, "tuned"): big buffers stay on the heap;
# OpenBLAS (behind LibTorch 1.13) picks its best kernels instead of the ambient OPENBLAS_CORETYPE.
export GLIBC_TUNABLES=glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=4294967295
unset OPENBLAS_CORETYPE
[ -d /usr/lib/x86_64-linux-gnu/openblas-openmp ] && export LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp
PEERS=${PEERS:-all}
PEERS_DIR=${PEERS_DIR:-$(cd .. && pwd)/shared/peers}
venv=$PWD/build/peers/venv
py=$venv/bin/python
mkdir -p build/peers build/bench/results
want() { [[ $PEERS == all || $PEERS == *$1* ]]; }
# (a path quoted for the shlex split rounds.py makes of each command, and peer_rows.py of its --cmd)
q() { printf %q "$1"; }
runs=(--run "typex=build/bench/benchmarks/typex_models_eigen")
serves=()
[ $torch = ON ] && runs+=(--run "LibTorch 1.13=build/bench/benchmarks/typex_models_libtorch")
# ONNX Runtime: its run.sh makes the venv, exports and optimises the models, builds the C++ runner
# (and times one quick pass, kept in build/peers/ort.log); the rounds then call that runner
ort=$PWD/build/peers/ort
if want onnxruntime; then
  if [ ! -x "$PEERS_DIR/onnxruntime/run.sh" ]; then
    echo "(no ONNX Runtime peer: $PEERS_DIR/onnxruntime/run.sh is missing)"
  elif { [[ ${SETUP:-0} != 1 && -x $ort/ort_bench && -f $ort/models/.stamp ]] ||
         ORT_PEER_BUILD=$ort ORT_PEER_VENV=$venv REPS=1 MIN_TIME=0.05 "$PEERS_DIR/onnxruntime/run.sh" \
           >build/peers/ort.log 2>&1; } &&
       lib=$("$py" -c 'import glob, os, onnxruntime as o; print(sorted(glob.glob(os.path.join(os.path.dirname(o.__file__), "capi", "libonnxruntime.so*")))[0])'); then
    runs+=(--run "ONNX Runtime $("$py" -c 'import onnxruntime; print(onnxruntime.__version__)')=python3 benchmarks/models/peer_rows.py ort --bench $(q "$ort/ort_bench") --lib $(q "$lib") --models $(q "$ort/models")")
  else
    tail -20 build/peers/ort.log
    echo "(the ONNX Runtime peer failed to set up: its rows are left out; log: build/peers/ort.log)"
  fi
fi
# PyTorch 2: torch2's run.sh builds the C++ runners against the wheel's LibTorch and the AOTInductor
# packages (one per thread count), timing one quick pass (build/peers/torch2.log)
t2=$PWD/build/peers/torch2
if want torch2 || want aoti || want compile; then
  if [ ! -x "$PEERS_DIR/torch2/run.sh" ]; then
    echo "(no PyTorch 2 peer: $PEERS_DIR/torch2/run.sh is missing)"
  elif { [[ ${SETUP:-0} != 1 && -x $t2/cpp/torch2_eager && -x $t2/cpp/torch2_aoti_run && -f $t2/aoti/mlp_t2.pt2 ]] ||
         TORCH2_BUILD=$t2 TORCH2_VENV=$venv TORCH2_RESULTS=$t2/results SECTIONS="cpp-eager aoti" REPS=1 MIN_TIME=0.05 \
           "$PEERS_DIR/torch2/run.sh" >build/peers/torch2.log 2>&1; }; then
    v=$("$py" -c 'import torch; print(torch.__version__.split("+")[0])')
    # (the wheel's LibTorch brings its own BLAS: Debian's OpenBLAS path is not for it)
    want torch2 && runs+=(--run "LibTorch $v=env LD_LIBRARY_PATH= python3 benchmarks/models/peer_rows.py torch2 --tag torch2 --peers cpp-eager,cpp-eager-fused --cmd $(q "$(q "$t2/cpp/torch2_eager") {threads}")")
    want aoti && runs+=(--run "AOTInductor $v=env LD_LIBRARY_PATH= python3 benchmarks/models/peer_rows.py torch2 --tag aoti --peers cpp-aoti --cmd $(q "$(q "$t2/cpp/torch2_aoti_run") {threads} $(q "$t2/aoti")")")
    if want compile; then
      for t in 1 2; do
        serves+=(--serve "torch.compile $v=env LD_LIBRARY_PATH= OMP_NUM_THREADS=$t TORCHINDUCTOR_CACHE_DIR=$(q "$t2/inductor-cache/rows-t$t") $(q "$py") benchmarks/models/torch_compile_rows.py --threads $t --peers-dir $(q "$PEERS_DIR") --log $(q "$PWD/build/peers/compile.log")")
      done
    fi
  else
    tail -20 build/peers/torch2.log
    echo "(the PyTorch 2 peer failed to set up: its rows are left out; log: build/peers/torch2.log)"
  fi
fi
echo "$(lscpu | awk -F: '/Model name/{gsub(/^ +/,"",$2); print $2}'), $(nproc) CPUs, $(grep -o -w -E 'avx512f|avx2' /proc/cpuinfo | sort -u | tr '\n' ' ')$(date -u +%Y-%m-%dT%H:%MZ)"
python3 benchmarks/rounds.py "${runs[@]}" "${serves[@]}" --rounds "$ROUNDS" --min-time "$MIN_TIME" --filter "$FILTER" \
  --strip _typex _libtorch _ort _torch2 _aoti _compile /real_time --check out_sum --json build/bench/results/models_rounds.json
