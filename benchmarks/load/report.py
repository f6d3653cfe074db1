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
print("| MiB | " + " | ".join(cols) + " | read_file GB/s | torch / typex (mapped) | torch / typex (touched) |")
print("|---" * (len(cols) + 4) + "|")
for mib in sorted({m for (_, m) in times}):
    cells = [f"{times[(c, mib)]:.3f}" if (c, mib) in times else "-" for c in cols]
    t = lambda c: times.get((c, mib))
    gbs = f"{mib * 1048576 / (t('read_file') * 1e-3) / 1e9:.2f}" if t("read_file") else "-"
    r1 = f"{t('torch_load_file') / t('typex_map'):.1f}x" if t("torch_load_file") and t("typex_map") else "-"
    r2 = f"{t('torch_load_file_touch') / t('typex_map_touch'):.2f}x" if t("torch_load_file_touch") and t("typex_map_touch") else "-"
    print(f"| {mib} | " + " | ".join(cells) + f" | {gbs} | {r1} | {r2} |")
print("(ms, median of 5; warm page cache; > 1x: typex is faster)")
