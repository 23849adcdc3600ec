"""The report's *Where the time went* (analysis/stats/causes.py): per cache state a table of
seconds and shares by cause, its stacked bars and a flame graph of each group's representative
run, and the runs whose profile could not be taken."""

from __future__ import annotations

import re

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.patches import Patch
from matplotlib.ticker import PercentFormatter
from analysis.core.figures import Figures
from analysis.core.labels import label, plural
from analysis.core.results import GROUP, Results
from analysis.sections.base import Section
from analysis.stats import causes

WHERE_TITLE = "Where the time went"


MINOR = 0.01  # a cause under this share of what its group's shares are of, everywhere: no column


SMALLER = "smaller causes"


# One color per cause, the same in every figure: causes.NAMES in order, then SMALLER, WAITING.
CAUSE_COLORS = dict(zip(causes.NAMES + [SMALLER, causes.WAITING],
                        ["#d62728", "#ff7f0e", "#e377c2", "#8c564b", "#1f77b4", "#17becf",
                         "#9467bd", "#bcbd22", "#2ca02c", "#f2c12e", "#c5b0d5", "#6f6f6f",
                         "#b0b0b0", "#dcdcdc", "#ffffff"]))


FLAME_WIDTH = 13.0  # inches


FLAME_FONT = 6.5  # points


def cause_rows(profiled: pd.DataFrame, table: pd.DataFrame) -> pd.DataFrame:
    """causes.summarize's rows in the report's order (cache state, then median time), with the
    summary table's median_s and `verified` for their labels."""
    if profiled.empty:
        return profiled
    rows = profiled.merge(table[GROUP + ["median_s", "verified"]], on=GROUP, how="left")
    return rows.sort_values(["cache", "median_s"], kind="stable").reset_index(drop=True)


def cause_seconds(rows: pd.DataFrame) -> pd.DataFrame:
    """Per row the seconds of each cause that reaches MINOR of what its group's shares are of
    (causes.whole) in some group, of SMALLER (the others summed, where they add up to anything)
    and of WAITING."""
    share = rows[causes.NAMES].div(rows.apply(causes.whole, axis=1), axis=0)
    shown = [c for c in causes.NAMES if (share[c] >= MINOR).any()]
    out = rows[shown].copy()
    rest = rows[[c for c in causes.NAMES if c not in shown]].sum(axis=1)
    if rest.sum() > 0:
        out[SMALLER] = rest
    out[causes.WAITING] = rows[causes.WAITING]
    return out


def where_intro(r: Results) -> str:
    how = r.env.get("profile") or {}
    rates = sorted(set(causes.profiled(r)["hz"]))
    rate = f"{rates[0]:.0f} times a second" if len(rates) == 1 else "at its record's rate"
    chains = f"; call chains: {how['call_chains']}" if how.get("call_chains") else ""
    return (
        "Where each group's load went, from CPU profiles (`loadbench run --profile`: perf "
        f"samples each of the worker's threads while it is on a CPU, {rate}, over the timed "
        f"region{chains}). A sample's cause is read from its call chain, from the leaf (where "
        "the CPU was) toward the root: the first frame that names a cause decides, so a page "
        "fault taken inside a copy is the fault's time, not the copy's; a chain where none "
        "does is *other kernel* or *other user* by its leaf. Waiting (off-CPU) is each "
        "thread's time in the load less its on-CPU time, added up over the threads. A load "
        "with one thread has shares of its wall time: its causes and its waiting add up to "
        "it. A load with several (pool, pread_mt, mmap_prefetch's thread) "
        "can be on CPU for longer than its wall time, so its causes are shares of the CPU "
        "time (*shares of*: CPU time) and add up to that; its waiting stands beside them, a "
        "share of nothing. Seconds are means over the group's profiled ok runs (n), so that "
        "a row adds up as each run does; wall s is their mean wall time. On a virtual "
        "machine the guest does not see the hypervisor's time except where it re-enables "
        "interrupts (PVM: `pvm_irq_enable`, in *hypervisor and exception entry*): the first "
        "user access to a page the hypervisor has not backed yet shows up as the user "
        "instruction that touched it, *the consumer* or *the strategy's copy*, not as a fault.")


def glossary_md(columns) -> str:
    text = {**causes.DESCRIPTIONS, SMALLER: f"the causes under {MINOR:.0%} of what the shares "
                                            "are of in every group, summed"}
    return "\n".join(f"- *{c}*: {text[c]}" for c in columns)


def share_cell(r: pd.Series, column: str, s: float) -> str:
    """A cause's seconds and its share of what the row's shares are of; a row with shares of
    CPU time shows its waiting without one."""
    if column == causes.WAITING and r["shares_of"] == "cpu":
        return f"{s:.3f} (not a share)"
    total = causes.whole(r)
    return f"{s:.3f} ({s / total:.0%})" if total > 0 else f"{s:.3f}"


def where_table_md(rows: pd.DataFrame, seconds: pd.DataFrame, files: int) -> str:
    head = ["strategy", "n", "threads", "wall s", "on CPU s", "shares of"] + list(seconds.columns)
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for i, r in rows.iterrows():
        threads = "" if pd.isna(r["threads"]) else str(int(r["threads"]))
        cells = [label(r, files), str(r["n"]), threads, f"{r['wall_s']:.3f}",
                 f"{r['on_cpu_s']:.3f}", "CPU time" if r["shares_of"] == "cpu" else "wall time"]
        cells += [share_cell(r, c, s) for c, s in seconds.loc[i].items()]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def profiles_missing_md(r: Results, files: int) -> str:
    gone = causes.missing(r)
    lines = []
    for _, g in gone.groupby(GROUP + ["status", "profile_error"], sort=False):
        first = g.iloc[0].drop("verified")  # a failed run is not "unverified"
        ids = ", ".join(g["run_id"].head(3)) + (", …" if len(g) > 3 else "")
        status = "" if first["status"] == "ok" else f", {first['status']}"
        lines.append(f"- {label(first, files)}, {first['cache']}{status}: "
                     f"{plural(len(g), 'run')} ({ids}): {first['profile_error']}")
    return ("Profiles asked for but not taken (those runs are in no row above; their times "
            "count everywhere else):\n\n" + "\n".join(lines)) if lines else ""


def plot_causes(rows: pd.DataFrame, seconds: pd.DataFrame, files: int, figs: Figures) -> None:
    """Per cache state, one bar per group of its seconds by cause, the fastest at the top."""
    for cache in [c for c in ("cold", "warm") if c in set(rows["cache"])]:
        t = rows[rows["cache"] == cache].iloc[::-1]
        y = np.arange(len(t))
        fig, ax = plt.subplots(figsize=(11, 0.45 * len(t) + 1.8))
        left = np.zeros(len(t))
        for cause, values in seconds.loc[t.index].items():
            if cause == causes.WAITING:  # a share of wall time only: not stacked on CPU time
                values = values.where(t["shares_of"] == "wall", 0.0)
            ax.barh(y, values, left=left, color=CAUSE_COLORS[cause], edgecolor="grey",
                    linewidth=0.3, hatch="//" if cause == causes.WAITING else None, label=cause)
            left += values.to_numpy()
        ax.scatter(t["wall_s"], y, marker="|", s=400, color="black", zorder=3, label="wall time")
        ax.set_yticks(list(y), [label(row, files) for _, row in t.iterrows()])
        ax.set_xlabel("seconds, mean over the profiled runs")
        ax.set_title(f"{cache} cache")
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
        figs.save(fig, f"causes-{cache}",
                  f"Where the {cache} loads' time went, by cause (see *{WHERE_TITLE}*): the "
                  "mean seconds of each cause over each group's profiled runs, and their mean "
                  "wall time (|). A group with several threads has its CPU time drawn, which "
                  "can pass its wall time, and no waiting.")


def frame_kind(frame: str) -> str:
    """The cause a frame names, else other kernel or other user: its color in a flame graph."""
    return causes.frame_cause(frame) or (causes.OTHER_KERNEL if causes.is_kernel(frame)
                                         else causes.OTHER_USER)


def short_frame(frame: str) -> str:
    """A frame's name for a label: no `_[k]`, no namespace `(anonymous namespace)`, template
    arguments and parameter lists left out."""
    name = frame[:-4] if causes.is_kernel(frame) else frame
    name, previous = name.replace("(anonymous namespace)::", ""), None
    while name != previous:
        previous, name = name, re.sub(r"<[^<>]*>|\([^()]*\)", "", name)
    return name


def draw_flame(rects: pd.DataFrame, title: str):
    """A flame graph (causes.flame's rectangles): root at the bottom, width the share of the
    samples, each frame colored by frame_kind and named where it is wide enough."""
    total = rects.loc[rects["depth"] == 0, "samples"].sum()
    levels = int(rects["depth"].max()) + 1
    kinds = rects["frame"].map(frame_kind)
    fig, ax = plt.subplots(figsize=(FLAME_WIDTH, 1.4 + 0.2 * levels))
    ax.barh(rects["depth"], rects["samples"], left=rects["start"], height=0.92,
            color=kinds.map(CAUSE_COLORS).tolist(), edgecolor="white", linewidth=0.3)
    per_char = total * FLAME_FONT * 0.58 / (FLAME_WIDTH * 0.9 * 72)  # samples a letter takes
    for q in rects.itertuples():
        room = int(q.samples / per_char) - 1
        if room >= 3:
            name = short_frame(q.frame)
            ax.text(q.start + per_char / 2, q.depth,
                    name if len(name) <= room else name[:room - 1] + "…",
                    fontsize=FLAME_FONT, va="center", clip_on=True)
    ax.set_xlim(0, total)
    ax.set_ylim(-0.5, levels - 0.5)
    ax.set_yticks([])
    ax.set_xticks(np.linspace(0, total, 11))
    ax.xaxis.set_major_formatter(PercentFormatter(xmax=total, decimals=0))
    ax.set_xlabel("share of the run's on-CPU samples (root at the bottom, callees above)")
    present = [k for k in CAUSE_COLORS if k in set(kinds)]
    ax.legend(handles=[Patch(color=CAUSE_COLORS[k], label=k) for k in present], fontsize=7,
              loc="lower left", bbox_to_anchor=(0.0, 1.0), ncol=5, frameon=False, title=title,
              title_fontsize=9, alignment="left")
    return fig


def plot_flames(r: Results, rows: pd.DataFrame, files: int, figs: Figures) -> None:
    """A flame graph of each group's representative run (`flame-CACHE-...`)."""
    runs = causes.profiled(r).set_index("run_id")
    for i, row in rows.iterrows():
        run = runs.loc[row["run_id"]]
        rects = causes.flame(causes.read_folded(run["folded"]))
        if rects.empty:
            continue
        name = f"flame-{row['cache']}-{i}-" + re.sub(r"[^A-Za-z0-9]+", "-", row["strategy_spec"])
        samples = int(rects.loc[rects["depth"] == 0, "samples"].sum())
        what = f"{row['cache']} {label(row, files)}, run {row['run_id']}"
        caption = (f"Flame graph, {what} (the group's run nearest its median time): "
                   f"{samples} samples, {samples / run['hz']:.3f} s on CPU in "
                   f"{run['wall_s']:.3f} s; colored by the cause each frame names (grey: none).")
        figs.save(draw_flame(rects, what), name, caption)


FLAMES_NOTE = ("Below each table, its bars, then a flame graph of each group's run nearest its "
               "median time: a frame's width is its share of the run's on-CPU samples, its "
               "callees stand on it, and its color is the cause its own name gives (a sample's "
               "cause is that of the first such frame from the top).")


def where_md(r: Results, profiled: pd.DataFrame, table: pd.DataFrame, files: int,
             figs: Figures) -> str:
    """The section: per cache state a table, its figure and a flame graph per group."""
    rows = cause_rows(profiled, table)
    parts = [where_intro(r) if len(rows) else "No ok run has a profile."]
    if len(rows):
        seconds = cause_seconds(rows)
        plot_causes(rows, seconds, files, figs)
        plot_flames(r, rows, files, figs)
        parts += [glossary_md(seconds.columns), FLAMES_NOTE if figs.md("flame-") else ""]
        for cache in [c for c in ("cold", "warm") if c in set(rows["cache"])]:
            t = rows[rows["cache"] == cache]
            parts += [f"**{cache.capitalize()} start**", where_table_md(t, seconds, files),
                      figs.md(f"causes-{cache}", f"flame-{cache}-")]
    parts.append(profiles_missing_md(r, files))
    return "\n\n".join(p for p in parts if p)


class Where(Section):
    title = WHERE_TITLE

    def shown(self) -> bool:
        return self.ctx.profiled is not None

    def markdown(self) -> str:
        c = self.ctx
        return where_md(c.results, c.profiled, c.table, c.files, c.figs)

    def summary(self) -> dict:
        return causes.summary(self.ctx.profiled, self.ctx.results)
