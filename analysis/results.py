"""The one loader of a results folder: env.json, runs.jsonl and the timelines they name.

Every analysis module reads results through `load`, so that all of them agree on which runs
count: only `ok` runs enter the statistics; failed, invalid and unsupported runs are kept aside
and counted, never silently dropped.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

import pandas as pd

# The columns a group of comparable runs shares: one strategy with its options, one cache
# state, one file, one number of workers, one memory limit.
GROUP = ["strategy_spec", "cache", "file", "procs", "memory_limit_bytes"]


class ResultsError(Exception):
    """A results folder that cannot be read: the message names the file and the reason."""


@dataclass
class Results:
    folder: str
    env: dict
    runs: pd.DataFrame      # every record, one row per run, in file order
    ok: pd.DataFrame        # the runs that count
    excluded: pd.DataFrame  # the others, counted: GROUP + strategy, status, count, errors

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


def load(folder: str) -> Results:
    runs_path = os.path.join(folder, "runs.jsonl")
    env_path = os.path.join(folder, "env.json")
    if not os.path.exists(runs_path):
        raise ResultsError(f"{runs_path}: no such file (is {folder} a results folder?)")
    env = {}
    if os.path.exists(env_path):
        try:
            with open(env_path, encoding="utf-8") as f:
                env = json.load(f)
        except json.JSONDecodeError as e:
            raise ResultsError(f"{env_path}: not JSON ({e.msg})") from None
    runs = pd.DataFrame(_read_runs(runs_path))
    if runs.empty:
        raise ResultsError(f"{runs_path}: holds no runs")
    for column, default in (("procs", 1), ("memory_limit_bytes", 0)):
        if column not in runs:
            runs[column] = default
        runs[column] = runs[column].fillna(default).astype("int64")
    if "strategy_spec" not in runs:
        runs["strategy_spec"] = runs["strategy"]
    ok = runs[runs["status"] == "ok"].copy()
    others = runs[runs["status"] != "ok"]
    excluded = (
        others.groupby(GROUP + ["strategy", "status"], dropna=False)
        .agg(count=("status", "size"), errors=("error", lambda e: sorted(set(map(str, e)))))
        .reset_index()
    )
    return Results(folder=folder, env=env, runs=runs, ok=ok, excluded=excluded)
