"""Aggregates of the runs that count, per strategy, options, cache state and file: median, min,
max, IQR, a 95% bootstrap interval of the median, GB/s, peak RSS, and the speed-up over the
condition's baseline: paired, from the rounds both ran in (analysis/paired.py: the baseline's
time over the strategy's, the Hodges–Lehmann estimate with its signed-rank 95% interval), and
with ceiling reads the strategy's fraction of the device's speed.
"""

from __future__ import annotations

import zlib

import numpy as np
import pandas as pd

from analysis import paired
from analysis.results import GROUP, Results

BOOTSTRAP_RESAMPLES = 2000
CONFIDENCE = 0.95

# What summarize takes from paired.paired_table, as its own column names.
PAIRED = {"baseline": "baseline", "n": "pairs", "speedup": "speedup",
          "speedup_low": "speedup_ci_low", "speedup_high": "speedup_ci_high",
          "bounded": "bounded", "significant": "significant", "verdict": "verdict",
          "half_width": "half_width"}
DEVICE = ["of_device", "of_device_min", "of_device_max", "of_device_rounds"]


def load_or_process(group, column):
    """The timed region's count (load_<column>) where every run of the group has one, else the
    whole worker process's (<column>)."""
    load = "load_" + column
    if load in group and group[load].notna().all():
        return group[load]
    return group[column]


def bootstrap_medians(values: np.ndarray, rng: np.random.Generator,
                      resamples: int = BOOTSTRAP_RESAMPLES) -> np.ndarray:
    """Medians of `resamples` resamples (with replacement) of `values`."""
    picks = rng.integers(0, len(values), size=(resamples, len(values)))
    return np.median(values[picks], axis=1)


def interval(samples: np.ndarray) -> tuple[float, float]:
    tail = (1 - CONFIDENCE) / 2 * 100
    low, high = np.percentile(samples, [tail, 100 - tail])
    return float(low), float(high)


def summarize(results: Results, seed: int = 0) -> pd.DataFrame:
    """One row per group of comparable ok runs (GROUP), sorted by cache state then median time.
    The intervals are seeded: the same results give the same table. The speed-up columns are
    NaN where the group shares no round with its condition's baseline; the baseline's own row
    is 1 with `is_baseline` set."""
    rows = []
    for key, group in results.ok.groupby(GROUP, sort=False):
        wall = group["wall_s"].to_numpy(dtype=float)
        # One stream per group, so that two groups' resamples are independent draws.
        rng = np.random.default_rng([seed, zlib.crc32(repr(key).encode())])
        ci_low, ci_high = interval(bootstrap_medians(wall, rng))
        median = float(np.median(wall))
        q1, q3 = np.percentile(wall, [25, 75])
        file_bytes = float(group["file_bytes"].iloc[0])
        rows.append({
            **dict(zip(GROUP, key)),
            "strategy": group["strategy"].iloc[0],
            "file_bytes": int(file_bytes),
            "n": len(wall),
            "median_s": median,
            "min_s": float(wall.min()),
            "max_s": float(wall.max()),
            "iqr_s": float(q3 - q1),
            "ci_low_s": ci_low,
            "ci_high_s": ci_high,
            "gb_per_s": file_bytes / median / 1e9,
            "peak_rss_bytes": float(group["peak_rss_bytes"].median()),
            # The load's own faults (the timed region); folders from before they were recorded
            # have only the whole worker process's.
            "major_faults": float(load_or_process(group, "major_faults").median()),
            "minor_faults": float(load_or_process(group, "minor_faults").median()),
            "read_bytes": float(group["read_bytes"].median()) if "read_bytes" in group else
            float("nan"),
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
    chosen = paired.baselines(results)
    base = [chosen.get(tuple(r[c] for c in paired.CONDITION), (None, ""))[0]
            for _, r in table.iterrows()]
    table["is_baseline"] = table["strategy_spec"] == pd.Series(base, index=table.index)
    table["baseline"] = base
    table.loc[table["is_baseline"], ["speedup", "speedup_ci_low", "speedup_ci_high"]] = 1.0
    device = paired.device_fraction(results)
    if device.empty:
        table = table.assign(**{c: np.nan for c in DEVICE})
    else:
        table = table.merge(device, on=GROUP, how="left")
    return table.sort_values(["cache", "median_s"], kind="stable").reset_index(drop=True)
