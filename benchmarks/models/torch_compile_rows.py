#!/usr/bin/env python3
"""torch.compile (Inductor, max-autotune with frozen weights) on the model benchmarks' workloads, served
to benchmarks/rounds.py (--serve): compiled once, then timed once per round.

    torch_compile_rows.py --threads T --peers-dir ../shared/peers [--workloads mlp,cnn,transformer] [--log FILE]

The peer is ../shared/peers/torch2's `compile-max-autotune` (bench_py.py), the fastest torch.compile
setting on this CPU: torch.compile(model, mode="max-autotune-no-cudagraphs", dynamic=False) with
torch._inductor.config.freezing = True, the multi-head-attention fast path off (with it on, Dynamo
captures one fused eager op and Inductor has nothing to compile). The models and
inputs are that peer's (torch2/models.py: the same weights and input as typex's workloads.hpp).

Inductor bakes torch.get_num_threads() into its kernels, so one process serves one thread count: start
one per count under one label. Start-up compiles every (workload, batch) (minutes with max-autotune; the
progress goes to stderr), then prints `ready`. Each line {"filter": REGEX, "min_time": S} on stdin is
answered with one line of Google Benchmark JSON: per selected row
BM_<workload>_compile/batch:B/threads:T/real_time, a warm-up (>= 3 calls, >= WARMUP s, default 0.05)
and one repetition of >= min_time s under torch.inference_mode(), timed from Python (each call includes
the module call and Dynamo's guard check, as the peer's own numbers do), with `out_sum`, the output
of the first call summed in double (rounds.py --check out_sum).
"""
import argparse
import json
import os
import re
import sys
import time


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--peers-dir", required=True)
    p.add_argument("--workloads", default="mlp,cnn,transformer")
    p.add_argument("--log", help="append stderr (the compile's progress, Inductor's autotuning) to this file")
    o = p.parse_args()
    if o.log:
        os.dup2(os.open(o.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644), 2)
    sys.path.insert(0, os.path.join(os.path.abspath(o.peers_dir), "torch2"))
    import torch
    import torch._inductor.config as icfg
    import models  # ../shared/peers/torch2/models.py

    torch.set_num_threads(o.threads)
    icfg.freezing = True
    import torch._dynamo
    # Every (workload, batch) is a graph of its own, and Dynamo guards on the attention fast path's
    # setting: the fast path stays off for the server's life (turned back on after compiling, each
    # transformer call recompiled, hit Dynamo's limit of 8 graphs a frame and ran eagerly), the
    # limit is raised past the 8 graphs served, and once they are compiled a recompile is an error
    # rather than a silent eager fallback.
    torch.backends.mha.set_fastpath_enabled(False)
    for knob in ("recompile_limit", "cache_size_limit", "accumulated_recompile_limit", "accumulated_cache_size_limit"):
        if hasattr(torch._dynamo.config, knob):
            setattr(torch._dynamo.config, knob, 64)
    warmup = float(os.environ.get("WARMUP", "0.05"))
    rows = {}  # name -> (compiled module, input)
    for w in o.workloads.split(","):
        _, _, batches, _ = models.WORKLOADS[w]
        model = models.make_model(w)
        cm = torch.compile(model, mode="max-autotune-no-cudagraphs", dynamic=False)
        for b in batches:
            x = models.make_input(w, b)
            t0 = time.perf_counter()
            with torch.inference_mode():
                y = cm(x)
            s = float(y.double().sum())
            print(f"torch_compile_rows: {w} batch {b}, {o.threads} thread(s): compiled in "
                  f"{time.perf_counter() - t0:.1f} s, output sum {s:.6g}", file=sys.stderr)
            rows[f"BM_{w}_compile/batch:{b}/threads:{o.threads}/real_time"] = (cm, x, s)
    torch._dynamo.config.error_on_recompile = True
    print("ready", flush=True)
    for line in sys.stdin:
        ask = json.loads(line)
        rx = re.compile(ask.get("filter", "."))
        min_time = float(ask.get("min_time", 0.5))
        out = []
        with torch.inference_mode():
            for name, (cm, x, s) in rows.items():
                if not rx.search(name):
                    continue
                t0, calls = time.perf_counter(), 0
                while calls < 3 or time.perf_counter() - t0 < warmup:
                    cm(x)
                    calls += 1
                t0, calls = time.perf_counter(), 0
                while True:
                    cm(x)
                    calls += 1
                    dt = time.perf_counter() - t0
                    if dt >= min_time:
                        break
                out.append({"name": name, "run_type": "iteration", "iterations": calls,
                            "real_time": dt / calls * 1e9, "time_unit": "ns", "out_sum": s})
        print(json.dumps({"context": {"peer": "torch.compile"}, "benchmarks": out}), flush=True)


if __name__ == "__main__":
    main()
