"""`/usr/bin/python3 -m analysis.carryover FOLDER...`: does a run's time depend on what ran
before it (`after`)? The folders pooled (e.g. the A/A calibration's), per group its
predecessors, its Kruskal–Wallis test and verdict, and the ceiling read's effect on the run
that follows it, on stdout (analysis/stats/carryover.py)."""

from __future__ import annotations

import argparse

import pandas as pd

from analysis.core.results import GROUP, guard, load, problems_md
from analysis.stats.carryover import (ceiling_effect, ceiling_line, group_name, pooled,
                                      predecessors, result_text, shown, tests)

def text(frame: pd.DataFrame) -> str:
    """The console's table: per group its predecessors, then its test and verdict."""
    files = max(frame["file"].nunique(), 1)
    table = predecessors(frame)
    out = []
    for _, t in tests(frame).iterrows():
        rows = table[(table[GROUP] == t[GROUP]).all(axis=1)]
        out.append(group_name(t, files))
        out.append(f"  {'after':<28} {'n':>5} {'median s':>10} {'× median time':>14}")
        out += [f"  {r['after']:<28} {r['n']:>5} {r['median_s']:>10.3f} {r['ratio']:>14.3f}"
                for _, r in rows.iterrows()]
        out += ["  " + result_text(t), ""]
    return "\n".join(out + [ceiling_line(ceiling_effect(frame))]) + "\n"


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="analysis.carryover", description=__doc__.splitlines()[0])
    p.add_argument("folders", nargs="+", help="results folders, pooled (one experiment's)")
    args = p.parse_args(argv)
    return guard("analysis.carryover", args.folders, lambda: run(args.folders))


def run(folders: list[str]) -> int:
    loaded = [load(folder) for folder in folders]
    for note in filter(None, map(problems_md, loaded)):
        print(note + "\n")
    if not any(shown(r) for r in loaded):
        print("no ok run records `after` (results from before it was recorded): nothing to "
              "test")
        return 1
    print(text(pooled(loaded)), end="")
    return 0

