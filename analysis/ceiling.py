"""The ceiling, checked. A round's ceiling read is the device's limit over the files a load
reads: the fastest of a few cold read recipes (params.recipe, chosen by the probe or by the
command's first ceiling read, which tried every recipe: ceiling_recipes; docs/rounds.md). A
strategy that loads the same bytes faster than the same rounds' ceiling, beyond the paired
interval, shows that the ceiling is no limit here: "a ceiling that is not one". `beaten` pairs
each cold strategy's time per round (paired.run_values) with the time its round's ceiling
takes for the strategy's bytes, with the signed-rank interval of analysis/paired.py; the
report's *Noise* section gives `recipes_md` and `check_md` below the ceiling table.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from analysis import paired
from analysis.results import CONDITION, GROUP, Results, ratio_text, spec_label

COLUMNS = GROUP + ["strategy", "verified", "n", "ratio", "ratio_low", "ratio_high", "bounded",
                   "flagged", "strategy_gb_per_s", "ceiling_gb_per_s", "recipes"]


# How a ceiling read's recipe was chosen (params.chosen), in words.
CHOSEN = {"probe": "by the cached probe", "measured": "by trying every recipe",
          "first_ceiling": "by the command's first ceiling read"}


def recipe_name(params) -> str:
    """A ceiling read's recipe: its name, or for a read from before recipes what it did."""
    if not isinstance(params, dict):
        return "?"
    if isinstance(params.get("recipe"), str):
        return params["recipe"]
    if "queue_depth" in params:
        return f"O_DIRECT io_uring QD{params['queue_depth']} (before recipes)"
    return "?"


def _ok_ceiling(results: Results) -> pd.DataFrame:
    c = results.ceiling
    if c.empty or "status" not in c:
        return pd.DataFrame(columns=CONDITION + ["rep", "params", "recipe"])
    c = c[c["status"] == "ok"]
    params = c["params"] if "params" in c else pd.Series(None, index=c.index, dtype=object)
    return c.assign(params=params, recipe=params.map(recipe_name))


def _recipes_of(ceiling: pd.DataFrame, key: tuple) -> str:
    """The recipes of a condition's ok ceiling reads, the most used first."""
    mine = ceiling[(ceiling[CONDITION] == pd.Series(key, index=CONDITION)).all(axis=1)]
    return ", ".join(mine["recipe"].value_counts().index)


def beaten(results: Results) -> pd.DataFrame:
    """Per group (GROUP) of a condition with ceiling reads, over the rounds with both: n, the
    strategy's time over the time its round's ceiling takes for the same bytes (file_bytes /
    the ceiling's GB/s; the Hodges–Lehmann estimate and the 95% signed-rank interval), both
    GB/s (medians over those rounds), the ceiling's recipes, and `flagged`: the interval lies
    below 1, the strategy beat the ceiling beyond it."""
    ceilings = paired.ceiling_values(results)
    values = paired.run_values(results)
    if ceilings.empty or values.empty:
        return pd.DataFrame(columns=COLUMNS)
    per_round = ceilings.groupby(CONDITION + ["rep"])["gb_per_s"].median().rename("ceiling")
    v = values.join(per_round, on=CONDITION + ["rep"]).dropna(subset=["ceiling"])
    v = v[(pd.to_numeric(v["file_bytes"], errors="coerce") > 0) & (v["wall_s"] > 0)]
    if v.empty:
        return pd.DataFrame(columns=COLUMNS)
    gbps = v["file_bytes"].astype(float) / v["wall_s"].astype(float) / 1e9
    v = v.assign(gbps=gbps, log=np.log(v["ceiling"] / gbps))
    ok_ceiling = _ok_ceiling(results)
    rows = []
    for key, g in v.sort_values("order", kind="stable").groupby(GROUP, sort=False):
        iv = paired.signed_rank_interval(g["log"].to_numpy())
        rows.append({**dict(zip(GROUP, key)), "strategy": g["strategy"].iloc[0],
                     "verified": bool(g["verified"].all()), "n": iv.n,
                     "ratio": math.exp(iv.estimate), "ratio_low": math.exp(iv.low),
                     "ratio_high": math.exp(iv.high), "bounded": iv.bounded,
                     "flagged": bool(iv.bounded and iv.high < 0),
                     "strategy_gb_per_s": float(g["gbps"].median()),
                     "ceiling_gb_per_s": float(g["ceiling"].median()),
                     "recipes": _recipes_of(ok_ceiling, tuple(g[CONDITION].iloc[0]))})
    return pd.DataFrame(rows, columns=COLUMNS)


def recipes_md(results: Results) -> str:
    """Which recipe the ceiling reads used and how it was chosen, and the figures of every
    recipe where a read tried them all; "" without ok ceiling reads."""
    c = _ok_ceiling(results)
    if c.empty:
        return ""
    chosen = c["params"].map(lambda p: p.get("chosen") if isinstance(p, dict) else None)
    used = "; ".join(f"{name} in {n} of {len(c)} reads" for name, n in
                     c["recipe"].value_counts().items())
    how = ", ".join(f"{CHOSEN.get(why, why)} in {n}"
                    for why, n in chosen.dropna().value_counts().items())
    text = (f"The ceiling's read recipe (the fastest of those tried, see docs/rounds.md): "
            f"{used}" + (f"; chosen {how}" if how else "") + ".")
    tried = c[c["ceiling_recipes"].map(lambda x: isinstance(x, dict))] \
        if "ceiling_recipes" in c else c.iloc[0:0]
    for _, row in tried.iterrows():
        figures = []
        for name, f in row["ceiling_recipes"].items():
            g = f.get("gb_per_s") if isinstance(f, dict) else None
            figures.append(f"{name} {g:.2f} GB/s" if isinstance(g, (int, float)) else
                           f"{name} n/a ({(f or {}).get('reason', 'no figure')})")
        text += f" Read {row['run_id']} (round {row['rep']}) tried every recipe: " + \
            "; ".join(figures) + "."
    return text


def check_md(results: Results, condition) -> str:
    """The check of the ceiling against the strategies: a warning for each strategy that beat
    it beyond its interval, with both figures; a line for each that beat it in its estimate
    only; `condition(row)` names a condition. "" without ceiling reads paired with runs."""
    table = beaten(results)
    if table.empty:
        return ""
    lines = []
    for _, b in table.iterrows():
        name = f"{spec_label(b)} ({condition(b)})"
        figures = (f"{b['strategy_gb_per_s']:.2f} GB/s against the same rounds' ceiling "
                   f"{b['ceiling_gb_per_s']:.2f} GB/s ({b['recipes']})")
        if b["flagged"]:
            lines.append(f"- **Warning: a ceiling that is not one**: {name} loaded the same "
                         f"bytes at {figures}, median over {b['n']} rounds: its time is "
                         f"{ratio_text(b['ratio'], b['ratio_low'], b['ratio_high'])} the "
                         f"ceiling's ({paired.coverage_text(b['n'])} interval). The ceiling is "
                         "not the device's limit "
                         "here: its fractions (*of device*) overstate how near the strategies "
                         "come to the limit.")
        elif b["ratio"] < 1:
            low, high = (b["ratio_low"], b["ratio_high"]) if b["bounded"] else (None, None)
            interval = (f"its {paired.coverage_text(b['n'])} interval holds 1" if b["bounded"]
                        else f"{b['n']} rounds, too few for a 95% interval")
            lines.append(f"- {name}: faster than the ceiling in its estimate, {figures}, "
                         f"{ratio_text(b['ratio'], low, high)} its time ({interval}).")
    if not lines:
        lines.append(f"- No strategy loaded the same bytes faster than its rounds' ceiling "
                     f"({len(table)} checked).")
    return ("The ceiling checked: each strategy's time over its round's ceiling time for the "
            "same bytes, paired by round (signed-rank 95% interval; below 1: faster than the "
            "ceiling); an interval below 1 is a ceiling that is not one.\n\n"
            + "\n".join(lines))
