#!/bin/bash
# User-mode CPU cycles per benchmark iteration, for comparing two builds on a noisy (shared) VM:
# cycles count only while this process runs, so the hypervisor's steal and other tenants' time do
# not enter (their cache traffic still does). Two runs of the filter (min time 0.5 s and 2.5 s);
# the difference of their cycles over the difference of their iterations cancels the fixed costs
# (start-up, the FMA and bandwidth probes, export, planning). Needs perf (Debian's linux-perf).
#
#   bash benchmarks/models/cycles_per_call.sh BIN 'BM_mlp_typex/batch:256/threads:1'
set -euo pipefail
export GLIBC_TUNABLES=glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=4294967295
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
measure() {
  perf stat -x, -e cycles:u -o "$tmp/c.txt" "$1" --benchmark_filter="$2" --benchmark_min_time="$3" \
    --benchmark_format=json >"$tmp/c.json" 2>/dev/null
  python3 - "$tmp" <<'PY'
import json, sys
d = json.load(open(sys.argv[1] + "/c.json"))
it = sum(b["iterations"] for b in d["benchmarks"] if b.get("run_type", "iteration") == "iteration")
c = [int(l.split(",")[0]) for l in open(sys.argv[1] + "/c.txt") if "cycles" in l][0]
print(it, c)
PY
}
read -r i1 c1 < <(measure "$1" "$2" 0.5)
read -r i2 c2 < <(measure "$1" "$2" 2.5)
python3 -c "print('$2:', round(($c2 - $c1) / ($i2 - $i1) / 1e3, 1), 'kcycles per iteration')"
