"""`make aa` (or `/usr/bin/python3 -m analysis.aa DIR...`): the false-positive rate of the paired
comparison over repetitions of the A/A experiment (experiments/aa.toml: one strategy under two
labels). Per results folder, every strategy's paired ratio with the baseline, its 95% interval
and the verdict; then how many folders marked a difference where there is none.

    /usr/bin/python3 -m analysis.aa results/aa-calibration/*
"""

from __future__ import annotations

import argparse
import json
import sys

from analysis.core.ratios import ratio_text
from analysis.core.results import guard, load, problems_md
from analysis.stats import paired


def calibrate(folders: list[str]) -> dict:
    rows, problems = [], []
    for folder in folders:
        results = load(folder)
        problems.append(problems_md(results))
        table = paired.paired_table(results)
        for _, r in table.iterrows():
            rows.append({"folder": folder, "strategy_spec": r["strategy_spec"],
                         "baseline": r["baseline"], "cache": r["cache"], "n": int(r["n"]),
                         "ratio": r["ratio"], "low": r["ratio_low"], "high": r["ratio_high"],
                         "bounded": bool(r["bounded"]), "significant": bool(r["significant"])})
    tested = [r for r in rows if r["bounded"]]
    marked = [r for r in tested if r["significant"]]
    return {"comparisons": rows, "tested": len(tested), "marked": len(marked),
            "rate": len(marked) / len(tested) if tested else None,
            "untested": len(rows) - len(tested), "read_problems": [p for p in problems if p]}


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="analysis.aa", description=__doc__.splitlines()[0])
    p.add_argument("folders", nargs="+", help="results folders of the A/A experiment")
    p.add_argument("--json", action="store_true", help="print JSON")
    args = p.parse_args(argv)
    return guard("analysis.aa", args.folders, lambda: run(args))


def run(args) -> int:
    out = calibrate(args.folders)
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    for note in out["read_problems"]:
        print(note + "\n")
    for r in out["comparisons"]:
        mark = "MARKED" if r["significant"] else ("too few rounds" if not r["bounded"] else "n.s.")
        # The strategy's time over the baseline's, in the text the reports give every ratio.
        ratio = ratio_text(r["ratio"], r["low"], r["high"]) if r["bounded"] else \
            ratio_text(r["ratio"])
        print(f"{r['folder']}: {r['cache']} {r['strategy_spec']}: {ratio} the time of "
              f"{r['baseline']}, {r['n']} rounds: {mark}")
    if out["tested"] == 0:
        print("no comparison had the 6 rounds a 95% interval needs")
        return 1
    print(f"false positives: {out['marked']} of {out['tested']} A/A comparisons "
          f"({out['rate']:.0%}); the method's level is at most 5%"
          + (f"; {out['untested']} had too few rounds" if out["untested"] else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
