#!/usr/bin/env python3
"""Paired rounds: two Google Benchmark binaries timed in turns (A B A B ...), judged by the median of
the per-pair ratios, so that the drift of a noisy machine (steal time, clock changes over minutes)
moves both sides of a pair together and cancels in the ratio where absolute times do not.

    python3 benchmarks/paired.py A_BINARY B_BINARY [--filter REGEX] [--pairs 15] [--min-time 0.2]
                                 [--strip TEXT ...] [--labels A,B]

Each pair runs A once and B once (A first in odd pairs, B first in even ones, so that neither
always runs second), every benchmark the filter selects, each for at least --min-time seconds
(Google Benchmark's own loop; one repetition). A row is a benchmark name with
every --strip text removed (default: "_typex", "_libtorch", "_old", "_new"), so that two binaries'
names for one workload meet. Per row: each side's median time, the median of time(A) / time(B) over
the pairs with its interquartile range (above 1: B is faster), and the pairs counted. The steal time
(/proc/stat, over the whole run) is printed first: a run with much steal is a run to repeat.

Two verdicts per row: "won by B" is issue 39's rule for a row against a peer (the median ratio
>= 1.0 and its lower quartile >= 0.95: a tie counts for B); "difference" says which side is faster
beyond the noise (the whole interquartile range above 1: B; below 1: A; else "within noise").
"""
import argparse
import json
import re
import statistics
import subprocess
import sys
from collections import defaultdict


def cpu_ticks():
    with open("/proc/stat") as f:
        fields = [int(v) for v in f.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal guest guest_nice (guest time is inside user)
    total = sum(fields[:8])
    steal = fields[7] if len(fields) > 7 else 0
    return total, steal


def run(binary, filt, min_time, key):
    args = [binary, f"--benchmark_filter={filt}", f"--benchmark_min_time={min_time}", "--benchmark_repetitions=1",
            "--benchmark_format=json"]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    times = {}
    for b in json.loads(out)["benchmarks"]:
        if b.get("run_type", "iteration") == "iteration":
            k = key(b["name"])
            if k in times:
                sys.exit(f"paired.py: two benchmarks of {binary} are row '{k}' once --strip is applied; narrow --filter or --strip")
            times[k] = b["real_time"] * {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[b.get("time_unit", "ns")]
    return times


def quartiles(v):
    if len(v) < 2:
        return v[0], v[0]
    q = statistics.quantiles(v, n=4, method="inclusive")
    return q[0], q[2]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--filter", default=".")
    p.add_argument("--pairs", type=int, default=15)
    p.add_argument("--min-time", type=float, default=0.2)
    p.add_argument("--strip", nargs="*", default=["_typex", "_libtorch", "_old", "_new"])
    p.add_argument("--labels", default="A,B")
    o = p.parse_args()
    la, lb = o.labels.split(",")
    key = lambda name: re.sub("|".join(map(re.escape, o.strip)), "", name) if o.strip else name
    ta, tb = defaultdict(list), defaultdict(list)
    ratios = defaultdict(list)
    t0, s0 = cpu_ticks()
    for i in range(o.pairs):
        if i % 2 == 0:
            a = run(o.a, o.filter, o.min_time, key)
            b = run(o.b, o.filter, o.min_time, key)
        else:
            b = run(o.b, o.filter, o.min_time, key)
            a = run(o.a, o.filter, o.min_time, key)
        for k in a.keys() & b.keys():
            ta[k].append(a[k])
            tb[k].append(b[k])
            ratios[k].append(a[k] / b[k])
        print(f"pair {i + 1}/{o.pairs} done", file=sys.stderr)
    t1, s1 = cpu_ticks()
    steal = 100.0 * (s1 - s0) / max(1, t1 - t0)
    print(f"steal time over the run: {steal:.1f} % of all CPU time ({o.pairs} pairs, min time {o.min_time} s each)\n")
    print(f"| row | {la} median | {lb} median | {la} / {lb} median | quartiles | pairs | won by {lb} | difference |")
    print("|---|---:|---:|---:|---|---:|---|---|")
    for k in sorted(ratios):
        r = ratios[k]
        med = statistics.median(r)
        q1, q3 = quartiles(r)
        won = "yes" if med >= 1.0 and q1 >= 0.95 else "no"
        diff = f"{lb} faster" if q1 > 1.0 else f"{la} faster" if q3 < 1.0 else "within noise"
        fmt = lambda s: f"{s * 1e3:.3f} ms" if s >= 1e-3 else f"{s * 1e6:.1f} us"
        print(f"| {k} | {fmt(statistics.median(ta[k]))} | {fmt(statistics.median(tb[k]))} | {med:.3f} | "
              f"{q1:.3f} - {q3:.3f} | {len(r)} | {won} | {diff} |")


if __name__ == "__main__":
    main()
