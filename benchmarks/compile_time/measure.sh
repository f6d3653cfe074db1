#!/usr/bin/env bash
# Compile time and peak memory of representative translation units, as a markdown table.
#   CXX=g++ TYPEX_INCLUDE=../../include bash measure.sh        (run from this folder)
# Each TU is compiled to an object file with -O2 (as a user would build), REPEATS times (default
# 3); the table keeps the median wall time and the largest peak resident memory. Extra compilers:
# CXX2=clang++-16. Units that include the Eigen backend are timed both ways: header-only (the
# kernels compiled in the unit) and against typex::eigen (TYPEX_EIGEN_SEPARATE_COMPILATION; the
# kernels compiled once, in src/eigen_kernels.cpp, and the run-time code in src/runtime.cpp:
# TYPEX_SEPARATE_COMPILATION, both timed too).
set -euo pipefail
cd "$(dirname "$0")"
inc=${TYPEX_INCLUDE:-../../include}
eigen=${EIGEN_INCLUDE:-/usr/include/eigen3}
repeats=${REPEATS:-3}
sep="-DTYPEX_EIGEN_SEPARATE_COMPILATION -DTYPEX_SEPARATE_COMPILATION"  # (what typex::eigen gives its users)
# "label|source|extra flags"
tus=("empty.cpp|empty.cpp|" "core_only.cpp|core_only.cpp|" "umbrella_only.cpp|umbrella_only.cpp|"
     "eigen_core_only.cpp|eigen_core_only.cpp|" "shapes_200.cpp|shapes_200.cpp|" "pytree_50.cpp|pytree_50.cpp|")
for m in mlp cnn transformer zoo_gpt2 zoo_resnet18; do
  f=export_$m.cpp
  [ -f "$f" ] || f=$m.cpp
  tus+=("$f (header-only)|$f|" "$f (typex::eigen)|$f|$sep")
done
tus+=("train_mlp.cpp (header-only)|train_mlp.cpp|" "train_mlp.cpp (typex::eigen)|train_mlp.cpp|$sep")
# (the CUDA backend's host side, where the toolkit's headers are: CUDA_INCLUDE, /usr/local/cuda/include)
cuda_inc=${CUDA_INCLUDE:-/usr/local/cuda/include}
if [ -f "$cuda_inc/cublasLt.h" ]; then
  tus+=("cuda_mlp.cpp (header-only CUDA engine)|cuda_mlp.cpp|$sep -isystem $cuda_inc"
       "cuda_mlp.cpp (typex::eigen, typex::cuda)|cuda_mlp.cpp|$sep -DTYPEX_CUDA_SEPARATE_COMPILATION -isystem $cuda_inc")
fi
tus+=("src/eigen_kernels.cpp (typex::eigen, once)|../../src/eigen_kernels.cpp|$sep"
     "src/runtime.cpp (typex::runtime, once)|../../src/runtime.cpp|-DTYPEX_SEPARATE_COMPILATION")
compilers=("${CXX:-g++}")
[ -n "${CXX2:-}" ] && compilers+=("$CXX2")
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

printf '| translation unit | compiler | wall time (s, median of %s) | peak memory (MiB) |\n|---|---|---|---|\n' "$repeats"
for cxx in "${compilers[@]}"; do
  for entry in "${tus[@]}"; do
    IFS='|' read -r label src flags <<<"$entry"
    times=()
    peak=0
    for _ in $(seq "$repeats"); do
      /usr/bin/time -f '%e %M' -o "$out/t" "$cxx" -std=c++20 -O2 $flags -I"$inc" -isystem "$eigen" -c "$src" -o "$out/o.o"
      read -r t m <"$out/t"
      times+=("$t")
      [ "$m" -gt "$peak" ] && peak=$m
    done
    median=$(printf '%s\n' "${times[@]}" | sort -n | sed -n "$(((repeats + 1) / 2))p")
    printf '| %s | %s | %s | %d |\n' "$label" "$("$cxx" --version | head -1 | sed 's/ (.*)//')" "$median" $((peak / 1024))
  done
done
