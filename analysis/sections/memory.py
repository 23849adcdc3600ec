"""The report's *Memory and reads*: per group peak RSS, page cache and bytes read, its figure
and each group's timeline."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
from analysis.core.figures import Figures, panel_width
from analysis.core.labels import label
from analysis.core.results import GROUP, Results
from analysis.core.units import size_text
from analysis.sections.base import Section

def plot_memory(table: pd.DataFrame, figs: Figures) -> None:
    files = table["file"].nunique()
    t = table.sort_values(["cache", "peak_rss_bytes"])
    labels = [f"{r['cache']} {label(r, files)}" for _, r in t.iterrows()]
    width = panel_width(max((len(x) for x in labels), default=0))
    fig, (a, b) = plt.subplots(1, 2, figsize=(2 * width, 0.3 * len(t) + 2))
    a.barh(labels, t["peak_rss_bytes"] / 2**30, color="#55a868")
    a.set_xlabel("peak RSS, median (GiB)")
    b.barh(labels, t["minor_faults"], color="#c44e52", label="minor")
    b.barh(labels, t["major_faults"], left=t["minor_faults"], color="#8172b2", label="major")
    b.set_xscale("symlog")
    b.set_xlabel("page faults, median (count, log)")
    b.legend()
    figs.save(fig, "memory", "Peak RSS and page faults of each strategy's worker (medians of "
                             "the ok runs).")


def memory_md(table: pd.DataFrame, files: int) -> str:
    """What the memory figure draws, per group: peak RSS, the load's faults and bytes read."""
    def count(v: float) -> str:
        return "" if pd.isna(v) else f"{v:,.0f}"

    lines = ["| strategy | cache | peak RSS | minor faults | major faults | read from storage |",
             "|---|---|---|---|---|---|"]
    for _, r in table.iterrows():
        rss, read = r["peak_rss_bytes"], r["read_bytes"]
        lines.append(f"| {label(r, files)} | {r['cache']} | {size_text(rss, '')} "
                     f"| {count(r['minor_faults'])} | {count(r['major_faults'])} | "
                     f"{size_text(read, '')} |")
    return ("Medians of the ok runs: the worker's peak RSS (VmHWM: a mapping counts the file "
            "pages it touched), the page faults of the load itself (the whole worker's in "
            "records from before those were kept) and the bytes it caused to be read from "
            "storage; empty: no run recorded it. The timelines below follow each strategy's "
            "run of median time.\n\n" + "\n".join(lines))


def plot_timelines(r: Results, table: pd.DataFrame, figs: Figures) -> None:
    """One representative run per strategy (the ok run nearest its group's median)."""
    for cache in [c for c in ("cold", "warm") if c in set(table["cache"])]:
        curves = []
        for _, row in table[table["cache"] == cache].iterrows():
            group = r.ok[(r.ok[GROUP] == row[GROUP]).all(axis=1)]
            pick = group.iloc[(group["wall_s"] - row["median_s"]).abs().argsort().iloc[0]]
            tl = r.timeline(pick["run_id"])
            if tl is not None and not tl.empty:
                curves.append((label(row, table["file"].nunique()), tl))
        if not curves:
            continue
        fig, axes = plt.subplots(3, 1, figsize=(9, 9), sharex=True)
        for name, tl in curves:
            t = tl[tl["t_s"] >= 0]
            axes[0].plot(t["t_s"], t["rss_bytes"] / 2**30, label=name)
            axes[1].plot(t["t_s"], t["file_cached_bytes"] / 2**30, label=name)
            axes[2].plot(t["t_s"], (t["read_bytes"] - t["read_bytes"].iloc[0]) / 2**30,
                         label=name)
        axes[0].set_ylabel("RSS (GiB)")
        axes[1].set_ylabel("file in page cache (GiB)")
        axes[2].set_ylabel("bytes read (GiB)")
        axes[2].set_xlabel("time since the load started (s)")
        axes[0].legend(fontsize=7, ncol=2)
        figs.save(fig, f"timeline-{cache}",
                  f"How a {cache} load unfolds: RSS, the file's pages in the page cache, and "
                  "bytes read from storage, for the run of median time of each strategy.")


class Memory(Section):
    title = "Memory and reads"

    def shown(self) -> bool:
        return bool(len(self.ctx.table))

    def figures(self) -> None:
        plot_memory(self.ctx.table, self.ctx.figs)
        plot_timelines(self.ctx.results, self.ctx.table, self.ctx.figs)

    def markdown(self) -> str:
        md = memory_md(self.ctx.table, self.ctx.files)
        return "\n\n".join(p for p in (md, self.ctx.figs.md("memory", "timeline-")) if p)
