"""Does timeline sampling (or profiling) disturb the loads it watches? Runs with and without it,
interleaved.

usage: scripts/sampling-overhead.sh FILE [--pairs N] [--strategies LIST] [--exec LABEL=CMD]...
                                          [--cache STATE] [--profile]
                                          [--sample-ms MS] [--out DIR] [--bin PATH]

Each pair runs `loadbench run --reps 1` twice on FILE, once with --sample-ms 0 (no timeline)
and once with --sample-ms MS (default 10), in ABBA order (off,on then on,off) so that drift on
the machine hits both sides alike. Every run is a full loadbench run: cache state prepared and
checked, load verified by checksum; only ok runs count. The table gives, per strategy and cache
state, the median wall_s of each side, their ratio (sampled / unsampled) and whether the two
medians agree within --tolerance (default 2%). All the pairs are one measurement: the script
runs itself under `loadbench lock`, so nothing else measures between them.

--out (default results/sampling-overhead-<UTC time>) gets off-pairN/ and on-pairN/ (each run's
results folder), table.txt and summary.json. Exit status: 0 every run ok and every ratio within
tolerance; 1 some run not ok or some ratio outside; 2 bad input; 130 interrupted.

With --profile the question is the profiler's cost instead: both sides sample timelines every
MS, and the "on" side also runs with `--profile` (perf on every load, docs/profile.md).
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import measuring  # noqa: E402  (beside this file)

PROG = "sampling-overhead"
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def fail(msg):
    print(f"{PROG}: {msg}", file=sys.stderr)
    sys.exit(2)


def parse_args(argv):
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    p.add_argument("file")
    p.add_argument("--pairs", type=int, default=10, help="pairs of runs (default 10)")
    p.add_argument("--strategies", default="fread,mmap",
                   help="loadbench strategies ('none' with --exec for commands only)")
    p.add_argument("--exec", action="append", default=[], metavar="LABEL=COMMAND",
                   help="a command measured as `run --exec` does (repeatable)")
    p.add_argument("--cache", default="warm", choices=("cold", "warm", "both"))
    p.add_argument("--sample-ms", type=float, default=10.0, help="interval of the sampled side")
    p.add_argument("--profile", action="store_true",
                   help="compare --profile against none (both sides sampling timelines)")
    p.add_argument("--tolerance", type=float, default=0.02, help="allowed |ratio - 1|")
    p.add_argument("--out", default=None)
    p.add_argument("--bin", default=os.environ.get("LOADBENCH_BIN",
                                                   os.path.join(REPO, "build", "loadbench")))
    a = p.parse_args(argv)
    if a.pairs < 1:
        fail("--pairs: must be at least 1")
    if a.sample_ms <= 0:
        fail("--sample-ms: must be positive (the sampled side needs an interval)")
    if not os.path.isfile(a.file) or not os.access(a.file, os.R_OK):
        fail(f"{a.file}: not a readable file")
    if not os.access(a.bin, os.X_OK):
        fail(f"{a.bin}: no loadbench binary (run make)")
    if a.out is None:
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        a.out = os.path.join("results", f"sampling-overhead-{stamp}")
    if os.path.exists(os.path.join(a.out, "summary.json")):
        fail(f"{a.out}: already holds a summary; choose another --out")
    return a


def settle_words(out):
    """How long the run waited for the machine to settle before it, from its env.json."""
    try:
        with open(os.path.join(out, "env.json")) as f:
            s = json.load(f)["stability"]
        waited = float(s["waited_s"])
    except (OSError, ValueError, KeyError, TypeError):
        return "no settle recorded"
    if s.get("settled") is False:
        return f"the machine was still busy after {waited:.0f} s of waiting (see its env.json)"
    return f"the machine settled after {waited:.1f} s of waiting"


def run_side(a, side, pair):
    out = os.path.join(a.out, f"{side}-pair{pair}")
    ms = a.sample_ms if side == "on" or a.profile else 0
    what = "profile" if a.profile else "sampling"
    cmd = [a.bin, "run", "--file", a.file, "--strategies", a.strategies, "--cache", a.cache,
           "--reps", "1", "--sample-ms", f"{ms:g}", "--experiment", f"{what}-{side}",
           "--out", out, "--no-report"] + (["--profile"] if a.profile and side == "on" else [])
    for text in a.exec:
        cmd += ["--exec", text]
    with open(out + ".log", "w") as log:
        rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT,
                            **measuring.CHILD).returncode
    if rc == 2:
        fail(f"loadbench refused the run (see {out}.log)")
    runs = []
    print(f"[pair {pair + 1}/{a.pairs}] {side}: {settle_words(out)}", file=sys.stderr)
    path = os.path.join(out, "runs.jsonl")
    if os.path.exists(path):
        with open(path) as f:
            runs = [json.loads(line) for line in f if line.strip()]
    return rc, runs


def main(argv):
    a = parse_args(argv)
    measuring.hold_machine(a.bin)  # every pair is one measurement: nothing runs between them
    os.makedirs(a.out, exist_ok=True)
    walls = {}  # (strategy_spec, cache) -> {"off": [...], "on": [...]}
    bad = 0
    interrupted = False
    try:
        for pair in range(a.pairs):
            order = ("off", "on") if pair % 2 == 0 else ("on", "off")
            for side in order:
                rc, runs = run_side(a, side, pair)
                if rc == 130:
                    raise KeyboardInterrupt
                for r in runs:
                    key = (r["strategy_spec"], r["cache"])
                    if r["status"] == "ok":
                        walls.setdefault(key, {"off": [], "on": []})[side].append(r["wall_s"])
                    else:
                        bad += 1
                print(f"[pair {pair + 1}/{a.pairs}] {'profile' if a.profile else 'sampling'} "
                      f"{side}: {len(runs)} runs, exit {rc}", file=sys.stderr)
    except KeyboardInterrupt:
        interrupted = True

    rows = []
    for (spec, cache), sides in sorted(walls.items()):
        off, on = sides["off"], sides["on"]
        if not off or not on:
            continue
        m_off, m_on = statistics.median(off), statistics.median(on)
        ratio = m_on / m_off
        rows.append({"strategy": spec, "cache": cache, "n_off": len(off), "n_on": len(on),
                     "median_off_s": m_off, "median_on_s": m_on, "ratio": ratio,
                     "within": abs(ratio - 1) <= a.tolerance})
    what = ("--profile vs none (timelines every {:g} ms on both sides)" if a.profile
            else "timeline sampling every {:g} ms vs none").format(a.sample_ms)
    lines = [f"{what}, {a.pairs} interleaved pairs, file {a.file}",
             f"{'strategy':<24} {'cache':<5} {'n':>5} {'off median_s':>13} {'on median_s':>12} "
             f"{'on/off':>7}  within {a.tolerance:.0%}"]
    for r in rows:
        lines.append(f"{r['strategy']:<24} {r['cache']:<5} {r['n_off']:>2}/{r['n_on']:<2} "
                     f"{r['median_off_s']:>13.4f} {r['median_on_s']:>12.4f} {r['ratio']:>7.3f}  "
                     f"{'yes' if r['within'] else 'NO'}")
    table = "\n".join(lines) + "\n"
    print(table, end="")
    with open(os.path.join(a.out, "table.txt"), "w") as f:
        f.write(table)
    with open(os.path.join(a.out, "summary.json"), "w") as f:
        json.dump({"file": a.file, "pairs": a.pairs, "sample_ms": a.sample_ms,
                   "compared": "profile" if a.profile else "sampling",
                   "tolerance": a.tolerance, "runs_not_ok": bad, "interrupted": interrupted,
                   "rows": rows}, f, indent=2)
    if interrupted:
        print(f"{PROG}: interrupted; what finished is in {a.out}", file=sys.stderr)
        return 130
    if bad:
        print(f"{PROG}: {bad} runs were not ok (see the runs.jsonl files)", file=sys.stderr)
    return 1 if bad or not rows or not all(r["within"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
