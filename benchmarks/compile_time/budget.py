#!/usr/bin/env python3
"""The compile-time budget (issue 40): each unit's compile time as a multiple of <Eigen/Core>,
measured in the same run, for g++ and clang, with peak memory, against the goals.

    python3 benchmarks/compile_time/budget.py                     # this tree, g++ 12 and clang 16
    python3 benchmarks/compile_time/budget.py --before <rev>      # <rev>'s headers beside this tree's
    python3 benchmarks/compile_time/budget.py --rounds 5 --compilers g++ --units mlp,umbrella

Every compile is an object file at -O2, as a user builds. Each round compiles <Eigen/Core> alone
(eigen_core_only.cpp) right before the unit, and the unit's multiple is the median over the rounds
of unit / <Eigen/Core> in that round: this VM drifts by 1.5x within an hour, and a ratio taken a
few seconds apart holds where absolute times do not. With --before, the two revisions compile at
the same time, one per core (each compile started with the other tree's: <Eigen/Core> beside
<Eigen/Core>, the unit beside the unit), so that both see the same load; the unit sources are this tree's, compiled against each revision's include/ (the library
units of --units extra, src/*.cpp, too: against an older revision they may not compile).

Modes: "header-only" (the kernels and the run-time code compiled in the unit: typex as vendored
headers), "libraries" (TYPEX_SEPARATE_COMPILATION and TYPEX_EIGEN_SEPARATE_COMPILATION: what
linking typex::eigen gives), "runtime" (TYPEX_SEPARATE_COMPILATION only: typex::runtime).
Peak memory is the compiler's largest resident set over the rounds (wait4's ru_maxrss), in MB
(10^6 bytes, the goal's unit).
No third-party Python modules; nothing here is run by the tests.
"""
import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))
import paired  # noqa: E402  (the steal-time reading and the quartiles, shared with rounds.py)
LIBS = ["-DTYPEX_SEPARATE_COMPILATION", "-DTYPEX_EIGEN_SEPARATE_COMPILATION"]
RUNTIME = ["-DTYPEX_SEPARATE_COMPILATION"]
EIGEN = os.environ.get("EIGEN_INCLUDE", "/usr/include/eigen3")

# (key, label, source, mode, flags, goal multiple, goal peak in MB = 10^6 bytes); the goals
UNITS = [
    ("umbrella", "<typex/typex.hpp> alone", "umbrella_only.cpp", "header-only", [], 1.5, None),
    ("umbrella", "<typex/typex.hpp> alone", "umbrella_only.cpp", "runtime", RUNTIME, 1.0, None),
    ("mlp", "MLP: export, run, eager", "export_mlp.cpp", "libraries", LIBS, 3.0, None),
    ("mlp", "MLP: export, run, eager", "export_mlp.cpp", "header-only", [], 6.0, 500),
    ("cnn", "CNN: export, run, eager", "export_cnn.cpp", "libraries", LIBS, 3.0, None),
    ("cnn", "CNN: export, run, eager", "export_cnn.cpp", "header-only", [], 6.0, 500),
    ("transformer", "transformer layer: export, run, eager", "export_transformer.cpp", "libraries", LIBS, 3.0, None),
    ("transformer", "transformer layer: export, run, eager", "export_transformer.cpp", "header-only", [], 6.0, 500),
    ("encoder", "encoder, 1 layer: export, run", "export_encoder.cpp", "libraries", LIBS + ["-DTYPEX_BENCH_LAYERS=1"], 3.0, None),
    ("encoder", "encoder, 24 layers: export, run", "export_encoder.cpp", "libraries", LIBS + ["-DTYPEX_BENCH_LAYERS=24"], 3.0, None),
    # (no goal: where the rest of the time goes)
    ("extra", "<typex/core.hpp> alone", "core_only.cpp", "header-only", [], None, None),
    ("extra", "200 static shapes", "shapes_200.cpp", "header-only", [], None, None),
    ("extra", "50 pytree types", "pytree_50.cpp", "header-only", [], None, None),
    ("extra", "GPT-2 block (zoo)", "zoo_gpt2.cpp", "libraries", LIBS, None, None),
    ("extra", "ResNet-18 (zoo)", "zoo_resnet18.cpp", "libraries", LIBS, None, None),
    ("extra", "MLP training step", "train_mlp.cpp", "libraries", LIBS, None, None),
    ("extra", "src/runtime.cpp (typex::runtime, once)", "../../src/runtime.cpp", "runtime", RUNTIME, None, None),
    ("extra", "src/eigen_kernels.cpp (typex::eigen, once)", "../../src/eigen_kernels.cpp", "libraries", LIBS, None, None),
]
CUDA = os.environ.get("CUDA_INCLUDE", "/usr/local/cuda/include")
if os.path.exists(os.path.join(CUDA, "cublasLt.h")):  # (the CUDA backend's host side, where the toolkit is)
    UNITS.append(("extra", "MLP on the CUDA engine", "cuda_mlp.cpp", "libraries",
                  LIBS + ["-DTYPEX_CUDA_SEPARATE_COMPILATION", "-isystem", CUDA], None, None))
REFERENCE = "eigen_core_only.cpp"


def compile_timed(cxx, include, src, flags, out):
    """Compiles one unit: (seconds or None when it fails, peak MB, stderr)."""
    cmd = [cxx, "-std=c++20", "-O2", *flags, "-I" + include, "-isystem", EIGEN, "-c", src, "-o", out]
    start = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=HERE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = proc.stderr.read().decode(errors="replace")  # (to the end first: a full pipe would stall the compiler)
    proc.stderr.close()
    _, status, usage = os.wait4(proc.pid, 0)  # (wait4, not wait: its ru_maxrss is this compiler's peak, in KiB)
    seconds = time.monotonic() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return (seconds if proc.returncode == 0 else None), usage.ru_maxrss * 1024 / 1e6, err


def lane(cxx, include, group, tmp, tag, out, barrier):
    """One round of one tree: <Eigen/Core> alone, then each unit of the group; into out[tag]. The
    trees' lanes start each compile together (barrier): a short <Eigen/Core> beside the other
    tree's long unit would be slowed by it, and the two trees' multiples would not compare."""
    results = []
    try:
        barrier.wait()
        ref = compile_timed(cxx, include, REFERENCE, [], os.path.join(tmp, tag + "-ref.o"))
        for u in group:
            barrier.wait()
            results.append((ref, compile_timed(cxx, include, u[2], u[4], os.path.join(tmp, tag + "-unit.o"))))
    except OSError as e:  # (a compiler that cannot start: the other lane goes on alone)
        barrier.abort()
        results += [((None, 0.0, str(e)), (None, 0.0, str(e)))] * (len(group) - len(results))
    except threading.BrokenBarrierError:
        results += [((None, 0.0, "the other tree's compiler could not start"),) * 2] * (len(group) - len(results))
    out[tag] = results


def quartiles(xs):
    """(lower quartile, median, upper quartile)."""
    lo, hi = paired.quartiles(xs)
    return lo, statistics.median(xs), hi


class Side:
    """One revision's measurements of one unit under one compiler."""

    def __init__(self):
        self.times, self.refs, self.ratios, self.peak, self.error = [], [], [], 0.0, None

    def add(self, ref, unit):
        (rt, _, rerr), (ut, mb, uerr) = ref, unit
        if rt is None:
            self.error = "the <Eigen/Core> reference failed: " + rerr.strip().splitlines()[0] if rerr.strip() else "reference failed"
            return
        if ut is None:
            lines = [l for l in uerr.splitlines() if "error" in l]
            self.error = (lines[0] if lines else uerr.strip()[:200]).strip()
            return
        self.times.append(ut)
        self.refs.append(rt)
        self.ratios.append(ut / rt)
        self.peak = max(self.peak, mb)


def measure(args, trees, units, tmp):
    results = {}  # (compiler, unit index, tree) -> Side
    # (the units of one key that compare with each other, the encoder's depths, share their rounds)
    groups = []
    for ui, u in enumerate(units):
        if groups and u[0] == "encoder" and units[groups[-1][0]][0] == "encoder":
            groups[-1].append(ui)
        else:
            groups.append([ui])
    for cxx in args.compilers:
        for group in groups:
            sides = {(ui, t): Side() for ui in group for t in trees}
            for _ in range(args.rounds):
                # each tree on a thread (a core) of its own: <Eigen/Core>, then the units, each timed as it ends
                done = {}
                barrier = threading.Barrier(len(trees))
                threads = [threading.Thread(target=lane, args=(cxx, inc, [units[ui] for ui in group], tmp, t, done, barrier))
                           for t, inc in trees.items()]
                for th in threads:
                    th.start()
                for th in threads:
                    th.join()
                for t in trees:
                    for ui, (ref, unit) in zip(group, done[t]):
                        sides[(ui, t)].add(ref, unit)
                if all(s.error for s in sides.values()):
                    break
            for (ui, t), side in sides.items():
                results[(cxx, ui, t)] = side
            for ui in group:
                now = sides[(ui, "now")]
                print(f"  {cxx}: {units[ui][1]} ({units[ui][3]}): " + (now.error or f"{statistics.median(now.ratios):.2f}x"),
                      file=sys.stderr, flush=True)
    return results


def cell_ratio(s):
    if s.error:
        return "fails"
    lo, mid, hi = quartiles(s.ratios)
    return f"{mid:.2f}x ({lo:.2f} - {hi:.2f})"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", help="a git revision whose include/ is measured beside this tree's")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--compilers", default="g++,clang++-16")
    ap.add_argument("--units", default="umbrella,mlp,cnn,transformer,encoder",
                    help="comma-separated keys: umbrella, mlp, cnn, transformer, encoder, extra; or all")
    args = ap.parse_args()
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")
    missing = [c for c in args.compilers.split(",") if c and shutil.which(c) is None]
    for c in missing:
        print(f"budget.py: no compiler {c}: left out (scripts/install-deps.sh installs clang-16 with TYPEX_WITH_CLANG=1)", file=sys.stderr)
    args.compilers = [c for c in args.compilers.split(",") if c and c not in missing]
    if not args.compilers:
        sys.exit("budget.py: none of the compilers of --compilers is installed")
    known = {k for k, *_ in UNITS}
    keys = known if args.units == "all" else set(args.units.split(","))
    if keys - known:
        ap.error(f"--units: no unit key {', '.join(sorted(keys - known))} (keys: {', '.join(sorted(known))}, or all)")
    units = [u for u in UNITS if u[0] in keys]

    with tempfile.TemporaryDirectory() as tmp:
        trees = {"now": os.path.join(ROOT, "include")}
        if args.before:
            dest = os.path.join(tmp, "before")
            os.makedirs(dest)
            archive = subprocess.run(["git", "-C", ROOT, "archive", args.before, "include"], check=True, capture_output=True).stdout
            subprocess.run(["tar", "-x", "-C", dest], input=archive, check=True)
            trees = {"before": os.path.join(dest, "include"), **trees}
        t0, s0 = paired.cpu_ticks()
        start = time.time()
        results = measure(args, trees, units, tmp)
        t1, s1 = paired.cpu_ticks()

    versions = {c: subprocess.run([c, "--version"], capture_output=True, text=True).stdout.splitlines()[0] for c in args.compilers}
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.machine())
    print(f"{cpu}, {os.cpu_count()} CPUs; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(start))}; "
          f"{args.rounds} rounds; steal {100.0 * (s1 - s0) / max(t1 - t0, 1):.1f} % of CPU time over the run; "
          + ("two revisions compiled at once, one per core" if args.before else "one compile at a time"))
    for c in args.compilers:
        refs = [t for (cc, _, tr), s in results.items() if cc == c and tr == "now" for t in s.refs]
        if refs:
            print(f"- {versions[c]}: <Eigen/Core> alone {statistics.median(refs):.2f} s (median of {len(refs)})")
    print()
    head = "| unit | mode | compiler |"
    rule = "|---|---|---|"
    if args.before:
        head += f" before ({args.before}): x <Eigen/Core> | s | MB |"
        rule += "---:|---:|---:|"
    head += " now: x <Eigen/Core> (quartiles) | s | MB | goal | met |"
    rule += "---:|---:|---:|---|---|"
    print(head)
    print(rule)
    short = {c: c.split("/")[-1] for c in args.compilers}
    for ui, (_, label, _, mode, _, goal_x, goal_mb) in enumerate(units):
        for c in args.compilers:
            row = f"| {label} | {mode} | {short[c]} |"
            if args.before:
                b = results[(c, ui, "before")]
                row += f" {cell_ratio(b)} |" + (" - | - |" if b.error else f" {statistics.median(b.times):.2f} | {b.peak:.0f} |")
            n = results[(c, ui, "now")]
            goal = []
            if goal_x is not None:
                goal.append(f"<= {goal_x:g}x")
            if goal_mb is not None:
                goal.append(f"<= {goal_mb} MB")
            met = "-"
            if goal and not n.error:
                ok = (goal_x is None or statistics.median(n.ratios) <= goal_x) and (goal_mb is None or n.peak <= goal_mb)
                met = "yes" if ok else "no"
            row += f" {cell_ratio(n)} |" + (" - | - |" if n.error else f" {statistics.median(n.times):.2f} | {n.peak:.0f} |")
            row += f" {', '.join(goal) or '-'} | {met} |"
            print(row)
    # depth: the 24-layer encoder against the 1-layer one, round by round (compiled in the same
    # rounds, after the same <Eigen/Core>: lane)
    enc = [i for i, u in enumerate(units) if u[2] == "export_encoder.cpp"]
    if len(enc) == 2:
        print()
        print("| depth | compiler | tree | 24 layers / 1 layer (quartiles) | goal | met |")
        print("|---|---|---|---:|---|---|")
        for c in args.compilers:
            for t in trees:
                one, deep = results[(c, enc[0], t)], results[(c, enc[1], t)]
                if one.error or deep.error or len(one.ratios) != len(deep.ratios):
                    print(f"| encoder | {short[c]} | {t} | fails | <= 1.1x | - |")
                    continue
                ratios = [d / o for d, o in zip(deep.times, one.times)]  # (the same round's)
                lo, mid, hi = quartiles(ratios)
                print(f"| encoder | {short[c]} | {t} | {mid:.2f}x ({lo:.2f} - {hi:.2f}) | <= 1.1x | {'yes' if mid <= 1.1 else 'no'} |")
    errors = [(c, units[ui][1], units[ui][3], t, s.error) for (c, ui, t), s in results.items() if s.error]
    for c, label, mode, t, e in errors:
        print(f"\n{short[c]}, {label} ({mode}), {t}: {e}")


if __name__ == "__main__":
    main()
