#!/usr/bin/env bash
# The training examples (README): installs what is missing, builds them and trains an MLP and a
# small CNN on the 8x8 handwritten digits (examples/data/digits.txt), a line per epoch; each exits
# with an error below 95% test accuracy.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build/demo -DCMAKE_BUILD_TYPE=Release -DTYPEX_BUILD_TESTS=OFF -DTYPEX_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build build/demo --target train_digits_mlp train_digits_cnn -j "$(nproc)" >/dev/null
./build/demo/examples/train_digits_mlp
./build/demo/examples/train_digits_cnn
