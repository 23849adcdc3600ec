"""`make compare A=DIR B=DIR`: what changed between two results folders (two machines, two
versions): per strategy, options and cache state the ratio of median times B/A with its 95%
bootstrap interval and a Mann-Whitney U test, and how the two machines differ. Writes
compare.md and compare.json into OUT (default B).

Unpaired on purpose: a run of A and a run of B never shared a round (nor a machine, often), so
the within-round ratios of analysis/paired.py do not apply across folders. Ceiling reads are
not strategies and are not compared (results.load keeps them apart).

    /usr/bin/python3 -m analysis.compare A B [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import zlib

import numpy as np
from scipy.stats import mannwhitneyu

from analysis import stats
from analysis.report import machine_facts
from analysis.results import ResultsError, json_default, load

ALPHA = 0.05
# Runs are matched across folders by these; the file by its name, since paths differ between
# machines.
MATCH = ["strategy_spec", "cache", "file_name", "procs", "memory_limit_bytes"]


def _walls(results) -> dict[tuple, np.ndarray]:
    ok = results.ok.assign(file_name=results.ok["file"].map(os.path.basename))
    return {key: g["wall_s"].to_numpy(dtype=float) for key, g in ok.groupby(MATCH)}


def compare(a_dir: str, b_dir: str, seed: int = 0) -> dict:
    a, b = load(a_dir), load(b_dir)
    wa, wb = _walls(a), _walls(b)
    rows = []
    for key in sorted(set(wa) & set(wb), key=str):
        x, y = wa[key], wb[key]
        rng = np.random.default_rng([seed, zlib.crc32(repr(key).encode())])
        ratio_boot = stats.bootstrap_medians(y, rng) / stats.bootstrap_medians(x, rng)
        low, high = stats.interval(ratio_boot)
        p = float(mannwhitneyu(x, y, alternative="two-sided").pvalue)
        # The smallest two-sided p the exact test can give these sample sizes: with 3 runs a
        # side it is 0.1, and no difference can ever be significant.
        min_p = min(1.0, 2 / math.comb(len(x) + len(y), len(x)))
        rows.append({**dict(zip(MATCH, key)), "n_a": len(x), "n_b": len(y),
                     "median_a_s": float(np.median(x)), "median_b_s": float(np.median(y)),
                     "ratio": float(np.median(y) / np.median(x)), "ci_low": low,
                     "ci_high": high, "p_value": p, "min_p_possible": min_p,
                     # Both must agree: a small p alone flags a shift too small to matter only
                     # when the interval also leaves out 1.
                     "significant": bool(p < ALPHA and (low > 1 or high < 1))})
    fa, fb = machine_facts(a.env), machine_facts(b.env)
    return {"a": a_dir, "b": b_dir, "alpha": ALPHA, "rows": rows,
            "only_in_a": [dict(zip(MATCH, k)) for k in sorted(set(wa) - set(wb), key=str)],
            "only_in_b": [dict(zip(MATCH, k)) for k in sorted(set(wb) - set(wa), key=str)],
            "machine_differences": {k: {"a": fa[k], "b": fb[k]} for k in fa if fa[k] != fb[k]}}


def too_few(r: dict, alpha: float) -> str:
    if r["min_p_possible"] < alpha:
        return ""
    return f"too few runs ({r['n_a']} and {r['n_b']}) for p < {alpha}"


def to_markdown(c: dict) -> str:
    lines = [f"# loadbench compare: B = {c['b']} against A = {c['a']}", "",
             "Ratio: B's median time over A's (below 1: B is faster), with its 95% bootstrap "
             f"interval; *significant*: Mann-Whitney U p < {c['alpha']} and the interval "
             "leaves out 1.", "",
             "| strategy | cache | file | A median s | B median s | B/A (95% CI) | p | |",
             "|---|---|---|---|---|---|---|---|"]
    for r in c["rows"]:
        lines.append(f"| {r['strategy_spec']} | {r['cache']} | {r['file_name']} | "
                     f"{r['median_a_s']:.3f} | {r['median_b_s']:.3f} | {r['ratio']:.2f} "
                     f"({r['ci_low']:.2f}–{r['ci_high']:.2f}) | {r['p_value']:.3g} | "
                     f"{'significant' if r['significant'] else too_few(r, c['alpha'])} |")
    lines += ["", "## How the machines differ", ""]
    diffs = c["machine_differences"]
    lines += [f"- {k}: A {v['a']}; B {v['b']}" for k, v in diffs.items()] or ["- nothing recorded"]
    for side in ("a", "b"):
        if c[f"only_in_{side}"]:
            lines += ["", f"Only in {side.upper()}: " + ", ".join(
                f"{x['strategy_spec']} {x['cache']}" for x in c[f"only_in_{side}"])]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="analysis.compare", description=__doc__.splitlines()[0])
    p.add_argument("a", help="results folder A (the reference)")
    p.add_argument("b", help="results folder B")
    p.add_argument("--out", help="where compare.md and compare.json go (default: B)")
    args = p.parse_args(argv)
    try:
        c = compare(args.a, args.b)
    except ResultsError as e:
        print(f"compare: {e}", file=sys.stderr)
        return 2
    out = args.out or args.b
    os.makedirs(out, exist_ok=True)
    md = to_markdown(c)
    with open(os.path.join(out, "compare.md"), "w", encoding="utf-8") as f:
        f.write(md)
    with open(os.path.join(out, "compare.json"), "w", encoding="utf-8") as f:
        json.dump(c, f, indent=2, default=json_default)
    print(md, end="")
    print(f"written: {os.path.join(out, 'compare.md')}, {os.path.join(out, 'compare.json')}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
