"""The one loader of a results folder: env.json, runs.jsonl, adaptive.json and the timelines
they name.

Every analysis module reads results through `load`, so that all of them agree on which runs
count: only `ok` runs whose checksum was verified (checksum_ok true) enter the statistics;
failed, invalid and unsupported runs, and ok runs whose bytes were not verified, are kept aside
and counted, never silently dropped. Ceiling records (strategy "ceiling": a raw read of the
file once per round, the device's speed at that moment) are not runs of a strategy: they are
kept apart in `ceiling`, never in `runs`, `ok` or `excluded`.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

import pandas as pd

# The columns a group of comparable runs shares: one strategy with its options, one role (shm's
# creator and attacher do different work: "" for runs without one), one cache state, one file,
# one number of workers, one memory limit.
GROUP = ["strategy_spec", "role", "cache", "file", "procs", "memory_limit_bytes"]
# What every strategy of a round shares: the runs of one rep of a condition are a round.
CONDITION = ["file", "cache", "procs", "memory_limit_bytes"]
CEILING = "ceiling"
# The status an ok run is counted under when its bytes were not verified.
UNVERIFIED = "ok, checksum not verified"


class ResultsError(Exception):
    """A results folder that cannot be read: the message names the file and the reason."""


@dataclass
class Results:
    folder: str
    env: dict
    runs: pd.DataFrame      # every record of a strategy, one row per run, in file order
    ok: pd.DataFrame        # the runs that count
    # The others, counted: GROUP + strategy, status (UNVERIFIED for an ok run whose checksum_ok
    # is not true), count, errors.
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


def spec_label(row) -> str:
    """The strategy spec with its role, as the console shows it: `shm[creator]`."""
    role = row.get("role")
    return row["strategy_spec"] + (f"[{role}]" if isinstance(role, str) and role else "")


def _split(runs: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(ok, excluded): the ok runs whose checksum was verified, and the others counted per
    group and status; an ok run whose checksum_ok is false or null (or absent) is counted as
    UNVERIFIED, with what checksum_ok said as its reason."""
    checked = (runs["checksum_ok"] if "checksum_ok" in runs
               else pd.Series(None, index=runs.index, dtype=object))
    counts = (runs["status"] == "ok") & checked.eq(True)
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
    ok, excluded = _split(runs)
    return Results(folder=folder, env=env, runs=runs, ok=ok, excluded=excluded, ceiling=ceiling,
                   adaptive=_read_json(os.path.join(folder, "adaptive.json")))
