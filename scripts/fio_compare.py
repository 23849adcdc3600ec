"""Compare every loadbench I/O strategy with the fio job that does the same I/O on the same file.

usage: scripts/fio-compare.sh FILE [--reps N] [--out DIR] [--bin PATH] [--strategies LIST]

FILE is a weight file or a sharded model: a safetensors/WLF index (NAME.safetensors.index.json),
a folder holding one, or the first file of a GGUF split (NAME-00001-of-0000N.gguf). The shards
are the "shards" of `loadbench inspect --json FILE` (a loadbench whose inspect has none: FILE is
one shard); the model's bytes are the sum of the shard files' sizes.

Each repetition runs, cold, every strategy once with `loadbench run --cache cold --reps 1`,
followed at once by its fio twin (pool: its two twins, their order alternating by repetition),
plus two Python baselines; the order rotates by one every repetition, as `loadbench run` does.
Every fio and baseline measurement is preceded by `loadbench cache drop FILE`, which checks, for
every shard, that at most 1% of it is still resident; `loadbench run` drops and checks the
cache itself and records a run that did not start cold as invalid. Only measurements that
completed (and, for loadbench, verified) count.

By default every allocating strategy runs also with buffer=thp (destination memory in
transparent huge pages; the fio twin is the same job): fio reads into one small reused buffer,
a loader into fresh memory whose first-touch faults can cost more than the I/O. On a model of
more than one shard the default is pool, pool:buffer=thp, pool:direct=on and
pool:direct=on:buffer=thp.

The twins (every fio job: fio --readonly --output-format=json, rw=read, filename=FILE (of a
model of one shard: that shard), size=the file size or the slice, fadvise_hint=0 unless said
otherwise, thread=1):
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
  pool             two twins over every shard file, all jobs of one running at once,
                   ioengine=psync, bs=chunk, direct=1 where direct=on:
                   files   one job section per shard file (filename=the shard, size=its size)
                   slices  each shard read by K = max(2, threads // shards) jobs (numjobs=K),
                           each a contiguous slice as pread_mt's (offset_increment=size=the
                           shard / K rounded down to 4 KiB, to chunk with direct=on; fewer
                           jobs where a slice would be under one chunk)
                   fio refuses a job smaller than its bs: a shard under one chunk is read
                   by one job with bs=its size rounded down to 4 KiB (one under 4 KiB not
                   at all).
                   pool's order and split do not change its twins.
The fio job is built from the resolved options that loadbench recorded for the run it follows.
On a model of more than one shard only pool runs: every other strategy is skipped, with the
reason printed (loadbench reads such a model with it one shard after another, a fio twin of
which this script does not build).

Python baselines, each in a fresh /usr/bin/python3 process that imports numpy first and times
itself from open to done: numpy.fromfile (the whole file as uint8) and numpy.memmap with every
byte touched (sum over a uint64 view plus the tail); on a model, every shard file in turn.

GB/s is 10^9 bytes per second of bytes read from the file: loadbench and the baselines read the
whole file (model: every shard), so the file size (the sum of the shard sizes) over their time
(pool reads only the shards' tensor bytes, a little less); fio the bytes its jobs read (each
file or slice rounded down to whole blocks of its job) over its runtime, with more than one job
the jobs' total over the longest job's runtime. loadbench's time is ready_s for the strategies
flagged "eager" in `loadbench list` (everything read before the load returns) and wall_s (until
every byte has been read and checksummed) for the others; the table says which. Ratio:
loadbench median / fio median.

Targets, printed as PASS/MISS lines: odirect and io_uring with direct=on at least 0.9 of their
fio twins; every pool spec at least 0.9 of the best fio job over the same shard files (the
highest fio median of the run, whichever twin); the best loadbench strategy at least 0.9 of the
best fio job (the device ceiling).

--out (default results/fio-compare-<UTC time>) gets: measurements.csv (one row per measurement,
appended and synced as each ends, so an interruption loses only the measurement in flight),
loadbench/<strategy>-rep<N>/ (each run's results folder) and .log, fio/<strategy>-rep<N>.fio
(pool: fio/<strategy>-<twin>-rep<N>.fio), .json (fio's raw output) and .log,
numpy/<baseline>-rep<N>.json, info.json, summary.csv and table.txt. On Ctrl-C the summary of
what finished is printed and saved; exit status 130. Progress goes to stderr, the table to
stdout.

The whole comparison is one measurement: once its inputs are checked it runs itself under
`loadbench lock`, which waits while another measurement runs on this machine (saying for whom)
and holds the machine for every repetition; fio, the baselines and the loadbench commands it
starts die with it, however it dies.

Exit status: 0 every measurement ok; 1 some measurement failed, was invalid, or a strategy is
unsupported or skipped; 2 bad input (missing or unreadable FILE, unknown strategy, fio, numpy
or a usable loadbench missing: one line on stderr); 130 interrupted. Needs root for cold runs of
files you do not own.
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
# On a model of more than one shard only pool has twins (see the docstring).
DEFAULT_MODEL_STRATEGIES = "pool,pool:buffer=thp,pool:direct=on,pool:direct=on:buffer=thp"
TWINS = ("fread", "pread", "pread_mt", "odirect", "io_uring", "mmap", "mmap_seq", "pool")
# pool's twins: one fio job per shard file, and K jobs per shard file each reading a slice.
POOL_TWINS = ("files", "slices")
BASELINES = ("numpy.fromfile", "numpy.memmap")
TARGET = 0.9
MIB = 1 << 20

# Runs in a fresh interpreter: argv is the baseline name and the files (every shard, in order);
# prints its timing as JSON.
BASELINE_CHILD = """
import json, sys, time
import numpy as np
how, paths = sys.argv[1], sys.argv[2:]
t0 = time.perf_counter()
n = 0
for path in paths:
    if how == "numpy.fromfile":
        n += np.fromfile(path, dtype=np.uint8).size
    else:
        m = np.memmap(path, dtype=np.uint8, mode="r")
        whole = m.size // 8 * 8
        # The sum is only there to read every byte of the mapping.
        int(m[:whole].view(np.uint64).sum(dtype=np.uint64)) + int(m[whole:].sum())
        n += m.size
t1 = time.perf_counter()
print(json.dumps({"seconds": t1 - t0, "bytes": int(n)}))
"""

MEASUREMENT_FIELDS = ["rep", "order", "name", "side", "twin", "status", "gbps", "seconds",
                      "time_used", "bytes", "numjobs", "path", "error"]
SUMMARY_FIELDS = ["kind", "name", "twin", "status", "time_used", "loadbench_gbps", "loadbench_n",
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


def fio_filename(path):
    # fio splits filenames at ':'; a backslash keeps it.
    return path.replace(":", "\\:")


def fio_jobfile(job_name, path, opts):
    lines = [f"[{job_name}]", "filename=" + fio_filename(path), "rw=read", "thread=1"]
    lines += [f"{k}={v}" for k, v in opts.items()]
    return "\n".join(lines) + "\n"


def pool_job(params, shards, twin):
    """pool's fio twin `twin` ('files' or 'slices') over `shards` ([(path, bytes)], every file
    of the model): (options shared by every job, [(section name, its options)], total jobs,
    a short description). files: one job per shard file. slices: K = max(2, threads // shards)
    jobs per shard file, each a contiguous slice of at least one block (fewer for a file too
    small for K). fio refuses a job smaller than its block: a shard under one chunk gets
    bs=its size rounded down to 4 KiB, and one under 4 KiB no job."""
    chunk = params["chunk"]
    common = {"rw": "read", "thread": 1, "ioengine": "psync", "bs": chunk}
    if params.get("direct") == "on":
        common["direct"] = 1
    common["fadvise_hint"] = 0
    per_file = 1 if twin == "files" else max(2, params["threads"] // len(shards))
    align = chunk if params.get("direct") == "on" else 4096
    sections, total = [], 0
    for k, (path, size) in enumerate(shards):
        bs = chunk if size >= chunk else size // 4096 * 4096
        if bs == 0:
            continue
        opts = {"filename": fio_filename(path)}
        if bs != chunk:
            opts["bs"] = bs
        jobs, piece = max(1, min(per_file, size // bs)), size
        while jobs > 1:
            piece = size // jobs // align * align
            if piece >= bs:
                break
            jobs, piece = jobs - 1, size
        if jobs > 1:
            opts.update(numjobs=jobs, offset_increment=piece)
        opts["size"] = piece
        sections.append((f"shard{k}", opts))
        total += jobs
    how = ("one job per file" if twin == "files"
           else f"{per_file} jobs per file, each a slice")
    direct = " direct=1" if "direct" in common else ""
    desc = f"psync bs={size_text(chunk)}{direct} {how} ({total} jobs on {len(sections)} files)"
    return common, sections, total, desc


def sections_jobfile(common, sections):
    """A job file of a [global] section and one section per job (all run at once)."""
    lines = ["[global]"] + [f"{k}={v}" for k, v in common.items()]
    for name, opts in sections:
        lines += ["", f"[{name}]"] + [f"{k}={v}" for k, v in opts.items()]
    return "\n".join(lines) + "\n"


def twins(spec, params, shards):
    """Every fio twin of one loadbench run: [(twin label, job file text, total jobs,
    description)]; the label is '' for a strategy with one twin."""
    name, _ = parse_spec(spec)
    if name == "pool":
        out = []
        for twin in POOL_TWINS:
            common, sections, total, desc = pool_job(params, shards, twin)
            out.append((twin, sections_jobfile(common, sections), total, desc))
        return out
    path, size = shards[0]  # the other strategies only run on one file
    opts, desc = fio_job(name, params, size)
    return [("", fio_jobfile(name, path, opts), opts.get("numjobs", 1), desc)]


def twin_labels(spec):
    return POOL_TWINS if parse_spec(spec)[0] == "pool" else ("",)


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

    def __init__(self, args, shards, strategies):
        """shards: [(path, bytes)], every file of the model (FILE itself for a weight file)."""
        self.args, self.shards, self.strategies = args, shards, strategies
        self.file_bytes = sum(size for _, size in shards)
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
        twin = f" ({row['twin']})" if row["twin"] else ""
        print(f"{PROG}: rep {row['rep'] + 1}/{self.args.reps} {row['side']:<9} {row['name']}"
              f"{twin}: {row['status']} {gbps}", file=sys.stderr, flush=True)

    def drop_cache(self):
        """None when FILE (every shard) is verified cold, else why not."""
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
        """Every twin of the run just made, each from a checked cold cache; a strategy with
        more than one (pool) runs them in an order that rotates by one every repetition."""
        jobs = twins(spec, params, self.shards)
        for k in range(len(jobs)):
            self.fio_twin(rep, order, spec, *jobs[(k + rep) % len(jobs)])

    def fio_twin(self, rep, order, spec, twin, jobfile, numjobs, _desc):
        slug = spec.replace(":", "-") + (f"-{twin}" if twin else "")
        base = os.path.join(self.args.out, "fio", f"{slug}-rep{rep}")
        with open(base + ".fio", "w") as f:
            f.write(jobfile)
        row = {"rep": rep, "order": order, "name": spec, "side": "fio", "twin": twin,
               "path": base + ".json", "time_used": "runtime", "numjobs": numjobs}
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
        files = [path for path, _ in self.shards]
        p = self.run([sys.executable, "-c", BASELINE_CHILD, how] + files,
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
                    for twin in twin_labels(what):
                        self.record({"rep": rep, "order": k, "name": what, "side": "fio",
                                     "twin": twin, "status": "failed",
                                     "error": "no params: loadbench run failed"})
                else:
                    self.fio(rep, k, what, params)


def median_of(rows, name, side, twin=""):
    runs = [r for r in rows if r["name"] == name and r["side"] == side
            and r.get("twin", "") == twin]
    ok = [float(r["gbps"]) for r in runs if r["status"] == "ok"]
    bad = [r["status"] for r in runs if r["status"] != "ok"]
    note = ", ".join(f"{side}: {bad.count(s)} {s}" for s in sorted(set(bad)))
    return (statistics.median(ok) if ok else None), len(ok), note


def skip_reason(spec, shards):
    """Why `spec` does not run on this model, or None."""
    if len(shards) > 1 and parse_spec(spec)[0] != "pool":
        return (f"a model of {len(shards)} shards: only pool has fio twins over shards "
                "(loadbench reads it with this strategy one shard after another)")
    return None


def summarize(rows, strategies, listing, shards):
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
        if skip_reason(spec, shards):
            out.append(dict(row, status="skipped", note=skip_reason(spec, shards)))
            continue
        lb, lb_n, lb_note = median_of(rows, spec, "loadbench")
        params = None
        for r in rows:
            if r["name"] == spec and r["side"] == "loadbench" and r["path"]:
                try:
                    with open(os.path.join(r["path"], "runs.jsonl")) as f:
                        params = json.loads(f.readline())["params"]
                    break
                except (OSError, ValueError):
                    continue
        descs = ({t: d for t, _, _, d in twins(spec, params, shards)} if params is not None
                 else {})
        for twin in twin_labels(spec):
            fio, fio_n, fio_note = median_of(rows, spec, "fio", twin)
            out.append(dict(row, twin=twin, status="ok" if lb_n and fio_n else "no data",
                            time_used="ready_s" if "eager" in info["flags"] else "wall_s",
                            loadbench_gbps=lb, loadbench_n=lb_n, fio_gbps=fio, fio_n=fio_n,
                            fio_job=descs.get(twin, ""),
                            ratio=lb / fio if lb and fio else None,
                            note="; ".join(n for n in (lb_note, fio_note) if n)))
    for how in BASELINES:
        g, n, note = median_of(rows, how, "numpy")
        out.append({"kind": "baseline", "name": how, "status": "ok" if n else "no data",
                    "time_used": "open to done", "baseline_gbps": g, "baseline_n": n,
                    "note": note})
    return out, target_lines(out)


def twin_name(r):
    return f"{r['name']}'s {r['twin'] + ' ' if r.get('twin') else ''}twin"


def target_lines(summary):
    """The PASS/MISS lines of the summary rows: odirect and direct=on strategies against their
    twin, every pool spec against the best fio job of the run (every fio job of the run reads
    the same files), and the best loadbench strategy against the best fio job."""
    targets = []
    pairs = [r for r in summary if r["kind"] == "pair"]
    for r in pairs:
        name, opts = parse_spec(r["name"])
        if name != "pool" and (name == "odirect" or opts.get("direct") == "on"):
            targets.append(target_line(r["name"], r.get("loadbench_gbps"),
                                       "its fio twin", r.get("fio_gbps"), r["status"]))
    best_lb = max((r for r in pairs if r.get("loadbench_gbps")),
                  key=lambda r: r["loadbench_gbps"], default=None)
    best_fio = max((r for r in pairs if r.get("fio_gbps")),
                   key=lambda r: r["fio_gbps"], default=None)
    fio_label = f"the best fio job ({twin_name(best_fio) if best_fio else 'none'})"
    pools = {}
    for r in pairs:
        if parse_spec(r["name"])[0] == "pool":
            pools.setdefault(r["name"], r)
    for spec, r in pools.items():
        targets.append(target_line(
            spec, r.get("loadbench_gbps"),
            f"the best fio job over the same shard files "
            f"({twin_name(best_fio) if best_fio else 'none'})",
            best_fio and best_fio["fio_gbps"], r["status"]))
    targets.append(target_line(
        f"best loadbench ({best_lb['name'] if best_lb else 'none'})",
        best_lb and best_lb["loadbench_gbps"], fio_label,
        best_fio and best_fio["fio_gbps"], "ok"))
    return targets


def target_line(what, lb, against, fio, status):
    if not lb or not fio:
        return f"n/a   {what}: no figure to compare ({status})"
    verdict = "PASS" if lb >= TARGET * fio else "MISS"
    return (f"{verdict}  {what}: {lb:.2f} GB/s = {lb / fio:.3f} of {against} {fio:.2f} GB/s "
            f"(target >= {TARGET})")


def model_text(model):
    if len(model["shards"]) == 1 and model["layout"] == "file":
        return f"{model['bytes']} bytes"
    n = len(model["shards"])
    return f"{model['layout']}, {n} shard{'s' if n > 1 else ''}, {model['bytes']} bytes in all"


def table_text(summary, targets, args, model):
    def num(v):
        return "-" if v is None or v == "" else f"{v:.2f}"

    pairs = [r for r in summary if r["kind"] == "pair"]
    name_w = max([len("strategy")] + [len(r["name"]) for r in summary])
    job_w = max([len("fio job")] + [len(r.get("fio_job", "")) for r in pairs])
    lines = [f"{args.file}: {model_text(model)}, cold, {args.reps} reps",
             f"{'strategy':<{name_w}}  {'time':<7}  {'loadbench GB/s':>14}  {'fio job':<{job_w}}  "
             f"{'fio GB/s':>8}  {'ratio':>5}  {'n lb/fio':>8}  note"]
    for r in pairs:
        if r["status"] in ("missing", "unsupported", "skipped"):
            lines.append(f"{r['name']:<{name_w}}  {r['status']}: {r['note']}")
            continue
        n = f"{r['loadbench_n']}/{r['fio_n']}"
        lines.append(f"{r['name']:<{name_w}}  {r['time_used']:<7}  {num(r['loadbench_gbps']):>14}  "
                     f"{r['fio_job']:<{job_w}}  {num(r['fio_gbps']):>8}  {num(r['ratio']):>5}  "
                     f"{n:>8}  {r['note']}".rstrip())
    lines += ["GB/s: medians, 10^9 bytes read from the file per second. loadbench: the file size "
              "(model: the sum of the shards')",
              "/ ready_s (eager strategies) or / wall_s (the others); fio: the bytes its jobs "
              "read / runtime (more than one job:",
              "their total / the longest job's). Ratio: loadbench / fio. n: measurements that "
              "completed (loadbench: and verified).",
              "",
              "Python baselines (fresh process, cold, timed from open to done; the file size / "
              "time):"]
    for r in summary:
        if r["kind"] == "baseline":
            lines.append(f"{r['name']:<{name_w}}  {num(r['baseline_gbps']):>5} GB/s  "
                         f"n={r['baseline_n']}  {r['note']}".rstrip())
    lines += ["", "Targets:"] + targets
    return "\n".join(lines) + "\n"


def model_of(inspected, path):
    """{'layout', 'shards': [(path, bytes)], 'bytes'} of `loadbench inspect --json` output (a
    dict); without "shards" (an older loadbench) FILE is one shard. Relative shard paths are
    taken from the index's folder."""
    shards = inspected.get("shards") or []
    if not shards:
        return {"layout": inspected.get("layout", "file"),
                "shards": [(path, int(inspected["file_bytes"]))],
                "bytes": int(inspected["file_bytes"])}
    folder = path if os.path.isdir(path) else os.path.dirname(path)
    files = [(os.path.normpath(os.path.join(folder, s["file"])), int(s["file_bytes"]))
             for s in shards]
    return {"layout": inspected.get("layout", "index" if len(files) > 1 else "file"),
            "shards": files, "bytes": sum(size for _, size in files)}


def check_inputs(args):
    """Everything that can be wrong before the first measurement; returns (the model as
    model_of gives it, strategy name -> `loadbench list --json` entry)."""
    if not os.path.exists(args.file):
        raise BadInput(f"{args.file}: no such file")
    if os.path.isdir(args.file):
        try:
            names = os.listdir(args.file)
        except OSError as e:
            raise BadInput(f"{args.file}: cannot list the folder: {e.strerror}")
        if not any(n.endswith(".index.json") for n in names):
            raise BadInput(f"{args.file}: a folder holding no *.index.json model index")
    elif not os.path.isfile(args.file):
        raise BadInput(f"{args.file}: not a regular file or a model folder")
    else:
        try:
            open(args.file, "rb").close()
        except OSError as e:
            raise BadInput(f"{args.file}: cannot read: {e.strerror}")
    for spec in args.strategies or []:
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
        lines = inspected.stderr.strip().splitlines() or [f"{args.file}: inspect failed"]
        raise BadInput(lines[-1])
    model = model_of(json.loads(inspected.stdout), args.file)
    for path, _ in model["shards"]:
        try:
            open(path, "rb").close()
        except OSError as e:
            raise BadInput(f"{path}: a shard of {args.file}: cannot read: {e.strerror}")
    if os.path.exists(os.path.join(args.out, "measurements.csv")):
        raise BadInput(f"{args.out}: already holds measurements; choose a new --out")
    return model, listing


def main():
    parser = argparse.ArgumentParser(prog="scripts/fio-compare.sh", description=__doc__,
                                     usage=argparse.SUPPRESS,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file", metavar="FILE",
                        help="a weight file or a sharded model (an index, a folder holding one, "
                             "or the first file of a GGUF split)")
    parser.add_argument("--reps", type=int, default=5, help="repetitions (default 5)")
    parser.add_argument("--out", help="results folder (default results/fio-compare-<UTC time>)")
    parser.add_argument("--bin", default=os.path.join(REPO, "build", "loadbench"),
                        help="the loadbench binary (default: build/loadbench of this checkout)")
    parser.add_argument("--strategies",
                        help="comma-separated loadbench strategy specs, options as in `loadbench "
                             f"run` (default {DEFAULT_STRATEGIES}; on a model of more than one "
                             f"shard {DEFAULT_MODEL_STRATEGIES})")
    args = parser.parse_args()
    if args.reps < 1:
        parser.error("--reps must be at least 1")
    args.file = os.path.abspath(args.file)
    args.bin = os.path.abspath(args.bin)
    if args.strategies is not None:
        args.strategies = list(dict.fromkeys(s for s in args.strategies.split(",") if s))
    stamp = datetime.datetime.now(datetime.timezone.utc)
    args.out = args.out or os.path.join("results",
                                        "fio-compare-" + stamp.strftime("%Y%m%dT%H%M%SZ"))
    try:
        model, listing = check_inputs(args)
    except BadInput as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 2
    shards, file_bytes = model["shards"], model["bytes"]
    if args.strategies is None:
        args.strategies = (DEFAULT_MODEL_STRATEGIES if len(shards) > 1
                           else DEFAULT_STRATEGIES).split(",")
    measuring.hold_machine(args.bin)  # the whole comparison is one measurement

    created = not os.path.exists(args.out)
    for sub in ("loadbench", "fio", "numpy"):
        os.makedirs(os.path.join(args.out, sub), exist_ok=True)
    fio_version = subprocess.run(["fio", "--version"], capture_output=True, text=True).stdout
    with open(os.path.join(args.out, "info.json"), "w") as f:
        json.dump({"file": args.file, "file_bytes": file_bytes, "layout": model["layout"],
                   "shards": [{"file": p, "file_bytes": n} for p, n in shards],
                   "reps": args.reps,
                   "strategies": args.strategies, "loadbench": args.bin,
                   "fio": fio_version.strip(), "root": os.geteuid() == 0,
                   "started_at": stamp.strftime("%Y-%m-%dT%H:%M:%SZ"), "argv": sys.argv,
                   "list": list(listing.values())}, f, indent=2)
    runnable = {}
    for spec in args.strategies:
        info = listing.get(parse_spec(spec)[0])
        if info is None or not info["supported"] or skip_reason(spec, shards):
            why = ("not in this loadbench build" if info is None else
                   info["unsupported_reason"] if not info["supported"] else
                   skip_reason(spec, shards))
            print(f"{PROG}: {spec}: skipped: {why}", file=sys.stderr)
        else:
            runnable[spec] = "eager" in info["flags"]
    print(f"{PROG}: {args.file} ({model_text(model)}), {args.reps} reps of "
          f"{len(runnable)} strategies with their fio twins and {len(BASELINES)} baselines -> "
          f"{args.out}", file=sys.stderr)

    runner = Runner(args, shards, args.strategies)
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

    summary, targets = summarize(runner.rows, args.strategies, listing, shards)
    with open(os.path.join(args.out, "summary.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, SUMMARY_FIELDS)
        w.writeheader()
        for r in summary:
            w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in SUMMARY_FIELDS})
    text = table_text(summary, targets, args, model)
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
