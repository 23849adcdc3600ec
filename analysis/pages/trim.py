"""A results folder made small enough to commit: env.json, runs.jsonl, adaptive.json, the
experiment file and the profiles (profiles/*.folded, which the report's *Where the time went*
reads) as they are, and every timeline thinned to at most --rows rows (the first and the last
kept, the rest evenly spaced), so that a figure drawn from it keeps its shape.

    /usr/bin/python3 -m analysis.trim SRC DST [--rows 200]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys

import numpy as np
import pandas as pd

from analysis.core.results import ResultsError, guard


def trim(src: str, dst: str, rows: int) -> int:
    if not os.path.exists(os.path.join(src, "runs.jsonl")):
        raise ResultsError(f"{os.path.join(src, 'runs.jsonl')}: no such file")
    os.makedirs(os.path.join(dst, "timelines"), exist_ok=True)
    for name in ("env.json", "runs.jsonl", "adaptive.json", "experiment.toml"):
        if os.path.exists(os.path.join(src, name)):
            shutil.copy(os.path.join(src, name), os.path.join(dst, name))
    if os.path.isdir(os.path.join(src, "profiles")):
        shutil.copytree(os.path.join(src, "profiles"), os.path.join(dst, "profiles"),
                        dirs_exist_ok=True)
    count = 0
    timelines = os.path.join(src, "timelines")
    for name in sorted(os.listdir(timelines)) if os.path.isdir(timelines) else []:
        try:
            t = pd.read_csv(os.path.join(timelines, name))
        except ValueError as e:  # pandas' parser errors, and bytes that are no text
            raise ResultsError(f"{os.path.join(timelines, name)}: not a timeline CSV ({e})")
        if len(t) > rows:
            t = t.iloc[np.unique(np.linspace(0, len(t) - 1, rows).round().astype(int))]
        t.to_csv(os.path.join(dst, "timelines", name), index=False)
        count += 1
    return count


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="analysis.trim", description=__doc__.splitlines()[0])
    p.add_argument("src")
    p.add_argument("dst")
    p.add_argument("--rows", type=int, default=200, help="most rows kept per timeline")
    args = p.parse_args(argv)
    return guard("analysis.trim", [args.src], lambda: run(args))


def run(args) -> int:
    n = trim(args.src, args.dst, args.rows)
    print(f"{args.dst}: {n} timelines of at most {args.rows} rows")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
