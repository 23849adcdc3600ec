"""What every section of a page is: one interface, one implementation per section (as
google/benchmark's reporters or hyperfine's exporters are), so that a page is a list of
sections looped over instead of wired by hand.

A page makes each of its sections once per build with the page's `Context` and asks, in this
order: `shown` (whether the section belongs on the page for these results), `figures` (draw its
figures into the context's Figures, before its Markdown shows them), `markdown` (its body, under
its `title` as a `##` heading; a section without a title continues the one before it) and,
after every section, `summary` (its part of summary.json)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from analysis.core.figures import Figures
from analysis.core.results import Results


@dataclass
class Context:
    """What the page works out once for all its sections: the results and their folder, the
    page's figures, the groups' table (analysis/stats/aggregates.py with first touches; empty
    where no group has an ok run), the profiled groups (None without profiles), how many files
    the groups read (a label names the file only where there are several) and why there are no
    paired ratios ("" where there are)."""
    results: Results
    folder: str
    figs: Figures
    table: pd.DataFrame
    profiled: pd.DataFrame | None
    files: int
    no_rounds: str


class Section:
    """One section of a page (see the module's docstring). `title` is its heading ("" for
    none); a subclass gives at least `markdown`."""

    title = ""

    def __init__(self, ctx):
        self.ctx = ctx  # the page's context: the report's Context, compare's comparison, ...

    def shown(self) -> bool:
        return True

    def figures(self) -> None:
        """Draws the section's figures into `self.ctx.figs` (none by default)."""

    def markdown(self) -> str:
        raise NotImplementedError

    def summary(self) -> dict:
        """The section's entries of summary.json (none by default)."""
        return {}


def render(sections: list[Section]) -> list[str]:
    """The shown sections' Markdown in order, each a `## title` then its body: the parts of
    report.md and report.html."""
    parts = []
    for s in sections:
        if s.shown():
            s.figures()
            parts += [f"## {s.title}" if s.title else "", s.markdown()]
    return parts


def summary(sections: list[Section]) -> dict:
    """The shown sections' summary.json entries, merged in order."""
    out = {}
    for s in sections:
        if s.shown():
            out.update(s.summary())
    return out
