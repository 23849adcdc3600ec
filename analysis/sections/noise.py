"""The report's section on noise: how the rounds ran, the device's speed in each (the ceiling
reads), drift over the experiment, outlying runs, the machine's stability check, and the
adaptive stop rule's figures; its figure of every round in time order; and the same in
summary.json. The figures come from analysis/stats/paired.py.
"""

from __future__ import annotations

import os

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.ticker import MaxNLocator

from analysis.core.labels import condition, plural
from analysis.core.ratios import ratio_text
from analysis.core.results import CONDITION, REPLICATED, Results, records, spec_label
from analysis.core.units import size_text
from analysis.sections.base import Section
from analysis.stats import ceiling, paired

TITLE = "Noise: rounds, ceiling, drift, outliers"


def _number(value, fmt: str, unit: str = "") -> str:
    return "?" if value is None else f"{value:{fmt}}{unit}"


def rounds_md(r: Results) -> str:
    values = paired.run_values(r)
    if values.empty:
        counted = ("No rounds: the records carry no `rep`." if "rep" not in r.ok else
                   paired.no_rounds(r) or "No rounds: no ok run has a round.")
    else:
        per = values.groupby(CONDITION)["rep"].nunique()
        spread = f"{per.min()}" if per.min() == per.max() else f"{per.min()} to {per.max()}"
        counted = (f"{plural(int(per.sum()), 'round')} over {plural(len(per), 'condition')} "
                   f"({spread} per condition); a round is one rep of a condition, every strategy once, back "
                   "to back.")
    rounds = r.env.get("rounds")
    if not rounds:
        how = ("env.json has no `rounds` (results from before they were recorded): runs are "
               "paired by rep only where their records carry `position`, their place in a "
               "round.")
    else:
        auto = rounds.get("auto") or {}
        how = (f"Order within a round: {rounds.get('order', '?')} (seed {rounds.get('seed', '?')})"
               f"; ceiling reads: {'on' if rounds.get('ceiling') else 'off'}; baseline: "
               f"{rounds.get('baseline', '?')}; reps: {rounds.get('reps', '?')}.")
        if auto:
            budget = auto.get("budget_s") or 0
            how += (f" Adaptive: until every paired interval is within "
                    f"±{_number(auto.get('target'), '.0%')}, {auto.get('min_rounds', '?')} to "
                    f"{auto.get('max_rounds', '?')} rounds, budget "
                    f"{f'{budget:.0f} s' if budget else 'none'}.")
    return counted + " " + how + broken_md(r)


def broken_md(r: Results, most: int = 5) -> str:
    """The runs in rounds that have no paired value because a reader of theirs did not count,
    each with why (at most `most` listed); "" when every run was whole."""
    broken = paired.broken_rounds(r)
    if broken.empty:
        return ""
    files = max(r.runs["file"].nunique(), 1)
    lines = [f"- {condition(row, files)}, {row['strategy_spec']}, round {row['rep']}: "
             f"{row['reason']}" for _, row in broken.head(most).iterrows()]
    if len(broken) > most:
        lines.append(f"- ... and {len(broken) - most} more (summary.json `broken_rounds`)")
    return ("\n\nA run counts only whole: " + plural(len(broken), "run") + " in rounds "
            "had a reader that failed, timed out, was not verified or left no record, and so "
            "has no value in its round (no paired ratio, no verdict, no comparison):\n\n" +
            "\n".join(lines))


def ceiling_md(r: Results, files: int) -> str:
    table = paired.ceiling_table(r)
    if table.empty:
        return ("No ceiling reads (the experiment did not set `ceiling = true`): the device's "
                "speed per round is unknown, and drift is judged from the strategies' own "
                "times.")
    lines = ["| condition | reads | not ok | median GB/s | min GB/s | max GB/s | CV |",
             "|---|---|---|---|---|---|---|"]
    for _, c in table.iterrows():
        lines.append(f"| {condition(c, files)} | {c['n']} | {c['not_ok']} | "
                     f"{c['median_gb_per_s']:.2f} | {c['min_gb_per_s']:.2f} | "
                     f"{c['max_gb_per_s']:.2f} | {c['cv']:.1%} |")
    return ("The ceiling read of each round: every byte of the files read cold by the fastest "
            "of a few read recipes, the device's speed at that moment; CV: standard deviation "
            "over mean.\n\n" + "\n".join(lines)
            + (f"\n\n{recipes}" if (recipes := ceiling.recipes_md(r)) else ""))


def drift_md(r: Results, files: int) -> str:
    table = paired.drift(r)
    if table.empty:
        return "Drift: no series of rounds to test."
    lines = []
    for _, d in table.iterrows():
        if d["series"] == "ceiling":
            name = f"the ceiling of {os.path.basename(str(d['file']))}"
            name += f" on {d['storage']}" if isinstance(d.get("storage"), str) and \
                d["storage"] else ""
            unit, fmt = " GB/s", ".2f"
        else:
            name = f"the round factor of {condition(d, files)}"
            unit, fmt = "× its usual time", ".2f"
        if d["n"] < paired.DRIFT_MIN_ROUNDS:
            lines.append(f"- {name}: {plural(d['n'], 'round')}, too few to test "
                         f"({paired.DRIFT_MIN_ROUNDS} needed).")
        elif d["detected"]:
            lines.append(f"- **Warning: drift** in {name} over {d['n']} rounds (Kendall tau "
                         f"{d['tau']:.2f}, p {d['p']:.2g}): {d['first_third']:{fmt}}{unit} in "
                         f"the first third of the rounds, {d['last_third']:{fmt}}{unit} in the "
                         "last. The paired ratios cancel what a round shares; medians pooled "
                         "over the rounds do not.")
        elif pd.isna(d["p"]):
            lines.append(f"- {name}: no drift ({d['n']} rounds, all equal).")
        else:
            lines.append(f"- {name}: no drift ({d['n']} rounds, tau {d['tau']:.2f}, p "
                         f"{d['p']:.2g}).")
    return ("Drift, Kendall's trend test on each series in time order (p < 0.05 with 6 or "
            "more rounds): the ceiling's GB/s per file where it was read, else the round "
            "factor (per round, the median over the strategies of the strategy's time over "
            "its median time).\n\n" + "\n".join(lines))


def outliers_md(r: Results, files: int) -> str:
    table = paired.outliers(r)
    rule = ("modified z = 0.6745 (x − median) / MAD of x = ln(wall s) within the group "
            "(strategy and condition; the ceiling reads per condition), |z| > 3.5, in groups "
            "of 5 or more runs")
    if table.empty:
        return f"Outliers: none ({rule})."
    lines = ["| run | strategy | condition | rep | wall s | group median s | z |",
             "|---|---|---|---|---|---|---|"]
    for _, o in table.iterrows():
        rep = "" if o["rep"] is None or pd.isna(o["rep"]) else f"{o['rep']:.0f}"
        lines.append(f"| {o['run_id']} | {spec_label(o)} | {condition(o, files)} | {rep} | "
                     f"{o['wall_s']:.3f} | {o['median_s']:.3f} | {o['z']:.1f} |")
    return (f"Outliers ({rule}): flagged here and kept in every statistic of this report.\n\n"
            + "\n".join(lines))


def wait_words(check: dict) -> str:
    """How the check ended: quiet at once, settled after a wait (and for what), or still busy;
    "" for a check from before it waited."""
    if "settled" not in check:
        return ""
    waited = check.get("waited_s")
    bound = _number(check.get("max_wait_s"), "g", " s")
    if not check["settled"]:
        return f"still busy after {_number(waited, '.0f', ' s')} of waiting (at most {bound}); "
    if not waited:
        return "quiet at once; "
    return (f"settled after {_number(waited, '.1f', ' s')} of waiting (at most {bound}) for: "
            f"{check.get('waited_for') or '?'}; ")


def stability_lines(check: dict, name: str) -> list[str]:
    load = check.get("loadavg") or [None] * 3
    busy = ", ".join(f"{p.get('comm', '?')} ({_number(p.get('cpu_percent'), '.0f', '%')})"
                     for p in check.get("busy_processes") or []) or "none"
    last = check.get("busy") or {}
    other = (f"other work {_number(last.get('cpu_percent'), '.0f', '%')} of a CPU, "
             f"{_number(last.get('runnable'), '.1f')} tasks runnable besides the check, "
             f"{_number(last.get('io_in_flight'), '.1f')} I/Os in flight; " if last else "")
    thp = check.get("khugepaged") or {}
    line = (f"- {name}: {wait_words(check)}{other}busy processes: {busy} (window "
            f"{_number(check.get('window_s'), 'g', ' s')}); load average "
            f"{' / '.join(_number(x, '.2f') for x in load)} on {check.get('cores', '?')} cores; "
            f"dirty {size_text(check.get('dirty_bytes'))}, writeback "
            f"{size_text(check.get('writeback_bytes'))}; memory available "
            f"{size_text(check.get('mem_available_bytes'))} of "
            f"{size_text(check.get('mem_total_bytes'))}"
            f"; swap used {size_text(check.get('swap_used_bytes'))} of "
            f"{size_text(check.get('swap_total_bytes'))}; khugepaged "
            f"{_number(thp.get('pages_collapsed_delta'), 'g')} pages collapsed, "
            f"{_number(thp.get('cpu_percent'), '.1f', '%')} CPU.")
    return [line] + [f"- **Warning** ({name}): {w}" for w in check.get("warnings") or []]


def stability_md(env: dict) -> str:
    lines = []
    if isinstance(env.get("stability"), dict):
        lines += stability_lines(env["stability"], "before the runs")
    for i, session in enumerate(env.get("sessions") or []):
        if isinstance(session.get("stability"), dict):
            lines += stability_lines(session["stability"],
                                     f"session {i + 1} ({session.get('started_at', '?')})")
    if not lines:
        return "Stability: no check recorded (results from before the check existed)."
    return "Stability of the machine, checked before the runs:\n\n" + "\n".join(lines)


def adaptive_md(adaptive: dict | None, files: int) -> str:
    if not adaptive:
        return ""
    budget = adaptive.get("budget_s") or 0
    head = (f"Adaptive rounds: target ±{_number(adaptive.get('target'), '.0%')} (the half "
            f"width of every paired 95% interval), {adaptive.get('min_rounds', '?')} to "
            f"{adaptive.get('max_rounds', '?')} rounds, budget "
            f"{f'{budget:.0f} s' if budget else 'none'}: {adaptive.get('rounds', '?')} rounds in "
            f"{_number(adaptive.get('elapsed_s'), '.0f', ' s')}; target met: "
            f"{'yes' if adaptive.get('met') else 'no'}; stopped: {adaptive.get('stopped', '?')}."
            " × baseline's time: the strategy's time over the baseline's, paired (below 1: "
            "faster).")
    levels = paired.levels_note([c.get("n") for c in adaptive.get("comparisons") or []])
    head += f" {levels}" if levels else ""
    lines = ["| strategy | condition | baseline | rounds | × baseline's time (95% CI) | "
             "half width | met |", "|---|---|---|---|---|---|---|"]
    for c in adaptive.get("comparisons") or []:
        row = {"cache": c.get("cache"), "file": c.get("file"), "procs": c.get("procs") or 1,
               "pattern": c.get("pattern") or REPLICATED,
               "memory_limit_bytes": c.get("memory_limit_bytes") or 0,
               "storage": c.get("storage") or ""}
        ratio = c.get("ratio")
        half = c.get("half_width")
        lines.append(f"| {c.get('strategy_spec')} | {condition(row, files)} | "
                     f"{c.get('baseline')} | {c.get('n')} | "
                     f"{'?' if ratio is None else ratio_text(ratio, c.get('low'), c.get('high'))}"
                     f" | {'∞' if half is None else f'±{half:.1%}'} | "
                     f"{'yes' if c.get('met') else 'no'} |")
    return head + "\n\n" + "\n".join(lines)


def section_md(r: Results) -> str:
    files = max(r.runs["file"].nunique(), 1)
    parts = [rounds_md(r), ceiling_md(r, files),
             ceiling.check_md(r, lambda row: condition(row, files)), drift_md(r, files),
             outliers_md(r, files),
             stability_md(r.env), adaptive_md(r.adaptive, files)]
    return "\n\n".join(p for p in parts if p)


def summary(r: Results) -> dict:
    sessions = r.env.get("sessions") or []
    return {"paired": records(paired.paired_table(r)),
            "broken_rounds": records(paired.broken_rounds(r)),
            "ceiling": records(paired.ceiling_table(r)),
            "ceiling_beaten": records(ceiling.beaten(r)),
            "drift": records(paired.drift(r)),
            "outliers": records(paired.outliers(r)),
            "adaptive": r.adaptive,
            "stability": {"before": r.env.get("stability"),
                          "sessions": [s.get("stability") for s in sessions]}}


def plot_rounds(r: Results, figs) -> None:
    """Per condition with two rounds or more: each strategy's time per round over its median,
    and the ceiling's GB/s on the right axis, the rounds in time order. Drawn when some
    condition has rounds to set side by side: two that each held two strategies or more, or
    ceiling reads."""
    values = paired.run_values(r)
    if values.empty:
        return
    ceilings = paired.ceiling_values(r)
    conditions = [(k, g) for k, g in values.groupby(CONDITION, sort=False)
                  if g["rep"].nunique() >= 2]
    shared = [k for k, g in conditions if (g.groupby("rep").size() >= 2).sum() >= 2]
    if not conditions or (not shared and ceilings.empty):
        return
    files = values["file"].nunique()
    fig, axes = plt.subplots(len(conditions), 1, figsize=(9, 3.2 * len(conditions)),
                             squeeze=False)
    for ax, (key, group) in zip(axes[:, 0], conditions):
        order = group.groupby("rep")["order"].min().sort_values()
        x_of = {rep: i for i, rep in enumerate(order.index)}
        for _, g in group.groupby(["strategy_spec", "role"], sort=False):
            g = g.sort_values("order")
            ax.plot([x_of[rep] for rep in g["rep"]], g["wall_s"] / g["wall_s"].median(),
                    marker=".", linewidth=0.8, label=spec_label(g.iloc[0]))
        ax.axhline(1, color="grey", linewidth=0.5)
        ax.set_ylabel("time / its median (above 1: slower)")
        ax.set_title(condition(dict(zip(CONDITION, key)), files))
        c = ceilings[(ceilings[CONDITION] == pd.Series(key, index=CONDITION)).all(axis=1)]
        c = c[c["rep"].isin(x_of)]
        if not c.empty:
            right = ax.twinx()
            c = c.assign(x=c["rep"].map(x_of)).sort_values("x")
            right.plot(c["x"], c["gb_per_s"], color="black", linewidth=2, label="ceiling")
            right.set_ylabel("ceiling read (GB/s)")
            right.legend(fontsize=7, loc="upper right")
        ax.legend(fontsize=6, ncol=3, loc="upper left")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes[-1, 0].set_xlabel("round, in time order")
    figs.save(fig, "rounds", "Every round in time order: each strategy's time in the round over "
                             "its median time (1: its usual time) and, where read, the ceiling "
                             "read's GB/s (black, right axis). A drift moves every line "
                             "together; the paired ratios cancel it.")


class Noise(Section):
    title = TITLE

    def figures(self) -> None:
        plot_rounds(self.ctx.results, self.ctx.figs)

    def markdown(self) -> str:
        md = section_md(self.ctx.results)
        return "\n\n".join(p for p in (md, self.ctx.figs.md("rounds")) if p)

    def summary(self) -> dict:
        return summary(self.ctx.results)
