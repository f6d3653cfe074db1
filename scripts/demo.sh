#!/usr/bin/env bash
# The demo command (README): installs what is missing, builds the examples and runs the demo.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build/demo -DCMAKE_BUILD_TYPE=Release -DTYPEX_BUILD_TESTS=OFF -DTYPEX_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build build/demo --target export_mlp -j "$(nproc)" >/dev/null
./build/demo/examples/export_mlp
