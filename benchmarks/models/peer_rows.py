#!/usr/bin/env python3
"""The model benchmarks' peers of ../shared/peers, made to answer as Google Benchmark binaries do, so
that benchmarks/rounds.py times them in paired rounds beside typex_models_eigen.

    peer_rows.py ort --bench BIN --lib LIBONNXRUNTIME --models DIR      [Google Benchmark flags]
    peer_rows.py torch2 --cmd "BIN {threads} ..." --peers NAME[,NAME]   [Google Benchmark flags]

The flags are the ones rounds.py passes (--benchmark_filter, --benchmark_min_time,
--benchmark_repetitions, --benchmark_format=json); one repetition of at least min_time seconds is
timed per row, after a warm-up of WARMUP seconds (default 0.05) and at least 3 calls. Rows are named
as typex_models_eigen names its own, with the side's tag in place of `_typex`:
BM_<workload>_<tag>/batch:B/threads:T/real_time (tag: ort, aoti, torch2), and only those the filter
selects (re.search, as Google Benchmark's filter) are run. Each row carries the peer's `out_sum` (its
output summed in double) for rounds.py --check out_sum.

ort:    ../shared/peers/onnxruntime's C++ runner (ONNX Runtime's C API, the models exported and
        optimised offline by its run.sh), every selected workload and thread count in one process.
torch2: a runner of ../shared/peers/torch2/cpp (torch2_eager: LibTorch eager from C++;
        torch2_aoti_run: the AOTInductor packages), one process per thread count with
        OMP_NUM_THREADS set, `{threads}` in the command replaced by it; the lines RESULT,torch2,... it
        prints for the --peers names are the rows (where two names time one row, as LibTorch eager's
        fused and plain-op transformer do, the row is the faster: the peer's best).
A FAIL line, a missing row or a failed process ends this with an error: a peer that did not run is
not a row won.
"""
import argparse
import json
import os
import re
import shlex
import subprocess
import sys

# (workload, batch sizes): workloads.hpp's rows, the same as the peers'
WORKLOADS = {"mlp": (1, 32, 256), "cnn": (1, 32, 256), "transformer": (1, 8)}
THREADS = (1, 2)


def name(tag, w, b, t):
    return f"BM_{w}_{tag}/batch:{b}/threads:{t}/real_time"


def selected(tag, filt):
    rx = re.compile(filt)
    return [(w, b, t) for w, bs in WORKLOADS.items() for t in THREADS for b in bs if rx.search(name(tag, w, b, t))]


def gbench_json(tag, got):
    """got: {(w, b, t): (microseconds per call, the output's sum)} -> Google Benchmark's JSON"""
    return {"context": {"peer": tag},
            "benchmarks": [{"name": name(tag, w, b, t), "run_type": "iteration", "real_time": us * 1e3,
                            "time_unit": "ns", "out_sum": s} for (w, b, t), (us, s) in sorted(got.items())]}


def run_ort(o, rows, min_time, warmup):
    if not rows:
        return {}
    ws = sorted({w for w, _, _ in rows})
    ts = sorted({t for _, _, t in rows})
    cmd = [o.bench, o.lib, o.models, "--reps", "1", "--min-time", str(min_time), "--warmup", str(warmup),
           "--threads", ",".join(map(str, ts)), "--only", ",".join(ws)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    got = {}
    for line in out.splitlines()[1:]:  # route,workload,batch,threads,rep_us,calls_first_rep,out_sum
        f = line.split(",")
        key = (f[1], int(f[2]), int(f[3]))
        if key in rows:
            got[key] = (float(f[4].split(";")[0]), float(f[6]))
    return got


def run_torch2(o, rows, min_time, warmup):
    peers = set(o.peers.split(","))
    got = {}
    for t in sorted({t for _, _, t in rows}):
        env = dict(os.environ, OMP_NUM_THREADS=str(t), REPS="1", MIN_TIME=str(min_time), WARMUP_S=str(warmup))
        for w in sorted({w for w, _, tt in rows if tt == t}):
            cmd = shlex.split(o.cmd.replace("{threads}", str(t))) + [w]
            out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
            for line in out.splitlines():
                f = line.split(",")
                if f[0] == "FAIL" and f[2] in peers:
                    sys.exit(f"peer_rows.py: {o.cmd}: {line}")
                # RESULT,torch2,<workload>,<peer>,<batch>,<threads>,<median_us>,<min_us>,<reps>,<iters>,<out_sum>
                if f[0] != "RESULT" or f[3] not in peers:
                    continue
                key = (f[2], int(f[4]), int(f[5]))
                if key in rows and float(f[6]) < got.get(key, (float("inf"),))[0]:
                    got[key] = (float(f[6]), float(f[10]))
    return got


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("kind", choices=["ort", "torch2"])
    p.add_argument("--bench")
    p.add_argument("--lib")
    p.add_argument("--models")
    p.add_argument("--cmd")
    p.add_argument("--peers", default="")
    p.add_argument("--tag")
    p.add_argument("--benchmark_filter", default=".")
    p.add_argument("--benchmark_min_time", default="0.5")
    p.add_argument("--benchmark_repetitions", type=int, default=1)
    p.add_argument("--benchmark_format", default="json")
    o = p.parse_args()
    if o.benchmark_repetitions != 1 or o.benchmark_format != "json":
        sys.exit("peer_rows.py: one repetition, JSON output (what rounds.py asks for)")
    if o.kind == "ort" and not (o.bench and o.lib and o.models):
        sys.exit("peer_rows.py ort: --bench, --lib and --models")
    if o.kind == "torch2" and not (o.cmd and o.peers):
        sys.exit("peer_rows.py torch2: --cmd and --peers")
    tag = o.tag or ("ort" if o.kind == "ort" else "torch2")
    min_time = float(o.benchmark_min_time.rstrip("s"))
    warmup = float(os.environ.get("WARMUP", "0.05"))
    rows = set(selected(tag, o.benchmark_filter))
    got = (run_ort if o.kind == "ort" else run_torch2)(o, rows, min_time, warmup)
    missing = sorted(rows - got.keys())
    if missing:
        sys.exit(f"peer_rows.py: {o.kind} gave no time for " + ", ".join(name(tag, *k) for k in missing))
    json.dump(gbench_json(tag, got), sys.stdout)
    print()


if __name__ == "__main__":
    main()
