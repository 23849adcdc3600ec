"""`make report RESULTS=DIR`: a results folder into DIR/report.md, a self-contained
DIR/report.html (figures embedded; the page itself is analysis/html_page.py's), the figures as
PNG and SVG in DIR/figures/, and DIR/summary.json, the table for other tools.

    /usr/bin/python3 -m analysis.report DIR
    /usr/bin/python3 -m analysis.report --brief DIR   # then print only report.html's path
                                                      # and the verdict (`make run`'s end)

The report opens with the verdict (per cache state the fastest strategy against the baseline
and the runner-up, and the fastest ways to map the model and to own a copy, analysis/verdict.py)
and the time figure; each figure follows the table it illustrates, and each start table's *why*
prices a copy's first touches and its notes name the groups whose runs got huge pages in part
(analysis/touch.py); noise, carry-over, the machine and the runs left out come last.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import time

import matplotlib

matplotlib.use("Agg")  # files only: no display on a server
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import PercentFormatter  # noqa: E402

from analysis import (after, carryover, causes, ceiling, fleet, gpu, html_page,  # noqa: E402
                      machine_figures, noise, paired, peers, readers, remote, stats, touch,
                      verdict)
from analysis.results import (EXEC, GROUP, REPLICATED, UNVERIFIED_MARK,  # noqa: E402
                              Results, ResultsError, guard, json_default, load, network,
                              problems_md, ratio_text, spec_label)

# The published cold-start table `reference-table` reproduces: seconds and peak RSS (GB) for a
# 14 GB file, on another machine.
PUBLISHED = {"fread": (26.0, 18.0), "mmap": (10.0, 14.0), "mmap_seq": (8.0, 14.0)}

# The probe's figures drawn as reference lines on the throughput plots: (model.FIGURES' name,
# label), read as the machines report reads them (machine_figures.from_env), so that the device
# is one number in both: the probe's fastest read recipe, `device_limit`.
CEILINGS = {
    "cold": [("device_gb_per_s", "device")],
    "warm": [("page_cache_gb_per_s", "page cache read"), ("memcpy_gb_per_s", "memcpy")],
}


def gib(n: float | None) -> str:
    return "unknown" if n is None or pd.isna(n) else f"{n / 2**30:.2f} GiB"


def why(row: pd.Series) -> str:
    """One phrase on what the group's time went to: for a copy into memory of its own, its
    first touches priced by the probe (touch.why); else what its profile, else the run's own
    counts, say."""
    if str(row.get("strategy", "")).startswith("cuda_"):
        return "into GPU memory: see *Into GPU memory*"  # host fault counts do not tell it
    if row.get("strategy") == EXEC:
        return "a command of its own: see *Peers*"  # its counts are its whole process tree's
    if remote.by_spec(row):
        return f"read through the server: see *{remote.TITLE}*"  # its reads are the server's
    priced = touch.why(row)
    if priced:
        return priced
    parts = row.get("cause_shares")
    if isinstance(parts, dict) and parts["shares"]:
        top = sorted(parts["shares"].items(), key=lambda kv: kv[1], reverse=True)[:2]
        of = "" if parts["of"] == "wall" else " (of the threads' CPU time)"
        return f"profile{of}: " + ", ".join(f"{share:.0%} {cause}" for cause, share in top)
    pages = row["file_bytes"] / 4096
    if row["minor_faults"] > 0.5 * pages:
        return f"a fresh page per 4 KiB: {row['minor_faults']:,.0f} minor faults"
    if row["cache"] == "warm" and row["read_bytes"] == 0:
        return "served from the page cache, nothing read"
    if row["minor_faults"] < 0.05 * pages:
        return f"maps the page cache: {row['minor_faults']:,.0f} faults for {pages:,.0f} pages"
    return ""


class Figures:
    """Writes each figure as PNG and SVG and keeps its caption, for the report to show each
    right after the table it illustrates (`md`)."""

    def __init__(self, folder: str):
        self.dir = os.path.join(folder, "figures")
        os.makedirs(self.dir, exist_ok=True)
        self.items: list[tuple[str, str]] = []  # (name, caption)

    def save(self, fig, name: str, caption: str) -> None:
        fig.tight_layout()
        for ext in ("png", "svg"):
            fig.savefig(os.path.join(self.dir, f"{name}.{ext}"), dpi=110)
        plt.close(fig)
        self.items.append((name, caption))

    def md(self, *names: str) -> str:
        """The Markdown of the saved figures of `names`, in that order ("" for one not drawn);
        a name ending in `-` stands for every figure whose name starts with it, as saved."""
        return "\n\n".join(figure_md(n, caption) for name in names for n, caption in self.items
                           if n == name or (name.endswith("-") and n.startswith(name)))


def figure_md(name: str, caption: str) -> str:
    """A figure in Markdown, the image then its caption (html_page embeds it there)."""
    return f"![{caption}](figures/{name}.png)\n*{caption}*"


def label(row: pd.Series, files: int) -> str:
    text = spec_label(row)
    if row["procs"] > 1:
        text += f" ×{row['procs']}"
    if row["pattern"] != REPLICATED:
        text += f" {row['pattern']}"
    if row["memory_limit_bytes"] > 0:
        text += f" ≤{gib(row['memory_limit_bytes'])}"
    text += network(row, " ")
    if files > 1:
        text += f" [{os.path.basename(row['file'])}]"
    return text


def plot_times(table: pd.DataFrame, figs: Figures) -> None:
    files = table["file"].nunique()
    caches = [c for c in ("cold", "warm") if c in set(table["cache"])]
    fig, axes = plt.subplots(1, len(caches), figsize=(6 * len(caches), 0.35 * len(table) + 2),
                             squeeze=False)
    for ax, cache in zip(axes[0], caches):
        t = table[table["cache"] == cache].sort_values("median_s", ascending=False)
        y = range(len(t))
        ax.barh(y, t["median_s"], color="#4c72b0")
        # Whiskers only where an interval exists (6 runs or more).
        has = t["ci_low_s"].notna().to_numpy()
        w = t[has]
        ax.errorbar(w["median_s"], np.flatnonzero(has), xerr=[w["median_s"] - w["ci_low_s"],
                                                              w["ci_high_s"] - w["median_s"]],
                    fmt="none", ecolor="black", capsize=3)
        ax.set_yticks(list(y), [label(r, files) for _, r in t.iterrows()])
        # Copies and mappings can differ by 100x here: a log axis keeps both readable.
        wide = t["median_s"].max() > 20 * t["median_s"].min()
        if wide:
            ax.set_xscale("log")
        ax.set_xlabel("load time, median (s" + (", log)" if wide else ")"))
        ax.set_title(f"{cache} cache")
    figs.save(fig, "time", "Median load time per strategy, cold and warm; whiskers are the exact "
                           "95% interval of the median (order statistics; none for fewer than "
                           "6 runs).")


def plot_memory(table: pd.DataFrame, figs: Figures) -> None:
    files = table["file"].nunique()
    t = table.sort_values(["cache", "peak_rss_bytes"])
    labels = [f"{r['cache']} {label(r, files)}" for _, r in t.iterrows()]
    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 0.3 * len(t) + 2))
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
        lines.append(f"| {label(r, files)} | {r['cache']} | {'' if pd.isna(rss) else gib(rss)} "
                     f"| {count(r['minor_faults'])} | {count(r['major_faults'])} | "
                     f"{'' if pd.isna(read) else gib(read)} |")
    return ("Medians of the ok runs: the worker's peak RSS (VmHWM: a mapping counts the file "
            "pages it touched), the page faults of the load itself (the whole worker's in "
            "records from before those were kept) and the bytes it caused to be read from "
            "storage; empty: no run recorded it. The timelines below follow each strategy's "
            "run of median time.\n\n" + "\n".join(lines))


def plot_throughput(table: pd.DataFrame, env: dict, figs: Figures) -> None:
    files = table["file"].nunique()
    figures = machine_figures.from_env(env, "").figures
    for cache in [c for c in ("cold", "warm") if c in set(table["cache"])]:
        t = table[table["cache"] == cache].sort_values("gb_per_s")
        fig, ax = plt.subplots(figsize=(8, 0.35 * len(t) + 2))
        ax.barh([label(r, files) for _, r in t.iterrows()], t["gb_per_s"], color="#4c72b0")
        drawn = []
        for key, name in CEILINGS[cache]:
            gbps = figures.get(key)
            if gbps:
                ax.axvline(gbps, linestyle="--", color="grey")
                ax.text(gbps, len(t) - 0.5, f" {name}\n {gbps:.2f} GB/s", fontsize=8, va="top")
                drawn.append(f"{name} {gbps:.2f} GB/s")
        ax.set_xlabel("throughput per reader, its bytes / median time (GB/s)"
                      if (t["procs"] > 1).any() else
                      "throughput, file bytes / median time (GB/s)")
        ax.set_title(f"{cache} cache")
        ref = ("; dashed: the probe's " + ", ".join(drawn)) if drawn else \
            "; no probe ceilings in env.json"
        figs.save(fig, f"throughput-{cache}",
                  f"{cache.capitalize()} throughput per strategy{ref}.")


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


def plot_scaling(table: pd.DataFrame, figs: Figures) -> None:
    series = ["strategy_spec", "role", "cache"]
    sizes = table.groupby(series)["file_bytes"].nunique()
    if sizes.max() < 2:
        return
    fig, ax = plt.subplots(figsize=(8, 6))
    for _, t in table.groupby(series):
        if t["file_bytes"].nunique() < 2:
            continue
        t = t.sort_values("file_bytes")
        line, = ax.plot(t["file_bytes"] / 2**30, t["median_s"], marker="o",
                        label=f"{t['cache'].iloc[0]} {spec_label(t.iloc[0])}")
        w = t[t["ci_low_s"].notna()]  # whiskers only where an interval exists
        ax.errorbar(w["file_bytes"] / 2**30, w["median_s"],
                    yerr=[w["median_s"] - w["ci_low_s"], w["ci_high_s"] - w["median_s"]],
                    fmt="none", ecolor=line.get_color(), capsize=3)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("file size (GiB, log)")
    ax.set_ylabel("load time, median (s, log)")
    ax.legend(fontsize=7)
    figs.save(fig, "scaling", "Load time against file size, log-log: a slope of 1 is linear "
                              "scaling; whiskers are the exact 95% intervals of the median "
                              "(none for fewer than 6 runs).")


def plot_sweeps(r: Results, table: pd.DataFrame, figs: Figures) -> None:
    """Throughput against each numeric option that varies within one strategy."""
    if "params" not in r.ok:
        return
    params = r.ok[["strategy_spec", "strategy", "params"]].drop_duplicates("strategy_spec")
    spec_params = {row["strategy_spec"]: row["params"] for _, row in params.iterrows()
                   if isinstance(row["params"], dict)}
    for strategy, t in table.groupby("strategy"):
        specs = [s for s in t["strategy_spec"].unique() if s in spec_params]
        if len(specs) < 2:
            continue
        keys = {k for s in specs for k, v in spec_params[s].items()
                if isinstance(v, (int, float)) and not isinstance(v, bool)}
        for key in sorted(keys):
            values = {spec_params[s].get(key) for s in specs}
            if len(values) < 2:
                continue
            t2 = t.assign(x=t["strategy_spec"].map(lambda s: spec_params.get(s, {}).get(key)))
            others = [k for k in sorted(keys | {k for s in specs for k in spec_params[s]})
                      if k != key]
            t2 = t2.assign(series=t2["strategy_spec"].map(
                lambda s: ", ".join(f"{k}={spec_params[s].get(k)}" for k in others
                                    if len({str(spec_params[x].get(k)) for x in specs}) > 1)))
            fig, ax = plt.subplots(figsize=(8, 5))
            for (cache, role, series), g in t2.groupby(["cache", "role", "series"]):
                g = g.sort_values("x")
                ax.plot(g["x"], g["gb_per_s"], marker="o",
                        label=" ".join(p for p in (cache, role, series) if p))
            ax.set_xscale("log", base=2)
            ax.set_xlabel(f"{key} (log)")
            ax.set_ylabel("throughput (GB/s)")
            ax.legend(fontsize=7)
            figs.save(fig, f"sweep-{strategy}-{key}",
                      f"{strategy}: throughput against {key}, one line per setting of its other "
                      "options.")


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


def ratio_cells(r: pd.Series) -> tuple[str, str]:
    """A summary row's paired time ratio to its baseline with its interval (ratio_text, the
    text the verdict and compare print too), and the verdict of the paired test."""
    if r["is_baseline"]:
        return "1 (baseline)", ""
    if pd.isna(r["time_ratio"]):
        return "", ""
    return (ratio_text(r["time_ratio"], r["time_ratio_ci_low"], r["time_ratio_ci_high"]),
            r["verdict"])


def baseline_of(t: pd.DataFrame) -> str:
    names = sorted(set(t["baseline"].dropna()))
    return names[0] if len(names) == 1 else "baseline"


def ratio_head(t: pd.DataFrame) -> str:
    """The paired column's name: whose time the strategy's is over."""
    return f"× {baseline_of(t)}'s time, paired (95% CI)"


def paired_note(t: pd.DataFrame, device: bool) -> str:
    base = baseline_of(t)
    than = "the baseline" if base == "baseline" else base
    who = ("the condition's baseline's (its row says 1)" if base == "baseline" else
           f"{base}'s")
    text = (f"× {base}'s time, paired: over the rounds both ran in, the strategy's time over "
            f"{who} (below 1: faster than {than}; 0.50×: in half the time), the Hodges–Lehmann "
            "estimate with the 95% interval of the signed-rank test (exact, distribution-free); "
            "n says how many of the strategy's rounds were paired when not all were. *faster* "
            "/ *slower*: the interval leaves out 1 (the test at level ≤ 0.05); *n.s.*: it "
            "holds 1; *too few rounds*: under 6 pairs, where no interval reaches 95% and the "
            "estimate shows with `(–)`; empty: no round shared with the baseline.")
    if device:
        text += (" Of device: the median over its rounds of the strategy's GB/s over the same "
                 "round's ceiling read (the file read cold by the fastest read recipe, the "
                 "device's speed then; *Noise* says which recipe, and names a strategy that "
                 "beat it): a share of the limit, higher is nearer it; a share marked "
                 f"{ceiling.BEYOND} or {ceiling.WITHIN} (never one above 100% unmarked) is "
                 "explained under the table's figure.")
    return text


MEDIAN_NOTE = ("Median s: of the ok runs, with the exact distribution-free 95% interval of the "
               "median (the order statistics that hold it with 95% probability whatever the "
               "distribution); (–): fewer than 6 runs: no 95% interval of the median exists.")
UNVERIFIED_NOTE = (f"{UNVERIFIED_MARK}: a command's runs that count although no checksum "
                   "checked the bytes it loaded (it sent none; see *Peers*).")


READER_NOTE = ("GB/s: the bytes one run delivers over its median time; in rows of several "
               "readers (×N), each reader's own (its bytes over its own time, *per reader*): "
               "*Many readers* gives each round's total.")


def gbps_cell(r: pd.Series) -> str:
    """A row's GB/s, marked per reader where the row's runs had several readers."""
    return f"{r['gb_per_s']:.2f}" + (" per reader" if r["procs"] > 1 else "")


def median_cell(r: pd.Series) -> str:
    if pd.isna(r["ci_low_s"]):
        return f"{r['median_s']:.3f} (–)"
    return f"{r['median_s']:.3f} ({r['ci_low_s']:.3f}–{r['ci_high_s']:.3f})"


def table_md(table: pd.DataFrame, cache: str, files: int, note: bool = True,
             no_rounds: str = "") -> str:
    """The cache state's table; `note`: with the paragraph that explains its columns (else a
    line that points to the one above); `no_rounds`: the sentence that says why no run was
    paired (paired.no_rounds), given instead of the paired columns."""
    t = table[table["cache"] == cache]
    if t.empty:
        return ""
    paired_columns = not no_rounds
    device = paired_columns and bool(t["of_device"].notna().any())
    head = ["strategy", "n", "median s (95% CI)", "GB/s"]
    head += [ratio_head(t), "paired test"] if paired_columns else []
    head += (["of device"] if device else []) + ["peak RSS", "why"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    marks = ceiling.share_marks(t)
    for i, r in t.iterrows():
        n = str(r["n"])
        if (paired_columns and not r["is_baseline"] and not pd.isna(r["pairs"])
                and r["pairs"] != r["n"]):
            n += f" ({r['pairs']:.0f} paired)"
        cells = [label(r, files), n, median_cell(r), gbps_cell(r)]
        cells += list(ratio_cells(r)) if paired_columns else []
        if device:
            cells.append(ceiling.share_cell(r["of_device"], marks[i]))
        cells += ["" if pd.isna(r["peak_rss_bytes"]) else gib(r["peak_rss_bytes"]), why(r)]
        lines.append("| " + " | ".join(cells) + " |")
    if not note:
        text = (f"× {baseline_of(t)}'s time, paired: as above (below 1: faster)."
                if paired_columns else "Columns as above.")
    else:
        text = (paired_note(t, device) if paired_columns else no_rounds) + " " + MEDIAN_NOTE
    levels = paired.levels_note(t["pairs"]) if paired_columns else ""
    text += f" {levels}" if levels else ""
    if note and (t["procs"] > 1).any():
        text += " " + READER_NOTE
    if "verified" in t and not t["verified"].all():
        text += " " + UNVERIFIED_NOTE
    legend = touch.legend(t)
    text += f" {legend}" if legend else ""
    return text + "\n\n" + "\n".join(lines)


def marks_md(table: pd.DataFrame, cache: str, files: int) -> str:
    """What the marks of the cache state's shares of device say (ceiling.marks_md), for after
    its table and the table's figure; "" without marks."""
    t = table[table["cache"] == cache]
    return ceiling.marks_md(t, ceiling.share_marks(t), lambda r: label(r, files))


def reference_md(table: pd.DataFrame) -> str:
    cold = table[(table["cache"] == "cold") & table["strategy_spec"].isin(PUBLISHED)]
    if set(cold["strategy_spec"]) != set(PUBLISHED):
        return ""
    by = cold.set_index("strategy_spec")
    lines = ["| strategy | here: s | here: × fread's time | published: s | published: × "
             "fread's time | here: peak RSS GB | published: GB | here: × fread's RSS | "
             "published: × fread's RSS |", "|---|---|---|---|---|---|---|---|---|"]
    f_here, f_rss = by.loc["fread", "median_s"], by.loc["fread", "peak_rss_bytes"]
    for spec, (sec, gb) in PUBLISHED.items():
        r = by.loc[spec]
        lines.append(f"| {spec} | {r['median_s']:.2f} | {r['median_s'] / f_here:.3f} | {sec:.0f} | "
                     f"{sec / PUBLISHED['fread'][0]:.2f} | {r['peak_rss_bytes'] / 1e9:.2f} | "
                     f"{gb:.0f} | {r['peak_rss_bytes'] / f_rss:.2f} | "
                     f"{gb / PUBLISHED['fread'][1]:.2f} |")
    here_order = list(cold.sort_values("median_s")["strategy_spec"])
    pub_order = sorted(PUBLISHED, key=lambda s: PUBLISHED[s][0])
    verdict = ("The order of the three holds here" if here_order == pub_order else
               "The order differs here: " + " < ".join(here_order))
    return ("The published cold-start table (about 26 s / 10 s / 8 s and 18 / 14 / 14 GB peak "
            "RSS for a 14 GB file, on another machine) beside this run, as ratios to fread's "
            "median time and peak RSS (below 1: faster, or less memory):\n\n"
            + "\n".join(lines) + f"\n\n{verdict}.")


def machine_facts(env: dict) -> dict[str, str]:
    """The facts that shape results, as short texts (also what compare sets side by side)."""
    host, kernel = env.get("host", {}), env.get("kernel", {})
    storage, fs, thp = env.get("storage", {}), env.get("filesystem", {}), env.get("thp", {})
    virt = env.get("virtualization", {})
    lb = env.get("loadbench", {})
    return {
        "cpu": f"{host.get('cpu_model', '?')}, {host.get('cores', '?')} cores",
        "memory": f"{gib(host.get('memory_bytes'))}, swap "
                  f"{gib(env.get('memory', {}).get('swap_total_bytes'))}",
        "virtualization": ("unknown" if virt.get("hypervisor_flag") is None else
                           "yes (hypervisor flag)" if virt.get("hypervisor_flag") else "no")
                          + ("; free memory handed back to the host (virtio-balloon free page "
                             "reporting)" if virt.get("free_page_reporting") else ""),
        "kernel": str(kernel.get("release", "?")),
        "storage": f"{storage.get('device', '?')} ({storage.get('driver', '?')}, model "
                   f"{storage.get('model') or '?'}, rotational {storage.get('rotational')}, "
                   f"scheduler {storage.get('scheduler', '?')}, read-ahead "
                   f"{storage.get('read_ahead_kb', '?')} KiB)",
        "filesystem": f"{fs.get('type', '?')} on {fs.get('source', '?')} "
                      f"({fs.get('mount_options', '')})",
        "thp": f"enabled {thp.get('enabled', '?')}, defrag {thp.get('defrag', '?')}",
        "loadbench": f"{lb.get('version', '?')} ({lb.get('commit', '?')}), root: "
                     f"{env.get('root')}",
        "state": machine_state(env),
    }


def machine_state(env: dict) -> str:
    """Whether the runs ran on the tuned machine (env.json `system`: `loadbench system tune`, or
    the experiment key `[system] tune = true`), with a warning and the reasons when not."""
    system = env.get("system", {})
    if not system:
        return "not recorded (an env.json from before loadbench recorded the machine's state)"
    tune = system.get("tune") or {}
    untuned = [s for s in env.get("sessions", []) if s.get("system_tuned") is False]
    if system.get("tuned") and not untuned:
        reporting = {"off": "held off", "absent": "absent from this kernel"}.get(
            system.get("page_reporting"), "kept on, by choice")
        damon = {"off": "; DAMON's pageout stopped", "absent": ""}.get(
            system.get("damon_pageout"), "")
        return f"tuned{' by ' + tune['by'] if tune.get('by') else ''}: free page reporting " \
               f"{reporting}{damon}"
    why = "; ".join(system.get("not_tuned_because", [])) or \
        f"{len(untuned)} of the sessions ran on the machine untuned"
    return f"**WARNING: not the tuned state**: {why} (`loadbench system tune`, or the " \
           f"experiment key `[system] tune = true`, tunes it)"


def machine_md(env: dict) -> str:
    return "\n".join(f"- {k}: {v}" for k, v in machine_facts(env).items())


def excluded_md(r: Results) -> str:
    if r.excluded.empty:
        return "Every run was ok."
    lines = ["| strategy | cache | status | runs | reason |", "|---|---|---|---|---|"]
    for _, x in r.excluded.iterrows():
        lines.append(f"| {spec_label(x)} | {x['cache']} | {x['status']} | {x['count']} | "
                     f"{'; '.join(x['errors'])[:300]} |")
    return ("Runs left out of every statistic (not ok, a loadbench strategy's ok runs whose "
            "checksum was not verified, or ok runs without a time):\n\n" + "\n".join(lines))


def unverified_count(r: Results) -> str:
    """How many of the ok runs count unverified, as a phrase after "N ok" ("" when none)."""
    n = int((~r.ok["verified"]).sum())
    return f" ({n} of them {UNVERIFIED_MARK}: commands that sent no checksum)" if n else ""


# --- Many readers: several readers loading one model at once, by analysis/readers.py ---------

READERS_TITLE = "Many readers"
READERS_INTRO = (
    "Runs in which several readers loaded one model at once (procs: workers on this machine, "
    "or the ranks of an MPI job), each its part by the read pattern: *replicated*, every "
    "reader the whole model; *tp* (*tp:1*), a 1/N slice of every tensor along dimension 0 "
    "(1); *pp*, a contiguous range of layers; *files*, a range of a sharded model's files. "
    "The tables above count every reader as a run of its own; here a round (one rep of one "
    "strategy, number of readers and pattern) is the unit, counted the way MLPerf Storage "
    "counts one: the readers start together from a barrier, a round lasts from its first "
    "reader's start to its last reader's end (start ms: how far apart they started), its "
    "throughput is every byte the readers delivered (their tensor bytes) over that time, in "
    "total, and its spread is the slowest reader's time over the median reader's (1: all "
    "finished together). A round with a reader that failed, timed out, was not verified or is "
    "missing has none of these, and no paired value anywhere: a run counts only whole. "
    "Figures are medians over the complete rounds; × one reader's time: the median duration "
    "over the same strategy's with a single reader (the row with 1 reader; below 1: faster "
    "than one reader); bytes: whether the readers' bytes add up, the model once per reader "
    "for replicated and once in all for the other patterns (*unknown* without the model's "
    "bytes: no single reader's record of the file, nor env.json's).")


def series_name(row: pd.Series, files: int) -> str:
    """A summary row's strategy, with its file, memory limit and link or fabric where they
    tell rows apart."""
    text = spec_label(row)
    if files > 1:
        text += f" [{os.path.basename(row['file'])}]"
    if row["memory_limit_bytes"] > 0:
        text += f" ≤{gib(row['memory_limit_bytes'])}"
    return text + network(row, " ")


def figure_cell(value, fmt: str) -> str:
    return "" if value is None or pd.isna(value) else f"{value:{fmt}}"


def readers_table_md(summary: pd.DataFrame, files: int) -> str:
    lines = ["| strategy | cache | pattern | readers | rounds | duration s | start ms | "
             "GB/s, all readers | spread: slowest / median reader's time | × one reader's time "
             "| bytes |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for _, r in summary.iterrows():
        single = r["procs"] == 1
        rounds = str(r["rounds"]) + (f" ({r['failed_rounds']} failed)" if r["failed_rounds"]
                                     else "")
        vs = "1 (reference)" if single else figure_cell(r["vs_single"], ".2f")
        start = None if pd.isna(r["start_spread_s"]) else r["start_spread_s"] * 1e3
        lines.append(f"| {series_name(r, files)} | {r['cache']} | "
                     f"{'' if single else r['pattern']} | {r['procs']} | {rounds} | "
                     f"{figure_cell(r['duration_s'], '.3f')} | "
                     f"{figure_cell(start, '.1f')} | "
                     f"{figure_cell(r['gb_per_s'], '.2f')} | {figure_cell(r['spread'], '.2f')} | "
                     f"{vs} | {r['bytes_check']} |")
    return "\n".join(lines)


def readers_word(row: pd.Series) -> str:
    """A row's readers and pattern in words: `one reader`, `tp ×4`."""
    return "one reader" if row["procs"] == 1 else f"{row['pattern']} ×{row['procs']}"


def failed_rounds_md(rounds: pd.DataFrame, summary: pd.DataFrame, files: int) -> str:
    """The rounds without a duration of the summary's strategies, each with its reason."""
    shown = rounds.merge(summary[readers.REFERENCE].drop_duplicates(), on=readers.REFERENCE)
    failed = shown[shown["duration_s"].isna()]
    lines = [f"- {series_name(r, files)}, {r['cache']}, {readers_word(r)}, round {r['rep']}: "
             f"{r['reason']}" for _, r in failed.iterrows()]
    return ("Rounds without a duration (a reader failed or has no record; the other readers' "
            "records count as usual):\n\n" + "\n".join(lines)) if lines else ""


def readers_md(rounds: pd.DataFrame, summary: pd.DataFrame, reader_table: pd.DataFrame,
               figs: Figures) -> str:
    """The section: the rule, the summary table, its figures and the rounds without a
    duration."""
    files = max(summary["file"].nunique(), 1)
    table = (readers_table_md(summary, files) if len(summary) else
             "No round had more than one reader.")
    figures = [figure_md(name, caption)
               for name, caption in readers.plot(reader_table, summary, figs)]
    parts = [READERS_INTRO, table, *figures, failed_rounds_md(rounds, summary, files)]
    return "\n\n".join(p for p in parts if p)


# --- Where the time went: the profiles, by analysis/causes.py -----------------------------------

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
                     f"{noise.plural(len(g), 'run')} ({ids}): {first['profile_error']}")
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


def opening_md(r: Results, folder: str, verdicts: dict, no_rounds: str,
               figs: Figures) -> list[str]:
    """What the report opens with: the question, the verdict, how long the experiment took
    and what counted, and the time figure."""
    ceilings = f" and {len(r.ceiling)} ceiling reads (see *Noise*)" if len(r.ceiling) else ""
    link = len(r.link_ceiling) + len(r.server_ceiling)  # kept apart as the ceiling reads are
    ceilings += f" and {link} link and server ceilings (see *{remote.TITLE}*)" if link else ""
    counted = (f"{verdict.took(r)} {len(r.runs)} runs in `{folder}`{ceilings}: {len(r.ok)} ok"
               f"{unverified_count(r)}, {len(r.runs) - len(r.ok)} left out (below). Figures "
               "are medians of the ok runs with their exact 95% intervals (none for fewer than "
               "6 runs)" + ("." if no_rounds else "; the time ratios are paired, round by round, "
                            "against a baseline (below each table's heading)."))
    return [r.env.get("experiment_file", {}).get("question") or "", "## Verdict",
            verdict.section_md(verdicts), counted.lstrip(), figs.md("time")]


def build(folder: str) -> dict:
    r = load(folder)
    profiled = causes.summarize(r) if causes.shown(r) else None
    table = touch.first_touches(stats.summarize(r, profiled), r, profiled)
    # Device strategies that could not run (no GPU here), and commands and rounds of several
    # readers that could not, still get a report that says why.
    if table.empty and not gpu.shown(r) and not peers.shown(r) and not readers.shown(r) \
            and not remote.shown(r):
        raise ResultsError(f"{os.path.join(folder, 'runs.jsonl')}: no ok runs to report")
    files = table["file"].nunique() if len(table) else 1
    figs = Figures(folder)
    if len(table):
        plot_times(table, figs)
        plot_throughput(table, r.env, figs)
        plot_memory(table, figs)
        plot_timelines(r, table, figs)
        plot_scaling(table, figs)
        plot_sweeps(r, table, figs)
    noise.plot_rounds(r, figs)
    use = after.summarize(r) if after.shown(r) else None
    if use is not None:
        plot_first_use(use, figs)
    many = readers.rounds(r.runs, r.env) if readers.shown(r) else None
    many_summary = readers.summarize(many) if many is not None else None

    title = f"loadbench report: {r.env.get('experiment') or os.path.basename(folder)}"
    no_rounds = paired.no_rounds(r)
    verdicts = verdict.summarize(r, table)
    sections = [f"# {title}", *opening_md(r, folder, verdicts, no_rounds, figs)]
    for cache in ("cold", "warm") if len(table) else ():
        first = not any(s.endswith(" start") for s in sections)
        md = table_md(table, cache, files, note=first, no_rounds=no_rounds)
        if md:
            sections += [f"## {cache.capitalize()} start", md, figs.md(f"throughput-{cache}"),
                         marks_md(table, cache, files),
                         touch.split_md(table, cache, lambda row: label(row, files)),
                         touch.untold(r, table) if first else ""]
    if len(table):
        # Every start table's rows: after the last one.
        sections += [figs.md("scaling", "sweep-"), "## Memory and reads",
                     memory_md(table, files), figs.md("memory", "timeline-")]
    if many is not None:
        sections += [f"## {READERS_TITLE}",
                     readers_md(many, many_summary, readers.readers(r.runs), figs)]
    # A cluster's nodes (records with `nodes`): its own rounds, bound and model.
    nodes = fleet.section(r, figs) if fleet.shown(r) else None
    if nodes is not None:
        sections += [f"## {fleet.TITLE}", nodes["md"]]
    if profiled is not None:
        sections += [f"## {WHERE_TITLE}", where_md(r, profiled, table, files, figs)]
    if peers.shown(r):
        sections += [f"## {peers.TITLE}", peers.section_md(r, table)]
    if remote.shown(r):
        remote.plot_ranges(r, figs)
        sections += [f"## {remote.TITLE}", remote.section_md(r, table, figs),
                     figs.md(remote.FIGURE)]
    ref = reference_md(table) if len(table) and r.env.get("experiment") == "reference-table" \
        else ""
    if ref:
        sections += ["## The published reference table", ref]
    if use is not None:
        sections += ["## After the load", after_md(use, files), figs.md("first-use")]
    if gpu.shown(r):
        sections += [f"## {gpu.TITLE}", gpu.section_md(r)]
    sections += [f"## {noise.TITLE}", noise.section_md(r), figs.md("rounds")]
    if carryover.shown(r):
        sections += [f"## {carryover.TITLE}", carryover.section_md(r)]
    sections += ["## The machine", machine_md(r.env), "## Runs left out", excluded_md(r),
                 problems_md(r)]
    markdown = "\n\n".join(p for p in sections if p) + "\n"
    with open(os.path.join(folder, "report.md"), "w", encoding="utf-8") as f:
        f.write(markdown)
    with open(os.path.join(folder, "report.html"), "w", encoding="utf-8") as f:
        f.write(html_page.page(title, sections, folder))
    # NaN (no baseline to compare with) and the unbounded intervals' infinities as null: JSON
    # has neither.
    out = {"folder": folder, "verdict": verdicts,
           "groups": noise.records(table.drop(columns=["major_faults", "cause_shares"],
                                              errors="ignore"))}
    if use is not None:
        out["after_load"] = noise.records(use)
    if gpu.shown(r):
        out["gpu"] = noise.records(gpu.summarize(r))
    if peers.shown(r):
        out.update(peers.summary(r, table))
    if remote.shown(r):
        out.update(remote.summary(r, table))
    if profiled is not None:
        out.update(causes.summary(profiled, r))
    if many_summary is not None:
        out["many_readers"] = noise.records(many_summary)
    if nodes is not None:
        out["fleet"] = nodes["summary"]
    out.update(noise.summary(r))
    with open(os.path.join(folder, "summary.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, indent=2, default=json_default)
    return {"report": os.path.join(folder, "report.md"), "figures": len(figs.items),
            "summary": out}


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="analysis.report", description=__doc__.splitlines()[0])
    p.add_argument("folder", help="a results folder (runs.jsonl, env.json)")
    p.add_argument("--brief", action="store_true",
                   help="print only report.html's path and the verdict (for `make run`)")
    args = p.parse_args(argv)
    return guard("analysis.report", [args.folder], lambda: run(args))


def run(args) -> int:
    t0 = time.monotonic()
    out = build(args.folder)
    if args.brief:
        print(f"report: {os.path.join(args.folder, 'report.html')}")
        print("\n".join(verdict.lines(out["summary"])))
        return 0
    print(f"{out['report']} (+ report.html, summary.json, {out['figures']} figures in "
          f"{os.path.join(args.folder, 'figures')}) in {time.monotonic() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
