"""The summary table as other tools take it: one row per condition and strategy (a group of
comparable ok runs, results.GROUP), with the figures a reader of a benchmark expects (n,
median, mean, standard deviation, min, max of the load's time), the median's exact 95%
interval, GB/s, the paired ratio to the condition's baseline with its interval (in the one text
of core/ratios.py as well), peak RSS, bytes read and faults. It is what `analysis.report
--export` writes (`export`, in hyperfine's spirit: its JSON's `results` carry `command`,
`mean`, `stddev`, `median`, `min`, `max`, `times`, `user`, `system`) and what `load(DIR)
.summary` gives (analysis/stats/folder.py).

The figures are aggregates.summarize's (the report's tables'); mean, standard deviation and the
times are of the same ok runs' `wall_s` (one per reader: a run of several readers gives several).
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd

from analysis.core.export import Table
from analysis.core.ratios import ratio_cells
from analysis.core.results import GROUP, REPLICATED, Results, spec_label
from analysis.core.units import size_text
from analysis.stats import aggregates

# Condition columns shown only where some row is not the default (a storage made, several
# readers, a memory limit, a link, a fabric), each with its default.
OPTIONAL = {"procs": 1, "pattern": REPLICATED, "memory_limit_bytes": 0, "link": "",
            "fabric": "", "storage": ""}
TIMES = ["n", "median_s", "mean_s", "stddev_s", "min_s", "max_s", "ci_low_s", "ci_high_s"]
RATIO = ["baseline", "ratio", "ratio_low", "ratio_high", "ratio_text", "verdict"]
COUNTS = ["gb_per_s", "peak_rss_bytes", "read_bytes", "major_faults", "minor_faults"]
LEAD = ["name", "strategy", "strategy_spec", "cache", "file", "file_bytes"]


def _spread(results: Results) -> pd.DataFrame:
    """Per group the ok runs' times in file order, their mean and standard deviation (n - 1;
    NaN for one run), and the mean user and system CPU seconds (NaN where none was recorded)."""
    rows = []
    for key, g in results.ok.groupby(GROUP, sort=False):
        wall = g["wall_s"].to_numpy(dtype=float)
        cpu = {c: pd.to_numeric(g[c], errors="coerce").mean() if c in g else np.nan
               for c in ("user_s", "sys_s")}
        rows.append({**dict(zip(GROUP, key)), "times": [float(x) for x in wall],
                     "mean_s": float(wall.mean()),
                     "stddev_s": float(wall.std(ddof=1)) if len(wall) > 1 else np.nan,
                     "user_mean_s": cpu["user_s"], "sys_mean_s": cpu["sys_s"]})
    return pd.DataFrame(rows, columns=GROUP + ["times", "mean_s", "stddev_s", "user_mean_s",
                                               "sys_mean_s"])


def summary(results: Results, table: pd.DataFrame | None = None) -> pd.DataFrame:
    """The table, one row per group (aggregates.summarize's order: cache state, then median);
    `table` is that summary when the caller has it. Its columns: LEAD (`name`, the row's name
    as the report gives it; `file` without its folder), the OPTIONAL conditions where some row
    differs from the default, TIMES, RATIO (the paired ratio to the baseline, 1 on the
    baseline's own row; NaN where no round paired them), COUNTS, and `times`, `user_mean_s`,
    `sys_mean_s`. Empty (with these columns) for a folder without ok runs."""
    table = aggregates.summarize(results) if table is None else table
    if table.empty:
        return pd.DataFrame(columns=LEAD + TIMES + RATIO + COUNTS + ["times"])
    t = table.merge(_spread(results), on=GROUP, how="left")
    cells = [ratio_cells(r) for _, r in t.iterrows()]
    out = t.assign(name=[spec_label(r) for _, r in t.iterrows()],
                   file=t["file"].map(lambda f: os.path.basename(str(f))),
                   ratio=t["time_ratio"], ratio_low=t["time_ratio_ci_low"],
                   ratio_high=t["time_ratio_ci_high"],
                   ratio_text=[c[0] for c in cells],
                   verdict=[("baseline" if r["is_baseline"] else c[1]) for c, (_, r)
                            in zip(cells, t.iterrows())])
    shown = [c for c, default in OPTIONAL.items() if (out[c] != default).any()]
    return out[LEAD + shown + TIMES + RATIO + COUNTS + ["times", "user_mean_s",
                                                         "sys_mean_s"]].reset_index(drop=True)


def _seconds(x) -> str:
    return "" if pd.isna(x) else f"{x:.3f}"


def _mean_sd(r: dict) -> str:
    if pd.isna(r["stddev_s"]):
        return _seconds(r["mean_s"])
    return f"{r['mean_s']:.3f} ± {r['stddev_s']:.3f}"


def _md_columns(frame: pd.DataFrame) -> list:
    bases = {b for b in frame["baseline"].dropna()}
    base = bases.pop() if len(bases) == 1 else "baseline"
    columns = [("strategy", lambda r: r["name"]), ("cache", lambda r: r["cache"])]
    columns += [(c, lambda r, c=c: str(r[c])) for c in OPTIONAL if c in frame]
    if frame["file"].nunique() > 1:
        columns.append(("file", lambda r: r["file"]))
    return columns + [
        ("n", lambda r: str(r["n"])),
        ("median s (95% CI)", lambda r: _seconds(r["median_s"]) + (
            "" if pd.isna(r["ci_low_s"]) else f" ({r['ci_low_s']:.3f}–{r['ci_high_s']:.3f})")),
        ("mean ± σ s", _mean_sd),
        ("min s", lambda r: _seconds(r["min_s"])), ("max s", lambda r: _seconds(r["max_s"])),
        (f"× {base}'s time, paired (95% CI)", lambda r: r["ratio_text"]),
        ("paired test", lambda r: "" if r["verdict"] == "baseline" else r["verdict"]),
        ("peak RSS", lambda r: "" if pd.isna(r["peak_rss_bytes"])
         else size_text(r["peak_rss_bytes"]))]


def _hyperfine(r: dict) -> dict:
    """A row as a result of hyperfine's JSON (seconds), then every column of the table."""
    return {"command": r["name"], "mean": r["mean_s"], "stddev": r["stddev_s"],
            "median": r["median_s"], "user": r["user_mean_s"], "system": r["sys_mean_s"],
            "min": r["min_s"], "max": r["max_s"], "times": r["times"],
            **{k: v for k, v in r.items() if k not in ("times", "user_mean_s", "sys_mean_s")}}


def export(frame: pd.DataFrame, folder: str) -> Table:
    """The table for `--export` (core/export.py): every column but the times in CSV, the
    report's cells in Markdown, hyperfine's results in JSON with the folder."""
    rows = [{k: int(v) if k in COUNTS[1:] and not pd.isna(v) and float(v).is_integer() else v
             for k, v in row.items()} for row in frame.to_dict(orient="records")]
    csv_columns = [c for c in frame.columns if c != "times"]
    return Table(rows=rows, csv_columns=csv_columns, md_columns=_md_columns(frame),
                 document={"folder": folder, "results": [_hyperfine(r) for r in rows]})

