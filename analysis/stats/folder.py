"""A results folder as pandas tables, for a notebook or a script of one's own: `from analysis
import load; f = load(DIR)` (analysis/__init__.py hands this module's `load` out on first use,
so that no command pays for pandas it does not import).

Everything is read through the package's one reader (analysis/core/results.py), so that a
script counts the same runs as the report: `runs` (every record of a strategy, its `counted`
and `verified`), `ok` (the runs that count), `excluded` (the others, counted per group and
status with their reasons), the ceiling reads apart (`ceilings`, `link_ceilings`,
`server_ceilings`), `env` (env.json as a dict), `adaptive` (adaptive.json, or None),
`problems` (what could not be read, one sentence each); `summary`, the report's table one row
per condition and strategy (analysis/stats/rows.py, what `--export` writes), made on first use;
`timelines`, each run's timeline CSV by run id, read when asked for. The example in
analysis/README.md runs in analysis/tests/test_load.py.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping

import pandas as pd

from analysis.core import results as reader
from analysis.stats import rows


class Timelines(Mapping):
    """Run id -> that run's timeline (`t_s`, `rss_bytes`, `file_cached_bytes`, `read_bytes`,
    ..., as numbers), each CSV read when first asked for; the keys are the runs whose records
    name a timeline. A timeline that is missing or cannot be read is None (noted in the
    folder's `problems`)."""

    def __init__(self, r: reader.Results):
        self._results = r
        named = r.runs["timeline"].map(lambda t: isinstance(t, str)) if len(r.runs) else []
        self._ids = list(r.runs.loc[named, "run_id"]) if len(r.runs) else []
        self._read: dict = {}

    def __getitem__(self, run_id: str) -> pd.DataFrame | None:
        if run_id not in self._ids:
            raise KeyError(run_id)
        if run_id not in self._read:
            self._read[run_id] = self._results.timeline(run_id)
        return self._read[run_id]

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)


class Folder:
    """One results folder's tables (the module's docstring). `results` is the reader's own
    `Results`, for the package's functions (analysis.stats.paired.paired_table(f.results))."""

    def __init__(self, r: reader.Results):
        self.results = r
        self.path = r.folder
        self.env = r.env
        self.runs, self.ok, self.excluded = r.runs, r.ok, r.excluded
        self.ceilings, self.link_ceilings = r.ceiling, r.link_ceiling
        self.server_ceilings = r.server_ceiling
        self.adaptive = r.adaptive
        self.timelines = Timelines(r)

    @property
    def problems(self) -> list[str]:
        return [p.text(self.path) for p in self.results.problems]

    @functools.cached_property
    def summary(self) -> pd.DataFrame:
        return rows.summary(self.results)

    def __repr__(self) -> str:
        return (f"<loadbench results {self.path}: {len(self.runs)} runs, {len(self.ok)} ok, "
                f"{len(self.ceilings)} ceiling reads>")


def load(folder: str) -> Folder:
    """The results folder `folder` (it holds runs.jsonl) as tables; ResultsError, one line
    naming the file and the field, where it holds nothing to read (core/results.py's)."""
    return Folder(reader.load(str(folder)))
