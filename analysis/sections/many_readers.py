"""The report's *Many readers* (analysis/stats/readers.py): the rule a round of several
readers is counted by, the summary table, its figures and the rounds without a duration."""

from __future__ import annotations

import pandas as pd
from analysis.core.figures import Figures, figure_md
from analysis.core.labels import series_name
from analysis.core.results import records
from analysis.sections.base import Section
from analysis.stats import readers

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


class ManyReaders(Section):
    title = READERS_TITLE

    def shown(self) -> bool:
        r = self.ctx.results
        if not hasattr(self, "rounds"):
            self.rounds = readers.rounds(r.runs, r.env) if readers.shown(r) else None
        return self.rounds is not None

    def markdown(self) -> str:
        # Its figures are drawn as its Markdown is written (readers.plot gives their captions).
        self.table = readers.summarize(self.rounds)
        r = self.ctx.results
        return readers_md(self.rounds, self.table, readers.readers(r.runs), self.ctx.figs)

    def summary(self) -> dict:
        return {"many_readers": records(self.table)}
