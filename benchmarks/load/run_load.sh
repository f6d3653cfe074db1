#!/usr/bin/env bash
# Load time against file size, typex vs reading the file once vs PyTorch's safetensors, one run,
# one table (benchmarks/README.md). PyTorch comes from a venv (PyPI; never the library's build):
#   PYTHON=/path/to/venv/bin/python (default: build/peers/venv, made here with torch + safetensors)
set -euo pipefail
cd "$(dirname "$0")/../.."
bash scripts/install-deps.sh
cmake -S . -B build/bench -DCMAKE_BUILD_TYPE=Release -DTYPEX_BUILD_TESTS=OFF -DTYPEX_BUILD_EXAMPLES=OFF >/dev/null
cmake --build build/bench -j "$(nproc)" --target typex_load_time >/dev/null
py=${PYTHON:-build/peers/venv/bin/python}
if [ ! -x "$py" ]; then
  python3 -m venv build/peers/venv
  build/peers/venv/bin/pip install -q torch safetensors --index-url https://download.pytorch.org/whl/cpu \
    --extra-index-url https://pypi.org/simple
  py=build/peers/venv/bin/python
fi
export TYPEX_BENCH_DIR=${TYPEX_BENCH_DIR:-/tmp/typex_load_bench}
build/bench/benchmarks/typex_load_time --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
  --benchmark_format=json >build/bench/load_typex.json
"$py" benchmarks/load/torch_load.py >build/bench/load_torch.json
python3 benchmarks/load/report.py build/bench/load_typex.json build/bench/load_torch.json
