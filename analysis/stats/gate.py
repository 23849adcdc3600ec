"""The regression gate: is NEW slower than BASELINE beyond a threshold, for some strategy?

Rows: per condition (cache state, file by name and size, readers, pattern, memory limit, link,
fabric, storage) and row name (the record's `label` where it names one strategy spec of its
folder, else the strategy spec: so `fread:label=p` in one folder and `fread:chunk=8KiB:label=p`
in the other are one row, as an A/A pair's `mmap_seq:label=a` is) the ok runs that count whole,
one time each (stats/compare.py's `whole_runs` and `run_walls`: several readers' run from the
first start to the last end).

Each row found in both folders gives NEW's time over BASELINE's (below 1: faster), unpaired,
since runs of two folders never shared a round: the Hodges–Lehmann ratio of log times with the
exact Mann–Whitney 95% interval (stats/unpaired.py, as compare's). Its verdict at a threshold t
(0.05 for 5%): `slower beyond t` where the interval's low end is above 1 + t (a slowdown
surely beyond the threshold: the only one that fails the gate), `faster` where its high end is
below 1, `within t` otherwise, `too few runs` where no interval reaches 95% (4 runs a side, or
3 and 5, are the fewest). Where NEW is no slower than 1 + t, a flag has at most a 2.5% chance
for runs that vary alike in both folders; between folders of the same code measured at other
times, `rates` measures how often it flags (the A/A false-alarm rate) and how often it catches
a planted slowdown.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.stats import binomtest

from analysis.core.machine import machine_facts
from analysis.core.results import Results, ResultsError
from analysis.stats.compare import run_walls, whole_runs
from analysis.stats.unpaired import shift_row

# What a row of BASELINE and one of NEW share to be compared: its name, then its condition.
CONDITION = ["cache", "file_name", "file_bytes", "procs", "pattern", "memory_limit_bytes",
             "link", "fabric", "storage"]
KEY = ["name", "role"] + CONDITION
SLOWER, WITHIN, FASTER, TOO_FEW = "slower beyond", "within", "faster", "too few runs"
# Facts of env.json that may differ between the folders without a word: the version under test.
UNSAID = {"loadbench"}


@dataclass
class Row:
    key: tuple
    spec: str
    walls: np.ndarray

    def fields(self) -> dict:
        return dict(zip(KEY, self.key))


def names(ok: pd.DataFrame) -> pd.Series:
    """Each record's row name: its `label` where that label names one strategy spec in the
    folder, else its strategy spec (with the role it has, kept apart in KEY)."""
    label = ok["label"].where(ok["label"].map(lambda x: isinstance(x, str) and x != ""))
    specs = ok.groupby(label)["strategy_spec"].nunique() if label.notna().any() else {}
    unique = label.map(lambda x: isinstance(x, str) and specs.get(x, 0) == 1)
    return label.where(unique, ok["strategy_spec"])


def rows(r: Results) -> dict[tuple, Row]:
    """The folder's rows by KEY, each with its spec and its runs' times."""
    ok = whole_runs(r)
    if ok.empty:
        return {}
    ok = ok.assign(name=names(ok), file_bytes=ok["file_bytes"].fillna(-1).astype("int64"))
    return {key: Row(key, g["strategy_spec"].iloc[0], run_walls(g))
            for key, g in ok.groupby(KEY, sort=True)}


def verdict(low, high, threshold: float) -> str:
    if low is None:
        return TOO_FEW
    if low > 1 + threshold:
        return SLOWER
    return FASTER if high < 1 else WITHIN


def unmatched(base: str, ra: dict, new: str, rb: dict) -> str:
    """Why two folders have no row in common, in one line: the rows of each, and the files
    where they differ."""
    def some(r):
        found = sorted({f"{k[2]} {k[0]}" for k in r})
        return ", ".join(found[:6]) + (", ..." if len(found) > 6 else "") or "no ok run"

    def files(r):
        return ", ".join(sorted({k[3] for k in r}))
    differ = (f"; BASELINE's files {files(ra)}, NEW's {files(rb)}" if files(ra) != files(rb)
              else "")
    return (f"{base} and {new}: no strategy in common under the same condition (cache state, "
            f"file by name and size, readers, pattern, memory limit, link, fabric, storage): "
            f"BASELINE has {some(ra)}; NEW has {some(rb)}{differ}")


def compare_rows(base: dict[tuple, Row], new: dict[tuple, Row], threshold: float) -> list:
    """Every row in both: NEW's time over BASELINE's with its interval and verdict."""
    out = []
    for key in sorted(set(base) & set(new), key=lambda k: (k[2], str(k))):
        a, b = base[key], new[key]
        s = shift_row(a.walls, b.walls)
        out.append({**a.fields(), "spec_baseline": a.spec, "spec_new": b.spec,
                    "changed": a.spec != b.spec, "n_baseline": s["n_a"], "n_new": s["n_b"],
                    "median_baseline_s": float(np.median(a.walls)),
                    "median_new_s": float(np.median(b.walls)), "ratio": s["ratio"],
                    "ci_low": s["ci_low"], "ci_high": s["ci_high"], "p_value": s["p_value"],
                    "verdict": verdict(s["ci_low"], s["ci_high"], threshold)})
    return out


def machines_differ(base: Results, new: Results) -> dict:
    fa, fb = machine_facts(base.env), machine_facts(new.env)
    return {k: {"baseline": fa[k], "new": fb[k]} for k in fa
            if fa[k] != fb[k] and k not in UNSAID}


def gate(base: Results, new: Results, threshold: float) -> dict:
    """The gate's answer (the module's docstring): `rows` compared, the rows `only_in_baseline`
    and `only_in_new` (said, not compared), `machines_differ`, `slower` (the rows slower beyond
    the threshold) and `fails`. A ResultsError where no row is in both."""
    ra, rb = rows(base), rows(new)
    compared = compare_rows(ra, rb, threshold)
    if not compared:
        raise ResultsError(unmatched(base.folder, ra, new.folder, rb))
    slower = [c for c in compared if c["verdict"] == SLOWER]
    return {"baseline": base.folder, "new": new.folder, "threshold": threshold,
            "rows": compared, "only_in_baseline": [ra[k].fields() for k in sorted(
                set(ra) - set(rb), key=str)],
            "only_in_new": [rb[k].fields() for k in sorted(set(rb) - set(ra), key=str)],
            "machines_differ": machines_differ(base, new), "slower": slower,
            "fails": bool(slower)}


def share(k: int, n: int) -> dict:
    """k of n with the exact (Clopper–Pearson) 95% interval of the share; None without n."""
    if not n:
        return {"flagged": k, "of": n, "rate": None, "ci_low": None, "ci_high": None}
    ci = binomtest(k, n).proportion_ci()
    return {"flagged": k, "of": n, "rate": k / n, "ci_low": ci.low, "ci_high": ci.high}


def rates(folders: list[Results], planted: list[Results], threshold: float) -> dict:
    """The gate over folders of the same code (A/A): every pair i < j (the earlier as
    BASELINE), each row a comparison; the share flagged (`all_pairs`; pairs share folders, so
    its interval is too narrow), the share of pairs the gate fails (`pairs_failed`), and over
    disjoint pairs only (1-2, 3-4, ...: independent) the same share (`disjoint`). With
    `planted` (one NEW folder per A/A folder, its BASELINE), the rows whose spec changed are
    planted slowdowns (`caught`: the share flagged) and the others more A/A rows
    (`planted_unchanged`)."""
    tables = [rows(r) for r in folders]
    pairs = [(i, j) for i in range(len(folders)) for j in range(i + 1, len(folders))]
    found = []
    for i, j in pairs:
        for c in compare_rows(tables[i], tables[j], threshold):
            found.append({**c, "pair": [folders[i].folder, folders[j].folder],
                          "disjoint": j == i + 1 and i % 2 == 0})
    flagged = [c for c in found if c["verdict"] == SLOWER]
    failed = {tuple(c["pair"]) for c in flagged}
    disjoint = [c for c in found if c["disjoint"]]
    out = {"threshold": threshold, "folders": [r.folder for r in folders],
           "comparisons": found, "all_pairs": share(len(flagged), len(found)),
           "pairs_failed": share(len(failed), len(pairs)),
           "disjoint": share(sum(c["verdict"] == SLOWER for c in disjoint), len(disjoint)),
           "too_few": sum(c["verdict"] == TOO_FEW for c in found)}
    if planted:
        out.update(planted_rates(folders, tables, planted, threshold))
    return out


def planted_rates(folders: list[Results], tables: list[dict], planted: list[Results],
                  threshold: float) -> dict:
    """Each planted folder against the A/A folder of its place (`rates`)."""
    if len(planted) != len(folders):
        raise ResultsError(f"--planted: {len(planted)} folders for {len(folders)} A/A folders: "
                           "give one planted folder per A/A folder, in the same order")
    rowsof = []
    for base, table, new in zip(folders, tables, planted):
        rowsof += [{**c, "pair": [base.folder, new.folder]}
                   for c in compare_rows(table, rows(new), threshold)]
    changed = [c for c in rowsof if c["changed"]]
    if not changed:
        raise ResultsError("--planted: no row's strategy spec differs between the planted "
                           "folders and the A/A folders (give the slowed strategy the same "
                           "label as the row it replaces)")
    same = [c for c in rowsof if not c["changed"]]
    return {"planted": rowsof,
            "caught": share(sum(c["verdict"] == SLOWER for c in changed), len(changed)),
            "planted_median_ratio": float(np.median([c["ratio"] for c in changed])),
            "planted_unchanged": share(sum(c["verdict"] == SLOWER for c in same), len(same))}

