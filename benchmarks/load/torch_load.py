#!/usr/bin/env python3
"""PyTorch's safetensors on the files benchmarks/load/load_time.cpp made (same run, same files).

  torch_load_file        safetensors.torch.load_file(path): every tensor, in memory
  torch_load_file_touch  the same, then one read per 4 KiB page of every tensor
Median wall time of REPS runs after one warm-up, per size; JSON on stdout for report.py.
"""
import json
import os
import statistics
import sys
import time

import torch
from safetensors.torch import load_file

bench_dir = os.environ.get("TYPEX_BENCH_DIR", "/tmp/typex_load_bench")
reps = int(os.environ.get("REPS", "5"))
rows = []
for mib in (1, 16, 128, 1024):
    path = os.path.join(bench_dir, f"weights_{mib}MiB.safetensors")
    if not os.path.exists(path):
        continue
    for name, touch in (("torch_load_file", False), ("torch_load_file_touch", True)):
        times = []
        for k in range(reps + 1):
            t0 = time.perf_counter()
            sd = load_file(path)
            if touch:
                s = 0.0
                for t in sd.values():
                    s += float(t.view(-1)[::1024].sum())
            dt = time.perf_counter() - t0
            del sd
            if k:
                times.append(dt)
        rows.append({"name": name, "MiB": mib, "ms": statistics.median(times) * 1e3, "bytes": os.path.getsize(path)})
json.dump({"torch": torch.__version__, "rows": rows}, sys.stdout)
