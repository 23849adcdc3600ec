"""Compare every loadbench I/O strategy with the fio job that does the same I/O on the same file.

usage: scripts/fio-compare.sh FILE [--reps N] [--out DIR] [--bin PATH] [--strategies LIST]

Each repetition runs, cold, every strategy once with `loadbench run --cache cold --reps 1`,
followed at once by its fio twin, plus two Python baselines; the order rotates by one every
repetition, as `loadbench run` does. Every fio and baseline measurement is preceded by
`loadbench cache drop FILE`, which checks that at most 1% of the file is still resident;
`loadbench run` drops and checks the cache itself and records a run that did not start cold as
invalid. Only measurements that completed (and, for loadbench, verified) count.

By default every allocating strategy runs also with buffer=thp (destination memory in
transparent huge pages; the fio twin is the same job): fio reads into one small reused buffer,
a loader into fresh memory whose first-touch faults can cost more than the I/O.

The twins (every fio job: fio --readonly --output-format=json, rw=read, filename=FILE, size=the
file size or the slice, fadvise_hint=0 unless said otherwise, thread=1):
  fread, pread     ioengine=psync, bs=chunk
  pread_mt         ioengine=psync, bs=chunk, numjobs=threads, each job one contiguous slice
                   (size=offset_increment=the file size / threads, rounded down to 4 KiB so
                   that no job runs past the end of the file; loadbench rounds up instead and
                   gives the last thread the rest)
  odirect          ioengine=psync, direct=1, bs=chunk; with threads > 1 numjobs and slices as
                   pread_mt, slices rounded down to a multiple of chunk
  io_uring         ioengine=io_uring, iodepth=qd, bs=chunk, direct as `direct`, fixedbufs=1
                   where fixed=on, registerfiles=1 where regfile=on
  mmap             ioengine=mmap (memcpy out of a MAP_SHARED mapping), bs=1MiB, no advice
  mmap_seq         as mmap with fadvise_hint=1: fio then advises MADV_SEQUENTIAL on the mapping
                   and also POSIX_FADV_SEQUENTIAL on the file, which loadbench's mmap_seq does not
The fio job is built from the resolved options that loadbench recorded for the run it follows.

Python baselines, each in a fresh /usr/bin/python3 process that imports numpy first and times
itself from open to done: numpy.fromfile (the whole file as uint8) and numpy.memmap with every
byte touched (sum over a uint64 view plus the tail).

GB/s is 10^9 bytes per second of bytes read from the file: loadbench and the baselines read the
whole file, so the file size over their time; fio the bytes its jobs read (the file rounded down
to whole blocks of each job) over its runtime, with numjobs > 1 the jobs' total over the longest
job's runtime. loadbench's time is ready_s for the strategies flagged "eager" in `loadbench
list` (everything read before the load returns) and wall_s (until every byte has been read and
checksummed) for the others; the table says which. Ratio: loadbench median / fio median.

Targets, printed as PASS/MISS lines: odirect and io_uring with direct=on at least 0.9 of their
fio twins; the best loadbench strategy at least 0.9 of the best fio job (the device ceiling).

--out (default results/fio-compare-<UTC time>) gets: measurements.csv (one row per measurement,
appended and synced as each ends, so an interruption loses only the measurement in flight),
loadbench/<strategy>-rep<N>/ (each run's results folder) and .log, fio/<strategy>-rep<N>.fio,
.json (fio's raw output) and .log, numpy/<baseline>-rep<N>.json, info.json, summary.csv and
table.txt. On Ctrl-C the summary of what finished is printed and saved; exit status 130.
Progress goes to stderr, the table to stdout.

The whole comparison is one measurement: once its inputs are checked it runs itself under
`loadbench lock`, which waits while another measurement runs on this machine (saying for whom)
and holds the machine for every repetition; fio, the baselines and the loadbench commands it
starts die with it, however it dies.

Exit status: 0 every measurement ok; 1 some measurement failed, was invalid or a strategy is
unsupported; 2 bad input (missing or unreadable FILE, unknown strategy, fio, numpy or a usable
loadbench missing: one line on stderr); 130 interrupted. Needs root for cold runs of files you
do not own.
"""
import argparse
import csv
import datetime
import importlib.util
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import measuring  # noqa: E402  (beside this file)

PROG = "fio-compare"
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Each allocating strategy also with buffer=thp: fio reuses one small buffer, a loader fills
# fresh memory, and on a VM a first-touch 4 KiB fault costs more than the I/O. With huge pages
# the faults nearly vanish and the I/O method shows.
DEFAULT_STRATEGIES = ("fread,pread,pread:buffer=thp,pread_mt,pread_mt:buffer=thp,mmap,mmap_seq,"
                      "odirect,odirect:buffer=thp,io_uring,io_uring:direct=on,"
                      "io_uring:direct=on:buffer=thp,io_uring:direct=on:fixed=on,"
                      "io_uring:direct=on:fixed=on:buffer=thp")
TWINS = ("fread", "pread", "pread_mt", "odirect", "io_uring", "mmap", "mmap_seq")
BASELINES = ("numpy.fromfile", "numpy.memmap")
TARGET = 0.9
MIB = 1 << 20

# Runs in a fresh interpreter: argv is FILE and the baseline name; prints its timing as JSON.
BASELINE_CHILD = """
import json, sys, time
import numpy as np
path, how = sys.argv[1], sys.argv[2]
t0 = time.perf_counter()
if how == "numpy.fromfile":
    n = np.fromfile(path, dtype=np.uint8).size
else:
    m = np.memmap(path, dtype=np.uint8, mode="r")
    whole = m.size // 8 * 8
    # The sum is only there to read every byte of the mapping.
    int(m[:whole].view(np.uint64).sum(dtype=np.uint64)) + int(m[whole:].sum())
    n = m.size
t1 = time.perf_counter()
print(json.dumps({"seconds": t1 - t0, "bytes": int(n)}))
"""

MEASUREMENT_FIELDS = ["rep", "order", "name", "side", "status", "gbps", "seconds", "time_used",
                      "bytes", "numjobs", "path", "error"]
SUMMARY_FIELDS = ["kind", "name", "status", "time_used", "loadbench_gbps", "loadbench_n",
                  "fio_job", "fio_gbps", "fio_n", "ratio", "baseline_gbps", "baseline_n", "note"]


class BadInput(Exception):
    """Stops the script with one line on stderr and exit status 2."""


def size_text(n):
    for unit, scale in (("GiB", 1 << 30), ("MiB", MIB), ("KiB", 1024)):
        if n % scale == 0:
            return f"{n // scale}{unit}"
    return str(n)


def parse_spec(spec):
    """'io_uring:direct=on:fixed=on' -> ('io_uring', {'direct': 'on', 'fixed': 'on'})."""
    name, *kvs = spec.split(":")
    return name, dict(kv.split("=", 1) for kv in kvs if "=" in kv)


def slice_bytes(total, parts, align):
    """(slice, jobs): `parts` slices of total / parts rounded down to align, so that no fio job
    runs past the end of the file (fio refuses that on a read-only file); fewer jobs where the
    file is too small for `parts` aligned slices."""
    jobs = max(1, min(parts, total // align))
    return (total, 1) if jobs == 1 else (total // jobs // align * align, jobs)


def fio_job(name, params, file_bytes):
    """The fio twin of one loadbench run: (job options in order, a short description)."""
    opts = {"ioengine": "psync", "bs": params.get("chunk", MIB)}
    numjobs, align = 1, 4096
    if name == "pread_mt":
        numjobs = params["threads"]
    elif name == "odirect":
        opts["direct"] = 1
        numjobs, align = params["threads"], params["chunk"]
    elif name == "io_uring":
        opts.update(ioengine="io_uring", iodepth=params["qd"])
        if params["direct"] == "on":
            opts["direct"] = 1
        if params["fixed"] == "on":
            opts["fixedbufs"] = 1
        if params["regfile"] == "on":
            opts["registerfiles"] = 1
    elif name in ("mmap", "mmap_seq"):
        opts.update(ioengine="mmap", bs=MIB)
    opts["fadvise_hint"] = 1 if name == "mmap_seq" else 0
    size = file_bytes
    if numjobs > 1:
        size, numjobs = slice_bytes(file_bytes, numjobs, align)
    if numjobs > 1:
        opts.update(numjobs=numjobs, offset_increment=size)
    opts["size"] = size
    desc = " ".join(f"{k}={size_text(v) if k in ('bs', 'offset_increment') else v}"
                    for k, v in opts.items()
                    if k not in ("ioengine", "size") and (k, v) != ("fadvise_hint", 0))
    return opts, f"{opts['ioengine']} {desc}"


def fio_jobfile(job_name, path, opts):
    # fio splits filenames at ':'; a backslash keeps it.
    lines = [f"[{job_name}]", "filename=" + path.replace(":", "\\:"), "rw=read", "thread=1"]
    lines += [f"{k}={v}" for k, v in opts.items()]
    return "\n".join(lines) + "\n"


def fio_result(report):
    """(bytes read, seconds) of a fio JSON report: all jobs' bytes over the longest runtime."""
    jobs = report["jobs"]
    errors = [j["error"] for j in jobs if j["error"] != 0]
    if errors:
        raise ValueError(f"fio job error {errors[0]}: {os.strerror(errors[0])}")
    runtime_ms = max(j["read"]["runtime"] for j in jobs)
    if runtime_ms <= 0:
        raise ValueError("fio reported a runtime of 0 ms")
    return sum(j["read"]["io_bytes"] for j in jobs), runtime_ms / 1000


class Runner:
    """Runs the measurements and appends each to measurements.csv as it ends."""

    def __init__(self, args, file_bytes, strategies):
        self.args, self.file_bytes, self.strategies = args, file_bytes, strategies
        self.csv_path = os.path.join(args.out, "measurements.csv")
        self.rows = []

    def run(self, cmd, **kw):
        """subprocess.run that, on Ctrl-C, lets the child end by itself (loadbench run stops
        its worker and keeps its runs) before it gives up and kills it."""
        child = subprocess.Popen(cmd, **measuring.CHILD, **kw)
        try:
            out, err = child.communicate()
        except KeyboardInterrupt:
            child.send_signal(signal.SIGINT)
            try:
                child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
            raise
        return subprocess.CompletedProcess(cmd, child.returncode, out, err)

    def record(self, row):
        row = {k: row.get(k, "") for k in MEASUREMENT_FIELDS}
        new = not os.path.exists(self.csv_path)
        with open(self.csv_path, "a", newline="") as f:
            w = csv.DictWriter(f, MEASUREMENT_FIELDS)
            if new:
                w.writeheader()
            w.writerow(row)
            f.flush()
            os.fsync(f.fileno())
        self.rows.append(row)
        gbps = f"{row['gbps']:.2f} GB/s" if row["status"] == "ok" else row["error"]
        print(f"{PROG}: rep {row['rep'] + 1}/{self.args.reps} {row['side']:<9} {row['name']}: "
              f"{row['status']} {gbps}", file=sys.stderr, flush=True)

    def drop_cache(self):
        """None when FILE is verified cold, else why not."""
        p = self.run([self.args.bin, "cache", "drop", self.args.file],
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        return None if p.returncode == 0 else (p.stderr or p.stdout).strip()

    def loadbench(self, rep, order, spec, eager):
        slug = spec.replace(":", "-")
        out = os.path.join(self.args.out, "loadbench", f"{slug}-rep{rep}")
        with open(out + ".log", "w") as log:
            p = self.run([self.args.bin, "run", "--file", self.args.file, "--strategies", spec,
                          "--cache", "cold", "--reps", "1", "--out", out,
                          "--experiment", "fio-compare"], stdout=log, stderr=subprocess.STDOUT)
        if p.returncode == 130:
            raise KeyboardInterrupt
        if p.returncode == 2:
            with open(out + ".log") as log:
                lines = log.read().strip().splitlines() or [f"{spec}: loadbench run exited with 2"]
                raise BadInput(lines[-1])
        time_used = "ready_s" if eager else "wall_s"
        row = {"rep": rep, "order": order, "name": spec, "side": "loadbench",
               "time_used": time_used, "bytes": self.file_bytes, "path": out}
        try:
            with open(os.path.join(out, "runs.jsonl")) as f:
                rec = json.loads(f.readline())
        except (OSError, ValueError) as e:
            self.record(dict(row, status="failed", error=f"no run recorded: {e}"))
            return None
        ok = rec["status"] == "ok"
        seconds = rec[time_used] if ok else None
        self.record(dict(row, status=rec["status"], error=rec["error"] or "", seconds=seconds,
                         gbps=self.file_bytes / seconds / 1e9 if ok else ""))
        return rec["params"]

    def fio(self, rep, order, spec, params):
        name, _ = parse_spec(spec)
        base = os.path.join(self.args.out, "fio", f"{spec.replace(':', '-')}-rep{rep}")
        opts, _ = fio_job(name, params, self.file_bytes)
        with open(base + ".fio", "w") as f:
            f.write(fio_jobfile(name, self.args.file, opts))
        row = {"rep": rep, "order": order, "name": spec, "side": "fio", "path": base + ".json",
               "time_used": "runtime", "numjobs": opts.get("numjobs", 1)}
        why = self.drop_cache()
        if why:
            return self.record(dict(row, status="invalid", error=why))
        with open(base + ".log", "w") as log:
            p = self.run(["fio", "--readonly", "--output-format=json", "--output=" + base + ".json",
                          base + ".fio"], stdout=log, stderr=subprocess.STDOUT)
        try:
            if p.returncode != 0:
                raise ValueError(f"fio exited with {p.returncode}, see {base}.log")
            with open(base + ".json") as f:
                nbytes, seconds = fio_result(json.load(f))
        except (OSError, ValueError, KeyError) as e:
            return self.record(dict(row, status="failed", error=str(e)))
        self.record(dict(row, status="ok", seconds=seconds, bytes=nbytes,
                         gbps=nbytes / seconds / 1e9))

    def baseline(self, rep, order, how):
        row = {"rep": rep, "order": order, "name": how, "side": "numpy",
               "time_used": "open to done"}
        why = self.drop_cache()
        if why:
            return self.record(dict(row, status="invalid", error=why))
        p = self.run([sys.executable, "-c", BASELINE_CHILD, self.args.file, how],
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if p.returncode != 0:
            lines = p.stderr.strip().splitlines() or [f"exit status {p.returncode}"]
            return self.record(dict(row, status="failed", error=lines[-1]))
        path = os.path.join(self.args.out, "numpy", f"{how}-rep{rep}.json")
        with open(path, "w") as f:
            f.write(p.stdout)
        r = json.loads(p.stdout)
        self.record(dict(row, status="ok", seconds=r["seconds"], bytes=r["bytes"],
                         path=path, gbps=r["bytes"] / r["seconds"] / 1e9))

    def measure(self, runnable):
        """All repetitions; `runnable` maps each runnable strategy spec to its eager flag."""
        units = [("pair", s) for s in self.strategies if s in runnable]
        units += [("baseline", b) for b in BASELINES]
        for rep in range(self.args.reps):
            for k in range(len(units)):
                kind, what = units[(k + rep) % len(units)]
                if kind == "baseline":
                    self.baseline(rep, k, what)
                    continue
                params = self.loadbench(rep, k, what, runnable[what])
                if params is None:
                    self.record({"rep": rep, "order": k, "name": what, "side": "fio",
                                 "status": "failed", "error": "no params: loadbench run failed"})
                else:
                    self.fio(rep, k, what, params)


def median_of(rows, name, side):
    runs = [r for r in rows if r["name"] == name and r["side"] == side]
    ok = [float(r["gbps"]) for r in runs if r["status"] == "ok"]
    bad = [r["status"] for r in runs if r["status"] != "ok"]
    note = ", ".join(f"{side}: {bad.count(s)} {s}" for s in sorted(set(bad)))
    return (statistics.median(ok) if ok else None), len(ok), note


def summarize(rows, strategies, listing, file_bytes):
    """The summary rows (as written to summary.csv) and the target lines."""
    out = []
    for spec in strategies:
        name, _ = parse_spec(spec)
        info = listing.get(name)
        row = {"kind": "pair", "name": spec}
        if info is None:
            out.append(dict(row, status="missing", note="not in this loadbench build"))
            continue
        if not info["supported"]:
            out.append(dict(row, status="unsupported", note=info["unsupported_reason"]))
            continue
        lb, lb_n, lb_note = median_of(rows, spec, "loadbench")
        fio, fio_n, fio_note = median_of(rows, spec, "fio")
        params = None
        for r in rows:
            if r["name"] == spec and r["side"] == "loadbench" and r["path"]:
                try:
                    with open(os.path.join(r["path"], "runs.jsonl")) as f:
                        params = json.loads(f.readline())["params"]
                    break
                except (OSError, ValueError):
                    continue
        out.append(dict(row, status="ok" if lb_n and fio_n else "no data",
                        time_used="ready_s" if "eager" in info["flags"] else "wall_s",
                        loadbench_gbps=lb, loadbench_n=lb_n, fio_gbps=fio, fio_n=fio_n,
                        fio_job=fio_job(name, params, file_bytes)[1] if params is not None else "",
                        ratio=lb / fio if lb and fio else None,
                        note="; ".join(n for n in (lb_note, fio_note) if n)))
    for how in BASELINES:
        g, n, note = median_of(rows, how, "numpy")
        out.append({"kind": "baseline", "name": how, "status": "ok" if n else "no data",
                    "time_used": "open to done", "baseline_gbps": g, "baseline_n": n,
                    "note": note})

    targets = []
    for r in out:
        name, opts = parse_spec(r["name"])
        if r["kind"] == "pair" and (name == "odirect" or opts.get("direct") == "on"):
            targets.append(target_line(r["name"], r.get("loadbench_gbps"),
                                       "its fio twin", r.get("fio_gbps"), r["status"]))
    pairs = [r for r in out if r["kind"] == "pair"]
    best_lb = max((r for r in pairs if r.get("loadbench_gbps")),
                  key=lambda r: r["loadbench_gbps"], default=None)
    best_fio = max((r for r in pairs if r.get("fio_gbps")),
                   key=lambda r: r["fio_gbps"], default=None)
    targets.append(target_line(
        f"best loadbench ({best_lb['name'] if best_lb else 'none'})",
        best_lb and best_lb["loadbench_gbps"],
        f"the best fio job ({best_fio['name'] if best_fio else 'none'}'s twin)",
        best_fio and best_fio["fio_gbps"], "ok"))
    return out, targets


def target_line(what, lb, against, fio, status):
    if not lb or not fio:
        return f"n/a   {what}: no figure to compare ({status})"
    verdict = "PASS" if lb >= TARGET * fio else "MISS"
    return (f"{verdict}  {what}: {lb:.2f} GB/s = {lb / fio:.3f} of {against} {fio:.2f} GB/s "
            f"(target >= {TARGET})")


def table_text(summary, targets, args, file_bytes):
    def num(v):
        return "-" if v is None or v == "" else f"{v:.2f}"

    pairs = [r for r in summary if r["kind"] == "pair"]
    name_w = max([len("strategy")] + [len(r["name"]) for r in summary])
    job_w = max([len("fio job")] + [len(r.get("fio_job", "")) for r in pairs])
    lines = [f"{args.file}: {file_bytes} bytes, cold, {args.reps} reps",
             f"{'strategy':<{name_w}}  {'time':<7}  {'loadbench GB/s':>14}  {'fio job':<{job_w}}  "
             f"{'fio GB/s':>8}  {'ratio':>5}  {'n lb/fio':>8}  note"]
    for r in pairs:
        if r["status"] in ("missing", "unsupported"):
            lines.append(f"{r['name']:<{name_w}}  {r['status']}: {r['note']}")
            continue
        n = f"{r['loadbench_n']}/{r['fio_n']}"
        lines.append(f"{r['name']:<{name_w}}  {r['time_used']:<7}  {num(r['loadbench_gbps']):>14}  "
                     f"{r['fio_job']:<{job_w}}  {num(r['fio_gbps']):>8}  {num(r['ratio']):>5}  "
                     f"{n:>8}  {r['note']}".rstrip())
    lines += ["GB/s: medians, 10^9 bytes read from the file per second. loadbench: the file size "
              "/ ready_s (eager strategies)",
              "or / wall_s (the others); fio: the bytes its jobs read / runtime (numjobs > 1: "
              "their total / the longest job's).",
              "Ratio: loadbench / fio. n: measurements that completed (loadbench: and verified).",
              "",
              "Python baselines (fresh process, cold, timed from open to done; the file size / "
              "time):"]
    for r in summary:
        if r["kind"] == "baseline":
            lines.append(f"{r['name']:<{name_w}}  {num(r['baseline_gbps']):>5} GB/s  "
                         f"n={r['baseline_n']}  {r['note']}".rstrip())
    lines += ["", "Targets:"] + targets
    return "\n".join(lines) + "\n"


def check_inputs(args):
    """Everything that can be wrong before the first measurement; returns (file bytes,
    strategy name -> `loadbench list --json` entry)."""
    if not os.path.exists(args.file):
        raise BadInput(f"{args.file}: no such file")
    if not os.path.isfile(args.file):
        raise BadInput(f"{args.file}: not a regular file")
    try:
        open(args.file, "rb").close()
    except OSError as e:
        raise BadInput(f"{args.file}: cannot read: {e.strerror}")
    for spec in args.strategies:
        if parse_spec(spec)[0] not in TWINS:
            raise BadInput(f"--strategies: '{spec}' has no fio twin (twins exist for: "
                           f"{', '.join(TWINS)})")
    if shutil.which("fio") is None:
        raise BadInput("fio not found on PATH (scripts/setup.sh installs it)")
    if importlib.util.find_spec("numpy") is None:
        raise BadInput(f"{sys.executable} cannot import numpy (scripts/setup.sh installs "
                       "python3-numpy)")
    if not os.access(args.bin, os.X_OK):
        raise BadInput(f"{args.bin}: no loadbench binary there (build it, or pass --bin)")
    help_text = subprocess.run([args.bin, "cache", "--help"], capture_output=True, text=True)
    if help_text.returncode != 0 or "drop" not in help_text.stdout:
        raise BadInput(f"{args.bin}: this loadbench has no `cache drop` subcommand (rebuild it)")
    listed = subprocess.run([args.bin, "list", "--json"], capture_output=True, text=True)
    try:
        listing = {s["name"]: s for s in json.loads(listed.stdout)}
    except ValueError:
        raise BadInput(f"{args.bin}: `loadbench list --json` gave no JSON (rebuild it)")
    inspected = subprocess.run([args.bin, "inspect", args.file, "--json"], capture_output=True,
                               text=True)
    if inspected.returncode != 0:
        raise BadInput(inspected.stderr.strip().splitlines()[-1])
    if os.path.exists(os.path.join(args.out, "measurements.csv")):
        raise BadInput(f"{args.out}: already holds measurements; choose a new --out")
    return json.loads(inspected.stdout)["file_bytes"], listing


def main():
    parser = argparse.ArgumentParser(prog="scripts/fio-compare.sh", description=__doc__,
                                     usage=argparse.SUPPRESS,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file", metavar="FILE", help="the weight file (WLF)")
    parser.add_argument("--reps", type=int, default=5, help="repetitions (default 5)")
    parser.add_argument("--out", help="results folder (default results/fio-compare-<UTC time>)")
    parser.add_argument("--bin", default=os.path.join(REPO, "build", "loadbench"),
                        help="the loadbench binary (default: build/loadbench of this checkout)")
    parser.add_argument("--strategies", default=DEFAULT_STRATEGIES,
                        help="comma-separated loadbench strategy specs, options as in `loadbench "
                             f"run` (default {DEFAULT_STRATEGIES})")
    args = parser.parse_args()
    if args.reps < 1:
        parser.error("--reps must be at least 1")
    args.file = os.path.abspath(args.file)
    args.bin = os.path.abspath(args.bin)
    args.strategies = list(dict.fromkeys(s for s in args.strategies.split(",") if s))
    stamp = datetime.datetime.now(datetime.timezone.utc)
    args.out = args.out or os.path.join("results",
                                        "fio-compare-" + stamp.strftime("%Y%m%dT%H%M%SZ"))
    try:
        file_bytes, listing = check_inputs(args)
    except BadInput as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 2
    measuring.hold_machine(args.bin)  # the whole comparison is one measurement

    created = not os.path.exists(args.out)
    for sub in ("loadbench", "fio", "numpy"):
        os.makedirs(os.path.join(args.out, sub), exist_ok=True)
    fio_version = subprocess.run(["fio", "--version"], capture_output=True, text=True).stdout
    with open(os.path.join(args.out, "info.json"), "w") as f:
        json.dump({"file": args.file, "file_bytes": file_bytes, "reps": args.reps,
                   "strategies": args.strategies, "loadbench": args.bin,
                   "fio": fio_version.strip(), "root": os.geteuid() == 0,
                   "started_at": stamp.strftime("%Y-%m-%dT%H:%M:%SZ"), "argv": sys.argv,
                   "list": list(listing.values())}, f, indent=2)
    runnable = {}
    for spec in args.strategies:
        info = listing.get(parse_spec(spec)[0])
        if info is None or not info["supported"]:
            why = "not in this loadbench build" if info is None else info["unsupported_reason"]
            print(f"{PROG}: {spec}: skipped: {why}", file=sys.stderr)
        else:
            runnable[spec] = "eager" in info["flags"]
    print(f"{PROG}: {args.file} ({file_bytes} bytes), {args.reps} reps of "
          f"{len(runnable)} strategies with their fio twins and {len(BASELINES)} baselines -> "
          f"{args.out}", file=sys.stderr)

    runner = Runner(args, file_bytes, args.strategies)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    status = 0
    try:
        runner.measure(runnable)
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted; the summary covers the measurements that finished",
              file=sys.stderr)
        status = 130
    except BadInput as e:
        # A spec only loadbench can judge: nothing was measured, so leave nothing behind.
        if created and not runner.rows:
            shutil.rmtree(args.out)
        print(f"{PROG}: {e}", file=sys.stderr)
        return 2

    summary, targets = summarize(runner.rows, args.strategies, listing, file_bytes)
    with open(os.path.join(args.out, "summary.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, SUMMARY_FIELDS)
        w.writeheader()
        for r in summary:
            w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in SUMMARY_FIELDS})
    text = table_text(summary, targets, args, file_bytes)
    with open(os.path.join(args.out, "table.txt"), "w") as f:
        f.write(text)
    sys.stdout.write(text)
    print(f"{PROG}: results in {args.out}", file=sys.stderr)
    if status == 0 and (any(r["status"] != "ok" for r in runner.rows) or len(runnable)
                        < len(args.strategies)):
        status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
