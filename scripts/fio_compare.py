"""Compare loadbench's I/O strategies with the fio jobs that do the same I/O, in the same rounds.

usage: scripts/fio-compare.sh FILE [--reps N] [--out DIR] [--bin PATH]
       scripts/fio-compare.sh [FILE] --experiment

The comparison is the experiment experiments/fio-compare.toml: every strategy of COMPARED
(fread, pread, pread_mt, odirect, io_uring, io_uring:direct=on, io_uring:direct=on:fixed=on,
mmap, mmap_seq; the ones that fill memory of their own also with buffer=thp) and, as `exec`
strategies in the same rounds, each one's fio twin (label fio-<strategy>) and two baselines a
Python user reaches for (the peers loaders/peers/numpy_fromfile.py and numpy_memmap.py). So a
fio run is measured as a loadbench run is: from a checked cold cache, in a fresh process, in
balanced rounds with a ceiling read in each, and its ratio to its strategy is paired by round.

Each twin is a /bin/sh command: fio, then fio's own time (the longest job's read runtime, from
its terse output) sent as `done` on LOADBENCH_FD, so that its record holds fio's start-up apart
(exec.done_s, exec.startup_s). That start-up is large: loading fio and its 60-odd libraries
(cold: from the disk) and fio's own waits (about 0.1 s) take 0.4 to 0.6 s on a 2-core VM,
whatever the file.

This script writes that experiment with `[[file]] path = FILE` into a temporary folder, runs
`loadbench experiment` on it (which waits while another measurement runs on this machine; its
output goes to stderr), and prints per compared strategy, beside its twin, two comparisons,
each the medians of both sides and the ratio loadbench / fio paired by round (the
Hodges-Lehmann estimate with its exact 95% interval, analysis/paired.py; at least 6 rounds for
an interval; above 1, loadbench is slower):
  wall_s      the strategy's wall_s (open to every byte checksummed) over the twin's (exec to
              exit: fio's start-up included)
  I/O alone   the strategy's ready_s where it reads everything before it hands out views
              (EAGER), else its wall_s, over fio's own runtime

The twins (fio --readonly --rw=read --thread=1 --output-format=terse --filename=FILE
--size=the file's bytes --fadvise_hint=0, unless said otherwise), from each strategy's options
with loadbench's defaults filled in (DEFAULTS):
  fread, pread     ioengine=psync, bs=chunk
  pread_mt         ioengine=psync, bs=chunk, numjobs=threads (by default the cores, counted by
                   getconf _NPROCESSORS_ONLN as loadbench counts them), each job one contiguous
                   slice: size=offset_increment=the file's bytes / threads rounded down to
                   4 KiB, so that no job runs past the end of the file (loadbench rounds up
                   and gives the last thread the rest), and bs=the slice where that is under
                   one chunk; the command works the slice out from the file's bytes. fio reads
                   whole blocks: a job's last block may run past its slice into the next one's
  odirect          ioengine=psync, direct=1, bs=chunk; with threads > 1 slices as pread_mt's,
                   rounded down to a multiple of chunk
  io_uring         ioengine=io_uring, iodepth=qd, bs=chunk, direct=1 where direct=on,
                   fixedbufs=1 where fixed=on, registerfiles=1 where regfile=on
  mmap             ioengine=mmap (memcpy out of a MAP_SHARED mapping), bs=1MiB, no advice
  mmap_seq         as mmap with fadvise_hint=1: fio then advises MADV_SEQUENTIAL on the mapping
                   and also POSIX_FADV_SEQUENTIAL on the file, which loadbench's mmap_seq does not
A buffer=thp variant has its strategy's twin: fio reads into one small buffer it reuses, so the
gap between a strategy's two rows is the price of fresh memory, the gap between its thp row and
fio the price of the I/O path. fio reads whole blocks only: up to one block less than the file.

FILE is one weight file; a sharded model (an index, a folder, a GGUF split) is refused: fio has
no twin here of a strategy reading one shard after another, and pool's twins are gone (compare
pool with a fio job of your own through `loadbench run --exec`). fio splits file names at ':'
and the twins quote FILE for /bin/sh, so a path holding ':' or "'" is refused too.

--experiment prints the experiment instead of running it: with FILE, the one that would run;
without, the shipped one (scripts/fio-compare.sh --experiment > experiments/fio-compare.toml).
--reps N: rounds instead of the file's 6. --out (default results/fio-compare-<UTC time>): the
results folder, as `loadbench experiment` writes it (runs.jsonl, env.json, the summary);
one that holds some of this comparison's runs is resumed. --bin: the loadbench binary (default
build/loadbench of this checkout).

Exit status: loadbench experiment's (0 every run ok; 1 some run failed or was unsupported; 3
disk full; 130 interrupted, with the table of the rounds that finished); 2 bad input (FILE, fio
or a loadbench with the exec strategy missing: one line on stderr).
"""
import argparse
import datetime
import json
import math
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path[:0] = [HERE, REPO]
import measuring  # noqa: E402  (beside this file)

PROG = "fio-compare"
MIB = 1 << 20

# The loadbench strategies compared, as loadbench writes their specs (options sorted by name).
COMPARED = ("fread", "pread", "pread:buffer=thp", "pread_mt", "pread_mt:buffer=thp", "odirect",
            "odirect:buffer=thp", "io_uring", "io_uring:direct=on",
            "io_uring:buffer=thp:direct=on", "io_uring:direct=on:fixed=on",
            "io_uring:buffer=thp:direct=on:fixed=on", "mmap", "mmap_seq")
# loadbench's defaults of the options the twins follow (`loadbench list`; a test checks them).
# pread_mt's threads default to the cores (None): its twin counts them when it runs.
DEFAULTS = {
    "fread": {"chunk": "1MiB"},
    "pread": {"chunk": "1MiB"},
    "pread_mt": {"threads": None, "chunk": "8MiB"},
    "odirect": {"threads": "1", "chunk": "1MiB"},
    "io_uring": {"qd": "32", "chunk": "1MiB", "direct": "off", "fixed": "off", "regfile": "off"},
    "mmap": {},
    "mmap_seq": {},
}
# fio's own time: the longest job's read runtime (a terse line's 9th field, in ms), sent as
# `done` on LOADBENCH_FD, so that its record keeps fio's start-up (exec.startup_s: loading fio
# and its libraries, fio's own waits of about 0.1 s) apart from its I/O.
REPORT = ("awk -F';' '$9 > m { m = $9 } END { printf \"done %.3f\\n\", m / 1000 }' "
          '>>"/dev/fd/$LOADBENCH_FD"')  # dash's >&N takes one digit only
# The compared strategies that read everything before they hand out views (flag "eager" in
# `loadbench list`; a test checks them): their ready_s is their I/O.
EAGER = frozenset({"fread", "pread", "pread_mt", "odirect", "io_uring"})
# io_uring's options that change its twin, and the fio options they become.
IO_URING_FLAGS = (("direct", "direct"), ("fixed", "fixedbufs"), ("regfile", "registerfiles"))
# The Python baselines: (label, the peer script).
PEERS = (("numpy-fromfile", "numpy_fromfile.py"), ("numpy-memmap", "numpy_memmap.py"))
# The file of the shipped experiment, generated in the data folder.
SHIPPED_FILE = ('preset = "llama"', 'size = "2GiB"', 'format = "wlf"')
HEADER = """\
# Question: how close does each of loadbench's I/O strategies come to fio doing the same I/O
# on the same file? Each strategy (those that fill memory of their own also with buffer=thp)
# beside its fio twin, an exec strategy labelled fio-<strategy> in the same rounds, and
# numpy.fromfile and numpy.memmap as a Python user's baselines; a 2 GiB llama WLF, cold, 6
# balanced rounds with a ceiling read each: enough for paired 95% intervals. About 12 minutes
# (estimated from its table) on the 2-core VM of docs/strategies.md: about 2 minutes a round,
# most of it the 4 KiB first-touch faults of the malloc rows.
# Cold only: the twins compare ways of reading the device; warm, the buffered ones would
# compare copies out of the page cache while the O_DIRECT ones still read the device.
# Each twin sends fio's own runtime as `done`, so that its record keeps fio's start-up (about
# 0.5 s on that VM) apart: exec.done_s is its I/O, exec.startup_s the rest.
# Written by `scripts/fio-compare.sh --experiment`: change the twins there (its --help says
# which fio options each one gets); a test checks that this file is what it writes.
# `scripts/fio-compare.sh FILE` runs the same on another file and prints each twin's ratios."""


class BadInput(Exception):
    """Stops the script with one line on stderr and exit status 2."""


def parse_spec(spec):
    """'io_uring:buffer=thp:direct=on' -> ('io_uring', {'buffer': 'thp', 'direct': 'on'})."""
    name, *pairs = spec.split(":")
    return name, dict(pair.split("=", 1) for pair in pairs)


def resolve(spec):
    """The strategy's name and its options with loadbench's defaults filled in."""
    name, options = parse_spec(spec)
    return name, {**DEFAULTS[name], **options}


def size_bytes(text):
    """A size as loadbench writes one ('1MiB', '256KiB', '4096') in bytes."""
    m = re.fullmatch(r"(\d+)(KiB|MiB|GiB)?", str(text))
    if not m:
        raise ValueError(f"not a size: {text!r}")
    return int(m[1]) << {None: 0, "KiB": 10, "MiB": 20, "GiB": 30}[m[2]]


def twin_label(name, opts):
    """fio-NAME, with -direct, -fixed and -regfile where io_uring's twin has them."""
    flags = [key for key, _ in IO_URING_FLAGS if name == "io_uring" and opts.get(key) == "on"]
    return "-".join(["fio-" + name] + flags)


def fio_options(name, opts):
    """The fio options of `name`'s twin that follow its resolved options `opts`, in order:
    [(option, value)]."""
    if name in ("fread", "pread", "pread_mt", "odirect"):
        out = [("ioengine", "psync"), ("bs", size_bytes(opts["chunk"]))]
        if name == "odirect":
            out.append(("direct", 1))
    elif name == "io_uring":
        out = [("ioengine", "io_uring"), ("iodepth", int(opts["qd"])),
               ("bs", size_bytes(opts["chunk"]))]
        out += [(fio_key, 1) for key, fio_key in IO_URING_FLAGS if opts[key] == "on"]
    elif name in ("mmap", "mmap_seq"):
        out = [("ioengine", "mmap"), ("bs", MIB)]
    else:
        raise ValueError(f"{name}: no fio twin")
    return out + [("fadvise_hint", 1 if name == "mmap_seq" else 0)]


def twin_command(name, opts):
    """The /bin/sh command of `name`'s twin: fio with the options of fio_options, then fio's
    own time sent as `done` (REPORT). Where the strategy reads in slices (more than one
    thread), the command first works the slice out from the file's bytes."""
    words = ["fio", "--name=" + twin_label(name, opts), "--filename='{file}'", "--readonly",
             "--rw=read", "--thread=1", "--output-format=terse"]
    options = fio_options(name, opts)
    threads = opts.get("threads", "1")
    if threads == "1" or name not in ("pread_mt", "odirect"):
        words += [f"--{k}={v}" for k, v in options] + ["--size={bytes}"]
        slices = ""
    else:
        # Slices inside the file (fio refuses a job that runs past its end), no block over one.
        bs = dict(options)["bs"]
        align = bs if name == "odirect" else 4096
        count = threads or "$(getconf _NPROCESSORS_ONLN)"
        words += [f"--{k}={'$b' if k == 'bs' else v}" for k, v in options]
        words += ["--numjobs=$n", "--size=$s", "--offset_increment=$s"]
        slices = (f"n={count}; s=$(({{bytes}} / n / {align} * {align})); "
                  f"b=$((s < {bs} ? s : {bs})); ")
    return slices + f"out=$({' '.join(words)}) && printf '%s\\n' \"$out\" | " + REPORT


def toml_strategy(name, options):
    lines = ["", "[[strategy]]", f"name = {json.dumps(name)}"]
    return lines + [f"{k} = {json.dumps(v)}" for k, v in options.items()]


def toml_shell(label, script):
    """An exec strategy run by /bin/sh, its command a multi-line string of lines under about
    96 characters (each line's closing backslash joins it to the next, dropping the indent)."""
    escaped = script.replace("\\", "\\\\")
    if escaped.endswith('"'):  # not a fourth quote before the closing three
        escaped = escaped[:-1] + '\\"'
    rows, row = [], ""
    for word in escaped.split(" "):
        if row and len(row) + len(word) > 84:
            rows.append(row + " \\")
            row = ""
        row += (" " if row else "") + word
    text = "\n    ".join(rows + [row])
    return toml_strategy("exec", {"label": label, "package": "fio"}) + [
        "shell = true", f'command = """\\\n    {text}"""']


def toml_argv(label, argv, package):
    """An exec strategy run as an argv list."""
    return toml_strategy("exec", {"label": label, "package": package}) + [
        f"command = {json.dumps(argv)}"]


def experiment_text(file_lines):
    """The experiment: HEADER, the file (`file_lines`: the keys of its [[file]] table), every
    strategy of COMPARED, each followed by its twin where that has not come yet, and the
    peers. Two strategies whose twins share a label must share the twin (ValueError)."""
    lines = [HEADER, 'name = "fio-compare"', "reps = 6", 'cache = "cold"',
             "ceiling = true", 'baseline = "fread"', "", "[[file]]", *file_lines]
    twins = {}
    for spec in COMPARED:
        strategy, options = parse_spec(spec)
        lines += toml_strategy(strategy, options)
        resolved = {**DEFAULTS[strategy], **options}
        label, twin = twin_label(strategy, resolved), twin_command(strategy, resolved)
        if label in twins:
            if twins[label] != twin:
                raise ValueError(f"{spec}: another twin under the label {label}")
            continue
        twins[label] = twin
        lines += toml_shell(label, twin)
    for label, script in PEERS:
        lines += toml_argv(label, ["/usr/bin/python3", "{peers}/" + script, "{file}"],
                           "python3-numpy")
    return "\n".join(lines) + "\n"


def counted(record):
    """Whether a run counts, as in analysis/results.py: ok, and verified by checksum, or a
    command's that sent none (a fio twin never does)."""
    unchecked = record.get("strategy") == "exec" and record.get("checksum_ok") is None
    return record.get("status") == "ok" and (record.get("checksum_ok") is True or unchecked)


def io_seconds(record):
    """The time of the I/O alone: a twin's own (fio's runtime, its `done`); a strategy's
    ready_s where it reads everything before it hands out views (EAGER), else its wall_s."""
    if record.get("strategy") == "exec":
        return (record.get("exec") or {}).get("done_s")
    return record.get("ready_s" if record["strategy"] in EAGER else "wall_s")


def paired(mine, theirs):
    """{n, median of each side, the ratio mine / theirs paired by round (Hodges-Lehmann) and
    its 95% interval} of two {rep: seconds}, over the rounds where both are positive."""
    from analysis.stats.paired import signed_rank_interval  # pandas and numpy: only when needed
    mine = {k: v for k, v in mine.items() if v and v > 0}
    theirs = {k: v for k, v in theirs.items() if v and v > 0}
    reps = sorted(mine.keys() & theirs.keys())
    iv = signed_rank_interval([math.log(mine[k] / theirs[k]) for k in reps])
    return {"n": iv.n, "mine": statistics.median(mine.values()) if mine else None,
            "theirs": statistics.median(theirs.values()) if theirs else None,
            "ratio": math.exp(iv.estimate) if iv.n else None,
            "low": math.exp(iv.low) if iv.bounded else None,
            "high": math.exp(iv.high) if iv.bounded else None}


def paired_rows(records):
    """Per cache state and compared strategy, beside its twin: `wall`, their wall_s paired by
    round, and `io`, the time of the I/O alone (io_seconds) paired by round."""
    runs = {}
    for r in records:
        if counted(r):
            runs.setdefault((r["cache"], r["strategy_spec"]), {})[r["rep"]] = r
    rows = []
    for cache in dict.fromkeys(r["cache"] for r in records if r.get("strategy") != "ceiling"):
        for spec in COMPARED:
            twin = twin_label(*resolve(spec))
            mine = runs.get((cache, spec), {})
            theirs = runs.get((cache, "exec:label=" + twin), {})
            rows.append({"cache": cache, "strategy": spec, "twin": twin, "wall": paired(
                {k: r["wall_s"] for k, r in mine.items()},
                {k: r["wall_s"] for k, r in theirs.items()}), "io": paired(
                {k: io_seconds(r) for k, r in mine.items()},
                {k: io_seconds(r) for k, r in theirs.items()})})
    return rows


def pair_text(p):
    """'  1.23  0.456  2.70 [2.51, 2.93]': the medians, the ratio and its interval."""
    def num(v, fmt):
        return "-" if v is None else fmt.format(v)

    interval = (f"[{p['low']:.2f}, {p['high']:.2f}]" if p["low"] is not None
                else "too few rounds" if p["n"] else "no pair")
    return (f"{num(p['mine'], '{:.3f}'):>9} {num(p['theirs'], '{:.3f}'):>7} "
            f"{num(p['ratio'], '{:.2f}'):>6} {interval:<14}")


def table_text(rows, records):
    """The table of paired_rows, with the file and the ceiling's median GB/s per cache state."""
    files = {r["file"]: r.get("file_bytes") for r in records if r.get("file")}
    lines = [f"{f}: {n} bytes" for f, n in files.items()]
    width = max([len("strategy")] + [len(r["strategy"]) for r in rows])
    twin_w = max([len("fio twin")] + [len(r["twin"]) for r in rows])
    lines.append(f"{'':<5} {'':<{width}}  {'':<{twin_w}}     {'wall_s':^39} "
                 f"{'I/O alone':^39}".rstrip())
    lines.append(f"cache {'strategy':<{width}}  {'fio twin':<{twin_w}}  n  " +
                 " ".join(f"{'loadbench':>9} {'fio':>7} {'ratio':>6} {'(95%)':<14}"
                          for _ in range(2)).rstrip())
    for r in rows:
        lines.append(f"{r['cache']:<5} {r['strategy']:<{width}}  {r['twin']:<{twin_w}} "
                     f"{r['wall']['n']:>2}  {pair_text(r['wall'])} {pair_text(r['io'])}".rstrip())
    for cache in dict.fromkeys(r["cache"] for r in rows):
        c = [x["gb_per_s"] for x in records if x.get("strategy") == "ceiling"
             and x.get("cache") == cache and x.get("status") == "ok" and x.get("gb_per_s")]
        if c:
            lines.append(f"{cache}: ceiling (the file read cold by the fastest read recipe) "
                         f"median {statistics.median(c):.2f} GB/s over {len(c)} round(s)")
    lines += ["Medians in seconds; ratio: loadbench / fio, paired by round (Hodges-Lehmann, "
              "exact 95% interval from 6 rounds); above 1, loadbench is slower.",
              "I/O alone: fio's own runtime; loadbench's ready_s (strategies that read "
              "everything before handing out views), else its wall_s."]
    return "\n".join(lines) + "\n"


def check_file(path):
    """One weight file, at a path fio and /bin/sh take as it is."""
    if not os.path.exists(path):
        raise BadInput(f"{path}: no such file")
    if not os.path.isfile(path):
        raise BadInput(f"{path}: not a weight file (a sharded model's folder is not compared)")
    if ":" in path or "'" in path:
        raise BadInput(f"{path}: a path holding ':' or \"'\", which fio or /bin/sh would split; "
                       "link the file under another name")


def check_tools(path, binary):
    """fio, a loadbench with the exec strategy, and FILE one file as loadbench reads it."""
    if shutil.which("fio") is None:
        raise BadInput("fio not found on PATH (scripts/setup.sh installs it)")
    if not os.access(binary, os.X_OK):
        raise BadInput(f"{binary}: no loadbench binary there (build it, or pass --bin)")
    run_help = subprocess.run([binary, "run", "--help"], capture_output=True, text=True)
    if "--exec" not in run_help.stdout:
        raise BadInput(f"{binary}: this loadbench has no exec strategy (rebuild it)")
    inspected = subprocess.run([binary, "inspect", path, "--json"], capture_output=True,
                               text=True)
    if inspected.returncode != 0:
        lines = inspected.stderr.strip().splitlines() or [f"{path}: inspect failed"]
        raise BadInput(lines[-1])
    layout = json.loads(inspected.stdout).get("layout", "file")
    if layout != "file":
        raise BadInput(f"{path}: a sharded model ({layout}); only one weight file is compared")


def run_experiment(cmd):
    """loadbench experiment's exit status; its output goes to stderr, so that stdout holds only
    the twins' table. Ctrl-C reaches it from the terminal and it ends by itself, keeping every
    finished run; SIGTERM is passed on to it."""
    child = subprocess.Popen(cmd, stdout=sys.stderr, **measuring.CHILD)
    signal.signal(signal.SIGTERM, lambda *_: child.send_signal(signal.SIGTERM))
    while True:
        try:
            return child.wait()
        except KeyboardInterrupt:
            continue


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="scripts/fio-compare.sh", description=__doc__,
                                     usage=argparse.SUPPRESS,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file", metavar="FILE", nargs="?", help="one weight file")
    parser.add_argument("--reps", type=int, help="rounds (default: the experiment's 6)")
    parser.add_argument("--out", help="results folder (default results/fio-compare-<UTC time>)")
    parser.add_argument("--bin", default=os.path.join(REPO, "build", "loadbench"),
                        help="the loadbench binary (default: build/loadbench of this checkout)")
    parser.add_argument("--experiment", action="store_true",
                        help="print the experiment (with FILE: the one that would run) and exit")
    args = parser.parse_args(argv)
    if args.reps is not None and args.reps < 1:
        parser.error("--reps must be at least 1")
    if args.file is None and not args.experiment:
        parser.error("FILE is required (or --experiment for the shipped experiment)")
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.file is None:
        sys.stdout.write(experiment_text(SHIPPED_FILE))
        return 0
    path, binary = os.path.abspath(args.file), os.path.abspath(args.bin)
    try:
        check_file(path)
        text = experiment_text(["# given to scripts/fio-compare.sh, in place of the 2 GiB file",
                                f"path = {json.dumps(path)}"])
        if args.experiment:
            sys.stdout.write(text)
            return 0
        check_tools(path, binary)
    except BadInput as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 2
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out = os.path.abspath(args.out or os.path.join("results", "fio-compare-" + stamp))
    with tempfile.TemporaryDirectory(prefix="fio-compare-") as folder:
        experiment = os.path.join(folder, "fio-compare.toml")
        with open(experiment, "w") as f:
            f.write(text)
        cmd = [binary, "experiment", experiment, "--out", out, "--no-report"]
        status = run_experiment(cmd + (["--reps", str(args.reps)] if args.reps else []))
    runs = os.path.join(out, "runs.jsonl")
    if status == 2 or not os.path.exists(runs):  # refused (another experiment's folder...)
        return status
    with open(runs) as f:
        records = [json.loads(line) for line in f if line.endswith("\n")]
    sys.stdout.write(table_text(paired_rows(records), records))
    print(f"{PROG}: results in {out}", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
