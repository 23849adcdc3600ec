"""The report's *Runs left out*: the runs no statistic counts, with why, and the problems
found reading the folder (core.results.problems_md)."""

from __future__ import annotations

from analysis.core.results import Results, problems_md, spec_label
from analysis.sections.base import Section

def excluded_md(r: Results) -> str:
    if r.excluded.empty:
        return "Every run was ok."
    lines = ["| strategy | cache | status | runs | reason |", "|---|---|---|---|---|"]
    for _, x in r.excluded.iterrows():
        lines.append(f"| {spec_label(x)} | {x['cache']} | {x['status']} | {x['count']} | "
                     f"{'; '.join(x['errors'])[:300]} |")
    return ("Runs left out of every statistic (not ok, a loadbench strategy's ok runs whose "
            "checksum was not verified, or ok runs without a time):\n\n" + "\n".join(lines))


class LeftOut(Section):
    title = "Runs left out"

    def markdown(self) -> str:
        r = self.ctx.results
        return "\n\n".join(p for p in (excluded_md(r), problems_md(r)) if p)
