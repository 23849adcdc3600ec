"""Aggregates of the runs that count, per strategy, options, cache state and file: median, min,
max, IQR, a 95% bootstrap interval of the median, GB/s, peak RSS, and the speed-up over fread
(fread's median time over the strategy's) with its own bootstrap interval.
"""

from __future__ import annotations

import zlib

import numpy as np
import pandas as pd

from analysis.results import GROUP, Results

BOOTSTRAP_RESAMPLES = 2000
CONFIDENCE = 0.95
BASELINE = "fread"  # speed-ups are over plain fread with default options


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
    The intervals are seeded: the same results give the same table."""
    rows = []
    boots = {}
    for key, group in results.ok.groupby(GROUP, sort=False):
        wall = group["wall_s"].to_numpy(dtype=float)
        # One stream per group, so that two groups' resamples are independent draws.
        rng = np.random.default_rng([seed, zlib.crc32(repr(key).encode())])
        boot = bootstrap_medians(wall, rng)
        boots[key] = boot
        ci_low, ci_high = interval(boot)
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
            "major_faults": float(group["major_faults"].median()),
            "minor_faults": float(group["minor_faults"].median()),
            "read_bytes": float(group["read_bytes"].median()) if "read_bytes" in group else
            float("nan"),
        })
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    speedups = []
    for _, row in table.iterrows():
        base_key = (BASELINE, row["cache"], row["file"], row["procs"], row["memory_limit_bytes"])
        if base_key not in boots:
            speedups.append((np.nan, np.nan, np.nan))
            continue
        base = table.loc[(table["strategy_spec"] == BASELINE) & (table["cache"] == row["cache"]) &
                         (table["file"] == row["file"]) & (table["procs"] == row["procs"]) &
                         (table["memory_limit_bytes"] == row["memory_limit_bytes"])]
        own_key = tuple(row[c] for c in GROUP)
        # Resampled independently (the runs are not paired), ratio per resample.
        ratio = boots[base_key] / boots[own_key]
        low, high = interval(ratio)
        speedups.append((float(base["median_s"].iloc[0]) / row["median_s"], low, high))
    table["speedup"], table["speedup_ci_low"], table["speedup_ci_high"] = zip(*speedups)
    return table.sort_values(["cache", "median_s"], kind="stable").reset_index(drop=True)
