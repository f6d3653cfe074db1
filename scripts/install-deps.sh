#!/usr/bin/env bash
# Installs what typex's build, tests, demo and benchmarks need on Debian 12 (bookworm), from
# Debian's packages. Idempotent, and silent when everything is already there. Runs as root (as on
# a fresh machine or in CI) or through sudo.
#   TYPEX_WITH_CLANG=1  also install clang-16 and its sanitizer runtimes (the test script's
#                       sanitizer stages build with it)
set -euo pipefail

# Nothing is installed for CUDA: the toolkit (nvcc, cuBLASLt) is optional and preinstalled in
# /usr/local/cuda on this project's machines; where CMake finds none, the CUDA backend and its tests
# are skipped (cmake/typexCuda.cmake), and where it finds no nvcc, only the emulated CUDA tests build.
# (graphviz: `dot`, with which the program_picture example renders its DOT pictures as SVG)
# (ninja-build: the test script's generator; make stays for users' builds and the README's)
pkgs=(cmake make ninja-build g++ libeigen3-dev libboost-dev nlohmann-json3-dev doctest-dev libbenchmark-dev ccache time graphviz)
if [ "${TYPEX_WITH_CLANG:-0}" = 1 ]; then
  pkgs+=(clang-16 libclang-rt-16-dev)  # (the sanitizer and libFuzzer runtimes)
fi

missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  sudo="sudo"
fi
echo "typex: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
