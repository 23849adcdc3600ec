"""Every analysis command reads a damaged results folder without a traceback: the committed
folders (results/reference, the fixtures: peers, profiles, GPU; many readers and adaptive
rounds as test_readers and conftest write them), cut to a few records, mutated at random by
fixed seeds (a field's type changed, keys deleted, runs.jsonl cut mid-line or given junk lines,
env.json made a string, empty, not JSON or deleted, adaptive.json changed, the timelines
deleted); each command then either makes its report (exit 0) or
stops with exit 2 and one line on stderr that names the mutated file (and field). A failing
seed reproduces alone: `pytest analysis/tests/test_mutations.py -k "seed7"`.

The commands run as `python3 -m analysis.X` does (`main(argv)`, its exit code, its stdout and
stderr), each in a process of its own forked from one runner, so that the imports (seconds on
a busy machine) are paid once; a signal shows as a negative exit code, as with subprocess.
"""

import glob
import json
import os
import random
import shutil
import subprocess
import sys

import numpy as np
import pytest
from conftest import FILE, write_rounds
from test_readers import many_records

from analysis.core import results, schema
from analysis.sections import noise

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FIXTURES = os.path.join(REPO, "analysis", "tests", "fixtures")
REFERENCE = os.path.join(REPO, "results", "reference", "quick")
ADAPTIVE = {"target": 0.1, "min_rounds": 6, "max_rounds": 30, "budget_s": 0, "rounds": 3,
            "elapsed_s": 12.5, "met": False, "stopped": "max rounds",
            "comparisons": [{"file": FILE, "cache": "cold", "procs": 1, "memory_limit_bytes": 0,
                             "strategy_spec": "mmap_seq", "baseline": "fread", "n": 3,
                             "ratio": 0.1, "low": None, "high": None, "half_width": None,
                             "met": False, "significant": False}]}
JUNK_VALUES = ["abc", "", [1, 2], {"x": 1}, None, 7, -1, 0, 2.5, True]
JUNK_LINES = [b"\x00\xff\xfe\x80 garbage \x9c", b"[1,2]", b'"text"', b"", b"{", b"42",
              b"null"]
BAD_ENV = [b'"text"', b"", b'{"host": ', b"[1, 2]", b"3", b"null", b"\xff\xfe"]
SEEDS = range(24)
# The seeds whose folders the other commands read too: five bases, five mutations.
OTHERS = (1, 5, 10, 12, 15)

# The runner: imports the commands once, then runs each job in a forked child as
# `python3 -m MODULE ARGS` would, its stdout and stderr to files; prints each exit code.
RUNNER = r"""
import importlib, json, os, sys, traceback
jobs = json.load(sys.stdin)
modules = {j["module"]: importlib.import_module(j["module"]) for j in jobs}
for job in jobs:
    pid = os.fork()
    if pid == 0:
        for fd, path in ((1, job["stdout"]), (2, job["stderr"])):
            os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), fd)
        try:
            code = modules[job["module"]].main(job["args"])
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else int(e.code is not None)
        except BaseException:
            traceback.print_exc()
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    print(json.dumps([job["id"], os.waitstatus_to_exitcode(status)]), flush=True)
"""


def trimmed(src: str, dst: str, keep: int) -> None:
    """A copy of results folder `src` with its first `keep` records and their files."""
    os.makedirs(dst)
    with open(os.path.join(src, "runs.jsonl"), encoding="utf-8") as f:
        lines = f.readlines()[:keep]
    with open(os.path.join(dst, "runs.jsonl"), "w", encoding="utf-8") as f:
        f.writelines(lines)
    for name in ("env.json", "adaptive.json"):
        if os.path.exists(os.path.join(src, name)):
            shutil.copy(os.path.join(src, name), os.path.join(dst, name))
    for record in map(json.loads, lines):
        for rel in (record.get("timeline"), (record.get("profile") or {}).get("folded")):
            if rel and os.path.exists(os.path.join(src, rel)):
                os.makedirs(os.path.dirname(os.path.join(dst, rel)), exist_ok=True)
                shutil.copy(os.path.join(src, rel), os.path.join(dst, rel))


def readers_base(dst: str) -> None:
    """Many readers: a single reader, 4 replicated and 2 tp readers of an MPI job, a ceiling
    read, with the reference's env.json."""
    os.makedirs(dst)
    with open(os.path.join(dst, "runs.jsonl"), "w", encoding="utf-8") as f:
        f.writelines(json.dumps(r) + "\n" for r in many_records()[:8])
    shutil.copy(os.path.join(REFERENCE, "env.json"), dst)


# The folders mutated: a real run with timelines, peers (exec commands) in rounds, measured
# profiles with `after`, device strategies with ceiling reads, many readers, adaptive rounds
# with the stability check.
BASES = [lambda dst: trimmed(REFERENCE, dst, 6),
         lambda dst: trimmed(os.path.join(FIXTURES, "peers"), dst, 8),
         lambda dst: trimmed(os.path.join(FIXTURES, "profiles"), dst, 3),
         lambda dst: trimmed(os.path.join(FIXTURES, "gpu"), dst, 5),
         readers_base,
         lambda dst: write_rounds(dst, rounds=3, caches=("cold",), adaptive=ADAPTIVE,
                                  times={"fread": 10.0, "mmap_seq": 1.0})]


# --- the mutations: each changes the folder and says what it changed (file, fields) ----------

def _records(folder):
    with open(os.path.join(folder, "runs.jsonl"), "rb") as f:
        return f.read().split(b"\n")[:-1]


def _write_records(folder, lines):
    with open(os.path.join(folder, "runs.jsonl"), "wb") as f:
        f.write(b"".join(line + b"\n" for line in lines))


def _pick_record(lines, rng: random.Random) -> tuple[int, dict]:
    """A line that holds a record (not one a mutation before made junk), and its record."""
    def record(line):
        try:
            value = json.loads(line)
        except ValueError:
            return None
        return value if isinstance(value, dict) and value else None

    i = rng.choice([i for i, line in enumerate(lines) if record(line)])
    return i, record(lines[i])


def _pick_field(value: dict, rng: random.Random, spec: dict) -> tuple[dict, str, str]:
    """A key of `value`, or of one of its objects: (the object holding it, key, dotted name);
    three times in four one that the analysis reads (in `spec`, schema.RECORD or ENV)."""
    read = sorted(k for k in value if k in spec)
    key = rng.choice(read if read and rng.random() < 0.75 else sorted(value))
    inner, sub_spec = value[key], spec.get(key)
    if isinstance(inner, dict) and inner and rng.random() < 0.4:
        holder, sub, name = _pick_field(inner, rng, sub_spec if isinstance(sub_spec, dict)
                                        else {})
        return holder, sub, f"{key}.{name}"
    return value, key, key


def record_type(folder, rng):
    """A field of a record (or of one of its objects) given a value of another type."""
    lines = _records(folder)
    i, record = _pick_record(lines, rng)
    holder, key, name = _pick_field(record, rng, schema.RECORD)
    holder[key] = rng.choice(JUNK_VALUES)
    lines[i] = json.dumps(record).encode()
    _write_records(folder, lines)
    return "runs.jsonl", [name]


def record_delete(folder, rng):
    """One to three keys of a record deleted."""
    lines = _records(folder)
    i, record = _pick_record(lines, rng)
    gone = []
    for _ in range(rng.randint(1, 3)):
        holder, key, name = _pick_field(record, rng, schema.RECORD)
        del holder[key]
        gone.append(name)
    lines[i] = json.dumps(record).encode()
    _write_records(folder, lines)
    return "runs.jsonl", gone


def truncate(folder, rng):
    """runs.jsonl cut at a byte within its second half: a line cut short."""
    path = os.path.join(folder, "runs.jsonl")
    with open(path, "rb") as f:
        data = f.read()
    with open(path, "wb") as f:
        f.write(data[:rng.randrange(len(data) // 2, len(data) - 1)])
    return "runs.jsonl", []


def junk_lines(folder, rng):
    """One to three lines that are no run record put between the records."""
    lines = _records(folder)
    for _ in range(rng.randint(1, 3)):
        lines.insert(rng.randrange(len(lines) + 1), rng.choice(JUNK_LINES))
    _write_records(folder, lines)
    return "runs.jsonl", []


def _change_json(folder, rng, change):
    """`change` applied to a field of env.json or adaptive.json (where there is one)."""
    name, spec = rng.choice([(n, s) for n, s in (("env.json", schema.ENV),
                                                  ("adaptive.json", schema.ADAPTIVE))
                             if os.path.exists(os.path.join(folder, n))])
    with open(os.path.join(folder, name), encoding="utf-8") as f:
        value = json.load(f)
    holder, key, field = _pick_field(value, rng, spec)
    change(holder, key)
    with open(os.path.join(folder, name), "w", encoding="utf-8") as f:
        json.dump(value, f)
    return name, [field]


def env_type(folder, rng):
    """A field of env.json or adaptive.json (or of one of its objects) given a value of
    another type."""
    return _change_json(folder, rng, lambda o, k: o.update({k: rng.choice(JUNK_VALUES)}))


def env_delete(folder, rng):
    """A key of env.json or adaptive.json, or of one of its objects, deleted."""
    return _change_json(folder, rng, lambda o, k: o.pop(k))


def env_bad(folder, rng):
    """env.json (or adaptive.json) made a string, a list, a number, empty, cut short, or no
    text."""
    name = rng.choice([n for n in ("env.json", "adaptive.json")
                       if os.path.exists(os.path.join(folder, n))])
    with open(os.path.join(folder, name), "wb") as f:
        f.write(rng.choice(BAD_ENV))
    return name, []


def env_gone(folder, rng):
    os.remove(os.path.join(folder, "env.json"))
    return "env.json", []


def timelines_gone(folder, rng):
    shutil.rmtree(os.path.join(folder, "timelines"), ignore_errors=True)
    return "timelines", []


MUTATIONS = [record_type, record_delete, truncate, junk_lines, env_type, env_delete, env_bad,
             env_gone, timelines_gone]
# Those that a second or third mutation may follow (one that deletes env.json comes last).
FOLLOWERS = [record_type, record_delete, junk_lines, env_type, timelines_gone]


def mutate(folder: str, seed: int) -> list[tuple[str, list[str]]]:
    """The seed's mutations, applied: each case one of MUTATIONS in turn, sometimes with one or
    two more; what each changed."""
    rng = random.Random(seed)
    first = MUTATIONS[seed % len(MUTATIONS)]
    extra = rng.sample(FOLLOWERS, rng.choice([0, 0, 1, 2]))
    return [m(folder, rng) for m in extra + [first]]


# --- running the commands --------------------------------------------------------------------

@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    return run_all(tmp_path_factory.mktemp("mutations"))


def run_all(root) -> dict:
    """Per seed: its mutations, and per command its (exit code, stdout, stderr, output)."""
    for i, make in enumerate(BASES):
        make(str(root / f"base{i}"))
    cases, jobs = {}, []
    for seed in SEEDS:
        base = str(root / f"base{seed % len(BASES)}")
        folder = str(root / f"seed{seed}")
        shutil.copytree(base, folder)
        cases[seed] = {"mutations": mutate(folder, seed), "runs": {}}
        commands = {"report": ([folder], os.path.join(folder, "report.md"))}
        if seed in OTHERS:
            out = str(root / f"compare{seed}")
            commands.update(compare=([base, folder, "--out", out],
                                     os.path.join(out, "compare.md")),
                            carryover=([folder], None), aa=([folder], None),
                            machines=([base, folder, "--out", out + "-machines"],
                                      os.path.join(out + "-machines", "machines.md")),
                            trim=([folder, str(root / f"trim{seed}")],
                                  str(root / f"trim{seed}" / "runs.jsonl")))
        for command, (args, output) in commands.items():
            job = {"id": f"{seed}/{command}", "module": f"analysis.{command}", "args": args,
                   "stdout": str(root / f"{seed}-{command}.out"),
                   "stderr": str(root / f"{seed}-{command}.err")}
            jobs.append(job)
            cases[seed]["runs"][command] = job, output
    p = subprocess.run([sys.executable, "-c", RUNNER], input=json.dumps(jobs), cwd=REPO,
                       env={**os.environ, "MPLBACKEND": "Agg"}, capture_output=True,
                       text=True, timeout=900)
    assert p.returncode == 0, p.stderr
    codes = dict(json.loads(line) for line in p.stdout.splitlines())
    for case in cases.values():
        for command, (job, output) in case["runs"].items():
            with open(job["stdout"]) as out, open(job["stderr"]) as err:
                case["runs"][command] = (codes[job["id"]], out.read(), err.read(), output)
    return cases


def named(stderr: str, mutations) -> bool:
    """Whether the one line names a mutated file, and the field where one was changed."""
    return any(file in stderr and (not fields or any(f in stderr for f in fields))
               for file, fields in mutations)


@pytest.mark.parametrize("seed", SEEDS, ids=[f"seed{s}" for s in SEEDS])
def test_a_damaged_folder_is_reported_or_refused_in_one_line(outcomes, seed):
    case = outcomes[seed]
    for command, (rc, stdout, stderr, output) in case["runs"].items():
        what = f"{command} after {case['mutations']}: rc {rc}\n{stderr[-3000:]}"
        assert "Traceback" not in stderr, what
        # carryover and aa say "nothing to test" with 1.
        assert rc in ((0, 1, 2) if output is None else (0, 2)), what
        if rc == 2:
            assert stderr.count("\n") == 1 and stderr.endswith("\n"), what
            assert stderr.startswith(f"analysis.{command}: "), what
            assert named(stderr, case["mutations"]), what
        elif output is not None:
            assert os.path.exists(output), what
        else:
            assert stdout, what


# --- the schema, checked directly ------------------------------------------------------------

def test_a_value_of_the_wrong_type_is_dropped_and_named():
    found = []
    spec = {"a": schema.NUMBER, "b": {"c": schema.TEXT}, "d": [schema.NUMBER],
            "e": {"*": schema.INTEGER}, "f": (schema.LIST, schema.TEXT), "g": {"h": schema.TEXT}}
    value = {"a": "1.5", "b": {"c": 3, "x": [1]}, "d": [1, "x"], "e": {"k": 2, "m": True},
             "f": "cmd", "g": None, "other": {"kept": "as is"}}
    assert schema.normalize(value, spec, found) == {
        "b": {"x": [1]}, "e": {"k": 2}, "f": "cmd", "other": {"kept": "as is"}}
    assert found == [("a", 'expected a number, got "1.5"'),
                     ("b.c", "expected a string, got 3"),
                     ("d[1]", 'expected a number, got "x"'),
                     ("e.m", "expected an integer, got true")]
    assert schema.normalize([1], spec, found) is schema.MISSING
    assert found[-1] == ("", "expected an object, got [1]")
    assert schema.normalize(None, spec, []) is None  # null: not measured, never a problem


def write_folder(folder, lines, env=b"{}"):
    os.makedirs(folder, exist_ok=True)
    (folder / "runs.jsonl").write_bytes(b"".join(line + b"\n" for line in lines))
    if env is not None:
        (folder / "env.json").write_bytes(env)


RECORD = {"run_id": "r1", "strategy": "fread", "strategy_spec": "fread", "cache": "cold",
          "file": "/m.wlf", "file_bytes": 100, "status": "ok", "checksum_ok": True,
          "wall_s": 1.0, "rep": 0}


def test_lines_and_fields_that_cannot_be_read_are_listed(tmp_path):
    good = json.dumps(RECORD).encode()
    bad = json.dumps({**RECORD, "run_id": "r2", "wall_s": "abc", "procs": "2",
                      "details": ["x"]}).encode()
    write_folder(tmp_path, [good, b"[1,2]", b"", b"\xff junk", bad, b'{"run_id": "cut'],
                 env=b'{"host": "a string", "rounds": {"baseline": 3}}')
    # The last line has no end of line: a run cut off.
    (tmp_path / "runs.jsonl").write_bytes((tmp_path / "runs.jsonl").read_bytes()[:-1])
    (tmp_path / "adaptive.json").write_text('{"target": "x", "comparisons": [{"ratio": "a"}, 1]}')
    r = results.load(str(tmp_path))
    assert list(r.runs["run_id"]) == ["r1", "r2"] and list(r.ok["run_id"]) == ["r1"]
    assert np.isnan(r.runs["wall_s"].iloc[1]) and r.runs["procs"].tolist() == [1, 1]
    assert r.env == {"rounds": {}}
    assert [p.text(str(tmp_path)) for p in r.problems] == [
        'env.json: field "host": expected an object, got "a string"',
        'env.json: field "rounds.baseline": expected a string, got 3',
        "runs.jsonl line 2: not a JSON object ([1, 2]): skipped",
        "runs.jsonl line 3: empty: skipped",
        "runs.jsonl line 4: not JSON: skipped",
        'runs.jsonl line 5: field "wall_s": expected a number, got "abc"',
        'runs.jsonl line 5: field "procs": expected an integer, got "2"',
        'runs.jsonl line 5: field "details": expected an object, got ["x"]',
        "runs.jsonl line 6: cut short (no end of line: the run was cut off): skipped",
        'adaptive.json: field "target": expected a number, got "x"',
        'adaptive.json: field "comparisons[0].ratio": expected a number, got "a"',
        'adaptive.json: field "comparisons[1]": expected an object, got 1']
    assert r.adaptive == {} and noise.adaptive_md(r.adaptive, 1) == ""
    assert r.excluded[["status", "count"]].values.tolist() == [[results.UNTIMED, 1]]
    md = results.problems_md(r)
    assert md.startswith("**Read with problems**") and md.count("\n- ") == 12


def test_what_no_table_can_do_without_is_one_error_naming_line_and_field(tmp_path):
    write_folder(tmp_path, [json.dumps(RECORD).encode(),
                            json.dumps({**RECORD, "cache": ["cold"]}).encode()])
    with pytest.raises(results.ResultsError, match='runs.jsonl line 2: field "cache": '
                                                   'expected one of "cold", "warm", got'):
        results.load(str(tmp_path))
    write_folder(tmp_path, [json.dumps({k: v for k, v in RECORD.items() if k != "strategy"})
                            .encode()])
    with pytest.raises(results.ResultsError, match='line 1: field "strategy": missing'):
        results.load(str(tmp_path))
    write_folder(tmp_path, [b"[]", b"junk"], env=None)
    with pytest.raises(results.ResultsError, match=r"runs.jsonl: holds no runs \(2 lines"):
        results.load(str(tmp_path))


def test_the_last_resort_is_one_line_and_exit_2(capsys):
    def broken():
        raise ValueError("x\n  y")

    assert results.guard("analysis.x", ["a", "b"], broken) == 2
    assert capsys.readouterr().err == "analysis.x: a, b: cannot read: ValueError: x y\n"


def test_every_committed_folder_reads_without_a_problem():
    """The schema says what the harness writes, old folders included: no false alarm."""
    folders = [os.path.dirname(p) for pattern in ("results/reference/*/runs.jsonl",
                                                  "analysis/tests/fixtures/*/runs.jsonl")
               for p in glob.glob(os.path.join(REPO, pattern))]
    assert len(folders) >= 7
    for folder in folders:
        assert results.load(folder).problems == [], folder
