"""The one loader of a results folder: env.json, runs.jsonl, adaptive.json and the timelines
they name.

Every analysis module reads results through `load`, so that all of them agree on which runs
count (`_rule`, the one place that says it): `ok` runs whose checksum was verified
(checksum_ok true) enter the statistics, and so do `ok` runs of an exec command that sent no
checksum (verify "none"), marked unverified wherever they show; failed, invalid and
unsupported runs, and a loadbench strategy's ok runs whose bytes were not verified, are kept
aside and counted, never silently dropped. Ceiling records (strategy "ceiling": a raw read of the
file once per round, the device's speed at that moment) are not runs of a strategy: they are
kept apart in `ceiling`, never in `runs`, `ok` or `excluded`; so are the ceilings of a shaped
link (strategy "link_ceiling": iperf3 over the link, in `link_ceiling`) and of the server
(strategy "server_ceiling": the model fetched with the link's shaping lifted, in
`server_ceiling`), which analysis/stats/link.py reads.

Older and damaged folders are read as far as they go: every field is checked against
analysis/core/schema.py once, here, so that no module meets a value of another type; what could not
be read is left out and listed in `problems` (`problems_md` renders it for a report). Only what
every table needs is an error (ResultsError, one line naming the file, the line and the field),
and `guard` makes every command's failure one line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from analysis.core import schema

# The columns a group of comparable runs shares: one strategy with its options, one role (shm's
# creator and attacher do different work: "" for runs without one), one cache state, one file,
# one number of workers (readers), one read pattern (what each reader loads), one memory limit,
# one network link (`link`: the shaped link's rate as the experiment wrote it, "1gbit",
# "unshaped"; "" for records without one, every folder from before links), one cluster's fabric
# (`fabric`: the [cluster] rates the run ran under, its record's `nic` and `uplink`, in words
# by `fabric`; "" for records without them, every run outside a cluster): a resumed cluster
# experiment whose sessions ran under other rates reuses the reps, and its rounds never pool;
# and one storage (`storage`: the label of the storage the tool made for the run, "xfs",
# "xfs:preset=gp3"; "" for a run on the data folder as it is, `here`, and every folder from
# before storages): rounds are per storage, so that two storages are never pooled or paired.
GROUP = ["strategy_spec", "role", "cache", "file", "procs", "pattern", "memory_limit_bytes",
         "link", "fabric", "storage"]
# What every strategy of a round shares: the runs of one rep of a condition are a round.
CONDITION = ["file", "cache", "procs", "pattern", "memory_limit_bytes", "link", "fabric",
             "storage"]
# What a run on the data folder as it is (no `storage` in its record) is called where
# storages are set side by side.
HERE = "here"
# The read pattern of a record without one: every reader loads the whole model (a single
# reader's records, and those from before patterns, have none).
REPLICATED = "replicated"
CEILING = "ceiling"
# The ceilings measured beside the strategies on a shaped link: no strategies either.
LINK_CEILING = "link_ceiling"
SERVER_CEILING = "server_ceiling"
# Every record that is a ceiling, not a run of a strategy: in no strategy table.
CEILINGS = (CEILING, LINK_CEILING, SERVER_CEILING)
# A command of the user's own (strategy "exec", spec "exec:label=LABEL"), run and measured like
# a strategy.
EXEC = "exec"
# The status a loadbench strategy's ok run is left out under when its bytes were not verified.
UNVERIFIED = "ok, checksum not verified"
# The status an ok run is left out under when it has no time (wall_s missing, or not above 0).
UNTIMED = "ok, no wall time"
# What a row's name carries when its runs count but no checksum checked their bytes.
UNVERIFIED_MARK = "(unverified)"


# A strategy's flags the analysis reads (its record's `strategy_flags`, as `loadbench list`
# shows them, comma-separated): its views point into a mapping of the file; it copies into
# buffers of its own; it loads into GPU memory.
MAPS_FILE = "maps-file"
ALLOCATES = "allocates"
DEVICE = "device"

# The columns of a timeline CSV the report draws.
TIMELINE = ["t_s", "rss_bytes", "file_cached_bytes", "read_bytes"]


class ResultsError(Exception):
    """A results folder that cannot be read: the message names the file and the reason."""


@dataclass(frozen=True)
class Problem:
    """Something of a results folder that could not be read and was left out: the file, the
    line (of runs.jsonl), the field (dotted: `host.cores`) and what was wrong."""
    path: str
    line: int | None
    field: str | None
    what: str

    def text(self, folder: str = "") -> str:
        where = os.path.relpath(self.path, folder) if folder else self.path
        where += f" line {self.line}" if self.line else ""
        return where + (f': field "{self.field}"' if self.field else "") + f": {self.what}"


@dataclass
class Results:
    folder: str
    env: dict
    # Every record of a strategy, one row per run, in file order; `verified`: checksum_ok true;
    # `counted`: the run is one of `ok` (the rule of `_rule`).
    runs: pd.DataFrame
    ok: pd.DataFrame        # the runs that count (an exec command's may be unverified)
    # The others, counted: GROUP + strategy, status (UNVERIFIED for a loadbench strategy's ok
    # run whose checksum_ok is not true), count, errors.
    excluded: pd.DataFrame
    # The ceiling reads, every status, in file order (empty without them).
    ceiling: pd.DataFrame = field(default_factory=pd.DataFrame)
    # The link's ceilings (iperf3) and the server's, every status, in file order.
    link_ceiling: pd.DataFrame = field(default_factory=pd.DataFrame)
    server_ceiling: pd.DataFrame = field(default_factory=pd.DataFrame)
    adaptive: dict | None = None  # adaptive.json, when the experiment ran with reps = "auto"
    # What could not be read and was left out (lines skipped, values of the wrong type).
    problems: list[Problem] = field(default_factory=list)
    # What is derived from `runs` and read by several sections (paired.run_values), kept with
    # the frame it came from: a new `runs` frame makes it again.
    derived: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def kept(self, name: str, make):
        """make(self), made once per `runs` frame; a copy, so that a caller may change it."""
        frame, value = self.derived.get(name, (None, None))
        if frame is not self.runs:
            value = make(self)
            self.derived[name] = (self.runs, value)
        return value.copy()

    def timeline(self, run_id: str) -> pd.DataFrame | None:
        """The run's timeline CSV (TIMELINE as numbers), or None when it has none, none of
        the load (t_s from 0), or it cannot be read (noted in `problems`)."""
        row = self.runs.loc[self.runs["run_id"] == run_id]
        if row.empty or not isinstance(row.iloc[0].get("timeline"), str):
            return None
        path = os.path.join(self.folder, row.iloc[0]["timeline"])
        if not os.path.isfile(path):
            return None
        try:
            t = pd.read_csv(path)
        except (ValueError, OSError) as e:  # pandas' parser errors are ValueErrors
            self.problems.append(Problem(path, None, None, f"not a timeline CSV ({e})"))
            return None
        gone = [c for c in TIMELINE if c not in t]
        if gone:
            self.problems.append(Problem(path, None, gone[0], "missing"))
            return None
        t = t.assign(**{c: pd.to_numeric(t[c], errors="coerce") for c in TIMELINE})
        return t if (t["t_s"] >= 0).any() else None


def clean(value):
    """A value for JSON: numpy scalars as Python ones, NaN and infinities as None."""
    if hasattr(value, "item") and not isinstance(value, (dict, list)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def records(frame: pd.DataFrame) -> list[dict]:
    """A table's rows for JSON (`clean` values)."""
    return [{k: clean(v) for k, v in row.items()} for row in frame.to_dict(orient="records")]


def json_default(value):
    """For json.dump: numpy scalars as Python numbers (NaN as null is left to the caller)."""
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _record(line: str, path: str, number: int, problems: list[Problem]) -> dict | None:
    """The run record of one line of runs.jsonl, its fields checked (schema.RECORD: a value of
    the wrong type is dropped and noted); None for a line that is none (noted). A record
    without a field of schema.REQUIRED is a ResultsError naming the line and the field."""
    why = ("cut short (no end of line: the run was cut off)" if not line.endswith("\n") else
           "empty" if not line.strip() else None)
    try:
        value = json.loads(line) if why is None else None
    except (ValueError, RecursionError):
        why = "not JSON"
    if why is None and not isinstance(value, dict):
        why = f"not a JSON object ({schema.shown(value, 20)})"
    if why:
        problems.append(Problem(path, number, None, why + ": skipped"))
        return None
    found: list = []
    record = schema.normalize(value, schema.RECORD, found)
    for name in schema.REQUIRED:
        if record.get(name) is None:
            what = next((w for f, w in found if f == name), "missing")
            raise ResultsError(Problem(path, number, name, what).text())
    problems += [Problem(path, number, f, w) for f, w in found]
    if record.get("run_id") is None:
        record["run_id"] = f"line {number}"
    return record


def _read_runs(path: str, problems: list[Problem]) -> list[dict]:
    with open(path, encoding="utf-8", errors="replace") as f:
        records = [_record(line, path, number, problems) for number, line in enumerate(f, 1)]
    return [r for r in records if r is not None]


def _read_json(path: str, spec, problems: list[Problem]):
    """The file's value, its fields checked against `spec`; None when there is no such file or
    it is not JSON, or not of the spec's kind (noted in `problems`)."""
    if not os.path.exists(path):
        return None
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            value = json.load(f)
    except (ValueError, RecursionError) as e:
        problems.append(Problem(path, None, None, f"not JSON ({getattr(e, 'msg', e)}): "
                                                  "read as absent"))
        return None
    found: list = []
    value = schema.normalize(value, spec, found)
    problems += [Problem(path, None, f or None, w) for f, w in found]
    return None if value is schema.MISSING else value


def role(details) -> str:
    """The run's role (details.role: shm's "creator" or "attacher"), "" when it has none: a
    string, so that groupby keeps the runs without one."""
    if isinstance(details, dict) and isinstance(details.get("role"), str):
        return details["role"]
    return ""


def fabric(nic, uplink) -> str:
    """A cluster run's fabric in words, from its record's [cluster] rates as the experiment
    wrote them: `nic 200mbit, uplink 400mbit`; "" for a record with neither."""
    return ", ".join(f"{name} {rate}" for name, rate in (("nic", nic), ("uplink", uplink))
                     if isinstance(rate, str) and rate)


def network(row, lead: str) -> str:
    """The network a condition's runs crossed, as its labels show it after `lead`: its shaped
    link (`link 1gbit`) or its cluster's fabric (`nic 200mbit, uplink 400mbit`); "" for
    neither (a row without them, or with a null there), so that its label reads as before."""
    link, rates = (row.get(k) if isinstance(row.get(k), str) else "" for k in ("link", "fabric"))
    text = ", ".join(p for p in (f"link {link}" if link else "", rates) if p)
    return lead + text if text else ""


def has_flag(flags, flag: str) -> bool:
    """Whether a `strategy_flags` text ("eager,allocates") names `flag`; false for a record
    without flags (an exec command's, a ceiling's, one from before flags were recorded)."""
    return isinstance(flags, str) and flag in flags.split(",")


def exec_label(spec: str) -> str | None:
    """The label of an exec command's spec ("exec:label=LABEL"), None for any other spec."""
    name, *options = str(spec).split(":")
    if name != EXEC:
        return None
    labels = [o[len("label="):] for o in options if o.startswith("label=")]
    return labels[0] if labels else str(spec)


# An exec command's time, by the region it covers (its record's exec.timed): never the load
# alone, as a loadbench strategy's is.
TIMED_MARK = {"command": "(whole command)", "region": "(own region)"}


def timed(exec_object) -> str:
    """An exec record's timed region ("command" or "region"); "" for any other record."""
    if isinstance(exec_object, dict) and exec_object.get("timed") in TIMED_MARK:
        return exec_object["timed"]
    return ""


def spec_label(row) -> str:
    """The row's name, as the console shows it: the strategy spec (an exec command's label)
    with its role (`shm[creator]`), the region an exec command's time covers (TIMED_MARK) and
    UNVERIFIED_MARK where the row says `verified` false."""
    spec = row["strategy_spec"]
    text = exec_label(spec) or spec
    role = row.get("role")
    text += f"[{role}]" if isinstance(role, str) and role else ""
    region = row.get("timed")
    if isinstance(region, str) and region in TIMED_MARK:
        text += " " + TIMED_MARK[region]
    verified = row.get("verified")
    if isinstance(verified, (bool, np.bool_)) and not verified:
        text += " " + UNVERIFIED_MARK
    return text


def _column(runs: pd.DataFrame, name: str) -> pd.Series:
    """The column, or nulls where no record has it."""
    return runs[name] if name in runs else pd.Series(None, index=runs.index, dtype=object)


def _rule(runs: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
    """(counts, verified) per record, the rule every table follows: a run is verified when it
    is ok and checksum_ok is true; it counts when it is verified, or when it is an ok run of an
    exec command that sent no checksum (verify "none", checksum_ok absent), which then counts
    unverified, and in both cases only with a time (wall_s above 0). Any other ok run (a
    loadbench strategy's, checksum_ok false or null; one without a time) does not count."""
    checked = _column(runs, "checksum_ok")
    method = _column(runs, "verify")
    ok = runs["status"] == "ok"
    verified = ok & checked.eq(True)
    no_checksum = (runs["strategy"] == EXEC) & method.eq("none") & checked.isna()
    return (verified | (ok & no_checksum)) & _timed(runs), verified


def _timed(runs: pd.DataFrame) -> pd.Series:
    return pd.to_numeric(_column(runs, "wall_s"), errors="coerce") > 0


def _split(runs: pd.DataFrame, counts: pd.Series) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(ok, excluded): the runs that count (`_rule`), and the others counted per group and
    status; an ok run that does not count is counted as UNVERIFIED, with what checksum_ok said
    as its reason, or as UNTIMED when it has no time."""
    checked = _column(runs, "checksum_ok")
    others = runs[~counts].copy()
    unverified = others["status"] == "ok"
    untimed = unverified & ~_timed(others)
    others.loc[unverified, "status"] = UNVERIFIED
    others.loc[unverified, "error"] = checked[~counts][unverified].eq(False).map(
        {True: "checksum_ok false: the bytes did not match",
         False: "checksum_ok null: the bytes were not checked"})
    others.loc[untimed, "status"] = UNTIMED
    others.loc[untimed, "error"] = "wall_s missing or not above 0"
    excluded = (
        others.groupby(GROUP + ["strategy", "status"], dropna=False)
        .agg(count=("status", "size"), errors=("error", lambda e: sorted(set(map(str, e)))))
        .reset_index()
    )
    return runs[counts].copy(), excluded


def _read_env(folder: str, problems: list[Problem]) -> dict:
    path = os.path.join(folder, "env.json")
    if not os.path.exists(path):
        problems.append(Problem(path, None, None, "no such file: the machine and how the runs "
                                                  "were measured are unknown"))
    return _read_json(path, schema.ENV, problems) or {}


def _defaults(records: pd.DataFrame) -> pd.DataFrame:
    """The records with what older ones lack filled in: one reader, no memory limit, the
    replicated pattern (always, for a single reader), no link, no fabric and no storage (""; a
    cluster run's `fabric` its `nic` and `uplink` in words), the strategy as its spec, the role from
    details, and null for any other field of schema.RECORD that is no object, so that every
    such column exists."""
    for column in schema.COLUMNS:
        records[column] = _column(records, column)
    for column, default in (("procs", 1), ("memory_limit_bytes", 0)):
        records[column] = _column(records, column).fillna(default).astype("int64")
    # A read pattern says what each of several readers loaded: a single reader loads it all.
    records["pattern"] = _column(records, "pattern").where(records["procs"] > 1).fillna(
        REPLICATED)
    # Strings, so that groupby keeps the records without a link or a fabric.
    records["link"] = _column(records, "link").fillna("")
    records["fabric"] = [fabric(n, u) for n, u in zip(records["nic"], records["uplink"])]
    records["storage"] = _column(records, "storage").fillna("")
    records["strategy_spec"] = _column(records, "strategy_spec").fillna(records["strategy"])
    records["role"] = _column(records, "details").map(role)
    records["timed"] = _column(records, "exec").map(timed)
    # The time order of the records: appended as each run ends (older folders' started_at has
    # whole seconds only).
    records["order"] = range(len(records))
    return records


def _profiles(records: pd.DataFrame, folder: str, problems: list[Problem]) -> None:
    """A profile whose file is not in the folder, or without a sampling rate (hz above 0), is
    none: its record's `profile` null and `profile_error` saying why (noted)."""
    for i, p in _column(records, "profile").items():
        if not isinstance(p, dict) or not isinstance(p.get("folded"), str):
            continue
        path = os.path.join(folder, p["folded"])
        hz = p.get("hz")
        why = ("no such file" if not os.path.isfile(path) else
               None if isinstance(hz, (int, float)) and hz > 0 else "no sampling rate (hz)")
        if why:
            problems.append(Problem(path, None, None, f"{why}: the run counts as not profiled"))
            records.loc[i, "profile_error"] = f"its profile {p['folded']}: {why}"
            records.loc[i, "profile"] = None


def load(folder: str) -> Results:
    """The folder's results, read as far as they can be (`problems` says what could not);
    ResultsError, one line naming the file and the field, where nothing can be reported."""
    runs_path = os.path.join(folder, "runs.jsonl")
    if not os.path.exists(runs_path):
        raise ResultsError(f"{runs_path}: no such file (is {folder} a results folder?)")
    problems: list[Problem] = []
    env = _read_env(folder, problems)
    records = pd.DataFrame(_read_runs(runs_path, problems))
    if records.empty:
        skipped = sum(p.line is not None for p in problems)
        raise ResultsError(f"{runs_path}: holds no runs"
                           + (f" ({skipped} lines skipped, none a run record)" if skipped else ""))
    records = _defaults(records)
    _profiles(records, folder, problems)
    ceiling, link_ceiling, server_ceiling = (
        records[records["strategy"] == kind].reset_index(drop=True) for kind in CEILINGS)
    runs = records[~records["strategy"].isin(CEILINGS)].reset_index(drop=True)
    runs["counted"], runs["verified"] = _rule(runs)
    ok, excluded = _split(runs, runs["counted"])
    adaptive = _read_json(os.path.join(folder, "adaptive.json"), schema.ADAPTIVE, problems)
    return Results(folder=folder, env=env, runs=runs, ok=ok, excluded=excluded, ceiling=ceiling,
                   link_ceiling=link_ceiling, server_ceiling=server_ceiling, adaptive=adaptive,
                   problems=problems)


def problems_md(r: Results, most: int = 20) -> str:
    """What could not be read, as a note for a report: "" when everything could."""
    if not r.problems:
        return ""
    lines = [f"- {p.text(r.folder)}" for p in r.problems[:most]]
    if len(r.problems) > most:
        lines.append(f"- … and {len(r.problems) - most} more")
    return (f"**Read with problems** (`{r.folder}`): what follows could not be read as "
            "docs/results-format.md says and is left out: a line that is no run record is "
            "skipped, a value of the wrong type is read as missing (an empty cell, `?`), a "
            "file that cannot be read as absent.\n\n" + "\n".join(lines))


def guard(prog: str, folders: list[str], body) -> int:
    """Runs a command's `body` (no arguments; its exit code) so that it never ends in a
    traceback: a ResultsError, or as a last resort any other exception, is one line on stderr,
    `prog: ...`, and exit code 2. Warnings are held back until the command has succeeded."""
    try:
        with warnings.catch_warnings(record=True) as caught:
            code = body()
    except ResultsError as e:
        return _fail(prog, str(e))
    except Exception as e:  # noqa: BLE001: the last resort, one line instead of a traceback
        return _fail(prog, f"{', '.join(folders)}: cannot read: {type(e).__name__}: {e}")
    for w in caught:
        warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    return code


def _fail(prog: str, message: str) -> int:
    print(f"{prog}: {' '.join(message.split())}", file=sys.stderr)
    return 2


class Arguments(argparse.ArgumentParser):
    """A command's argument parser whose every refusal (a missing folder argument, an unknown
    option, a value a `type` refuses) is one line on stderr, `prog: what`, and exit code 2, as
    `guard`'s: never the usage block."""

    def error(self, message: str):
        raise SystemExit(_fail(self.prog, f"{message} (--help says how)"))

    def refuse(self, message: str):
        """A refusal of the command's own (a value no `type` checks): one line, exit 2."""
        raise SystemExit(_fail(self.prog, message))
