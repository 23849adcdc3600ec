"""Aggregates of the runs that count, per group of comparable runs (strategy, options, role,
cache state, file, workers, memory limit): median, min, max, IQR, the exact distribution-free 95%
interval of the median (order statistics; none with fewer than 6 runs), GB/s, peak RSS, the
time ratio to the condition's baseline: paired, from the rounds both ran in
(analysis/stats/paired.py: the strategy's time over the baseline's, below 1 faster, the
Hodges–Lehmann estimate with its signed-rank 95% interval), with ceiling reads the strategy's
fraction of the device's speed and whether its median beat every ceiling read of its rounds
(analysis/stats/ceiling.py), and where the group's runs were profiled each cause's share of
its wall time, or of its CPU time when it has several threads (analysis/stats/causes.py).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import binom

from analysis.core.results import GROUP, REPLICATED, Results
from analysis.stats import causes, ceiling, paired

CONFIDENCE = 0.95

# What summarize takes from paired.paired_table, as its own column names.
PAIRED = {"baseline": "baseline", "n": "pairs", "ratio": "time_ratio",
          "ratio_low": "time_ratio_ci_low", "ratio_high": "time_ratio_ci_high",
          "bounded": "bounded", "significant": "significant", "verdict": "verdict",
          "half_width": "half_width"}
RATIO = ["time_ratio", "time_ratio_ci_low", "time_ratio_ci_high"]
DEVICE = ["of_device", "of_device_min", "of_device_max", "of_device_rounds"]


def load_or_process(group, column):
    """The timed region's count (load_<column>) where every run of the group has one, else the
    whole worker process's (<column>)."""
    load = "load_" + column
    if load in group and group[load].notna().all():
        return group[load]
    return group.get(column)


def median_rank(n: int) -> int:
    """k for the interval [x_(k), x_(n-k+1)] of the sorted x: the largest k such that it holds
    the median of any continuous distribution with probability 1 - 2 P(B <= k - 1) >=
    CONFIDENCE, B ~ Binomial(n, 1/2) the count of runs below the median; 0 when no k does."""
    k = np.arange(1, n // 2 + 1)
    reach = k[1 - 2 * binom.cdf(k - 1, n, 0.5) >= CONFIDENCE]
    return int(reach.max()) if reach.size else 0


def median_of(values: pd.Series | None) -> float:
    """The median over the runs that recorded the figure; NaN when none did (or no column):
    a missing figure stays missing, never 0."""
    values = pd.to_numeric(values, errors="coerce").dropna() if values is not None else ()
    return float(values.median()) if len(values) else float("nan")


def median_interval(values) -> tuple[float, float]:
    """The exact distribution-free 95% interval of the median (the sign test's, from order
    statistics: unlike a bootstrap's, it reaches its coverage with few runs); NaN, NaN with
    fewer than 6 values, where none exists: with 5, even [min, max] holds the median with
    probability 1 - 2 / 2^5 = 0.9375 only."""
    x = np.sort(np.asarray(values, dtype=float))
    k = median_rank(len(x))
    if k == 0:
        return float("nan"), float("nan")
    return float(x[k - 1]), float(x[len(x) - k])


def reader_bytes(group: pd.DataFrame, file_bytes: float) -> float:
    """The bytes one reader of the group delivers: the file's, or for a read pattern that
    splits the model (not replicated), the median of its readers' tensor_bytes."""
    if (group["pattern"] == REPLICATED).all():
        return file_bytes
    return median_of(group.get("tensor_bytes"))


def with_device(table: pd.DataFrame, results: Results) -> pd.DataFrame:
    """The summary table with its groups' fractions of the device (DEVICE, paired's) and the
    ceiling checked (ceiling.CHECKED, ceiling.beaten's): NaN without ceiling reads, and
    `beats_ceiling` false."""
    device = paired.device_fraction(results)
    checked = ceiling.beaten(results)[GROUP + list(ceiling.CHECKED)].rename(
        columns=ceiling.CHECKED)
    for columns, frame in ((DEVICE, device), (list(ceiling.CHECKED.values()), checked)):
        table = (table.assign(**{c: np.nan for c in columns}) if frame.empty else
                 table.merge(frame, on=GROUP, how="left"))
    return table.assign(beats_ceiling=table["beats_ceiling"].eq(True))


def summarize(results: Results, profiled: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per group of comparable ok runs (GROUP), sorted by cache state then median time.
    The interval columns are NaN for groups of fewer than 6 runs. The time ratio columns are NaN
    where the group shares no round with its condition's baseline, and its interval where under
    6 rounds give none; the baseline's own row is 1 with `is_baseline` set where its condition
    ran in rounds. `strategy_flags` is the first its runs recorded (None where none did).
    `cause_shares` is causes.shares'
    (`of`: "wall" or "cpu", and `shares`: cause to share) where the group has profiled runs,
    else None;
    `profiled` is causes.summarize's table, when the caller has it."""
    rows = []
    for key, group in results.ok.groupby(GROUP, sort=False):
        wall = group["wall_s"].to_numpy(dtype=float)
        ci_low, ci_high = median_interval(wall)
        median = float(np.median(wall))
        q1, q3 = np.percentile(wall, [25, 75])
        known = pd.to_numeric(group["file_bytes"], errors="coerce").dropna()
        file_bytes = float(known.iloc[0]) if len(known) else float("nan")  # NaN: not recorded
        rows.append({
            **dict(zip(GROUP, key)),
            "strategy": group["strategy"].iloc[0],
            # The strategy's flags as its runs recorded them; None where none did.
            "strategy_flags": next(iter(group["strategy_flags"].dropna()), None),
            "timed": group["timed"].iloc[0],
            "file_bytes": int(file_bytes) if len(known) else file_bytes,
            "n": len(wall),
            "median_s": median,
            "min_s": float(wall.min()),
            "max_s": float(wall.max()),
            "iqr_s": float(q3 - q1),
            "ci_low_s": ci_low,
            "ci_high_s": ci_high,
            # Per reader: what one reader delivers (its part, for a pattern that splits the
            # model) over its own time; a round's total is analysis/stats/readers.py's.
            "gb_per_s": reader_bytes(group, file_bytes) / median / 1e9,
            "peak_rss_bytes": median_of(group.get("peak_rss_bytes")),
            # The load's own faults (the timed region); folders from before they were recorded
            # have only the whole worker process's.
            "major_faults": median_of(load_or_process(group, "major_faults")),
            "minor_faults": median_of(load_or_process(group, "minor_faults")),
            "read_bytes": median_of(group.get("read_bytes")),
            "in_rounds": bool(paired.in_rounds(group, results.env).any()),
            # False where some run counted unverified (an exec command that sent no checksum).
            "verified": bool(group["verified"].all()),
        })
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    pairs = paired.paired_table(results)
    if pairs.empty:
        table = table.assign(**{c: np.nan for c in PAIRED.values()})
    else:
        table = table.merge(pairs[GROUP + list(PAIRED)].rename(columns=PAIRED), on=GROUP,
                            how="left")
        # An unbounded interval (0 to infinity) is none: null, as the verdict's.
        table.loc[~table["bounded"].eq(True), RATIO[1:]] = np.nan
    chosen = paired.baselines(results)
    base = [chosen.get(tuple(r[c] for c in paired.CONDITION), (None, ""))[0]
            for _, r in table.iterrows()]
    table["is_baseline"] = table["strategy_spec"] == pd.Series(base, index=table.index)
    table["baseline"] = base
    # The baseline is 1 only where it ran in rounds: in grouped order nothing was paired.
    table.loc[table["is_baseline"] & table.pop("in_rounds"), RATIO] = 1.0
    table = with_device(table, results)
    shares = causes.shares(causes.summarize(results) if profiled is None else profiled)
    table["cause_shares"] = [shares.get(tuple(r[GROUP])) for _, r in table.iterrows()]
    return table.sort_values(["cache", "median_s"], kind="stable").reset_index(drop=True)
