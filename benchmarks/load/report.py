#!/usr/bin/env python3
"""One table from load_time.cpp's JSON (Google Benchmark, medians) and torch_load.py's JSON."""
import json
import sys

typex = json.load(open(sys.argv[1]))
torch = json.load(open(sys.argv[2]))
times = {}  # (name, MiB) -> ms
for b in typex["benchmarks"]:
    if b.get("aggregate_name") != "median":
        continue
    name, mib = b["run_name"].split("/")[0], int(b["run_name"].split("/")[1])
    times[(name, mib)] = b["real_time"]
for r in torch["rows"]:
    times[(r["name"], r["MiB"])] = r["ms"]
cols = ["read_file", "typex_map", "typex_map_touch", "typex_copy", "typex_into_module", "typex_archive", "torch_load_file",
        "torch_load_file_touch"]
print(f"machine: {typex['context'].get('host_name', '?')}, {typex['context']['num_cpus']} CPUs; torch {torch['torch']}")
print("| MiB | " + " | ".join(cols) + " | GB/s read_file | GB/s typex_map_touch |")
print("|---" * (len(cols) + 3) + "|")
for mib in sorted({m for (_, m) in times}):
    cells = [f"{times[(c, mib)]:.3f}" if (c, mib) in times else "-" for c in cols]
    gbs = lambda c: f"{mib * 1048576 / (times[(c, mib)] * 1e-3) / 1e9:.2f}" if (c, mib) in times else "-"
    print(f"| {mib} | " + " | ".join(cells) + f" | {gbs('read_file')} | {gbs('typex_map_touch')} |")
print("(ms, median of 5; warm page cache)")
