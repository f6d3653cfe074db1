#!/usr/bin/env bash
# Compile time and peak memory of representative translation units, as a markdown table.
#   CXX=g++ TYPEX_INCLUDE=../../include bash measure.sh        (run from this folder)
# Each TU is compiled to an object file with -O2 (as a user would build), REPEATS times (default
# 3); the table keeps the median wall time and the largest peak resident memory. Extra compilers:
# CXX2=clang++-16.
set -euo pipefail
cd "$(dirname "$0")"
inc=${TYPEX_INCLUDE:-../../include}
eigen=${EIGEN_INCLUDE:-/usr/include/eigen3}
repeats=${REPEATS:-3}
tus=(empty core_only umbrella_only eigen_core_only shapes_200 pytree_50 export_mlp export_cnn export_transformer)
compilers=("${CXX:-g++}")
[ -n "${CXX2:-}" ] && compilers+=("$CXX2")
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

printf '| translation unit | compiler | wall time (s, median of %s) | peak memory (MiB) |\n|---|---|---|---|\n' "$repeats"
for cxx in "${compilers[@]}"; do
  for tu in "${tus[@]}"; do
    times=()
    peak=0
    for _ in $(seq "$repeats"); do
      /usr/bin/time -f '%e %M' -o "$out/t" "$cxx" -std=c++20 -O2 -I"$inc" -isystem "$eigen" -c "$tu.cpp" -o "$out/o.o"
      read -r t m <"$out/t"
      times+=("$t")
      [ "$m" -gt "$peak" ] && peak=$m
    done
    median=$(printf '%s\n' "${times[@]}" | sort -n | sed -n "$(((repeats + 1) / 2))p")
    printf '| %s | %s | %s | %d |\n' "$tu.cpp" "$("$cxx" --version | head -1 | sed 's/ (.*)//')" "$median" $((peak / 1024))
  done
done
