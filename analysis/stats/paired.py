"""Comparisons that hold on a noisy machine: within-round (paired) ratios of strategies against
a baseline, the device's speed per round (the ceiling), drift over the experiment and outlying
runs. The method is the one of harness/stats/paired_stats.*, so that the
adaptive stop rule of the harness and the report agree figure for figure; the fixture
tests/fixtures/paired_stats.json holds cases both must match.

A *condition* is (file, cache, procs, read pattern, memory limit, link, fabric, storage); a
*round* is one rep of a condition (rounds are per storage: a rep of two storages is two
rounds), in which every strategy ran once, back to back. Only records that carry `position`
(their place in the round) ran in rounds: runs in grouped order (every run of a strategy back
to back) have none, and are never paired, since the same rep of two strategies ran far apart in
time. A strategy's value in a round is its wall time (with several workers, the largest: the
time until all had loaded: from the first reader's start to the last one's end), per role where
its workers had different ones (shm's creator and attacher); a run counts only whole (every
reader ok and verified: one failed, timed-out or missing reader and the run has no value in the
round); a round pairs a strategy with the baseline when both have a value in it. The
baseline's value is its slowest worker's whatever their roles, as in the harness.

The baseline of a condition: env.json `rounds.baseline` when the harness recorded one; else
`fread` when the condition has it; else the condition's first strategy spec in runs.jsonl.

The interval's exact level depends on the number of pairs and is at least 95% (96.9% at 6):
`coverage_text` gives it as every sentence about one comparison prints it, `levels_note` as a
table's legend does.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.core.results import CONDITION, GROUP, Results
from analysis.stats import readers

ALPHA = 0.05
DRIFT_MIN_ROUNDS = 6
OUTLIER_Z = 3.5
OUTLIER_MIN_RUNS = 5


@functools.lru_cache(maxsize=None)
def signed_rank_cdf(n: int) -> np.ndarray:
    """P(T+ <= t) for t = 0..n(n+1)/2, T+ the sum of the ranks 1..n given random signs, by
    counting: each rank joins the sum or not with probability 1/2."""
    dist = np.zeros(n * (n + 1) // 2 + 1)
    dist[0] = 1.0
    top = 0
    for rank in range(1, n + 1):
        # The right side is evaluated whole before the assignment: every t reads the old
        # P(t) and P(t - rank).
        dist[rank:top + rank + 1] = 0.5 * dist[rank:top + rank + 1] + 0.5 * dist[:top + 1]
        dist[:rank] *= 0.5
        top += rank
    cdf = np.cumsum(dist)
    cdf.setflags(write=False)
    return cdf


def critical(n: int) -> tuple[int, float]:
    """(k, level): the interval is [W_(k), W_(M+1-k)] of the sorted Walsh averages and its
    two-sided test level is `level` <= ALPHA; k = 0 (and level NaN) when no bounded interval
    reaches 95% (n <= 5)."""
    if n < 1:
        return 0, math.nan
    cdf = signed_rank_cdf(n)
    within = np.flatnonzero(cdf <= ALPHA / 2)
    if within.size == 0:
        return 0, math.nan
    t_star = int(within[-1])
    return t_star + 1, float(2 * cdf[t_star])


def coverage_text(n: int) -> str:
    """The exact level of the signed-rank interval of `n` pairs, 1 - its test level, as every
    text that names one comparison and the harness's console print it: one decimal ("96.9%" at
    6 pairs, 1 - 2/64), "95%" where that rounds to 95.0%; "" under 6 pairs, which have none."""
    k, level = critical(n)
    text = f"{100 * (1 - level):.1f}%" if k else ""
    return "95%" if text == "95.0%" else text


def levels_note(pairs) -> str:
    """For the legend of a table of paired intervals of many numbers of rounds (`pairs`, one
    per row): their exact level at the fewest rounds that give one; "" where none does."""
    bounded = [int(n) for n in pairs if not pd.isna(n) and critical(int(n))[0]]
    if not bounded:
        return ""
    n = min(bounded)
    return ("The intervals' exact level is at least 95% and depends on the rounds: "
            f"{coverage_text(n)} at {n} rounds, the fewest here.")


@dataclass(frozen=True)
class Interval:
    """The Hodges–Lehmann estimate of the log ratio and its signed-rank 95% interval."""
    n: int
    estimate: float
    low: float
    high: float
    bounded: bool
    level: float  # the achieved two-sided level, NaN when unbounded

    @property
    def significant(self) -> bool:
        return self.bounded and (self.low > 0 or self.high < 0)

    @property
    def half_width(self) -> float:
        """Relative: how far the interval reaches from the estimate on the ratio scale."""
        if not self.bounded:
            return math.inf
        return max(math.expm1(self.high - self.estimate),
                   -math.expm1(self.low - self.estimate))


def verdict(iv: Interval) -> str:
    """The comparison in words: the strategy is faster / slower when the interval of its log
    time ratio leaves out 0; n.s. when it holds 0; too few rounds when it is unbounded."""
    if not iv.bounded:
        return "too few rounds"
    if not iv.significant:
        return "n.s."
    return "faster" if iv.high < 0 else "slower"


def signed_rank_interval(d) -> Interval:
    """The distribution-free interval of the Wilcoxon signed-rank test for the centre of `d`
    (log ratios of paired rounds), with the Hodges–Lehmann estimate."""
    x = np.asarray(d, dtype=float)
    n = len(x)
    if n == 0:
        return Interval(0, math.nan, -math.inf, math.inf, False, math.nan)
    walsh = np.sort((np.add.outer(x, x) / 2)[np.triu_indices(n)])
    estimate = float(np.median(walsh))
    k, level = critical(n)
    if k == 0:
        return Interval(n, estimate, -math.inf, math.inf, False, math.nan)
    return Interval(n, estimate, float(walsh[k - 1]), float(walsh[len(walsh) - k]), True, level)


def kendall(y) -> dict:
    """Kendall's tau-b of `y` against its index (time order) and the two-sided p of the normal
    approximation with the tie-corrected variance (scipy's kendalltau(method="asymptotic")).
    NaNs, as the harness gives them, with fewer than 3 values or a constant series: no order to
    measure."""
    y = np.asarray(y, dtype=float)
    n = len(y)
    out = {"n": n, "tau": math.nan, "z": math.nan, "p": math.nan}
    if n < 3:
        return out
    s = float(np.sign(y[None, :] - y[:, None])[np.triu_indices(n, 1)].sum())
    ties = np.unique(y, return_counts=True)[1].astype(float)
    pairs = n * (n - 1) / 2
    tied = float(np.sum(ties * (ties - 1) / 2))
    if tied == pairs:
        return out
    var = (n * (n - 1) * (2 * n + 5) - float(np.sum(ties * (ties - 1) * (2 * ties + 5)))) / 18
    z = s / math.sqrt(var)
    return {"n": n, "tau": s / math.sqrt(pairs * (pairs - tied)), "z": z,
            "p": math.erfc(abs(z) / math.sqrt(2))}


def modified_z(x) -> np.ndarray | None:
    """0.6745 (x - median) / MAD per value; None when the group is too small (< 5) or its MAD
    is 0, where no value can be called an outlier."""
    x = np.asarray(x, dtype=float)
    if len(x) < OUTLIER_MIN_RUNS:
        return None
    med = np.median(x)
    mad = np.median(np.abs(x - med))
    if mad == 0:
        return None
    return 0.6745 * (x - med) / mad


# --- results folders -------------------------------------------------------------------------

def in_rounds(frame: pd.DataFrame, env: dict) -> pd.Series:
    """Per record, whether it ran in a round: it carries `position`, or it comes from a folder
    made before records carried one, whose env.json names no order (every strategy ran once
    per repetition) or an order in rounds. Only grouped order has no rounds."""
    order = (env.get("rounds") or {}).get("order")
    if "position" in frame and frame["position"].notna().any():
        return frame["position"].notna()
    return pd.Series(order != "grouped", index=frame.index)


def no_rounds(results: Results) -> str:
    """One sentence when some ok runs exist and none ran in a round, so that no round-by-round
    comparison exists; "" otherwise."""
    if results.ok.empty or in_rounds(results.ok, results.env).any():
        return ""
    return ("The order was grouped (every run of a strategy back to back, not in rounds), so no "
            "round-by-round comparison exists and no ratio to the baseline is given.")


def _in_rounds(results: Results) -> pd.DataFrame:
    """Every record (any status, ceiling reads aside) that ran in a round."""
    runs = results.runs
    if "rep" not in runs or runs.empty:
        return runs.iloc[0:0]
    return runs[in_rounds(runs, results.env) & runs["rep"].notna()]


def _round_problems(runs: pd.DataFrame) -> dict[tuple, list[str]]:
    """ROUND key (CONDITION, strategy spec, rep) -> why the run of that round does not count
    whole (readers.problems: a reader failed, timed out, was not verified or left no record);
    an empty list when every reader counted."""
    out = {}
    table = readers.readers(runs)
    for key, group in table.groupby(CONDITION + ["strategy_spec", "rep"], sort=False):
        procs = int(key[CONDITION.index("procs")])
        out[key] = readers.problems({"procs": procs}, group)
    return out


def broken_rounds(results: Results) -> pd.DataFrame:
    """The runs of several readers in rounds that have no paired value because some reader did
    not count: CONDITION, strategy_spec, rep and the reason. (A single reader's run that did
    not count is a failed, invalid or unsupported record, listed as such.)"""
    columns = CONDITION + ["strategy_spec", "rep", "reason"]
    procs = CONDITION.index("procs")
    rows = [{**dict(zip(CONDITION + ["strategy_spec", "rep"], key)), "reason": "; ".join(why)}
            for key, why in _round_problems(_in_rounds(results)).items()
            if why and key[procs] > 1]
    return pd.DataFrame(rows, columns=columns)


def run_values(results: Results) -> pd.DataFrame:
    """One row per run of a strategy (and role) in a round: CONDITION, strategy_spec, role,
    strategy, rep, its wall_s (from its readers' first start to their last end, or the largest
    of their wall_s: readers.duration), file_bytes, `order`, its place in runs.jsonl, and
    `verified`. A run counts only whole: one with a reader that did not count or left no record
    has no value (broken_rounds says why). Runs without `position` ran in no round."""
    return results.kept("run_values", _run_values)


def _run_values(results: Results) -> pd.DataFrame:
    columns = CONDITION + ["strategy_spec", "role", "strategy", "timed", "rep", "wall_s",
                           "file_bytes", "order", "verified"]
    runs = _in_rounds(results)
    if runs.empty:
        return pd.DataFrame(columns=columns)
    broken = {k for k, why in _round_problems(runs).items() if why}
    whole = pd.Series([tuple(k) not in broken for k in
                       runs[CONDITION + ["strategy_spec", "rep"]].itertuples(index=False)],
                      index=runs.index, dtype=bool)
    ok = runs[runs["counted"] & whole]
    rows = []
    for key, g in ok.groupby(CONDITION + ["strategy_spec", "role", "rep"], sort=False):
        rows.append({**dict(zip(CONDITION + ["strategy_spec", "role", "rep"], key)),
                     "strategy": g["strategy"].iloc[0], "timed": g["timed"].iloc[0],
                     "wall_s": readers.duration(g)[0],
                     "file_bytes": g["file_bytes"].iloc[0], "order": g["order"].min(),
                     "verified": bool(g["verified"].all())})
    values = pd.DataFrame(rows, columns=columns)
    return values.sort_values("order", kind="stable").reset_index(drop=True)


def ceiling_values(results: Results) -> pd.DataFrame:
    """The ok ceiling reads: CONDITION, rep, gb_per_s, wall_s, order."""
    c = results.ceiling
    columns = CONDITION + ["rep", "gb_per_s", "wall_s", "order", "run_id"]
    if c.empty or "rep" not in c:
        return pd.DataFrame(columns=columns)
    c = c[(c["status"] == "ok") & pd.to_numeric(c["gb_per_s"], errors="coerce").notna()]
    return c.assign(gb_per_s=c["gb_per_s"].astype(float))[columns].reset_index(drop=True)


def baselines(results: Results, override: str | None = None) -> dict[tuple, tuple[str, str]]:
    """condition -> (baseline spec, why it is the baseline)."""
    given = override or ((results.env.get("rounds") or {}).get("baseline"))
    out = {}
    for key, group in results.runs.groupby(CONDITION, sort=False):
        specs = list(dict.fromkeys(group["strategy_spec"]))
        if given:
            out[key] = (given, "given" if override else "env.json rounds.baseline")
        elif "fread" in specs:
            out[key] = ("fread", "fread, present in the condition")
        else:
            out[key] = (specs[0], "the condition's first strategy in runs.jsonl")
    return out


def device_fraction(results: Results) -> pd.DataFrame:
    """Per group (GROUP): the median, min and max over its rounds of the fraction of device
    speed, (file_bytes / wall_s) / the same round's ceiling GB/s, and the rounds counted."""
    columns = GROUP + ["of_device", "of_device_min", "of_device_max", "of_device_rounds"]
    ceilings = ceiling_values(results)
    values = run_values(results)
    if ceilings.empty or values.empty:
        return pd.DataFrame(columns=columns)
    per_round = ceilings.groupby(CONDITION + ["rep"])["gb_per_s"].median().rename("ceiling")
    v = values.join(per_round, on=CONDITION + ["rep"]).dropna(subset=["ceiling"])
    if v.empty:
        return pd.DataFrame(columns=columns)
    v = v.assign(fraction=v["file_bytes"].astype(float) / v["wall_s"] / 1e9 / v["ceiling"])
    return (v.groupby(GROUP, sort=False)["fraction"]
            .agg(of_device="median", of_device_min="min", of_device_max="max",
                 of_device_rounds="size")
            .reset_index()[columns])


PAIRED_COLUMNS = GROUP + ["strategy", "timed", "verified", "baseline", "baseline_why", "n",
                          "ratio", "ratio_low", "ratio_high", "bounded", "significant", "verdict",
                          "level", "half_width"]


def _paired_row(key: tuple, runs: pd.DataFrame, base: pd.Series, rounds: pd.Index) -> dict:
    """The comparison of one strategy and role (`runs`, one per rep) with the baseline's time
    per rep (`base`), over the rounds both ran in, in the rounds' time order (`rounds`), so
    that a reader of d sees the rounds as they ran."""
    both = pd.DataFrame({"t": runs.set_index("rep")["wall_s"], "b": base}).reindex(rounds)
    both = both.dropna()
    iv = signed_rank_interval(np.log(both["t"] / both["b"]).to_numpy())
    return {**dict(zip(CONDITION, key)), "strategy_spec": runs["strategy_spec"].iloc[0],
            "role": runs["role"].iloc[0], "strategy": runs["strategy"].iloc[0],
            "timed": runs["timed"].iloc[0], "verified": bool(runs["verified"].all()), "n": iv.n,
            "ratio": math.exp(iv.estimate), "ratio_low": math.exp(iv.low),
            "ratio_high": math.exp(iv.high), "bounded": iv.bounded, "significant": iv.significant,
            "verdict": verdict(iv), "level": iv.level, "half_width": iv.half_width}


def _base_and_rounds(group: pd.DataFrame, base_spec: str | None) -> tuple[pd.Series, pd.Index]:
    """A condition's run values (`group`): the baseline's time per rep, its slowest reader's
    whatever their roles, and the reps in the rounds' time order."""
    base = group[group["strategy_spec"] == base_spec].groupby("rep")["wall_s"].max()
    return base, group.groupby("rep")["order"].min().sort_values().index


def versus(values: pd.DataFrame, key: tuple, spec: str, role: str, other: str) -> dict | None:
    """One group's comparison with `other` (a strategy spec) in condition `key`, from
    run_values' `values`: the row paired_table gives it with `other` as the baseline (its time
    over other's, below 1 faster); None where no round paired them or it is `other`'s own."""
    group = values[(values[CONDITION] == pd.Series(key, index=CONDITION)).all(axis=1)]
    runs = group[(group["strategy_spec"] == spec) & (group["role"] == role)]
    base, rounds = _base_and_rounds(group, other)
    if spec == other or runs.empty or base.empty:
        return None
    row = _paired_row(key, runs, base, rounds)
    return row if row["n"] else None


def paired_table(results: Results, baseline: str | None = None) -> pd.DataFrame:
    """Per condition, strategy spec and role (not the baseline, not the ceiling) with at least
    one round shared with the baseline: n pairs, ratio = strategy time / baseline time (the
    Hodges–Lehmann estimate, exp of the log scale; below 1, faster) with its interval, whether
    the interval leaves out 1, the achieved test level and the relative half width; with
    ceiling records, the strategy's fraction of device speed. Empty for runs that ran in no
    round (no `position`)."""
    values = run_values(results)
    rows = []
    chosen = baselines(results, baseline)
    for key, group in values.groupby(CONDITION, sort=False):
        base_spec, why = chosen.get(key, (None, ""))
        base, rounds = _base_and_rounds(group, base_spec)
        if base.empty:
            continue
        for _, runs in group[group["strategy_spec"] != base_spec].groupby(
                ["strategy_spec", "role"], sort=False):
            row = _paired_row(key, runs, base, rounds)
            if row["n"]:
                rows.append({**row, "baseline": base_spec, "baseline_why": why})
    table = pd.DataFrame(rows, columns=PAIRED_COLUMNS)
    fraction = device_fraction(results)
    if not fraction.empty and not table.empty:
        table = table.merge(fraction, on=GROUP, how="left")
    return table


def ceiling_table(results: Results) -> pd.DataFrame:
    """Per condition with ceiling reads: n ok, how many were not ok, the median, min and max
    GB/s and the coefficient of variation (standard deviation over mean)."""
    columns = CONDITION + ["n", "not_ok", "median_gb_per_s", "min_gb_per_s", "max_gb_per_s",
                           "cv"]
    c = results.ceiling
    if c.empty:
        return pd.DataFrame(columns=columns)
    rows = []
    for key, group in c.groupby(CONDITION, sort=False):
        gbps = pd.to_numeric(group.loc[group["status"] == "ok", "gb_per_s"],
                             errors="coerce").dropna().to_numpy(dtype=float)
        rows.append({**dict(zip(CONDITION, key)), "n": len(gbps),
                     "not_ok": int((group["status"] != "ok").sum()),
                     "median_gb_per_s": float(np.median(gbps)) if len(gbps) else math.nan,
                     "min_gb_per_s": float(gbps.min()) if len(gbps) else math.nan,
                     "max_gb_per_s": float(gbps.max()) if len(gbps) else math.nan,
                     "cv": float(np.std(gbps, ddof=1) / np.mean(gbps)) if len(gbps) > 1
                     else math.nan})
    return pd.DataFrame(rows, columns=columns)


def round_factors(results: Results) -> pd.DataFrame:
    """Per round of every condition, in time order: the median over the strategies of the
    strategy's time in the round over its median time over all rounds (1: an ordinary round,
    2: everything took twice as long)."""
    values = run_values(results)
    columns = CONDITION + ["rep", "order", "factor"]
    if values.empty:
        return pd.DataFrame(columns=columns)
    own_median = values.groupby(CONDITION + ["strategy_spec", "role"])["wall_s"].transform(
        "median")
    v = values.assign(relative=values["wall_s"] / own_median)
    rounds = (v.groupby(CONDITION + ["rep"], sort=False)
              .agg(order=("order", "min"), factor=("relative", "median")).reset_index())
    return rounds.sort_values("order", kind="stable").reset_index(drop=True)[columns]


def _drift_row(series: str, key: dict, y: np.ndarray) -> dict:
    k = kendall(y)
    third = len(y) // 3
    return {"series": series, **key, "n": len(y), "tau": k["tau"], "z": k["z"], "p": k["p"],
            "first_third": float(np.median(y[:third])) if third else math.nan,
            "last_third": float(np.median(y[-third:])) if third else math.nan,
            # NaN p (a constant series) compares false: no drift.
            "detected": bool(len(y) >= DRIFT_MIN_ROUNDS and k["p"] < ALPHA)}


def drift(results: Results) -> pd.DataFrame:
    """Kendall's trend test on each series in time order: per file and storage, the ceiling's GB/s per
    round; per condition without ceiling reads (every warm one, and cold ones of experiments
    without `ceiling`), the round factor. `detected` with 6 or more rounds and p < 0.05."""
    columns = ["series"] + CONDITION + ["n", "tau", "z", "p", "first_third", "last_third",
                                        "detected"]
    rows = []
    ceilings = ceiling_values(results).sort_values("order", kind="stable")
    for (file, storage), group in ceilings.groupby(["file", "storage"], sort=False):
        rows.append(_drift_row("ceiling", {"file": file, "cache": None, "procs": None,
                                           "pattern": None, "memory_limit_bytes": None,
                                           "storage": storage},
                               group["gb_per_s"].to_numpy(dtype=float)))
    measured = {tuple(k) for k in ceilings[CONDITION].itertuples(index=False)}
    for key, group in round_factors(results).groupby(CONDITION, sort=False):
        if key in measured:
            continue
        rows.append(_drift_row("round factor", dict(zip(CONDITION, key)),
                               group["factor"].to_numpy(dtype=float)))
    return pd.DataFrame(rows, columns=columns)


def outliers(results: Results) -> pd.DataFrame:
    """The ok records whose ln(wall_s) lies more than 3.5 modified z scores from their group's
    (strategy spec and condition; ceiling reads per condition): flagged, and kept in every
    statistic."""
    columns = ["run_id"] + GROUP + ["rep", "wall_s", "median_s", "z", "verified"]
    frames = [results.ok, results.ceiling[results.ceiling["status"] == "ok"]
              if not results.ceiling.empty else results.ceiling]
    rows = []
    for frame in frames:
        if frame.empty:
            continue
        frame = frame[pd.to_numeric(frame["wall_s"], errors="coerce") > 0]
        for key, group in frame.groupby(GROUP, sort=False):
            wall = group["wall_s"].to_numpy(dtype=float)
            z = modified_z(np.log(wall))
            if z is None:
                continue
            for i in np.flatnonzero(np.abs(z) > OUTLIER_Z):
                rec = group.iloc[i]
                rows.append({"run_id": rec["run_id"], **dict(zip(GROUP, key)),
                             "rep": rec["rep"] if "rep" in group else None,
                             "wall_s": float(wall[i]), "median_s": float(np.median(wall)),
                             "z": float(z[i]),
                             # Ceiling reads carry no `verified`: they are no strategy's.
                             "verified": bool(rec.get("verified", True))})
    return pd.DataFrame(rows, columns=columns)
