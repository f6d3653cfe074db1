"""The model benchmarks' table (benchmarks/README.md) from Google Benchmark JSON files.

Per row (workload, batch, threads): median and min wall time over the repetitions of typex,
hand-written Eigen and LibTorch; the ratios typex / hand Eigen (target <= 1.05) and LibTorch / typex
(target > 1, >= 1.5 at batch 1); typex's GFLOP/s as a % of the FMA peak measured in the same run.
"""
import json
import re
import statistics
import sys
from collections import defaultdict

times = defaultdict(list)   # (workload, peer, batch, threads) -> [us]
sums = {}
gflops = defaultdict(list)
context = {}
for path in sys.argv[1:]:
    data = json.load(open(path))
    context.update({k: v for k, v in data["context"].items() if k.startswith("fma_peak")})
    for b in data["benchmarks"]:
        if b.get("run_type") != "iteration":
            continue
        m = re.match(r"BM_(\w+?)_(typex|hand_eigen|libtorch)/batch:(\d+)/threads:(\d+)", b["name"])
        if not m:
            continue
        key = (m.group(1), m.group(2), int(m.group(3)), int(m.group(4)))
        times[key].append(b["real_time"])
        if "out_sum" in b:
            sums[key] = b["out_sum"]
        if "GFLOP/s" in b:
            gflops[key].append(b["GFLOP/s"])

peak = {1: float(context.get("fma_peak_gflops_1_thread", "nan")), 2: float(context.get("fma_peak_gflops_2_threads", "nan"))}
print(f"FMA peak measured in the run: {peak[1]:.0f} GFLOP/s (1 thread), {peak[2]:.0f} GFLOP/s (2 threads)\n")
print("| workload | batch | threads | typex median / min (us) | hand Eigen median / min | LibTorch median / min | typex / hand | LibTorch / typex | typex % of peak |")
print("|---|---|---|---|---|---|---|---|---|")
rows = sorted({(w, b, t) for (w, _, b, t) in times}, key=lambda r: (["mlp", "cnn", "transformer"].index(r[0]), r[1], r[2]))
for w, b, t in rows:
    def cell(peer):
        v = times.get((w, peer, b, t))
        return (statistics.median(v), min(v)) if v else None
    tx, he, lt = cell("typex"), cell("hand_eigen"), cell("libtorch")
    fmt = lambda c: f"{c[0]:.1f} / {c[1]:.1f}" if c else "-"
    r1 = f"{tx[0] / he[0]:.2f}" if tx and he else "-"
    r2 = f"{lt[0] / tx[0]:.2f}" if tx and lt else "-"
    pk = f"{statistics.median(gflops[(w, 'typex', b, t)]) / peak[t] * 100:.0f} %" if tx else "-"
    print(f"| {w} | {b} | {t} | {fmt(tx)} | {fmt(he)} | {fmt(lt)} | {r1} | {r2} | {pk} |")
bad = [k for k in sums if k[1] == "libtorch" and (k[0], "typex", k[2], k[3]) in sums and
       abs(sums[k] - sums[(k[0], "typex", k[2], k[3])]) > 1e-3 * max(1.0, abs(sums[k]))]
print("\noutput sums typex vs LibTorch: " + ("agree (1e-3 relative) on every row" if not bad else f"DIFFER on {bad}"))

# A call with a new input shape (BM_shape_new_*: batch b and b + 1 alternate on one module, each call
# re-plans) against the same calls on two modules that keep their shapes (BM_shape_same_*), 1 thread.
shape_times = defaultdict(list)  # (workload, same|new, batch) -> [us]
for path in sys.argv[1:]:
    for b in json.load(open(path))["benchmarks"]:
        m = re.match(r"BM_shape_(same|new)_(\w+)/batch:(\d+)", b["name"])
        if m and b.get("run_type") == "iteration":
            shape_times[(m.group(2), m.group(1), int(m.group(3)))].append(b["real_time"])
if shape_times:
    print("\n| workload | batches | one module per shape (us/call) | one module, new shape every call (us/call) | re-plan cost (us) | new / same |")
    print("|---|---|---|---|---|---|")
    for w, b in sorted({(w, b) for (w, _, b) in shape_times}, key=lambda r: (["mlp", "cnn", "transformer"].index(r[0]), r[1])):
        same, new = shape_times.get((w, "same", b)), shape_times.get((w, "new", b))
        if not same or not new:
            continue
        s, n = statistics.median(same), statistics.median(new)
        print(f"| {w} | {b} and {b + 1} | {s:.1f} | {n:.1f} | {n - s:.1f} | {n / s:.2f} |")
