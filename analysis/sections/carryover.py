"""The report's *Carry-over* (analysis/stats/carryover.py): per group and predecessor the
median time and its ratio to the group's median, the Kruskal–Wallis test across
predecessors, and the ceiling read's effect on the run that follows it."""

from __future__ import annotations

from analysis.core.labels import condition
from analysis.core.results import Results, spec_label
from analysis.sections.base import Section
from analysis.stats.carryover import (ALPHA, MIN_RUNS, ceiling_effect, ceiling_line, group_name,
                                      pooled, predecessors, result_text, shown, tests)

TITLE = "Carry-over"


def section_md(results: Results) -> str:
    """The report's section for one folder."""
    frame = pooled([results])
    files = max(frame["file"].nunique(), 1)
    lines = ["| strategy | condition | after | n | median s | × the group's median time |",
             "|---|---|---|---|---|---|"]
    for _, t in predecessors(frame).iterrows():
        lines.append(f"| {spec_label(t)} | {condition(t, files)} | {t['after']} | {t['n']} | "
                     f"{t['median_s']:.3f} | {t['ratio']:.3f} |")
    verdicts = [f"- {group_name(t, files)}: {result_text(t)}" for _, t in tests(frame).iterrows()]
    return ("Does a run's time depend on what ran before it (`after`: the run the same command "
            "made just before; none: a command's first run)? Per group and predecessor, the "
            "median of the ok runs, and it over the group's median (above 1: slower after that "
            f"predecessor); the Kruskal–Wallis test across the predecessors with "
            f"{MIN_RUNS} runs or more (p < {ALPHA}: it depends).\n\n" + "\n".join(lines)
            + "\n\n" + "\n".join(verdicts) + "\n\n" + ceiling_line(ceiling_effect(frame)))


class Carryover(Section):
    title = TITLE

    def shown(self) -> bool:
        return shown(self.ctx.results)

    def markdown(self) -> str:
        return section_md(self.ctx.results)
