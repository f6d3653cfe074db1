#!/usr/bin/env python3
"""PyTorch's peers of benchmarks/cuda/models_cuda.cpp on the same GPU: eager, torch.compile (default
and max-autotune) and AOTInductor, for the MLP, the CNN and the transformer block of
benchmarks/models/workloads.hpp with the same weights (fill_weights, written again here) and the
same f32 arithmetic (no TF32: typex's products are CUBLAS_COMPUTE_32F). A row's time is the median
over 7 rounds of the mean time per call, each round at least 0.2 s after a warm-up, every call
synchronized (as typex's calls are). Compiling is slow (max-autotune most), so the peers share a
budget in seconds for compiling (PEERS_BUDGET, default 300): what does not fit is printed as skipped,
never guessed. Every row is compiled first and timed afterwards, with nothing compiling; PEERS_GO=<file>
makes the timing wait for that file (a caller's own timed work runs between), and <file>.compiled
says when compiling is over.
PEERS_MODES (default eager,compile,max-autotune,aoti,train) picks the peers; `train` adds PyTorch
eager's training step (forward, loss, backward, torch.optim.SGD with momentum: its default foreach
path on CUDA) for the rows of models_cuda.cpp's second table, on the same inputs (fill_input's
numbers), so that the first loss printed equals typex's.

  python3 benchmarks/cuda/peers_cuda.py            # prints one table
"""
import math
import os
import statistics
import sys
import time

import torch
import torch.nn as nn

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
torch.set_float32_matmul_precision("highest")

MASK = (1 << 64) - 1
DEVICE = os.environ.get("PEERS_DEVICE", "cuda")  # (cpu: a dry run of the script's flow, no GPU)


def fill_weights(name, n, fan_in):
    h = 1469598103934665603
    for c in name.encode():
        h = ((h ^ c) * 1099511628211) & MASK
    scale = 1.0 / math.sqrt(fan_in if fan_in else 1)
    norm = "norm" in name and "weight" in name
    out = []
    for _ in range(n):
        h = (h * 6364136223846793005 + 1442695040888963407) & MASK
        u = (h >> 11) / float(1 << 53) * 2.0 - 1.0
        out.append(1.0 + 0.1 * u if norm else scale * u)
    return torch.tensor(out, dtype=torch.float32)


def fill(model):
    with torch.no_grad():
        for name, p in model.named_parameters():
            n = p.numel()
            fan = n // p.shape[0] if p.dim() >= 2 else n
            p.copy_(fill_weights(name, n, fan).reshape(p.shape))
    return model


def models():
    mlp = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    cnn = nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                        nn.Linear(64 * 12 * 12, 128), nn.ReLU(), nn.Linear(128, 10))
    tf = nn.TransformerEncoderLayer(256, 4, 1024, dropout=0.0, activation="gelu", batch_first=True)
    return {"mlp": (fill(mlp), [(b, (b, 784)) for b in (1, 32, 256)]),
            "cnn": (fill(cnn), [(b, (b, 1, 28, 28)) for b in (1, 32, 256)]),
            "transformer": (fill(tf), [(b, (b, 128, 256)) for b in (1, 8)])}


def time_calls(f):
    sync = torch.cuda.synchronize if DEVICE == "cuda" else (lambda: None)
    for _ in range(20):
        f()
    sync()
    rounds = []
    for _ in range(7):
        calls = 0
        t0 = time.perf_counter()
        while True:
            for _ in range(10):
                f()
                sync()
            calls += 10
            s = time.perf_counter() - t0
            if s >= 0.2:
                break
        rounds.append(s / calls)
    return statistics.median(rounds)


def train_rows():
    """PyTorch eager's training step: MLP at batch 32 / 256, CNN at 32, the block at 8."""
    dev = torch.device(DEVICE)
    out = []
    for name, b in (("mlp", 32), ("mlp", 256), ("cnn", 32), ("transformer", 8)):
        model, shapes = models()[name]
        model = model.to(dev).train()
        shape = dict(shapes)[b]
        x = fill_weights("input", math.prod(shape), 1).reshape(shape).to(dev)
        if name == "transformer":
            y, loss_fn = 0.5 * x, nn.MSELoss()
        else:
            y, loss_fn = torch.tensor([(7 * i + 3) % 10 for i in range(b)], device=dev), nn.CrossEntropyLoss()
        opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
        first = loss_fn(model(x), y).item()

        def step():
            opt.zero_grad(set_to_none=True)
            loss_fn(model(x), y).backward()
            opt.step()
        out.append((name, b, time_calls(step), first))
    print(f"{'training step':<12} {'batch':>5} {'eager (us)':>11} {'first loss':>11}")
    for name, b, t, first in out:
        print(f"{name:<12} {b:>5} {t * 1e6:>11.1f} {first:>11.5f}")


def aoti_compile_child(name, batch):
    """Compiles one AOTInductor package in a process of its own and checks its output (a crash of the
    compiler or of the loaded package is reported as the row's result, and never takes the other rows
    with it)."""
    model, shapes = models()[name]
    shape = dict(shapes)[batch]
    dev = torch.device(DEVICE)
    model = model.to(dev).eval()
    x = torch.empty(shape).uniform_(-1, 1).to(dev)
    with torch.no_grad():
        ref = model(x)
        ep = torch.export.export(model, (x,))
        path = torch._inductor.aoti_compile_and_package(ep, package_path=aoti_path(name, batch))
        run = torch._inductor.aoti_load_package(path)
        got = run(x)
        got = got[0] if isinstance(got, (list, tuple)) else got
        assert (got - ref).abs().max().item() < 1e-3, f"aoti {name}: wrong output"
    print("AOTI_COMPILED", flush=True)


def aoti_time_child(rows):
    """Times the compiled packages of `rows` ("name:batch" each), one after another, in one process."""
    dev = torch.device(DEVICE)
    for item in rows:
        name, batch = item.split(":")
        shape = dict(models()[name][1])[int(batch)]
        x = torch.empty(shape).uniform_(-1, 1).to(dev)
        run = torch._inductor.aoti_load_package(aoti_path(name, int(batch)))
        with torch.no_grad():
            print("AOTI_SECONDS", item, time_calls(lambda: run(x)), flush=True)


def aoti_path(name, batch):
    return f"/tmp/typex_peers_aoti_{name}_{batch}.pt2"


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--aoti-compile":
        aoti_compile_child(sys.argv[2], int(sys.argv[3]))
        return
    if len(sys.argv) >= 2 and sys.argv[1] == "--aoti-time":
        aoti_time_child(sys.argv[2:])
        return
    import signal
    import subprocess
    import threading
    import warnings
    warnings.filterwarnings("ignore")
    # (stopped by the caller: unwind, so that subprocess.run kills an AOTInductor child it waits on)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    budget = float(os.environ.get("PEERS_BUDGET", "300"))
    modes = os.environ.get("PEERS_MODES", "eager,compile,max-autotune,aoti,train").split(",")
    go = os.environ.get("PEERS_GO")
    # every compiled row is kept until it is timed: dynamo's per-code-object cache must hold them all
    for knob in ("cache_size_limit", "recompile_limit"):
        try:
            setattr(torch._dynamo.config, knob, 64)
        except (AttributeError, KeyError):  # (torch 2.x has one name or the other)
            pass
    start = time.perf_counter()
    left = lambda: budget - (time.perf_counter() - start)
    dev = torch.device(DEVICE)
    print("device:", torch.cuda.get_device_name() if DEVICE == "cuda" else DEVICE, "torch", torch.__version__, flush=True)
    # Phase 1: compile everything (AOTInductor's packages in child processes, one at a time, beside
    # the main thread's torch.compile), within the budget. Phase 2 times it all, with nothing
    # compiling: where PEERS_GO names a file, phase 2 waits for it (the caller runs its own timed
    # work in between), and PEERS_GO.compiled says that phase 1 is over.
    rows = []
    for name, (model, shapes) in models().items():
        model = model.to(dev).eval()
        for b, shape in shapes:
            x = torch.empty(shape).uniform_(-1, 1).to(dev)
            with torch.inference_mode():
                ref = model(x)
            rows.append({"model": name, "batch": b, "fn": model, "x": x, "ref": ref, "compiled": {}})
    aoti_ok = []

    def compile_aoti():
        for r in rows:
            key = (r["model"], r["batch"])
            if left() < 30:
                r["aoti_failed"] = "skipped (budget)"
                continue
            try:
                c = subprocess.run([sys.executable, __file__, "--aoti-compile", *map(str, key)], capture_output=True, text=True,
                                   timeout=max(30, left()))
                if "AOTI_COMPILED" in c.stdout:
                    aoti_ok.append(r)
                else:
                    r["aoti_failed"] = f"exit {c.returncode}"
                    print(f"aoti {key}: exit {c.returncode}: {c.stderr.strip().splitlines()[-1:]}", flush=True)
            except subprocess.TimeoutExpired:
                r["aoti_failed"] = "timeout"

    aoti_thread = threading.Thread(target=compile_aoti, daemon=True) if "aoti" in modes else None
    if aoti_thread:
        aoti_thread.start()
    for mode in ("default", "max-autotune"):
        key = "compile" if mode == "default" else "max-autotune"
        if key not in modes:
            continue
        for r in rows:
            if left() < 20:
                r["compiled"][key] = "skipped (budget)"
                continue
            t0 = time.perf_counter()
            try:
                c = torch.compile(r["fn"], mode=mode, dynamic=False)
                with torch.inference_mode():
                    got = c(r["x"])
                    assert (got - r["ref"]).abs().max().item() < 1e-3, f"{r['model']} {mode}: wrong output"
                r["compiled"][key] = c
                print(f"compiled {key} {r['model']} {r['batch']} in {time.perf_counter() - t0:.0f} s", flush=True)
            except Exception as e:  # (reported, not hidden)
                r["compiled"][key] = f"{type(e).__name__}"
                print(f"{mode} {r['model']} {r['batch']}: {type(e).__name__}: {e}", flush=True)
    if aoti_thread:
        aoti_thread.join()
    print(f"(phase 1, compiling, took {time.perf_counter() - start:.0f} s)", flush=True)
    if go:
        open(go + ".compiled", "w").close()
        while not os.path.exists(go):
            time.sleep(0.2)
    t1 = time.perf_counter()
    for r in rows:
        x = r["x"]
        with torch.inference_mode():
            r["eager"] = time_calls(lambda: r["fn"](x))
            for key, c in r["compiled"].items():
                r[key] = time_calls(lambda: c(x)) if callable(c) else c
        # (each row as soon as it is timed: a caller that stops the script keeps what was measured)
        print("timed", r["model"], r["batch"], {k: r.get(k) for k in ("eager", "compile", "max-autotune")}, flush=True)
    if aoti_ok:
        pending = [f"{r['model']}:{r['batch']}" for r in aoti_ok]
        times = {}
        while pending:  # (a package that crashes loses its own row only)
            try:
                c = subprocess.run([sys.executable, __file__, "--aoti-time", *pending], capture_output=True, text=True, timeout=90)
                out, rc, err = c.stdout, c.returncode, c.stderr
            except subprocess.TimeoutExpired as e:
                out, rc, err = (e.stdout or b"").decode(), "timeout", ""
            for line in out.splitlines():
                if line.startswith("AOTI_SECONDS"):
                    _, item, t = line.split()
                    times[item] = float(t)
            done = [p for p in pending if p in times]
            if len(done) < len(pending):
                crashed = pending[len(done)]
                times[crashed] = f"exit {rc}"
                print(f"aoti {crashed}: exit {rc}: {err.strip().splitlines()[-1:]}", flush=True)
            pending = [p for p in pending if p not in times]
        for r in aoti_ok:
            r["aoti"] = times[f"{r['model']}:{r['batch']}"]
    fmt = lambda v: f"{v * 1e6:.1f}" if isinstance(v, float) else (v or "skipped")
    print(f"{'model':<12} {'batch':>5} {'eager (us)':>11} {'compile (us)':>13} {'max-autotune (us)':>18} {'AOTInductor (us)':>17}")
    for r in rows:
        aoti = r.get("aoti", r.get("aoti_failed"))
        print(f"{r['model']:<12} {r['batch']:>5} {fmt(r['eager']):>11} {fmt(r.get('compile')):>13} {fmt(r.get('max-autotune')):>18} {fmt(aoti):>17}")
    if "train" in modes:
        train_rows()
    print(f"(phase 2, timing, took {time.perf_counter() - t1:.0f} s; the peers {time.perf_counter() - start:.0f} s in all)")


if __name__ == "__main__":
    main()
