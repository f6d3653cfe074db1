#!/usr/bin/env python3
"""The training-step table: median ms per step for typex and each LibTorch peer, the peer / typex
ratio of the fastest peer (> 1: typex is faster), typex's spread (max/min of the repetitions), and the
first step's loss of each (the same weights and data: they agree)."""
import json
import os
import statistics
import sys

out = sys.argv[1]
runs = {}
for label, name in [("typex", "training_typex.json"), ("LibTorch 1.13", "training_libtorch.json"),
                    ("LibTorch 2.x", "training_libtorch2.json")]:
    path = os.path.join(out, name)
    if not os.path.exists(path):
        continue
    data = json.load(open(path))
    rows = {}
    for b in data["benchmarks"]:
        if b.get("run_type") != "iteration":
            continue
        base = b["run_name"].split("/")
        model = base[0].replace("BM_train_", "").rsplit("_", 1)[0]
        key = (model, base[1], base[2])
        rows.setdefault(key, {"t": [], "loss": b.get("loss")})["t"].append(b["real_time"])
    runs[label] = rows
    if label == "LibTorch 2.x":
        runs[label + " version"] = data.get("context", {}).get("library_version", "")
peers = [p for p in ("LibTorch 1.13", "LibTorch 2.x") if p in runs]
print("| workload | typex ms | " + " | ".join(f"{p} ms" for p in peers) + " | best peer / typex | typex spread | loss (typex / peers) |")
print("|---|---|" + "---|" * len(peers) + "---|---|---|")
for key in sorted(runs["typex"]):
    t = runs["typex"][key]
    med = statistics.median(t["t"])
    cells, best = [], None
    losses = [f"{t['loss']:.5f}"]
    for p in peers:
        r = runs[p].get(key)
        if r:
            m = statistics.median(r["t"])
            cells.append(f"{m:.2f}")
            best = m if best is None else min(best, m)
            losses.append(f"{r['loss']:.5f}")
        else:
            cells.append("-")
    ratio = f"{best / med:.2f}x" if best else "-"
    spread = f"{max(t['t']) / min(t['t']):.2f}"
    print(f"| {key[0]} {key[1]} {key[2]} | {med:.2f} | " + " | ".join(cells) + f" | {ratio} | {spread} | {' / '.join(losses)} |")
