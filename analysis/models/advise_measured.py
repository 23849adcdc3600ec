"""Predicted against measured, for `loadbench advise`: the candidates it measured (the top few
of analysis/models/advise.py's ranking and the baseline, fread, in paired rounds, cold and
warm) set beside their predictions.

Per cache state and strategy spec: the predicted seconds; the median of the counted runs
(analysis/core/results.py's rule) with the exact distribution-free 95% interval of the median
(analysis/stats/aggregates.py, none under 6 runs); the time over the baseline's, paired within
the rounds (analysis/stats/paired.py: the Hodges-Lehmann estimate with the exact signed-rank
interval, none under 6 rounds), beside the predicted time over the baseline's predicted one;
`error`, predicted over measured (below 1: the load took longer than predicted); and memory:
the predicted load's own resident memory against the median of each run's peak RSS less its
RSS at the start (the worker's own), and the predicted cached bytes of the file against the
median of its share resident after the load times its size. A spec none of whose runs counted
shows their most common status instead of a time."""

from __future__ import annotations

import math

import pandas as pd

from analysis.core.results import Results
from analysis.models.advise import BASELINE
from analysis.stats import aggregates, paired


def _median(frame: pd.DataFrame, column: str) -> float:
    return aggregates.median_of(frame[column]) if column in frame else math.nan


def _paired(table: pd.DataFrame, spec: str, cache: str) -> dict:
    row = table[(table["strategy_spec"] == spec) & (table["cache"] == cache)] \
        if len(table) else table
    if row.empty:
        return {"pairs": 0, "ratio": math.nan, "ratio_low": math.nan, "ratio_high": math.nan,
                "bounded": False, "verdict": ""}
    r = row.iloc[0]
    return {"pairs": int(r["n"]), "ratio": r["ratio"], "ratio_low": r["ratio_low"],
            "ratio_high": r["ratio_high"], "bounded": bool(r["bounded"]), "verdict": r["verdict"]}


def compare(results: Results, ranking: pd.DataFrame, specs: list[str]) -> pd.DataFrame:
    """One row per cache state of the ranking and spec of `specs` (the baseline last): the
    module's docstring's columns."""
    table = paired.paired_table(results)
    base = str(table["baseline"].iloc[0]) if len(table) else BASELINE
    runs, ok = results.runs, results.ok
    rows = []
    for cache in dict.fromkeys(ranking["cache"]):
        guess = ranking[ranking["cache"] == cache].set_index("spec")
        for spec in specs:
            g = ok[(ok["strategy_spec"] == spec) & (ok["cache"] == cache)]
            every = runs[(runs["strategy_spec"] == spec) & (runs["cache"] == cache)]
            if every.empty:
                continue
            low, high = aggregates.median_interval(g["wall_s"].astype(float))
            measured = aggregates.median_of(g["wall_s"])
            predicted = guess["predicted_s"].get(spec, math.nan)
            base_predicted = guess["predicted_s"].get(base, math.nan)
            growth = g["peak_rss_bytes"] - g["start_rss_bytes"] \
                if {"peak_rss_bytes", "start_rss_bytes"} <= set(g) else pd.Series(dtype=float)
            rows.append({
                "cache": cache, "spec": spec, "baseline": base, "runs": len(g),
                "status": "ok" if len(g) else str(every["status"].mode().iloc[0]),
                "predicted_s": predicted, "measured_s": measured, "measured_low": low,
                "measured_high": high, "error": predicted / measured if measured else math.nan,
                "predicted_ratio": predicted / base_predicted if spec != base else 1.0,
                **_paired(table, spec, cache), "is_baseline": spec == base,
                "predicted_rss_bytes": guess["rss_bytes"].get(spec, math.nan),
                "measured_rss_bytes": aggregates.median_of(growth),
                "predicted_cache_bytes": guess["cache_bytes"].get(spec, math.nan),
                "measured_cache_bytes": _median(g, "resident_after") * _median(g, "file_bytes"),
            })
    return pd.DataFrame(rows)
