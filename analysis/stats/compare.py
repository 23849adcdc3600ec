"""Two results folders' rows matched and compared, unpaired (analysis/pages/compare.py's
docstring says why and how): per point (strategy spec, role, cache state, readers, pattern,
memory limit, link, fabric) the ok runs of each side, a reference's subfolder chosen per row,
the same file else time per byte, B's over A's (analysis/stats/unpaired.py), each side's own
paired ratio to its baseline, what only one side ran, and the machines' facts that differ."""

from __future__ import annotations

import math
import os
from collections import Counter
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.core.machine import machine_facts
from analysis.core.ratios import ratio_cells
from analysis.core.results import Results, ResultsError, load, problems_md
from analysis.stats import aggregates as stats, paired, readers
from analysis.stats.unpaired import ALPHA, shift_row


GB = 1e9


# What a row of A and a row of B must share to be compared; the file too where both sides ran
# it (by its name, since paths differ between machines, and its size), else they compare by
# time per byte.
POINT = ["strategy_spec", "role", "cache", "procs", "pattern", "memory_limit_bytes", "link",
         "fabric", "storage"]


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
