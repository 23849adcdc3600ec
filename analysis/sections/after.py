"""The report's *After the load* (analysis/stats/after.py): per group the medians of each
phase of the `use` options and of the memory left behind, and the first-use figure."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from analysis.core.figures import Figures
from analysis.core.labels import label
from analysis.core.results import records
from analysis.sections.base import Section
from analysis.stats import after

def plot_first_use(use: pd.DataFrame, figs: Figures) -> None:
    """Ready, first use and all layers side by side for every group that measured a first use."""
    t = use[use["first_use_s"].notna()]
    if t.empty:
        return
    files = use["file"].nunique()
    t = t.sort_values(["cache", "wall_s"], ascending=[True, False])
    fig, ax = plt.subplots(figsize=(10, 0.8 * len(t) + 2))
    y = np.arange(len(t))
    bars = [("ready_s", "ready", "#8da0cb"),
            ("first_use_s", "first use", "#fc8d62"),
            ("wall_s", "all layers", "#66c2a5")]
    for i, (column, name, color) in enumerate(bars):
        ax.barh(y + (1 - i) * 0.27, t[column].fillna(0), height=0.27, color=color, label=name)
    ax.set_yticks(list(y), [f"{r['cache']} {label(r, files)}" for _, r in t.iterrows()])
    times = t[["ready_s", "first_use_s", "wall_s"]].to_numpy(dtype=float).ravel()
    times = times[times > 0]
    # Views are ready in a millisecond while the layers take seconds: a log axis shows both.
    wide = times.size > 0 and times.max() > 20 * times.min()
    if wide:
        ax.set_xscale("log")
    ax.set_xlabel("seconds since the load started, median" + (" (log)" if wide else ""))
    ax.legend(fontsize=8, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=3)
    figs.save(fig, "first-use", "Time to first use vs all layers: per group with a forward "
                                "consumer, the median time until views were handed out, until "
                                "layer 0 and everything before it was consumed, and until every "
                                "layer was.")


def after_md(use: pd.DataFrame, files: int) -> str:
    def s(v: float) -> str:
        return "" if math.isnan(v) else f"{v:.3f}"

    def gb(v: float) -> str:
        return "" if math.isnan(v) else f"{v / 1e9:.2f}"

    lines = ["| strategy | cache | ready s | first use s | all layers s | transform s | consume s "
             "| peak RSS GB | anon RSS GB | private dirty GB | verify |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for _, r in use.iterrows():
        lines.append(f"| {label(r, files)} | {r['cache']} | {s(r['ready_s'])} | "
                     f"{s(r['first_use_s'])} | {s(r['wall_s'])} | {s(r['transform_s'])} | "
                     f"{s(r['consume_s'])} | {gb(r['peak_rss_bytes'])} | "
                     f"{gb(r['rss_anon_bytes'])} | {gb(r['private_dirty_bytes'])} | "
                     f"{r['verify']} |")
    return ("What each group did with the weights once loaded (its `use` options, in the "
            "strategy spec; none given: a checksum over views), medians of the ok runs; an empty "
            "cell is a phase or figure no run of the group recorded. First use: layer 0 and "
            "everything before it consumed, by any consumer (empty for a file without layer "
            "names); all layers: the load's wall time; private dirty: memory the worker "
            "wrote, its own copies and the copy-on-write pages of a mapping alike.\n\n"
            + "\n".join(lines))


class After(Section):
    title = "After the load"

    def shown(self) -> bool:
        if not hasattr(self, "use"):
            self.use = after.summarize(self.ctx.results) if after.shown(self.ctx.results) \
                else None
        return self.use is not None

    def figures(self) -> None:
        plot_first_use(self.use, self.ctx.figs)

    def markdown(self) -> str:
        md = after_md(self.use, self.ctx.files)
        return "\n\n".join(p for p in (md, self.ctx.figs.md("first-use")) if p)

    def summary(self) -> dict:
        return {"after_load": records(self.use)}
