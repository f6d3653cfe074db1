#!/usr/bin/env python3
"""PyTorch's peers of benchmarks/cuda/models_cuda.cpp on the same GPU: eager, torch.compile (default
and max-autotune) and AOTInductor, for the MLP, the CNN and the transformer block of
benchmarks/models/workloads.hpp with the same weights (fill_weights, written again here) and the
same f32 arithmetic (no TF32: typex's products are CUBLAS_COMPUTE_32F). A row's time is the median
over 7 rounds of the mean time per call, each round at least 0.2 s after a warm-up, every call
synchronized (as typex's calls are). Compiling is slow (max-autotune most), so the peers share a
budget in seconds (PEERS_BUDGET, default 300): what does not fit is printed as skipped, never guessed.
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
    for _ in range(20):
        f()
    torch.cuda.synchronize()
    rounds = []
    for _ in range(7):
        calls = 0
        t0 = time.perf_counter()
        while True:
            for _ in range(10):
                f()
                torch.cuda.synchronize()
            calls += 10
            s = time.perf_counter() - t0
            if s >= 0.2:
                break
        rounds.append(s / calls)
    return statistics.median(rounds)


def train_rows():
    """PyTorch eager's training step: MLP at batch 32 / 256, CNN at 32, the block at 8."""
    dev = torch.device("cuda")
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


def aoti_child(name, batch):
    """One AOTInductor row in a process of its own (a crash of the compiler or of the loaded package
    is reported as the row's result, and never takes the other rows with it)."""
    model, shapes = models()[name]
    shape = dict(shapes)[batch]
    dev = torch.device("cuda")
    model = model.to(dev).eval()
    x = torch.empty(shape).uniform_(-1, 1).to(dev)
    with torch.no_grad():
        ref = model(x)
        ep = torch.export.export(model, (x,))
        path = torch._inductor.aoti_compile_and_package(ep, package_path=f"/tmp/aoti_{name}_{batch}.pt2")
        run = torch._inductor.aoti_load_package(path)
        got = run(x)
        got = got[0] if isinstance(got, (list, tuple)) else got
        assert (got - ref).abs().max().item() < 1e-3, f"aoti {name}: wrong output"
        print("AOTI_SECONDS", time_calls(lambda: run(x)), flush=True)


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--aoti":
        aoti_child(sys.argv[2], int(sys.argv[3]))
        return
    import subprocess
    import warnings
    warnings.filterwarnings("ignore")
    budget = float(os.environ.get("PEERS_BUDGET", "300"))
    modes = os.environ.get("PEERS_MODES", "eager,compile,max-autotune,aoti,train").split(",")
    start = time.perf_counter()
    dev = torch.device("cuda")
    print("device:", torch.cuda.get_device_name(), "torch", torch.__version__, flush=True)
    rows = []
    for name, (model, shapes) in models().items():
        model = model.to(dev).eval()
        for b, shape in shapes:
            x = torch.empty(shape).uniform_(-1, 1).to(dev)
            row = {"model": name, "batch": b}
            with torch.inference_mode():
                ref = model(x)
                row["eager"] = time_calls(lambda: model(x))
            for mode in ("default", "max-autotune"):
                key = "compile" if mode == "default" else "max-autotune"
                row[key] = None
                if key not in modes or time.perf_counter() - start > budget:
                    continue
                try:
                    torch._dynamo.reset()
                    c = torch.compile(model, mode=mode, dynamic=False)
                    with torch.inference_mode():
                        got = c(x)
                        assert (got - ref).abs().max().item() < 1e-3, f"{name} {mode}: wrong output"
                        row[key] = time_calls(lambda: c(x))
                except Exception as e:  # (reported, not hidden)
                    print(f"{mode} {name} {b}: {type(e).__name__}: {e}", flush=True)
            row["aoti"] = None
            if "aoti" in modes and time.perf_counter() - start <= budget:
                try:
                    r = subprocess.run([sys.executable, __file__, "--aoti", name, str(b)], capture_output=True, text=True, timeout=180)
                    found = [l for l in r.stdout.splitlines() if l.startswith("AOTI_SECONDS")]
                    if found:
                        row["aoti"] = float(found[0].split()[1])
                    else:
                        row["aoti_failed"] = f"exit {r.returncode}"
                        print(f"aoti {name} {b}: exit {r.returncode}: {r.stderr.strip().splitlines()[-1:] }", flush=True)
                except subprocess.TimeoutExpired:
                    row["aoti_failed"] = "timeout"
            rows.append(row)
            print(row, flush=True)
    print(f"{'model':<12} {'batch':>5} {'eager (us)':>11} {'compile (us)':>13} {'max-autotune (us)':>18} {'AOTInductor (us)':>17}")
    fmt = lambda v: f"{v * 1e6:.1f}" if v is not None else "skipped"
    for r in rows:
        aoti = fmt(r["aoti"]) if r["aoti"] is not None else r.get("aoti_failed", "skipped")
        print(f"{r['model']:<12} {r['batch']:>5} {fmt(r['eager']):>11} {fmt(r['compile']):>13} {fmt(r['max-autotune']):>18} {aoti:>17}")
    if "train" in modes:
        train_rows()
    print(f"(peers took {time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
