"""The fleet's designs against an engine's (torch_bcast by default), paired by round: at the
largest N the engine ran under each pattern, file, cache and [cluster] rates, each other
series' round duration over the engine's round of the same rep, as every paired comparison of
the report is made (analysis/stats/paired.py: the Hodges–Lehmann estimate of the log ratio
and its signed-rank interval, exact level at least 95%, none under 6 pairs); below 1, the
design was faster. The project's best design there is the one of the project's (not an
engine's) with the lowest median round."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from analysis.stats import aggregates as stats, paired
from analysis.stats.fleet_bounds import ENGINES

ENGINE = "torch_bcast"
WHERE = ["file", "cache", "pattern", "nic", "uplink"]
COLUMNS = WHERE + ["nodes", "strategy_spec", "label", "kind", "design", "seconds",
                   "engine_spec", "engine_seconds", "pairs", "ratio", "ratio_low", "ratio_high",
                   "bounded", "significant", "verdict", "level", "best"]


def _by_rep(rounds: pd.DataFrame) -> pd.Series:
    """A series' round durations by rep (the median where a rep ran twice)."""
    return rounds.groupby("rep")["duration_s"].median()


def _row(key: tuple, n: int, series: pd.DataFrame, engine: pd.DataFrame) -> dict:
    """One series (its complete rounds at N) over the engine's rounds of the same reps."""
    both = pd.DataFrame({"t": _by_rep(series), "b": _by_rep(engine)}).dropna()
    iv = paired.signed_rank_interval(np.log(both["t"] / both["b"]).to_numpy())
    first = series.iloc[0]
    return {**dict(zip(WHERE, key)), "nodes": n,
            **{c: first[c] for c in ("strategy_spec", "label", "kind", "design")},
            "seconds": stats.median_of(series["duration_s"]),
            "engine_spec": engine["strategy_spec"].iloc[0],
            "engine_seconds": stats.median_of(engine["duration_s"]), "pairs": iv.n,
            "ratio": math.exp(iv.estimate) if iv.n else math.nan,
            "ratio_low": math.exp(iv.low), "ratio_high": math.exp(iv.high),
            "bounded": iv.bounded, "significant": iv.significant, "verdict": paired.verdict(iv),
            "level": iv.level, "best": False}


def versus_engine(rounds: pd.DataFrame, engine: str = ENGINE) -> pd.DataFrame:
    """COLUMNS: per (file, cache, pattern, nic, uplink) where the engine has complete rounds,
    at the largest N it has them, every other series' paired ratio to it (`_row`) and, marked
    `best`, the project's design with the lowest median there. Empty without the engine."""
    done = rounds[rounds["duration_s"].notna()]
    rows = []
    for key, g in done.groupby(WHERE, sort=False):
        mine = g[g["kind"] == engine]
        if mine.empty:
            continue
        n = int(mine["nodes"].max())
        at = g[g["nodes"] == n]
        base = at[at["kind"] == engine]
        base = base[base["strategy_spec"] == base["strategy_spec"].iloc[0]]
        found = [_row(key, n, s, base) for spec, s in at.groupby("strategy_spec", sort=False)
                 if spec != base["strategy_spec"].iloc[0]]
        project = [r for r in found if r["design"] not in ENGINES and r["pairs"]]
        if project:
            min(project, key=lambda r: r["seconds"])["best"] = True
        rows += found
    return pd.DataFrame(rows, columns=COLUMNS)
