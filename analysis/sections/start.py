"""The report's start tables, *Cold start* and *Warm start*: per group the median time with
its interval, GB/s, share of the device, the paired time ratio to the baseline, peak RSS and
*why* (the top causes, a copy's first touches: analysis/stats/touch.py), the marks under each
table and its throughput figure; the scaling and sweep figures after the last of them."""

from __future__ import annotations

import pandas as pd
from analysis.core.labels import label
from analysis.core.ratios import ratio_cells
from analysis.core.results import EXEC, UNVERIFIED_MARK
from analysis.core.units import size_text
from analysis.sections import remote
from analysis.sections.base import Section
from analysis.sections.start_figures import plot_scaling, plot_sweeps, plot_throughput
from analysis.stats import ceiling, paired, remote as remote_stats, touch



def why(row: pd.Series) -> str:
    """One phrase on what the group's time went to: for a copy into memory of its own, its
    first touches priced by the probe (touch.why); else what its profile, else the run's own
    counts, say."""
    if str(row.get("strategy", "")).startswith("cuda_"):
        return "into GPU memory: see *Into GPU memory*"  # host fault counts do not tell it
    if row.get("strategy") == EXEC:
        return "a command of its own: see *Peers*"  # its counts are its whole process tree's
    if remote_stats.by_spec(row):
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
        cells += [size_text(r["peak_rss_bytes"], ""), why(r)]
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


class StartTable(Section):
    """A cache state's start table, its throughput figure, its marks and notes; the first
    start table shown carries the table's legend and the first touches' caveat."""

    cache = ""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.title = f"{self.cache.capitalize()} start"

    def _table(self, cache: str, note: bool) -> str:
        c = self.ctx
        return table_md(c.table, cache, c.files, note=note, no_rounds=c.no_rounds) \
            if len(c.table) else ""

    def shown(self) -> bool:
        if not hasattr(self, "md"):
            self.first = self.cache == "cold" or not self._table("cold", True)
            self.md = self._table(self.cache, self.first)
        return bool(self.md)

    def figures(self) -> None:
        plot_throughput(self.ctx.table, self.ctx.results.env, self.ctx.figs, self.cache)

    def markdown(self) -> str:
        c = self.ctx
        parts = [self.md, c.figs.md(f"throughput-{self.cache}"),
                 marks_md(c.table, self.cache, c.files),
                 touch.split_md(c.table, self.cache, lambda row: label(row, c.files)),
                 touch.untold(c.results, c.table) if self.first else ""]
        return "\n\n".join(p for p in parts if p)


class ColdStart(StartTable):
    cache = "cold"


class WarmStart(StartTable):
    cache = "warm"


class StartFigures(Section):
    """After every start table's rows: the scaling and sweep figures (no heading of their
    own)."""

    def shown(self) -> bool:
        return bool(len(self.ctx.table))

    def figures(self) -> None:
        plot_scaling(self.ctx.table, self.ctx.figs)
        plot_sweeps(self.ctx.results, self.ctx.table, self.ctx.figs)

    def markdown(self) -> str:
        return self.ctx.figs.md("scaling", "sweep-")
