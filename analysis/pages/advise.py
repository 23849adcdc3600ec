"""`loadbench advise FILE`: for this file on this machine and its storage, which strategy and
options load it fastest, cold and warm, and at what peak memory?

It probes the file's own device (`loadbench probe` with its scratch file in the file's folder,
then `loadbench probe --storage here` there for the reads per second the device sustains;
--probe-size 256 MiB: about 20 s on a 2-core VM), reads the file (`loadbench inspect --json`)
and the strategies (`loadbench list --json`), ranks every strategy and the options that
matter, cold and warm, by the load model of `make machines` with each one's peak memory, then
measures the --top fastest and fread in paired rounds (`loadbench run --cache both --reps N`)
and sets predicted against measured. It writes advise.md and advise.json into OUT, which is
also the run's results folder (the probes in OUT/probe and OUT/probe-storage).
docs/advise.md says how it predicts.

The binary: LOADBENCH_BIN (`loadbench advise` sets it), else build/loadbench of this checkout,
else `loadbench` on PATH."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from analysis.core.results import ResultsError, guard, json_default, load, records
from analysis.core.units import parse_size, size_text
from analysis.models import advise as model
from analysis.models.advise_measured import compare
from analysis.sections import base
from analysis.sections.advise import (Answer, Context, Facts, Measured, Ranking, answer,
                                      figures_text, measured_table, ranking_table, text_table)

PROG = "loadbench advise"
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = """examples:
  loadbench advise data/llama-2GiB.wlf
  loadbench advise model.safetensors --cache warm --top 2 --reps 10 --out results/advise-model
"""
RUN_OVERHEAD_S = 0.3  # a run's own cost beyond its load (worker start, cache drop), here


class Failed(Exception):
    """A command of the binary that failed: its exit code and its one line."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


class Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2, as every bad input of the suite
        print(f"{PROG}: {message}", file=sys.stderr)
        sys.exit(2)


def _count(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"a whole number of at least 1, got {text!r}")
    return int(text)


def _size(text: str) -> str:
    try:
        parse_size(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e))
    return text


def binary() -> str:
    """The loadbench binary (the module's docstring); ResultsError naming LOADBENCH_BIN."""
    given = os.environ.get("LOADBENCH_BIN")
    if given:
        if os.access(given, os.X_OK):
            return given
        raise ResultsError(f"LOADBENCH_BIN={given}: no executable there")
    here = os.path.join(REPO, "build", "loadbench")
    found = here if os.access(here, os.X_OK) else shutil.which("loadbench")
    if not found:
        raise ResultsError(f"no loadbench binary: set LOADBENCH_BIN (none at {here}, none on PATH)")
    return found


def call(args: list[str], what: str, env: dict | None = None, quiet: bool = True) -> str:
    """The binary's stdout for `args`; Failed with its exit code and its last line on stderr
    where it fails. Interrupted, it waits for the command, which ends by itself (exit 130)."""
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE if quiet else None,
                         text=True, env=env)
    while True:
        try:
            out, err = p.communicate()
            break
        except KeyboardInterrupt:
            continue  # the command got the signal too; its own ending is kept
    if p.returncode:
        last = (err or "").strip().splitlines()[-1:] or [f"exit {p.returncode}"]
        message = last[0].split(": ", 1)[1] if last[0].startswith("loadbench ") else last[0]
        raise Failed(p.returncode, message if quiet else f"{what}: exit {p.returncode}")
    return out


def probes(bin_: str, args, out: str) -> tuple[dict, str]:
    """The probes' env.jsons (path -> object): --probe's, else a machine probe and a storage
    probe of the file's folder into OUT, cached nowhere (the machine's cached probe stays as it
    was); and a line saying what was read and how long it took."""
    if args.probe:
        return {p: _read_env(p) for p in args.probe}, "given: " + ", ".join(args.probe)
    folder = os.path.dirname(os.path.abspath(args.file))
    found, took = {}, []
    with tempfile.TemporaryDirectory(prefix="advise-cache-") as cache:
        env = dict(os.environ, XDG_CACHE_HOME=cache)
        for name, extra in (("probe", []), ("probe-storage", ["--storage", "here"])):
            path, t0 = os.path.join(out, name), time.monotonic()
            try:
                call([bin_, "probe", "--dir", folder, "--size", args.probe_size, "--out", path,
                      "--json", *extra], "probe", env)
            except Failed as e:
                if not extra:
                    raise Failed(e.code, f"probe of {folder}: {e} (--probe ENV.json gives one)")
                took.append(f"storage probe failed ({e}): the device's reads per second unknown")
                continue
            found[os.path.join(path, "env.json")] = _read_env(path)
            took.append(f"{name} {time.monotonic() - t0:.1f} s")
    return found, (f"{', '.join(took)} ({size_text(parse_size(args.probe_size))} scratch file in "
                   f"{folder}): {', '.join(found)}")


def _read_env(path: str) -> dict:
    path = os.path.join(path, "env.json") if os.path.isdir(path) else path
    try:
        with open(path, encoding="utf-8") as f:
            env = json.load(f)
    except (OSError, ValueError) as e:
        raise ResultsError(f"{path}: cannot read a probe: {e}")
    if not isinstance(env, dict) or not isinstance(env.get("probe"), dict):
        raise ResultsError(f"{path}: no probe (an env.json of `loadbench probe`)")
    return env


def predict(bin_: str, args, out: str) -> dict:
    """The file's facts, the probes, the ranking, the requests' note and the picks."""
    inspected = json.loads(call([bin_, "inspect", "--json", args.file], "inspect"))
    facts = model.file_facts(args.file, inspected)
    strategies = json.loads(call([bin_, "list", "--json"], "list"))
    os.makedirs(out, exist_ok=True)  # only for a model: bad input writes nothing
    envs, probe_line = probes(bin_, args, out)
    machine = model.machine(envs, facts.device)
    caches = model.CACHES if args.cache == "both" else (args.cache,)
    t = model.predict(model.candidates(strategies, machine.figures.thp), facts, machine, caches)
    req = model.requests(t, machine)
    if req["bound"]:  # read sizes matter: rank them too
        t = model.predict(model.candidates(strategies, machine.figures.thp, bound=True), facts,
                          machine, caches)
        req = model.requests(t, machine)
    picks = model.pick(t, args.top)
    known = set(t["spec"])
    specs = picks + ([model.BASELINE] if model.BASELINE in known else [])
    return {"facts": facts, "machine": machine, "ranking": t, "requests": req, "picks": picks,
            "specs": specs, "probe_line": probe_line, "caches": caches,
            "file_line": f"{facts.path}: {facts.format}, {size_text(facts.file_bytes)}, "
                         f"{facts.tensors} tensors, device {facts.device or '?'}"}


def estimate(report: dict, reps: int) -> tuple[int, float]:
    """The runs of the measurement and their seconds: predicted loads plus RUN_OVERHEAD_S each."""
    t = report["ranking"]
    chosen = t[t["spec"].isin(report["specs"])]
    runs = len(chosen) * reps
    return runs, float(chosen["predicted_s"].fillna(1.0).sum() * reps + runs * RUN_OVERHEAD_S)


def measure(bin_: str, args, out: str, report: dict) -> int:
    """`loadbench run` of the picks and the baseline into OUT (its progress on stderr), tuned
    where the machine lets it as `make run` is (`--tune auto`: untuned, free page reporting makes
    runs into fresh memory bimodal); its exit code (1: some run failed; the others counted)."""
    cmd = [bin_, "run", "--file", args.file, "--strategies", ",".join(report["specs"]),
           "--cache", args.cache, "--reps", str(args.reps), "--out", out, "--tune", "auto"]
    env = dict(os.environ)
    if "--no-report" in call([bin_, "run", "--help"], "run --help"):
        cmd.append("--no-report")
    else:
        env["LOADBENCH_NO_REPORT"] = "1"
    try:
        call(cmd, "run", env, quiet=False)
        return 0
    except Failed as e:
        if e.code != 1 or not os.path.exists(os.path.join(out, "runs.jsonl")):
            raise
        return 1


def _state(env: dict) -> str:
    system, stab = env.get("system") or {}, env.get("stability") or {}
    tuned = {True: "tuned", False: "untuned"}.get(system.get("tuned"), "state not recorded")
    busy = (stab.get("busy") or {}).get("cpu_percent")
    procs = ", ".join(f"{p.get('comm')} {p.get('cpu_percent', 0):.0f}%"
                      for p in stab.get("busy_processes") or [])
    said = f"; other work used {busy:.0f}% of a CPU before the runs ({procs})" if busy else ""
    waited = stab.get("waited_s")
    said += f"; {waited:.0f} s of waiting for it to settle" if waited else ""
    return f"{tuned} (free page reporting {system.get('page_reporting', '?')}){said}"


def console_prediction(report: dict) -> str:
    parts = [f"file: {report['file_line']}", f"probe: {report['probe_line']}",
             f"figures: {figures_text(report['machine'])}",
             f"requests: {report['requests']['text']}"]
    if report["machine"].figures.lacks:
        parts.append(f"missing: {report['machine'].figures.lacks}")
    for cache in report["caches"]:
        parts += ["", f"predicted, {cache} (fastest first; a shared rank is a tie within 1%):",
                  text_table(ranking_table(report["ranking"], cache))]
    return "\n".join(parts)


def write(report: dict, out: str) -> None:
    """advise.md and advise.json into `out`."""
    ctx = Context(report)
    sections = [Answer(ctx), Facts(ctx), *[Ranking(ctx, c) for c in report["caches"]],
                Measured(ctx)]
    title = f"# Advice: {os.path.basename(report['facts'].path)}"
    with open(os.path.join(out, "advise.md"), "w", encoding="utf-8") as f:
        f.write("\n\n".join(p for p in [title, *base.render(sections)] if p) + "\n")
    with open(os.path.join(out, "advise.json"), "w", encoding="utf-8") as f:
        json.dump(as_json(report), f, indent=1, default=json_default)


def as_json(report: dict) -> dict:
    def rows(frame):
        return None if frame is None else records(frame)
    m = report["machine"]
    return {"file": dataclasses.asdict(report["facts"]), "probes": m.sources,
            "figures": m.figures.figures, "thp": m.figures.thp, "lacks": m.figures.lacks,
            "pages_per_fault": m.pages_per_fault, "requests": report["requests"],
            "ranking": rows(report["ranking"].drop(columns=["tie_key"])),
            "picks": report["picks"], "measured_specs": report["specs"],
            "measured": rows(report.get("measured")), "answer": answer(report),
            "run": report.get("run_line"), "seconds": report.get("seconds")}


def advise(args) -> int:
    t0 = time.monotonic()
    if not os.path.exists(args.file):
        raise ResultsError(f"{args.file}: no such file")
    bin_ = binary()
    out = args.out or os.path.join("results", time.strftime("advise-%Y%m%dT%H%M%SZ",
                                                            time.gmtime()))
    held = ["runs.jsonl"] + ([] if args.probe else ["probe", "probe-storage"])
    for name in (f for f in held if os.path.exists(os.path.join(out, f))):
        raise ResultsError(f"{os.path.join(out, name)}: already there (give a fresh --out)")
    report = predict(bin_, args, out)
    say = print if not args.json else (lambda *a, **k: None)
    say(console_prediction(report))
    code = 0
    if not args.no_measure:
        runs, seconds = estimate(report, args.reps)
        wait = os.environ.get("LOADBENCH_SETTLE_WAIT", "60")
        say(f"\nmeasuring {', '.join(report['specs'])} ({args.cache}, {args.reps} rounds, paired "
            f"with {model.BASELINE}): {runs} runs, about {seconds:.0f} s, and up to {wait} s "
            "before them while the machine is busy", flush=True)
        t1 = time.monotonic()
        try:
            code = measure(bin_, args, out, report)
        except Failed as e:
            write(report, out)
            raise Failed(e.code, f"{e}; the prediction alone is in {out}/advise.md")
        results = load(out)
        report["measured"] = compare(results, report["ranking"], report["specs"])
        report["run_line"] = (f"{args.reps} rounds of {', '.join(report['specs'])}, paired with "
                              f"{model.BASELINE}, in {time.monotonic() - t1:.0f} s; the machine: "
                              f"{_state(results.env)}")
    report["seconds"] = round(time.monotonic() - t0, 1)
    write(report, out)
    if args.json:
        print(json.dumps(as_json(report), indent=1, default=json_default))
        return code
    if report.get("measured") is not None:
        say(f"\npredicted against measured: {report['run_line']}")
        say(text_table(measured_table(report["measured"])))
    say("\n" + "\n".join(answer(report)))
    say(f"written: {out}/advise.md, {out}/advise.json in {report['seconds']:.0f} s")
    return code


def main(argv: list[str]) -> int:
    p = Parser(prog=PROG, description=__doc__, epilog=EXAMPLES,
               formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", help="the model's weight file (WLF, safetensors, GGUF)")
    p.add_argument("--reps", type=_count, default=6, help="rounds of the measurement (default 6: "
                   "the fewest that give a paired 95%% interval)")
    p.add_argument("--out", help="the folder for the probes, the runs, advise.md and advise.json "
                                 "(default results/advise-<UTC time>)")
    p.add_argument("--no-measure", action="store_true", help="stop after the prediction")
    p.add_argument("--cache", choices=["cold", "warm", "both"], default="both",
                   help="the cache states predicted and measured (default both)")
    p.add_argument("--top", type=_count, default=3, help="how many of the fastest predicted "
                   "strategies to measure beside fread (default 3)")
    p.add_argument("--json", action="store_true", help="print advise.json instead of the tables")
    p.add_argument("--probe", action="append", metavar="ENV",
                   help="an env.json (or its folder) of `loadbench probe` or `loadbench probe "
                        "--storage here` to use instead of probing; repeatable")
    p.add_argument("--probe-size", type=_size, default="256MiB",
                   help="the probes' scratch file (default 256MiB; 64MiB takes half the time)")
    args = p.parse_args(argv)

    def body():
        try:
            return advise(args)
        except Failed as e:
            print(f"{PROG}: {' '.join(str(e).split())}", file=sys.stderr)
            return e.code
    return guard(PROG, [args.file], body)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
