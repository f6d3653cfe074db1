#!/usr/bin/env python3
"""What a unit's compile time is spent on: clang's -ftime-trace, summarized (issue 40).

    python3 benchmarks/compile_time/trace_summary.py export_mlp.cpp               # header-only
    python3 benchmarks/compile_time/trace_summary.py export_mlp.cpp --libraries   # against typex::eigen
    python3 benchmarks/compile_time/trace_summary.py --json unit.json             # a trace made elsewhere

Compiles the unit (a path relative to benchmarks/compile_time, or any path) with clang++-16 -O2
-ftime-trace and prints: the phases (parsing, instantiation, code generation), the headers whose
parsing costs most (inclusive of what they include), and the template families that cost most to
instantiate, grouped by the name before the first '<' (typex::eigen::detail::kernel, ...::infer),
with how many instantiations each family has. Times are clang's own (milliseconds, single
compile); instantiation times are inclusive: a family that instantiates another counts its time
too, so the families do not add up to the total. g++ 12 has no -ftime-trace: use -ftime-report.
"""
import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
LIBS = ["-DTYPEX_SEPARATE_COMPILATION", "-DTYPEX_EIGEN_SEPARATE_COMPILATION"]
EIGEN = os.environ.get("EIGEN_INCLUDE", "/usr/include/eigen3")


def trace_of(unit, flags, cxx):
    src = unit if os.path.isabs(unit) or os.path.exists(unit) else os.path.join(HERE, unit)
    with tempfile.TemporaryDirectory() as tmp:
        obj = os.path.join(tmp, "unit.o")
        cmd = [cxx, "-std=c++20", "-O2", *flags, "-I" + os.path.join(ROOT, "include"), "-isystem", EIGEN,
               "-ftime-trace", "-ftime-trace-granularity=200", "-c", src, "-o", obj]
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit("trace_summary.py: the unit does not compile:\n" + run.stderr[-2000:])
        with open(os.path.join(tmp, "unit.json")) as f:
            return json.load(f)


def family(detail):
    name = detail.replace("(anonymous namespace)::", "").split("<", 1)[0].strip()
    name = re.sub(r"\(.*$", "", name)  # (function signatures)
    return name or detail[:60]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("unit", nargs="?")
    ap.add_argument("--libraries", action="store_true", help="TYPEX_SEPARATE_COMPILATION and TYPEX_EIGEN_SEPARATE_COMPILATION")
    ap.add_argument("--json", help="summarize this -ftime-trace file instead of compiling")
    ap.add_argument("--cxx", default="clang++-16")
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()
    if args.json:
        with open(args.json) as f:
            trace = json.load(f)
    elif args.unit:
        trace = trace_of(args.unit, LIBS if args.libraries else [], args.cxx)
    else:
        ap.error("give a unit or --json")

    events = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    totals = {e["name"][len("Total "):]: e["dur"] / 1000.0 for e in events if e["name"].startswith("Total ")}
    print("## phases (ms; clang's totals, inclusive)\n")
    for key in ["ExecuteCompiler", "Frontend", "Source", "ParseClass", "InstantiateClass", "InstantiateFunction",
                "PerformPendingInstantiations", "CodeGen Function", "Backend", "Optimizer", "OptFunction"]:
        if key in totals:
            print(f"- {key}: {totals[key]:.0f}")

    # headers: every Source event of a header summed, its inclusive time (what it includes counted in)
    src = collections.Counter()
    for e in events:
        if e["name"] == "Source":
            path = e.get("args", {}).get("detail", "")
            if "/include/typex/" in path or "/eigen3/" in path or "/boost/" in path:
                src[path.split("/include/", 1)[-1] if "/include/typex/" in path else path] += e["dur"] / 1000.0
    print(f"\n## headers, inclusive parse time (ms; top {args.top})\n")
    for path, ms in src.most_common(args.top):
        print(f"- {ms:8.0f}  {path}")

    fam_ms, fam_n = collections.Counter(), collections.Counter()
    for e in events:
        if e["name"] in ("InstantiateFunction", "InstantiateClass"):
            f = family(e.get("args", {}).get("detail", ""))
            fam_ms[f] += e["dur"] / 1000.0
            fam_n[f] += 1
    print(f"\n## template families, inclusive instantiation time (ms; count; top {args.top})\n")
    for f, ms in fam_ms.most_common(args.top):
        print(f"- {ms:8.0f}  {fam_n[f]:5d}  {f}")
    typex = sum(n for f, n in fam_n.items() if f.startswith("typex::"))
    print(f"\ninstantiations recorded (those of >= 0.2 ms: -ftime-trace-granularity=200): {sum(fam_n.values())}, "
          f"of which in typex:: {typex}")


if __name__ == "__main__":
    main()
