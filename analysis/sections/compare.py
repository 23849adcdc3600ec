"""The compare page's sections (analysis/pages/compare.py; the rows are
analysis/stats/compare.py's): the rule and the rows, B's time over A's with each side's own
paired ratio, and how the two machines differ, with what only one side ran. Their context is
the comparison itself, `stats.compare.compare`'s dict."""

from __future__ import annotations

import os

from analysis.core.ratios import ratio_text
from analysis.core.results import spec_label
from analysis.core.units import size_text
from analysis.sections.base import Section
from analysis.stats.compare import PER_BYTE, SAME_FILE


def too_few(r: dict, alpha: float) -> str:
    if r["min_p_possible"] < alpha:
        return ""
    return f"too few runs ({r['n_a']} and {r['n_b']}) for p < {alpha}"


def file_cell(r: dict) -> str:
    if r["match"] == SAME_FILE:
        return r["file_name"]
    a, b = r["file_a"], r["file_b"]
    return (f"by time per byte: A {size_text(a['bytes'])} {a['format']}, "
            f"B {size_text(b['bytes'])} {b['format']}")


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


class Rows(Section):
    """The rule, the notes on references, time per byte and paired ratios, and the table (no
    heading of its own: under the page's title)."""

    def markdown(self) -> str:
        c = self.ctx
        intro = ("B's time / A's (B/A): below 1, B is faster; the Hodges–Lehmann estimate (the "
                 "median of the ratios of every B run's time to every A run's, taken on the log "
                 "scale) with the exact 95% interval of "
                 "the Mann-Whitney test (distribution-free; `(–)`: too few runs reach 95%, which "
                 f"needs 4 a side, or 3 and 5); *significant*: Mann-Whitney U p < {c['alpha']} "
                 "and the interval leaves out 1.")
        return "\n".join([intro, "", *notes(c), *table_md(c)])


class MachinesDiffer(Section):
    """The facts that differ between the two machines, then what only one side ran and what
    could not be read."""

    title = "How the machines differ"

    def markdown(self) -> str:
        c = self.ctx
        lines = []
        if c["references"]:
            lines += [f"A: {c['machines']['a']}; B: {c['machines']['b']} (the folders most rows "
                      "came from).", ""]
        diffs = c["machine_differences"]
        lines += [f"- {k}: A {v['a']}; B {v['b']}" for k, v in diffs.items()] or \
            ["- nothing recorded"]
        for side in ("a", "b"):
            if c[f"only_in_{side}"]:
                lines += ["", f"Only in {side.upper()}: " + ", ".join(
                    f"{spec_label(x)} {x['cache']}"
                    + (f" ({os.path.basename(x['source'])})" if side in c["references"] else "")
                    for x in c[f"only_in_{side}"])]
        lines += [x for m in c["read_problems"] for x in ("", m)]
        return "\n".join(lines)
