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
the within-round ratios of analysis/stats/paired.py do not apply across folders; each side's own
paired ratio (`paired_a`, `paired_b`) is its folder's, within its own rounds. Ceiling reads are
not strategies and are not compared (results.load keeps them apart). A run of several readers
is one value, from its first reader's start to its last one's end, and only a run every reader
of which counted has one (as in the paired figures).

    /usr/bin/python3 -m analysis.compare A B [--out DIR] [--export csv|md|json FILE]...

`--export FMT FILE` (repeatable) writes the rows as a table of their own (`export_table`): CSV
and JSON with every figure (B/A with its interval, both medians, both run counts, p), Markdown
as compare.md's table gives them.
"""

from __future__ import annotations

import json
import os
import sys

from analysis.core import export
from analysis.core.ratios import ratio_text
from analysis.core.results import Arguments, guard, json_default, spec_label
from analysis.sections import base
from analysis.sections.compare import MachinesDiffer, Rows, file_cell, median_cell
from analysis.stats.compare import compare


# The page's sections in order, under its title.
SECTIONS = [Rows, MachinesDiffer]


def to_markdown(c: dict) -> str:
    parts = [f"# loadbench compare: B = {c['b']} against A = {c['a']}",
             *base.render([kind(c) for kind in SECTIONS])]
    return "\n\n".join(p for p in parts if p) + "\n"


# The columns of an exported row, after its name (`strategy`, as compare.md's).
COLUMNS = ["strategy_spec", "role", "cache", "procs", "pattern", "memory_limit_bytes", "link",
           "fabric", "storage", "file_name", "match", "n_a", "n_b", "median_a_s", "median_b_s",
           "median_a_s_per_gb", "median_b_s_per_gb", "ratio", "ci_low", "ci_high", "ratio_text",
           "p_value", "significant", "source_a", "source_b"]


def export_table(c: dict) -> export.Table:
    """compare's rows for `--export`: B's time (on different files, time per byte) over A's."""
    rows = [{"strategy": spec_label(r), **r,
             "ratio_text": ratio_text(r["ratio"], r["ci_low"], r["ci_high"])} for r in c["rows"]]
    md = [("strategy", lambda r: r["strategy"]), ("cache", lambda r: r["cache"]),
          ("file", file_cell), ("A n", lambda r: str(r["n_a"])), ("B n", lambda r: str(r["n_b"])),
          ("A median", lambda r: median_cell(r, "a")), ("B median", lambda r: median_cell(r, "b")),
          ("B's time / A's (95% CI)", lambda r: r["ratio_text"]),
          ("p", lambda r: f"{r['p_value']:.3g}")]
    return export.Table(rows=rows, csv_columns=["strategy"] + COLUMNS, md_columns=md,
                        document={"a": c["a"], "b": c["b"], "results": [
                            {k: r[k] for k in ["strategy"] + COLUMNS} for r in rows]})


def main(argv: list[str]) -> int:
    p = Arguments(prog="analysis.compare", description=__doc__.splitlines()[0])
    p.add_argument("a", help="results folder or reference A (the reference)")
    p.add_argument("b", help="results folder or reference B")
    p.add_argument("--out", help="where compare.md and compare.json go (default: B)")
    p.add_argument("--export", nargs=2, action="append", default=[], metavar=("FMT", "FILE"),
                   help=f"also write the rows as {', '.join(export.WRITERS)} into FILE "
                        "(repeatable)")
    args = p.parse_args(argv)
    why = export.check(args.export)
    if why:
        p.refuse(why)
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
    written = export.write(args.export, export_table(c))
    print(md, end="")
    files = [os.path.join(out, "compare.md"), os.path.join(out, "compare.json"), *written]
    print(f"written: {', '.join(files)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
