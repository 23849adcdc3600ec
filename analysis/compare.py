"""`make compare A=DIR B=DIR`: what changed between two results folders (two machines, two
versions): per strategy, options, role and cache state the ratio of times B/A, the
Hodges–Lehmann estimate of the shift of log times with the exact 95% interval of the
Mann–Whitney test (distribution-free, as the paired one), the Mann–Whitney U p value, and how
the two machines differ. Writes compare.md and compare.json into OUT (default B).

Unpaired on purpose: a run of A and a run of B never shared a round (nor a machine, often), so
the within-round ratios of analysis/paired.py do not apply across folders. Ceiling reads are
not strategies and are not compared (results.load keeps them apart).

    /usr/bin/python3 -m analysis.compare A B [--out DIR]
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import sys

import numpy as np
from scipy.stats import mannwhitneyu

from analysis.report import machine_facts
from analysis.results import ResultsError, json_default, load, spec_label

ALPHA = 0.05
# Runs are matched across folders by these; the file by its name, since paths differ between
# machines.
MATCH = ["strategy_spec", "role", "cache", "file_name", "procs", "pattern", "memory_limit_bytes"]


def _walls(results) -> dict[tuple, np.ndarray]:
    ok = results.ok.assign(file_name=results.ok["file"].map(os.path.basename))
    return {key: g["wall_s"].to_numpy(dtype=float) for key, g in ok.groupby(MATCH)}


def _verified(results) -> dict[tuple, bool]:
    """Per match, whether every ok run was verified (an exec command's may count unverified)."""
    ok = results.ok.assign(file_name=results.ok["file"].map(os.path.basename))
    return {key: bool(g["verified"].all()) for key, g in ok.groupby(MATCH)}


@functools.lru_cache(maxsize=None)
def mann_whitney_cdf(m: int, n: int) -> np.ndarray:
    """P(U <= u) for u = 0..mn, U the Mann–Whitney count of pairs (x_i, y_j) with y_j < x_i
    under no difference, by counting: the number of orderings of the m + n runs with U = u is
    the coefficient of q^u of the Gaussian binomial [m + n choose m] = prod over i = 1..m of
    (1 - q^(n+i)) / (1 - q^i). Exact integers: the counts outgrow floats' exactness."""
    counts = np.zeros(m * n + 1, dtype=object)
    counts[0] = 1
    for i in range(1, m + 1):
        # Times (1 - q^(n+i)), then over (1 - q^i) as a power series (a running sum with step
        # i); the terms beyond q^(mn) are dropped, which changes no lower one.
        counts[n + i:] = counts[n + i:] - counts[:m * n + 1 - n - i]
        for start in range(i):
            counts[start::i] = np.cumsum(counts[start::i])
    cdf = np.array([c / math.comb(m + n, m) for c in np.cumsum(counts)], dtype=float)
    cdf.setflags(write=False)
    return cdf


def shift_interval(x, y) -> tuple[float, float, float]:
    """(estimate, low, high) of the shift of y against x: the Hodges–Lehmann estimate, the
    median of the m n differences y_j - x_i, and their [D_(k), D_(mn+1-k)] with the largest k
    such that 1 - 2 P(U <= k - 1) >= 95% (exact: it holds the shift with that probability
    whatever the distribution); NaN, NaN when even k = 1 does not reach it (too few runs)."""
    d = np.sort(np.subtract.outer(np.asarray(y, float), np.asarray(x, float)).ravel())
    cdf = mann_whitney_cdf(len(x), len(y))
    within = np.flatnonzero(cdf <= ALPHA / 2)
    if within.size == 0:
        return float(np.median(d)), math.nan, math.nan
    k = int(within[-1]) + 1
    return float(np.median(d)), float(d[k - 1]), float(d[len(d) - k])


def compare_row(key: tuple, x: np.ndarray, y: np.ndarray) -> dict:
    """One match: B's time over A's, exp of the shift of log times, with its interval (None
    where there is none) and the Mann–Whitney p."""
    estimate, low, high = shift_interval(np.log(x), np.log(y))
    bounded = not math.isnan(low)
    p = float(mannwhitneyu(x, y, alternative="two-sided").pvalue)
    # The smallest two-sided p the exact test can give these sample sizes: with 3 runs a side
    # it is 0.1, and no difference can ever be significant.
    min_p = min(1.0, 2 / math.comb(len(x) + len(y), len(x)))
    return {**dict(zip(MATCH, key)), "n_a": len(x), "n_b": len(y),
            "median_a_s": float(np.median(x)), "median_b_s": float(np.median(y)),
            "ratio": math.exp(estimate), "ci_low": math.exp(low) if bounded else None,
            "ci_high": math.exp(high) if bounded else None, "p_value": p,
            "min_p_possible": min_p,
            # Both must agree: a small p alone flags a shift too small to matter only when the
            # interval also leaves out 1.
            "significant": bool(p < ALPHA and bounded and (low > 0 or high < 0))}


def compare(a_dir: str, b_dir: str) -> dict:
    a, b = load(a_dir), load(b_dir)
    wa, wb = _walls(a), _walls(b)
    va, vb = _verified(a), _verified(b)
    rows = [{**compare_row(key, wa[key], wb[key]), "verified": va[key] and vb[key]}
            for key in sorted(set(wa) & set(wb), key=str)]
    fa, fb = machine_facts(a.env), machine_facts(b.env)
    return {"a": a_dir, "b": b_dir, "alpha": ALPHA, "rows": rows,
            "only_in_a": [dict(zip(MATCH, k)) for k in sorted(set(wa) - set(wb), key=str)],
            "only_in_b": [dict(zip(MATCH, k)) for k in sorted(set(wb) - set(wa), key=str)],
            "machine_differences": {k: {"a": fa[k], "b": fb[k]} for k in fa if fa[k] != fb[k]}}


def too_few(r: dict, alpha: float) -> str:
    if r["min_p_possible"] < alpha:
        return ""
    return f"too few runs ({r['n_a']} and {r['n_b']}) for p < {alpha}"


def ratio_cell(r: dict) -> str:
    if r["ci_low"] is None:
        return f"{r['ratio']:.2f} (too few runs for a 95% interval)"
    return f"{r['ratio']:.2f} ({r['ci_low']:.2f}–{r['ci_high']:.2f})"


def to_markdown(c: dict) -> str:
    lines = [f"# loadbench compare: B = {c['b']} against A = {c['a']}", "",
             "B/A: B's time over A's (below 1: B is faster), the Hodges–Lehmann estimate (the "
             "median of the ratios of every B run's time to every A run's, taken on the log "
             "scale) with the exact 95% interval of "
             "the Mann-Whitney test (distribution-free; none when too few runs reach 95%: 4 a "
             f"side, or 3 and 5); *significant*: Mann-Whitney U p < {c['alpha']} and the "
             "interval leaves out 1.", "",
             "| strategy | cache | file | A median s | B median s | B/A (95% CI) | p | |",
             "|---|---|---|---|---|---|---|---|"]
    for r in c["rows"]:
        lines.append(f"| {spec_label(r)} | {r['cache']} | {r['file_name']} | "
                     f"{r['median_a_s']:.3f} | {r['median_b_s']:.3f} | {ratio_cell(r)} | "
                     f"{r['p_value']:.3g} | "
                     f"{'significant' if r['significant'] else too_few(r, c['alpha'])} |")
    lines += ["", "## How the machines differ", ""]
    diffs = c["machine_differences"]
    lines += [f"- {k}: A {v['a']}; B {v['b']}" for k, v in diffs.items()] or ["- nothing recorded"]
    for side in ("a", "b"):
        if c[f"only_in_{side}"]:
            lines += ["", f"Only in {side.upper()}: " + ", ".join(
                f"{spec_label(x)} {x['cache']}" for x in c[f"only_in_{side}"])]
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
