#!/usr/bin/env bash
# Compile time of representative units at two revisions of the headers, in paired rounds: each
# round compiles the unit with revision A's headers and with revision B's at the same time (one
# per core, so that the machine's drift and steal hit both alike), and the table gives the median
# of the per-round ratios B/A with its quartiles, and each side's median wall time.
#   bash benchmarks/compile_time/compare_revisions.sh <rev A> [rev B: default the working tree] [rounds: 5]
# Run from the repository root. Units: umbrella_only.cpp, and export_{mlp,cnn,transformer}.cpp both
# header-only and against typex::eigen (TYPEX_EIGEN_SEPARATE_COMPILATION TYPEX_SEPARATE_COMPILATION).
set -euo pipefail
rev_a=${1:?"usage: compare_revisions.sh <rev A> [rev B] [rounds]"}
rev_b=${2:-}
rounds=${3:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git archive "$rev_a" include benchmarks/compile_time | tar -x -C "$work" --one-top-level=a
if [ -n "$rev_b" ]; then
  git archive "$rev_b" include benchmarks/compile_time | tar -x -C "$work" --one-top-level=b
else
  mkdir -p "$work/b" && cp -r include benchmarks "$work/b/"
fi
sep="-DTYPEX_EIGEN_SEPARATE_COMPILATION -DTYPEX_SEPARATE_COMPILATION"
units=("umbrella_only.cpp|" "export_mlp.cpp|$sep" "export_cnn.cpp|$sep" "export_transformer.cpp|$sep"
       "export_mlp.cpp|" "export_cnn.cpp|" "export_transformer.cpp|")
steal() { awk '/^cpu /{print $9}' /proc/stat; }
total() { awk '/^cpu /{s=0; for (i=2;i<=NF;i++) s+=$i; print s}' /proc/stat; }
echo "| unit | mode | A median (s) | B median (s) | B/A median | B/A quartiles | steal |"
echo "|---|---|---|---|---|---|---|"
for entry in "${units[@]}"; do
  IFS='|' read -r unit flags <<<"$entry"
  mode=$([ -n "$flags" ] && echo "typex::eigen" || echo "header-only")
  s0=$(steal); t0=$(total)
  ta=(); tb=(); ratios=()
  for _ in $(seq "$rounds"); do
    for side in a b; do
      ( cd "$work/$side/benchmarks/compile_time" &&
        /usr/bin/time -f '%e' -o "$work/$side.t" g++ -std=c++20 -O2 $flags -I../../include -isystem /usr/include/eigen3 -c "$unit" -o "$work/$side.o" ) &
    done
    wait
    a=$(cat "$work/a.t"); b=$(cat "$work/b.t")
    ta+=("$a"); tb+=("$b"); ratios+=("$(awk -v a="$a" -v b="$b" 'BEGIN{printf "%.3f", b/a}')")
  done
  s1=$(steal); t1=$(total)
  q() { printf '%s\n' "$@" | sort -n | awk -v p="$QP" '{v[NR]=$1} END{i=int((NR-1)*p+0.5)+1; print v[i]}'; }
  QP=0.5 ma=$(QP=0.5 q "${ta[@]}"); mb=$(QP=0.5 q "${tb[@]}")
  r50=$(QP=0.5 q "${ratios[@]}"); r25=$(QP=0.25 q "${ratios[@]}"); r75=$(QP=0.75 q "${ratios[@]}")
  st=$(awk -v s="$((s1 - s0))" -v t="$((t1 - t0))" 'BEGIN{printf "%.1f %%", t ? 100*s/t : 0}')
  echo "| $unit | $mode | $ma | $mb | $r50 | $r25 .. $r75 | $st |"
done
