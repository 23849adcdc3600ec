"""The one loader of a results folder: env.json, runs.jsonl, adaptive.json and the timelines
they name.

Every analysis module reads results through `load`, so that all of them agree on which runs
count (`_rule`, the one place that says it): `ok` runs whose checksum was verified
(checksum_ok true) enter the statistics, and so do `ok` runs of an exec command that sent no
checksum (verify "none"), marked unverified wherever they show; failed, invalid and
unsupported runs, and a loadbench strategy's ok runs whose bytes were not verified, are kept
aside and counted, never silently dropped. Ceiling records (strategy "ceiling": a raw read of the
file once per round, the device's speed at that moment) are not runs of a strategy: they are
kept apart in `ceiling`, never in `runs`, `ok` or `excluded`.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

# The columns a group of comparable runs shares: one strategy with its options, one role (shm's
# creator and attacher do different work: "" for runs without one), one cache state, one file,
# one number of workers (readers), one read pattern (what each reader loads), one memory limit.
GROUP = ["strategy_spec", "role", "cache", "file", "procs", "pattern", "memory_limit_bytes"]
# What every strategy of a round shares: the runs of one rep of a condition are a round.
CONDITION = ["file", "cache", "procs", "pattern", "memory_limit_bytes"]
# The read pattern of a record without one: every reader loads the whole model (a single
# reader's records, and those from before patterns, have none).
REPLICATED = "replicated"
CEILING = "ceiling"
# A command of the user's own (strategy "exec", spec "exec:label=LABEL"), run and measured like
# a strategy.
EXEC = "exec"
# The status a loadbench strategy's ok run is left out under when its bytes were not verified.
UNVERIFIED = "ok, checksum not verified"
# What a row's name carries when its runs count but no checksum checked their bytes.
UNVERIFIED_MARK = "(unverified)"


class ResultsError(Exception):
    """A results folder that cannot be read: the message names the file and the reason."""


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
    adaptive: dict | None = None  # adaptive.json, when the experiment ran with reps = "auto"

    def timeline(self, run_id: str) -> pd.DataFrame | None:
        """The run's timeline CSV, or None when it has none."""
        row = self.runs.loc[self.runs["run_id"] == run_id]
        if row.empty or not isinstance(row.iloc[0].get("timeline"), str):
            return None
        path = os.path.join(self.folder, row.iloc[0]["timeline"])
        return pd.read_csv(path) if os.path.exists(path) else None


def json_default(value):
    """For json.dump: numpy scalars as Python numbers (NaN as null is left to the caller)."""
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _read_runs(path: str) -> list[dict]:
    records = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.endswith("\n"):
                break  # cut short by a crash: the harness drops it on resume, so do we
            try:
                record = json.loads(line)
            except json.JSONDecodeError as e:
                raise ResultsError(f"{path}:{number}: not JSON ({e.msg})") from None
            if not isinstance(record, dict) or "status" not in record:
                raise ResultsError(f"{path}:{number}: not a run record")
            records.append(record)
    return records


def _read_json(path: str) -> dict | None:
    """The file's object, or None when there is no such file."""
    if not os.path.exists(path):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except json.JSONDecodeError as e:
        raise ResultsError(f"{path}: not JSON ({e.msg})") from None


def role(details) -> str:
    """The run's role (details.role: shm's "creator" or "attacher"), "" when it has none: a
    string, so that groupby keeps the runs without one."""
    if isinstance(details, dict) and isinstance(details.get("role"), str):
        return details["role"]
    return ""


def exec_label(spec: str) -> str | None:
    """The label of an exec command's spec ("exec:label=LABEL"), None for any other spec."""
    name, *options = str(spec).split(":")
    if name != EXEC:
        return None
    labels = [o[len("label="):] for o in options if o.startswith("label=")]
    return labels[0] if labels else str(spec)


def spec_label(row) -> str:
    """The row's name, as the console shows it: the strategy spec (an exec command's label)
    with its role (`shm[creator]`), and UNVERIFIED_MARK where the row says `verified` false."""
    spec = row["strategy_spec"]
    text = exec_label(spec) or spec
    role = row.get("role")
    text += f"[{role}]" if isinstance(role, str) and role else ""
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
    unverified. Any other ok run (a loadbench strategy's, checksum_ok false or null) does
    not count."""
    checked = _column(runs, "checksum_ok")
    method = _column(runs, "verify")
    ok = runs["status"] == "ok"
    verified = ok & checked.eq(True)
    no_checksum = (runs["strategy"] == EXEC) & method.eq("none") & checked.isna()
    return verified | (ok & no_checksum), verified


def _split(runs: pd.DataFrame, counts: pd.Series) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(ok, excluded): the runs that count (`_rule`), and the others counted per group and
    status; an ok run that does not count is counted as UNVERIFIED, with what checksum_ok said
    as its reason."""
    checked = _column(runs, "checksum_ok")
    others = runs[~counts].copy()
    unverified = others["status"] == "ok"
    others.loc[unverified, "status"] = UNVERIFIED
    others.loc[unverified, "error"] = checked[~counts][unverified].eq(False).map(
        {True: "checksum_ok false: the bytes did not match",
         False: "checksum_ok null: the bytes were not checked"})
    excluded = (
        others.groupby(GROUP + ["strategy", "status"], dropna=False)
        .agg(count=("status", "size"), errors=("error", lambda e: sorted(set(map(str, e)))))
        .reset_index()
    )
    return runs[counts].copy(), excluded


def load(folder: str) -> Results:
    runs_path = os.path.join(folder, "runs.jsonl")
    env_path = os.path.join(folder, "env.json")
    if not os.path.exists(runs_path):
        raise ResultsError(f"{runs_path}: no such file (is {folder} a results folder?)")
    env = _read_json(env_path) or {}
    records = pd.DataFrame(_read_runs(runs_path))
    if records.empty:
        raise ResultsError(f"{runs_path}: holds no runs")
    for column, default in (("procs", 1), ("memory_limit_bytes", 0)):
        if column not in records:
            records[column] = default
        records[column] = records[column].fillna(default).astype("int64")
    records["pattern"] = (records["pattern"].fillna(REPLICATED) if "pattern" in records
                          else REPLICATED)
    if "strategy_spec" not in records:
        records["strategy_spec"] = records["strategy"]
    if "error" not in records:
        records["error"] = None
    records["role"] = (records["details"] if "details" in records
                       else pd.Series(None, index=records.index, dtype=object)).map(role)
    # The time order of the records: appended as each run ends (older folders' started_at has
    # whole seconds only).
    records["order"] = range(len(records))
    is_ceiling = records["strategy"] == CEILING
    ceiling = records[is_ceiling].reset_index(drop=True)
    if not ceiling.empty and "gb_per_s" not in ceiling:
        ceiling["gb_per_s"] = float("nan")
    runs = records[~is_ceiling].reset_index(drop=True)
    runs["counted"], runs["verified"] = _rule(runs)
    ok, excluded = _split(runs, runs["counted"])
    return Results(folder=folder, env=env, runs=runs, ok=ok, excluded=excluded, ceiling=ceiling,
                   adaptive=_read_json(os.path.join(folder, "adaptive.json")))
