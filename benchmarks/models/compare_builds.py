"""Two builds of typex side by side: the model benchmarks of an old binary and a new one, run in turns
on the same machine in one go, so that a refactor can show "every row within noise or better".

    python3 benchmarks/models/compare_builds.py OLD_BINARY NEW_BINARY [ROUNDS] [FILTER]

Each round runs both binaries (old first, then new; ROUNDS default 3) with Google Benchmark's own
repetitions, so a slow minute of the machine hits both. Per typex row: the median over every
repetition of both builds, new / old, and the spread of each (max / min) — a difference smaller than
the spread is noise. The hand-written Eigen rows are the control: the same code in both binaries,
so their new / old is what the machine's noise looks like in this run.
"""
import json
import statistics
import subprocess
import sys
from collections import defaultdict

old, new = sys.argv[1], sys.argv[2]
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
filt = sys.argv[4] if len(sys.argv) > 4 else "BM_(mlp|cnn|transformer)_(typex|hand_eigen)/"
args = [f"--benchmark_filter={filt}", "--benchmark_repetitions=3", "--benchmark_min_time=0.3", "--benchmark_format=json"]
times = {"old": defaultdict(list), "new": defaultdict(list)}
for _ in range(rounds):
    for label, binary in (("old", old), ("new", new)):
        data = json.loads(subprocess.run([binary, *args], check=True, capture_output=True, text=True).stdout)
        for b in data["benchmarks"]:
            if b.get("run_type") == "iteration":
                times[label][b["name"]].append(b["real_time"])

print("| benchmark | old median (us) | new median (us) | new / old | old spread | new spread |")
print("|---|---|---|---|---|---|")
for name in sorted(set(times["old"]) & set(times["new"])):
    o, n = times["old"][name], times["new"][name]
    mo, mn = statistics.median(o), statistics.median(n)
    print(f"| {name} | {mo:.1f} | {mn:.1f} | {mn / mo:.3f} | {max(o) / min(o):.2f} | {max(n) / min(n):.2f} |")
