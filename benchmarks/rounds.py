#!/usr/bin/env python3
"""typex against its peers in paired rounds: issue 39's rule for judging a row on a noisy machine.

    python3 benchmarks/rounds.py --run "typex=CMD" --run "LibTorch 1.13=CMD" [--run "PEER=CMD" ...]
                                 [--serve "PEER=CMD" ...] [--rounds 15] [--min-time 0.2] [--filter REGEX]
                                 [--strip TEXT ...]

Every CMD is a Google Benchmark binary (with any environment in front: `env LD_LIBRARY_PATH= bin`); the
first --run is typex, the others its peers. A round runs each command once, every benchmark the filter
selects for at least --min-time seconds (one repetition), the order rotated from round to round so that
no side always runs first or last. A --serve CMD is started once and stays up (a peer whose start-up
is minutes, as torch.compile's compile is): it prints a line `ready` when it is, then answers each line
`{"filter": REGEX, "min_time": S}` on its stdin with one line of Google Benchmark's JSON output (the
`benchmarks` list: name, real_time, time_unit), and exits when its stdin closes. Sides given the same
label are one column (one process per thread count, say): a round runs each of them. Drift (steal
time, the clock over minutes) moves a round's sides together and cancels in their ratio, where
absolute times from different minutes do not.

A row is a benchmark name with every --strip text removed, so that the binaries' names for one
workload meet (default "_typex", "_libtorch", "/real_time"). Per row: each side's median time; per
peer, the median over the rounds of peer / typex (above 1: typex is faster) with its interquartile range; the best peer is the one
with the lowest median ratio, and the row is **won** when, against every peer, the median ratio is
>= 1.0 and its lower quartile >= 0.95. Where typex's benchmark reports a `GFLOP/s` counter and its
context the FMA peak (`fma_peak_gflops_1_thread` / `_2_threads`, measured at the start of each of its
runs), the row shows typex's GFLOP/s (median) and its % of the median peak of the run, for the row's
thread count (the name's `threads:N`). Where the benchmarks report the --check counter (default
`loss`: the first training step's loss; `out_sum` for a forward's output summed; the same weights and
data on every side), the row shows each side's from the first round, and says **differs** where one is
more than 1e-3 (relative) from typex's, NaN or missing: a peer computing something else is not a row
won. Nor is a row a peer gave no time for. The steal time (/proc/stat, over the whole run) is printed first.
--json FILE writes every round's times too.
"""
import argparse
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from paired import cpu_ticks, quartiles  # noqa: E402  (the steal-time reading and the quartiles, shared)


UNIT = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def run(cmd, filt, min_time, key, check):
    args = shlex.split(cmd) + [f"--benchmark_filter={filt}", f"--benchmark_min_time={min_time}",
                               "--benchmark_repetitions=1", "--benchmark_format=json"]
    done = subprocess.run(args, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"rounds.py: '{cmd}' failed (status {done.returncode}):\n" + done.stderr[-3000:])
    data = json.loads(done.stdout)
    return parse(data, key, cmd, check), data.get("context", {})


def parse(data, key, what, check):
    rows = {}
    for b in data["benchmarks"]:
        if b.get("run_type", "iteration") != "iteration":
            continue
        k = key(b["name"])
        if k in rows:
            sys.exit(f"rounds.py: two benchmarks of '{what}' are row '{k}' once --strip is applied")
        rows[k] = {"time": b["real_time"] * UNIT[b.get("time_unit", "ns")], "gflops": b.get("GFLOP/s"), "loss": b.get(check)}
    return rows


class Server:
    """A --serve side: one process for the whole run, asked for a round's rows on its stdin."""

    def __init__(self, cmd):
        self.cmd = cmd
        self.proc = subprocess.Popen(shlex.split(cmd), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self._read_until(lambda line: line.strip() == "ready")

    def _read_until(self, done):
        while True:
            line = self.proc.stdout.readline()
            if not line:
                sys.exit(f"rounds.py: '{self.cmd}' exited (status {self.proc.wait()}) before it answered")
            if done(line):
                return line

    def ask(self, filt, min_time, key, check):
        try:
            self.proc.stdin.write(json.dumps({"filter": filt, "min_time": min_time}) + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            sys.exit(f"rounds.py: '{self.cmd}' exited (status {self.proc.wait()}) before it answered")
        line = self._read_until(lambda line: line.startswith("{"))
        data = json.loads(line)
        return parse(data, key, self.cmd, check), data.get("context", {})

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


def fmt_time(s):
    return f"{s * 1e3:.2f} ms" if s >= 1e-3 else f"{s * 1e6:.1f} us"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--run", action="append", required=True, help="LABEL=COMMAND; the first is typex")
    p.add_argument("--serve", action="append", default=[], help="LABEL=COMMAND, started once (see above)")
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--min-time", type=float, default=0.2)
    p.add_argument("--filter", default=".")
    p.add_argument("--strip", nargs="*", default=["_typex", "_libtorch", "/real_time"])
    p.add_argument("--check", default="loss", help="the counter every side should agree on (loss, out_sum)")
    p.add_argument("--json")
    o = p.parse_args()
    if o.rounds < 1:
        sys.exit("rounds.py: --rounds must be at least 1")
    sides = []  # (label, command, served)
    for served, given in ((False, o.run), (True, o.serve)):
        for r in given:
            label, sep, cmd = r.partition("=")
            if not sep or not cmd.strip():
                sys.exit(f"rounds.py: --{'serve' if served else 'run'} '{r}' is not LABEL=COMMAND")
            sides.append((label.strip(), cmd.strip(), served))
    if any(label == sides[0][0] for label, _, _ in sides[1:]):
        sys.exit(f"rounds.py: '{sides[0][0]}' is typex's label: a peer cannot have it")
    labels = list(dict.fromkeys(label for label, _, _ in sides))  # (the columns: typex, then each peer once)
    if len(labels) < 2:
        sys.exit("rounds.py: give typex and at least one peer")
    servers = {}
    for j, (label, cmd, served) in enumerate(sides):
        if served:
            print(f"starting {label}: {cmd}", file=sys.stderr)
            servers[j] = Server(cmd)
    key = lambda name: re.sub("|".join(map(re.escape, o.strip)), "", name) if o.strip else name
    times = defaultdict(lambda: defaultdict(list))  # row -> label -> [time per round]
    ratios = defaultdict(lambda: defaultdict(list))  # row -> peer -> [peer / typex per round]
    gflops = defaultdict(list)
    losses = defaultdict(dict)  # row -> label -> the `loss` counter of its first round (a check that the sides agree)
    peaks = {1: [], 2: []}
    t0, s0 = cpu_ticks()
    n = len(sides)
    for i in range(o.rounds):
        got = {label: {} for label in labels}
        for j in range(n):
            k = (i + j) % n
            label, cmd, served = sides[k]
            rows, ctx = servers[k].ask(o.filter, o.min_time, key, o.check) if served else run(cmd, o.filter, o.min_time, key, o.check)
            for row in rows:
                if row in got[label]:
                    sys.exit(f"rounds.py: two sides labelled '{label}' both give row '{row}'")
            got[label].update(rows)
            if label == sides[0][0]:
                for t in (1, 2):
                    v = ctx.get(f"fma_peak_gflops_{t}_thread" + ("s" if t > 1 else ""))
                    if v is not None:
                        peaks[t].append(float(v))
        base = got[sides[0][0]]
        for label, rows in got.items():
            for row, r in rows.items():
                if r["loss"] is not None:
                    losses[row].setdefault(label, r["loss"])
        for row, r in base.items():
            times[row][sides[0][0]].append(r["time"])
            if r["gflops"] is not None:
                gflops[row].append(r["gflops"])
            for label in labels[1:]:
                if row in got[label]:
                    times[row][label].append(got[label][row]["time"])
                    ratios[row][label].append(got[label][row]["time"] / r["time"])
        print(f"round {i + 1}/{o.rounds} done", file=sys.stderr)
    for server in servers.values():
        server.close()
    t1, s1 = cpu_ticks()
    steal = 100.0 * (s1 - s0) / max(1, t1 - t0)
    peak = {t: statistics.median(v) for t, v in peaks.items() if v}
    print(f"steal time over the run: {steal:.1f} % of all CPU time ({o.rounds} rounds, min time {o.min_time} s each)")
    if peak:
        print("FMA peak measured in the run (median of the rounds): " +
              ", ".join(f"{peak[t]:.0f} GFLOP/s on {t} thread{'s' if t > 1 else ''}" for t in sorted(peak)))
    print()
    peers = labels[1:]
    print("| row | " + " | ".join(labels) +
          " | best peer | best peer / typex, median | quartiles | rounds | won | typex GFLOP/s (% of peak) |" +
          (f" {o.check} (" + " / ".join(labels) + ") |" if losses else ""))
    print("|---|" + "---:|" * len(labels) + "---|---:|---|---:|---|---:|" + ("---|" if losses else ""))
    report = {"steal_percent": steal, "fma_peak": peak, "rows": {}}
    for row in sorted(times):
        cells = [fmt_time(statistics.median(times[row][label])) if times[row][label] else "-" for label in labels]
        med = {peer: statistics.median(ratios[row][peer]) for peer in peers if ratios[row][peer]}
        # (the peers the row is not won against: the median below 1.0 or the lower quartile below 0.95)
        lost = [peer for peer, m in med.items() if m < 1.0 or quartiles(ratios[row][peer])[0] < 0.95]
        # (a peer with no time for the row in any round: the row is not judged against every peer)
        untimed = [peer for peer in peers if not ratios[row][peer]]
        loss, differs = "", []
        if losses and not med:
            loss = " - |"  # (a row no peer times, typex's alone: nothing to agree with, no verdict)
        elif losses:
            # (every side's counter must be there and agree with typex's: a NaN or a missing one is no agreement)
            ref = losses[row].get(labels[0])
            differs = [label for label in labels if times[row][label] and (
                       ref is None or losses[row].get(label) is None or
                       not abs(losses[row][label] - ref) <= 1e-3 * max(abs(ref), 1e-30))]
            loss = (" " + " / ".join(f"{losses[row][label]:.6g}" if label in losses[row] else "-" for label in labels) +
                    ("; **differs**: " + ", ".join(differs) if differs else "") + " |")
        won = bool(med) and not lost and not untimed and not differs
        if med:
            best = min(med, key=med.get)
            q1, q3 = quartiles(ratios[row][best])
            verdict = "yes" if won else "**no**: " + ", ".join(
                [f"{peer} {med[peer]:.3f} (lower quartile {quartiles(ratios[row][peer])[0]:.3f})" for peer in lost] +
                [f"no time from {peer}" for peer in untimed] +
                [f"the {o.check} of {label} differs or is missing" for label in differs])
            judged = f"{best} | {med[best]:.3f} | {q1:.3f} - {q3:.3f} | {len(ratios[row][best])} | {verdict}"
        else:
            judged = "- | - | - | 0 | -"
        g = "-"
        if gflops[row]:
            gm = statistics.median(gflops[row])
            m = re.search(r"threads:(\d+)", row)
            t = int(m.group(1)) if m else 1
            gm /= 1e9  # (the counter is a rate in FLOP/s)
            g = f"{gm:.1f}" + (f" ({100 * gm / peak[t]:.0f} %)" if t in peak else "")
        print(f"| {row} | " + " | ".join(cells) + f" | {judged} | {g} |" + loss)
        report["rows"][row] = {"times": times[row], "ratios": ratios[row], "won": won, "gflops": gflops[row]}
    if o.json:
        with open(o.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
