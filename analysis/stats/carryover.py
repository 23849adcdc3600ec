"""Carry-over: does a run's time depend on what ran before it? A load can leave the machine
other than it found it (pages cached or evicted, memory to reclaim, a device still writing
back), and the next run pays or profits. Each record names its predecessor in `after` (the
strategy spec of the run the same command made just before it, "ceiling" after a ceiling
read; absent for a command's first run, here "none").

Per group of comparable ok runs (GROUP) and predecessor: n, the median wall time and its ratio
to the group's median (above 1: slower after that predecessor); per group with two predecessors
or more of 3 runs or more each, the Kruskal–Wallis test across those predecessors
(distribution-free: the times are skewed) and the largest ratio among them; and, pooled over
every group, the ceiling's effect on the run that follows it: the median of each run's time
over its group's median, after a ceiling read against after anything else. Several results
folders of one experiment are pooled (the A/A calibration runs 40 of them); the report shows
the same for its one folder when the records carry `after`.

    /usr/bin/python3 -m analysis.carryover FOLDER...
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy.stats import kruskal

from analysis.core.labels import condition
from analysis.core.results import CEILING, GROUP, Results, spec_label

ALPHA = 0.05
MIN_RUNS = 3  # a predecessor's runs to enter the test
NONE = "none"  # the predecessor of a command's first run


def shown(results: Results) -> bool:
    """Whether a report needs the section: some ok run's record carries `after`."""
    return "after" in results.ok and bool(results.ok["after"].notna().any())


def pooled(results: list[Results]) -> pd.DataFrame:
    """The ok runs of every folder: GROUP, `after` (NONE where absent), wall_s, `verified`,
    and `relative`, its wall_s over its group's median over all folders."""
    ok = pd.concat([r.ok.infer_objects() for r in results], ignore_index=True)
    wall = pd.to_numeric(ok["wall_s"], errors="coerce")
    after = ok["after"] if "after" in ok else pd.Series(None, index=ok.index, dtype=object)
    frame = ok[GROUP].assign(after=after.fillna(NONE), wall_s=wall,
                             verified=ok["verified"].astype(bool))[wall > 0]
    median = frame.groupby(GROUP)["wall_s"].transform("median")
    return frame.assign(relative=frame["wall_s"] / median).reset_index(drop=True)


def predecessors(frame: pd.DataFrame) -> pd.DataFrame:
    """Per GROUP and predecessor: n, median_s, ratio, median_s over the group's median, and
    whether every run was verified."""
    columns = GROUP + ["after", "n", "median_s", "ratio", "verified"]
    if frame.empty:
        return pd.DataFrame(columns=columns)
    group_median = frame.groupby(GROUP)["wall_s"].median().rename("group_median_s")
    table = (frame.groupby(GROUP + ["after"])
             .agg(n=("wall_s", "size"), median_s=("wall_s", "median"),
                  verified=("verified", "all"))
             .reset_index().join(group_median, on=GROUP))
    return table.assign(ratio=table["median_s"] / table["group_median_s"])[columns]


def verdict(tested: int, p: float) -> str:
    if tested < 2:
        return f"too few runs to test (2 predecessors with {MIN_RUNS} runs each needed)"
    # NaN p (every time equal) compares false: nothing depends on anything.
    return "depends on what ran before (p < 0.05)" if p < ALPHA else "no dependence shown"


def tests(frame: pd.DataFrame) -> pd.DataFrame:
    """Per GROUP: how many predecessors it had and how many were tested (MIN_RUNS runs or
    more), the Kruskal–Wallis p across the tested ones, the largest ratio of a tested
    predecessor's median to the group's median and which one it is, the verdict, and whether
    every run was verified."""
    columns = GROUP + ["predecessors", "tested", "p", "max_ratio", "slowest_after", "verdict",
                       "verified"]
    rows = []
    for key, group in frame.groupby(GROUP, sort=False):
        samples = {after: g["wall_s"].to_numpy() for after, g in group.groupby("after")
                   if len(g) >= MIN_RUNS}
        p, max_ratio, slowest = math.nan, math.nan, None
        if len(samples) >= 2:
            try:
                p = float(kruskal(*samples.values()).pvalue)
            except ValueError:  # every time equal: no ranks to compare
                pass
            medians = {after: float(np.median(s)) for after, s in samples.items()}
            slowest = max(medians, key=medians.get)
            max_ratio = medians[slowest] / float(group["wall_s"].median())
        rows.append({**dict(zip(GROUP, key)), "predecessors": group["after"].nunique(),
                     "tested": len(samples), "p": p, "max_ratio": max_ratio,
                     "slowest_after": slowest, "verdict": verdict(len(samples), p),
                     "verified": bool(group["verified"].all())})
    return pd.DataFrame(rows, columns=columns)


def ceiling_effect(frame: pd.DataFrame) -> dict:
    """Pooled over every group: the median of the runs' relative times right after a ceiling
    read, and after any other run (a command's first runs, after nothing, are in neither),
    with their counts and ratio (NaN where a side has no run)."""
    after_ceiling = frame.loc[frame["after"] == CEILING, "relative"]
    others = frame.loc[~frame["after"].isin([CEILING, NONE]), "relative"]
    a = float(after_ceiling.median()) if len(after_ceiling) else math.nan
    b = float(others.median()) if len(others) else math.nan
    return {"after_ceiling_n": len(after_ceiling), "after_ceiling": a,
            "others_n": len(others), "others": b, "ratio": a / b}


def ceiling_line(effect: dict) -> str:
    if not effect["after_ceiling_n"] or not effect["others_n"]:
        return ("The ceiling's effect on the run that follows it: not measurable "
                f"({effect['after_ceiling_n']} runs right after a ceiling read, "
                f"{effect['others_n']} after another run).")
    return (f"The ceiling's effect on the run that follows it: {effect['ratio']:.3f}× (runs "
            "right after a ceiling read against runs after another run, each run's time over "
            f"its group's median, pooled: median {effect['after_ceiling']:.3f} over "
            f"{effect['after_ceiling_n']} runs against {effect['others']:.3f} over "
            f"{effect['others_n']}).")


def group_name(t: pd.Series, files: int) -> str:
    return f"{spec_label(t)}, {condition(t, files)}"


def result_text(t: pd.Series) -> str:
    """A group's test in words (a row of `tests`)."""
    if t["tested"] < 2:
        return f"{t['verdict']}."
    p = "p n/a (every time equal)" if math.isnan(t["p"]) else f"p {t['p']:.2g}"
    return (f"Kruskal–Wallis {p} over {t['tested']} predecessors: {t['verdict']}; the "
            f"slowest after {t['slowest_after']}, {t['max_ratio']:.3f}× the group's median.")
