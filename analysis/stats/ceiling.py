"""The ceiling, checked. A round's ceiling read is the device's limit over the files a load
reads: the fastest of a few cold read recipes (params.recipe, chosen by the probe or by the
command's first ceiling read, which tried every recipe: ceiling_recipes; docs/rounds.md). A
strategy that loads the same bytes faster than the same rounds' ceiling, beyond the paired
interval, shows that the ceiling is no limit here: "a ceiling that is not one". `beaten` pairs
each cold strategy's time per round (paired.run_values) with the time its round's ceiling
takes for the strategy's bytes, with the signed-rank interval of analysis/stats/paired.py; the
report's *Noise* section gives `recipes_md` and `check_md` below the ceiling table.

Beside it, the rule the console follows too: a strategy whose median GB/s over the rounds it
shares with ceiling reads is above the fastest ceiling read of those rounds beat the ceiling by
more than the ceiling's own spread (`beats_fastest`): that ceiling is not a ceiling. The
summary table takes it (CHECKED), its share of device is marked BEYOND and a share above 100%
within the spread WITHIN (`share_marks`, `share_cell`), `marks_md` says what the marks mean
under the table's figure, and `caveats` are the verdict's.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from analysis.core.ratios import ratio_text
from analysis.core.results import CONDITION, GROUP, Results, spec_label
from analysis.stats import paired

COLUMNS = GROUP + ["strategy", "verified", "n", "ratio", "ratio_low", "ratio_high", "bounded",
                   "flagged", "strategy_gb_per_s", "ceiling_gb_per_s",
                   "ceiling_fastest_gb_per_s", "beats_fastest", "recipes"]

# The marks of a share of device: the strategy's median beat every ceiling read of its rounds
# (the ceiling is not the device's limit); a share above 100% within the ceiling's own spread.
BEYOND = "⚠"
WITHIN = "†"


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
    GB/s (medians over those rounds) and the fastest ceiling read of those rounds, the
    ceiling's recipes; `flagged`: the interval lies below 1, the strategy beat the ceiling
    beyond it; `beats_fastest`: the strategy's median GB/s is above the fastest ceiling read,
    it beat the ceiling by more than the ceiling's own spread."""
    ceilings = paired.ceiling_values(results)
    values = paired.run_values(results)
    if ceilings.empty or values.empty:
        return pd.DataFrame(columns=COLUMNS)
    per_round = ceilings.groupby(CONDITION + ["rep"])["gb_per_s"].agg(ceiling="median",
                                                                      fastest="max")
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
                     "ceiling_fastest_gb_per_s": float(g["fastest"].max()),
                     "beats_fastest": bool(g["gbps"].median() > g["fastest"].max()),
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


# What a summary table (stats.summarize) takes from `beaten`, as its own column names.
CHECKED = {"n": "ceiling_rounds", "strategy_gb_per_s": "ceiling_rounds_gb_per_s",
           "ceiling_fastest_gb_per_s": "ceiling_fastest_gb_per_s",
           "beats_fastest": "beats_ceiling", "recipes": "ceiling_recipe"}


def share_marks(table: pd.DataFrame) -> pd.Series:
    """Per row of a summary table (`of_device`, `beats_ceiling`), the mark of its share of
    device: BEYOND where its median beat every ceiling read of its rounds, WITHIN where the
    share is above 100% all the same, else "": never a share above 100% unmarked."""
    return pd.Series([BEYOND if r["beats_ceiling"] else WITHIN if r["of_device"] > 1 else ""
                      for _, r in table.iterrows()], index=table.index, dtype=object)


def share_cell(share: float, mark: str, percent: bool = True) -> str:
    """A share of a limit as a table prints it, with its mark: of device as a percentage
    (`185% ⚠`), or with `percent` false as a fraction (`1.85 ⚠`: the machines report's *of
    limit*, the fleet's *of bound*); one more decimal where a share above 1 would print as
    100% or 1.00 (`100.4% †`, `1.004 ⚠`); "" where none."""
    if pd.isna(share):
        return ""
    plain, finer = (f"{share:.0%}", f"{share:.1%}") if percent else (f"{share:.2f}",
                                                                     f"{share:.3f}")
    text = finer if share > 1 and plain in ("100%", "1.00") else plain
    return text + (f" {mark}" if mark else "")


def above_one(share: float) -> str:
    """The mark of a share of a limit that has no spread of its own to be within (the probe's
    one figure, the fabric's bound): BEYOND above 1, else none."""
    return BEYOND if pd.notna(share) and share > 1 else ""


def _within_md(within: pd.DataFrame, name) -> str:
    """The sentence of the shares marked WITHIN: each one's median GB/s against the fastest
    ceiling read of its rounds, those with the same fastest read together."""
    parts = []
    for fastest, g in within.groupby(within["ceiling_fastest_gb_per_s"].round(2), sort=False):
        names = [f"{name(r)} ({r['ceiling_rounds_gb_per_s']:.2f} GB/s)" for _, r in g.iterrows()]
        one = len(names) == 1
        parts.append(f"the median{'' if one else 's'} of "
                     + (names[0] if one else ", ".join(names[:-1]) + " and " + names[-1])
                     + f" {'is' if one else 'are'} not above the fastest ceiling read of "
                     f"{'its' if one else 'their'} rounds ({fastest:.2f} GB/s)")
    return (f"{WITHIN} above 100%, within the ceiling's own spread: " + "; ".join(parts)
            + f": {'it' if len(within) == 1 else 'they'} beat the slower ceiling reads only. "
            "The ceiling read varies from round to round, and such a share says so rather than "
            "that the strategy passed the device's limit.")


def marks_md(table: pd.DataFrame, marks: pd.Series, name) -> str:
    """What the marks (share_marks') of a summary table's shares say, for under the table and
    its figure: per row marked BEYOND, which ceiling it beat, with both GB/s; for the rows
    marked WITHIN, one sentence with their figures; `name(row)` names a row. "" without
    marks."""
    lines = [f"{BEYOND} {name(r)}: its median {r['ceiling_rounds_gb_per_s']:.2f} GB/s over the "
             f"{r['ceiling_rounds']:.0f} rounds it shares with ceiling reads beat every ceiling "
             f"read of those rounds ({r['ceiling_recipe']}, the fastest "
             f"{r['ceiling_fastest_gb_per_s']:.2f} GB/s): that ceiling is not the device's "
             "limit, and the shares of device overstate how near the strategies come to it."
             for _, r in table[marks == BEYOND].iterrows()]
    if (marks == WITHIN).any():
        lines.append(_within_md(table[marks == WITHIN], name))
    return "\n\n".join(lines)


def caveats(rows: pd.DataFrame) -> list[str]:
    """The verdict's caveats of a condition's rows of the summary table: one per row whose
    median beat every ceiling read of its rounds, naming the ceiling's recipe and fastest
    read."""
    return [f"caveat: the ceiling (recipe{'s' if ', ' in r['ceiling_recipe'] else ''} "
            f"{r['ceiling_recipe']}, fastest read {r['ceiling_fastest_gb_per_s']:.2f} GB/s) is "
            f"not the device's limit: {spec_label(r)}'s median "
            f"{r['ceiling_rounds_gb_per_s']:.2f} GB/s beat every ceiling read of its rounds; "
            "the shares of device overstate how near the strategies come to it."
            for _, r in rows[rows["beats_ceiling"]].iterrows()]
