"""The model benchmarks' table (benchmarks/README.md) from one run's result files.

    python3 benchmarks/models/report.py FILE...

FILEs: Google Benchmark JSON (typex_models_eigen: typex and hand-written Eigen; typex_models_libtorch:
Debian's LibTorch 1.13; the ONNX Runtime peer's onnxruntime.json, rows BM_<workload>_onnxruntime)
and the PyTorch 2.x peer's torch2.json (its "runtime" rows: LibTorch 2.15 eager and AOTInductor from
C++, torch.compile from Python). Per row (workload, batch, threads): typex's median and spread
(min / max over the repetitions), every peer's median, the best peer and best peer / typex (> 1:
typex is faster), typex's GFLOP/s as a % of the FMA peak measured in the same run and, for rows
whose arithmetic intensity is below the machine's balance (memory-bound), the parameter bytes read
per second against the read bandwidth measured in the same run. Then the spread table (min / median
/ max, and the 2-thread speed-up over 1 thread), the output-sum check, and the shape-change table.
"""
import json
import re
import statistics
import sys
from collections import defaultdict

# peer key -> column title (the order of the columns); any other torch2 peer joins "best peer" only
NAMED = [("hand_eigen", "hand Eigen"), ("libtorch", "LibTorch 1.13"), ("cpp-eager", "LibTorch 2.15"),
         ("cpp-aoti", "AOTInductor"), ("py-compile-max-autotune", "torch.compile max-autotune"),
         ("onnxruntime", "ONNX Runtime")]
OTHER_TITLES = {"cpp-eager-fused": "LibTorch 2.15 (fused attention)", "cpp-aoti-static": "AOTInductor (static shapes)",
                "py-compile-default": "torch.compile", "py-compile-freezing": "torch.compile (freezing)"}
TITLE = dict(NAMED) | OTHER_TITLES
WORKLOADS = ["mlp", "cnn", "transformer"]

times = defaultdict(list)    # (workload, peer, batch, threads) -> [us] (one per repetition)
medians = {}                 # (workload, peer, batch, threads) -> median us (torch2 gives medians only)
sums = {}
gflops = defaultdict(list)
wbytes = {}
context = {}
for path in sys.argv[1:]:
    data = json.load(open(path))
    if "runtime" in data:  # torch2.json
        for r in data["runtime"]:
            key = (r["workload"], r["peer"], int(r["batch"]), int(r["threads"]))
            medians[key] = float(r["median_us"])
            times[key] = [float(r["min_us"]), float(r["median_us"])]
            if r.get("out_sum") is not None:
                sums[key] = float(r["out_sum"])
        continue
    context.update({k: v for k, v in data.get("context", {}).items() if k.startswith(("fma_peak", "read_gbs"))})
    for b in data["benchmarks"]:
        if b.get("run_type") != "iteration":
            continue
        m = re.match(r"BM_(\w+?)_(typex|hand_eigen|libtorch|onnxruntime)/batch:(\d+)/threads:(\d+)", b["name"])
        if not m:
            continue
        key = (m.group(1), m.group(2), int(m.group(3)), int(m.group(4)))
        times[key].append(float(b["real_time"]))
        if "out_sum" in b:
            sums[key] = float(b["out_sum"])
        if "GFLOP/s" in b:
            gflops[key].append(float(b["GFLOP/s"]))
        if "weight_bytes" in b:
            wbytes[key[0]] = float(b["weight_bytes"])
for key, v in times.items():
    medians.setdefault(key, statistics.median(v))

peak = {1: float(context.get("fma_peak_gflops_1_thread", "nan")), 2: float(context.get("fma_peak_gflops_2_threads", "nan"))}
l3 = float(context.get("read_gbs_l3_8mib", "nan"))
mem = float(context.get("read_gbs_memory_512mib", "nan"))
print(f"Measured in the run: FMA peak {peak[1]:.0f} GFLOP/s (1 thread), {peak[2]:.0f} GFLOP/s (2 threads); "
      f"read bandwidth (1 thread) {l3:.0f} GB/s from L3 (8 MiB), {mem:.0f} GB/s from memory (512 MiB)\n")

present = [p for p, _ in NAMED if any(k[1] == p for k in medians)]
others = sorted({k[1] for k in medians} - {p for p, _ in NAMED} - {"typex"})
rows = sorted({(w, b, t) for (w, p, b, t) in medians if p == "typex"}, key=lambda r: (WORKLOADS.index(r[0]), r[1], r[2]))
head = ["workload", "batch", "threads", "typex median (min-max) us"] + [TITLE[p] for p in present] + \
       ["best peer", "best peer / typex", "typex GFLOP/s (% of peak)", "memory-bound: weights GB/s (% of L3 read)"]
print("| " + " | ".join(head) + " |")
print("|" + "---|" * len(head))
behind = []
for w, b, t in rows:
    tx = times[(w, "typex", b, t)]
    txm = statistics.median(tx)
    cells = [w, str(b), str(t), f"{txm:.1f} ({min(tx):.1f}-{max(tx):.1f})"]
    best = None
    for p in present + others:
        v = medians.get((w, p, b, t))
        if p in present:
            cells.append(f"{v:.1f}" if v is not None else "-")
        if v is not None and (best is None or v < best[1]):
            best = (p, v)
    if best:
        cells += [f"{TITLE.get(best[0], best[0])} {best[1]:.1f}", f"**{best[1] / txm:.2f}**" if best[1] / txm < 1 else f"{best[1] / txm:.2f}"]
        if best[1] < txm:
            behind.append((w, b, t, TITLE.get(best[0], best[0]), best[1] / txm))
    else:
        cells += ["-", "-"]
    g = statistics.median(gflops[(w, "typex", b, t)]) if gflops.get((w, "typex", b, t)) else float("nan")
    cells.append(f"{g:.1f} ({g / peak[t] * 100:.0f} %)")
    # arithmetic intensity (flop per parameter byte) against the machine's balance (peak / L3 bandwidth)
    wb = wbytes.get(w)
    if wb and g == g and (g * 1e9 * txm * 1e-6) / wb < peak[t] / l3:
        gbs = wb / (txm * 1e-6) * 1e-9
        cells.append(f"{gbs:.0f} ({gbs / l3 * 100:.0f} %)")
    else:
        cells.append("-")
    print("| " + " | ".join(cells) + " |")
print("\n**bold**: a peer ahead of typex on that row." if behind else "\ntypex is at or ahead of the best peer on every row.")

# spread of typex and of ONNX Runtime over the repetitions, and the 2-thread speed-up
print("\n| workload | batch | typex 1 thread min / median / max (us) | typex 2 threads min / median / max | typex 2-thread speed-up | ONNX Runtime 2-thread speed-up |")
print("|---|---|---|---|---|---|")
for w, b in sorted({(w, b) for (w, b, _) in rows}, key=lambda r: (WORKLOADS.index(r[0]), r[1])):
    one, two = times.get((w, "typex", b, 1)), times.get((w, "typex", b, 2))
    if not one or not two:
        continue
    o1, o2 = medians.get((w, "onnxruntime", b, 1)), medians.get((w, "onnxruntime", b, 2))
    fmt = lambda v: f"{min(v):.1f} / {statistics.median(v):.1f} / {max(v):.1f}"
    ort = f"{o1 / o2:.2f}" if o1 and o2 else "-"
    print(f"| {w} | {b} | {fmt(one)} | {fmt(two)} | {statistics.median(one) / statistics.median(two):.2f} | {ort} |")

bad = []
for (w, p, b, t), s in sums.items():
    ref = sums.get((w, "typex", b, t))
    if p != "typex" and ref is not None and abs(s - ref) > 1e-3 * max(1.0, abs(s)):
        bad.append((w, p, b, t, s, ref))
print("\noutput sums, typex vs every peer (1e-3 relative): " + ("agree on every row" if not bad else f"DIFFER: {bad}"))

# A call with a new input shape (BM_shape_new_*: batch b and b + 1 alternate on one module, each call
# re-plans) against the same calls on two modules that keep their shapes (BM_shape_same_*), 1 thread.
shape_times = defaultdict(list)  # (workload, same|new, batch) -> [us]
for path in sys.argv[1:]:
    for b in json.load(open(path)).get("benchmarks", []):
        m = re.match(r"BM_shape_(same|new)_(\w+)/batch:(\d+)", b["name"])
        if m and b.get("run_type") == "iteration":
            shape_times[(m.group(2), m.group(1), int(m.group(3)))].append(b["real_time"])
if shape_times:
    print("\n| workload | batches | one module per shape (us/call) | one module, new shape every call (us/call) | re-plan cost (us) | new / same |")
    print("|---|---|---|---|---|---|")
    for w, b in sorted({(w, b) for (w, _, b) in shape_times}, key=lambda r: (WORKLOADS.index(r[0]), r[1])):
        same, new = shape_times.get((w, "same", b)), shape_times.get((w, "new", b))
        if not same or not new:
            continue
        s, n = statistics.median(same), statistics.median(new)
        print(f"| {w} | {b} and {b + 1} | {s:.1f} | {n:.1f} | {n - s:.1f} | {n / s:.2f} |")
