"""`make compare A=DIR B=DIR`: what changed between two results folders (two machines, two
versions): per strategy, options, role and cache state the ratio of times B/A (B's time over
A's: below 1, B is faster), the Hodges–Lehmann estimate of the shift of log times with the
exact 95% interval of the Mann–Whitney test (distribution-free, as the paired one), the
Mann–Whitney U p value, each side's paired ratio to its own baseline as its report gives it,
and how the two machines differ. Writes compare.md and compare.json into OUT (default B).

A or B may also be a reference: a folder whose subfolders are results folders
(results/reference/). Each row then takes the subfolder whose runs match it best: the same file
(name and size), else the closest file size. A row with no partner on the same file is matched
with the same strategy, cache state, workers, pattern and memory limit on the other side's file
and compares time per byte (wall time / file size) instead of time: the same direction as every
other ratio, for files of different sizes.

Unpaired on purpose: a run of A and a run of B never shared a round (nor a machine, often), so
the within-round ratios of analysis/paired.py do not apply across folders; each side's own
paired ratio (`paired_a`, `paired_b`) is its folder's, within its own rounds. Ceiling reads are
not strategies and are not compared (results.load keeps them apart). A run of several readers
is one value, from its first reader's start to its last one's end, and only a run every reader
of which counted has one (as in the paired figures).

    /usr/bin/python3 -m analysis.compare A B [--out DIR]
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import sys
from collections import Counter
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.stats import mannwhitneyu

from analysis import paired, readers, stats
from analysis.report import machine_facts, ratio_cells
from analysis.results import (Results, ResultsError, guard, json_default, load, problems_md,
                              ratio_text, spec_label)

ALPHA = 0.05
GB = 1e9
# What a row of A and a row of B must share to be compared; the file too where both sides ran
# it (by its name, since paths differ between machines, and its size), else they compare by
# time per byte.
POINT = ["strategy_spec", "role", "cache", "procs", "pattern", "memory_limit_bytes", "link",
         "fabric"]
SAME_FILE, PER_BYTE = "same file", "time per byte"


@dataclass(eq=False)
class Group:
    """The ok runs of one point on one file in one results folder (`source`)."""
    source: str
    point: tuple
    file_name: str
    file_bytes: int
    format: str
    walls: np.ndarray
    verified: bool  # every ok run verified (an exec command's may count unverified)
    paired: dict | None  # its paired ratio to its folder's baseline (paired_ratios), if any

    def file(self) -> dict:
        return {"name": self.file_name, "bytes": self.file_bytes, "format": self.format}


@dataclass
class Side:
    results: list[Results]
    reference: bool  # a folder of results folders


def open_side(folder: str) -> Side:
    """A results folder (it has runs.jsonl), or a reference: a folder whose direct subfolders
    are results folders, each loaded."""
    if os.path.exists(os.path.join(folder, "runs.jsonl")):
        return Side([load(folder)], False)
    subs = []
    if os.path.isdir(folder):
        subs = sorted(e.path for e in os.scandir(folder)
                      if e.is_dir() and os.path.exists(os.path.join(e.path, "runs.jsonl")))
    if not subs:
        raise ResultsError(f"{folder}: neither a results folder (no runs.jsonl) nor a "
                           "reference (no subfolder holds one)")
    return Side([load(s) for s in subs], True)


def whole_runs(r: Results) -> pd.DataFrame:
    """The ok records of runs that count whole, with the file's name: a run of several readers
    in which one did not count (readers.rounds' reason) is left out entirely, as in the paired
    figures."""
    if "rep" not in r.ok:
        return r.ok.assign(file_name=r.ok["file"].map(os.path.basename))
    broken = readers.rounds(r.runs, r.env)
    broken = {tuple(k) for k in
              broken.loc[broken["reason"].notna(), readers.ROUND].itertuples(index=False)}
    ok = r.ok[[tuple(k) not in broken for k in r.ok[readers.ROUND].itertuples(index=False)]]
    return ok.assign(file_name=ok["file"].map(os.path.basename))


def run_walls(g: pd.DataFrame) -> np.ndarray:
    """One time per run: a single reader's wall_s; several readers' from the first start to
    the last end (readers.duration)."""
    if (g["procs"] <= 1).all() or "rep" not in g:
        return g["wall_s"].to_numpy(dtype=float)
    return np.array([readers.duration(run)[0] for _, run in g.groupby("rep", sort=False)])


def paired_ratios(r: Results) -> dict[tuple, dict]:
    """Per group of the folder (POINT, file name, file bytes), its paired time ratio to its
    condition's baseline as the folder's report prints it (report.ratio_cells of the summary
    table's row: the same figures, the same text); none for a folder in which no strategy was
    paired with its baseline (the baseline's own `1 (baseline)` alone says nothing)."""
    if r.ok.empty or paired.no_rounds(r):
        return {}
    out = {}
    table = stats.summarize(r)
    for _, row in table.iterrows():
        text = ratio_cells(row)[0]
        if text and not pd.isna(row["file_bytes"]):
            key = tuple(row[POINT]) + (os.path.basename(row["file"]), int(row["file_bytes"]))
            out[key] = {"baseline": row["baseline"], "text": text,
                        **{c: None if pd.isna(row[c]) else float(row[c]) for c in stats.RATIO}}
    return out if (~table["is_baseline"] & table["time_ratio"].notna()).any() else {}


def groups(r: Results) -> list[Group]:
    ok = whole_runs(r)
    # The record's format, else the file name's extension.
    extension = ok["file_name"].map(lambda name: os.path.splitext(name)[1].lstrip(".") or "?")
    ok["format"] = ok["format"].fillna(extension) if "format" in ok else extension
    ratios = paired_ratios(r)
    return [Group(r.folder, key[:len(POINT)], key[-2], int(key[-1]), g["format"].iloc[0],
                  run_walls(g), bool(g["verified"].all()), ratios.get(key[:len(POINT)] + key[-2:]))
            for key, g in ok.groupby(POINT + ["file_name", "file_bytes"])]


def same_file(a: Group, b: Group) -> bool:
    return (a.file_name, a.file_bytes) == (b.file_name, b.file_bytes)


def rank(g: Group, other: Group) -> tuple:
    """How well `other` (of the same point) matches g, lowest first: the same file, else the
    closest size (to a tenth of a doubling: a 2 GiB wlf and a 2 GiB safetensors file differ by
    their headers only), then the same format, then the folder's name."""
    distance = abs(math.log2(max(other.file_bytes, 1) / max(g.file_bytes, 1)))
    return (not same_file(g, other), round(distance, 1), other.format != g.format, other.source)


def best_matches(rows: list[Group], others: list[Group]) -> list[tuple[Group, Group]]:
    """Each of rows with its best match of the same point among others, where it has one."""
    found = []
    for g in rows:
        candidates = [o for o in others if o.point == g.point]
        if candidates:
            found.append((g, min(candidates, key=lambda o: rank(g, o))))
    return found


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


def shift_row(x: np.ndarray, y: np.ndarray) -> dict:
    """y's over x's (B's over A's), exp of the shift of log values, with its interval (None
    where there is none) and the Mann–Whitney p."""
    estimate, low, high = shift_interval(np.log(x), np.log(y))
    bounded = not math.isnan(low)
    p = float(mannwhitneyu(x, y, alternative="two-sided").pvalue)
    # The smallest two-sided p the exact test can give these sample sizes: with 3 runs a side
    # it is 0.1, and no difference can ever be significant.
    min_p = min(1.0, 2 / math.comb(len(x) + len(y), len(x)))
    return {"n_a": len(x), "n_b": len(y),
            "ratio": math.exp(estimate), "ci_low": math.exp(low) if bounded else None,
            "ci_high": math.exp(high) if bounded else None, "p_value": p,
            "min_p_possible": min_p,
            # Both must agree: a small p alone flags a shift too small to matter only when the
            # interval also leaves out 1.
            "significant": bool(p < ALPHA and bounded and (low > 0 or high < 0))}


def compare_row(a: Group, b: Group) -> dict:
    """One pair: on the same file B's time over A's; on different files B's time per byte over
    A's (seconds per GB), so that below 1 is B faster either way; and each side's own paired
    ratio to its baseline."""
    pa, pb = a.walls / (a.file_bytes / GB), b.walls / (b.file_bytes / GB)
    match = SAME_FILE if same_file(a, b) else PER_BYTE
    shift = shift_row(a.walls, b.walls) if match == SAME_FILE else shift_row(pa, pb)
    return {**dict(zip(POINT, a.point)), "file_name": a.file_name, "match": match,
            "file_a": a.file(), "file_b": b.file(), "source_a": a.source, "source_b": b.source,
            **shift, "median_a_s": float(np.median(a.walls)),
            "median_b_s": float(np.median(b.walls)), "median_a_s_per_gb": float(np.median(pa)),
            "median_b_s_per_gb": float(np.median(pb)),
            "median_a_gb_s": float(np.median(1 / pa)), "median_b_gb_s": float(np.median(1 / pb)),
            "paired_a": a.paired, "paired_b": b.paired, "verified": a.verified and b.verified}


def only_in(side: list[Group], other: list[Group]) -> list[dict]:
    """The groups of `side` whose point the other side never ran, on any file."""
    points = {o.point for o in other}
    return [{**dict(zip(POINT, g.point)), "file_name": g.file_name, "source": g.source}
            for g in side if g.point not in points]


def machine(side: Side, used: list[str]) -> tuple[str, dict]:
    """The results folder most rows of the side came from (its first when none) and its
    machine's facts."""
    folder = Counter(used).most_common(1)[0][0] if used else side.results[0].folder
    return folder, machine_facts(next(r.env for r in side.results if r.folder == folder))


def compare(a_dir: str, b_dir: str) -> dict:
    a, b = open_side(a_dir), open_side(b_dir)
    ga = [g for r in a.results for g in groups(r)]
    gb = [g for r in b.results for g in groups(r)]
    # A reference only offers partners to the other side's rows, unless both are references.
    found = best_matches(ga, gb) if b.reference or not a.reference else []
    if a.reference or not b.reference:
        found += [(x, y) for y, x in best_matches(gb, ga)]
    rows = sorted((compare_row(x, y) for x, y in dict.fromkeys(found)), key=lambda r: str(
        [r[k] for k in POINT + ["file_name", "source_a", "source_b"]]))
    folder_a, fa = machine(a, [r["source_a"] for r in rows])
    folder_b, fb = machine(b, [r["source_b"] for r in rows])
    return {"a": a_dir, "b": b_dir, "alpha": ALPHA,
            "references": [s for s, side in (("a", a), ("b", b)) if side.reference],
            "rows": rows, "only_in_a": only_in(ga, gb), "only_in_b": only_in(gb, ga),
            "machines": {"a": folder_a, "b": folder_b},
            "read_problems": [m for side in (a, b) for m in map(problems_md, side.results) if m],
            "machine_differences": {k: {"a": fa[k], "b": fb[k]} for k in fa if fa[k] != fb[k]}}


def too_few(r: dict, alpha: float) -> str:
    if r["min_p_possible"] < alpha:
        return ""
    return f"too few runs ({r['n_a']} and {r['n_b']}) for p < {alpha}"


def file_cell(r: dict) -> str:
    if r["match"] == SAME_FILE:
        return r["file_name"]
    a, b = r["file_a"], r["file_b"]
    return (f"by time per byte: A {a['bytes'] / 2**30:.1f} GiB {a['format']}, "
            f"B {b['bytes'] / 2**30:.1f} GiB {b['format']}")


def median_cell(r: dict, side: str) -> str:
    if r["match"] == SAME_FILE:
        return f"{r[f'median_{side}_s']:.3f} s"
    many = r.get("procs", 1) > 1
    return f"{r[f'median_{side}_s_per_gb']:.3f} s/GB" + (" (round / file)" if many else "")


def paired_head(c: dict, side: str) -> str:
    """The column of one side's paired ratios to its baseline: whose time they are over."""
    names = {r[f"paired_{side}"]["baseline"] for r in c["rows"] if r[f"paired_{side}"]}
    base = names.pop() if len(names) == 1 else "baseline"
    return f"{side.upper()}: × {base}'s time, paired (95% CI)"


def paired_cell(r: dict, side: str) -> str:
    return (r[f"paired_{side}"] or {}).get("text", "")


def notes(c: dict) -> list[str]:
    """The sentences above the table on references, rows compared by time per byte and each
    side's own paired ratios."""
    lines = []
    if c["references"]:
        names = " and ".join(f"{s.upper()} ({c[s]})" for s in c["references"])
        lines += [f"{names} {'is a reference' if len(c['references']) == 1 else 'are references'}"
                  ", a folder of results folders: each row takes the subfolder whose runs match "
                  "it best (the same file, by name and size, else the closest file size, then "
                  "the same format); *from* names it.", ""]
    n = sum(r["match"] == PER_BYTE for r in c["rows"])
    if n:
        lines += [f"{n} of {len(c['rows'])} rows compare *by time per byte*: with no partner on "
                  "the same file (the files differ in name, size or format), each is matched "
                  "with the same strategy, cache state, workers, pattern and memory limit on the "
                  "other side's file; its medians are s/GB (wall time / file size, seconds per "
                  "10^9 bytes; for several readers, the round's time over the file's size, "
                  "*round / file*, whatever each reader loaded) and its B/A is B's time per byte "
                  "over A's (below 1: B is faster), as on the same file.",
                  ""]
    if any(r["paired_a"] or r["paired_b"] for r in c["rows"]):
        lines += ["*A: × BASELINE's time*, *B: × BASELINE's time*: each side's own paired ratio "
                  "to its baseline, its time over the baseline's within that folder's rounds "
                  "(below 1: faster than the baseline), as that folder's report prints it; empty "
                  "where it has none.", ""]
    return lines


def to_markdown(c: dict) -> str:
    sources = bool(c["references"])
    lines = [f"# loadbench compare: B = {c['b']} against A = {c['a']}", "",
             "B's time / A's (B/A): below 1, B is faster; the Hodges–Lehmann estimate (the "
             "median of the ratios of every B run's time to every A run's, taken on the log "
             "scale) with the exact 95% interval of "
             "the Mann-Whitney test (distribution-free; `(–)`: too few runs reach 95%, which "
             f"needs 4 a side, or 3 and 5); *significant*: Mann-Whitney U p < {c['alpha']} and "
             "the interval leaves out 1.", "", *notes(c), *table_md(c)]
    lines += ["", "## How the machines differ", ""]
    if sources:
        lines += [f"A: {c['machines']['a']}; B: {c['machines']['b']} (the folders most rows "
                  "came from).", ""]
    diffs = c["machine_differences"]
    lines += [f"- {k}: A {v['a']}; B {v['b']}" for k, v in diffs.items()] or ["- nothing recorded"]
    for side in ("a", "b"):
        if c[f"only_in_{side}"]:
            lines += ["", f"Only in {side.upper()}: " + ", ".join(
                f"{spec_label(x)} {x['cache']}"
                + (f" ({os.path.basename(x['source'])})" if side in c["references"] else "")
                for x in c[f"only_in_{side}"])]
    lines += [x for m in c["read_problems"] for x in ("", m)]
    return "\n".join(lines) + "\n"


def table_md(c: dict) -> list[str]:
    """The rows: B/A, and each side's own paired ratio where some row has one."""
    sides = ["a", "b"] if any(r["paired_a"] or r["paired_b"] for r in c["rows"]) else []
    head = (["strategy", "cache", "file", "A median", "B median", "B's time / A's (95% CI)", "p",
             ""] + [paired_head(c, s) for s in sides] + (["from"] if c["references"] else []))
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in c["rows"]:
        cells = [spec_label(r), r["cache"], file_cell(r), median_cell(r, "a"),
                 median_cell(r, "b"), ratio_text(r["ratio"], r["ci_low"], r["ci_high"]),
                 f"{r['p_value']:.3g}",
                 "significant" if r["significant"] else too_few(r, c["alpha"])]
        cells += [paired_cell(r, s) for s in sides]
        cells += [", ".join(f"{s.upper()} {os.path.basename(r['source_' + s])}"
                            for s in c["references"])] if c["references"] else []
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="analysis.compare", description=__doc__.splitlines()[0])
    p.add_argument("a", help="results folder or reference A (the reference)")
    p.add_argument("b", help="results folder or reference B")
    p.add_argument("--out", help="where compare.md and compare.json go (default: B)")
    args = p.parse_args(argv)
    return guard("analysis.compare", [args.a, args.b], lambda: run(args))


def run(args) -> int:
    c = compare(args.a, args.b)
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
