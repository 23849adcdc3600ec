"""`make report RESULTS=DIR`: a results folder into DIR/report.md, a self-contained
DIR/report.html (figures embedded; the page itself is analysis/core/html_page.py's), the figures as
PNG and SVG in DIR/figures/, and DIR/summary.json, the table for other tools.

    /usr/bin/python3 -m analysis.report DIR
    /usr/bin/python3 -m analysis.report --brief DIR   # then print only report.html's path
                                                      # and the verdict, a line a question
    /usr/bin/python3 -m analysis.report DIR --export csv t.csv --export json t.json

The report opens with the verdict (per cache state the fastest strategy against the baseline and
the runner-up, and the fastest ways to map the model and to own a copy,
analysis/sections/verdict.py) and the time figure; each figure follows the table it illustrates,
and each start table's *why* prices a copy's first touches and its notes name the groups whose
runs got huge pages in part (analysis/stats/touch.py); noise, carry-over, the machine and the
runs left out come last. `--brief` prints the verdict one line a question
(analysis/sections/brief.py); `--export FMT FILE` (csv, md or json; repeatable) writes the
summary table, one row per condition and strategy (analysis/stats/rows.py).

The page is a list of sections (analysis/sections/base.py), each shown where its results hold
what it is about, in the order of `SECTIONS`; summary.json takes their entries in the order of
`SUMMARY`.
"""

from __future__ import annotations

import json
import os
import time

from analysis.core import export, html_page
from analysis.core.figures import Figures
from analysis.core.results import Arguments, ResultsError, guard, json_default, load
from analysis.sections import base, brief, gpu, peers
from analysis.sections.after import After
from analysis.sections.carryover import Carryover
from analysis.sections.fleet import Fleet
from analysis.sections.gpu import Gpu
from analysis.sections.left_out import LeftOut
from analysis.sections.machine import Machine
from analysis.sections.many_readers import ManyReaders
from analysis.sections.memory import Memory
from analysis.sections.noise import Noise
from analysis.sections.peers import Peers
from analysis.sections.reference import Reference
from analysis.sections.remote import Remote
from analysis.sections.start import ColdStart, StartFigures, WarmStart
from analysis.sections.storage import Storages
from analysis.sections.verdict import Verdict
from analysis.sections.where import Where
from analysis.stats import aggregates, causes, paired, readers, remote, rows, touch

# The report's sections in their order: the verdict and the time figure first, then the tables,
# each figure right after the table it illustrates; noise, carry-over, the machine and the runs
# left out last.
SECTIONS = [Verdict, ColdStart, WarmStart, StartFigures, Storages, Memory, ManyReaders, Fleet,
            Where, Peers, Remote, Reference, After, Gpu, Noise, Carryover, Machine, LeftOut]
# summary.json's entries, in this order (after `folder`).
SUMMARY = [Verdict, After, Gpu, Peers, Remote, Where, ManyReaders, Fleet, Storages, Noise]


def context(folder: str) -> base.Context:
    """The results and what every section shares; a ResultsError where there is nothing to
    report."""
    r = load(folder)
    profiled = causes.summarize(r) if causes.shown(r) else None
    table = touch.first_touches(aggregates.summarize(r, profiled), r, profiled)
    # Device strategies that could not run (no GPU here), and commands and rounds of several
    # readers that could not, still get a report that says why.
    if table.empty and not gpu.shown(r) and not peers.shown(r) and not readers.shown(r) \
            and not remote.shown(r):
        raise ResultsError(f"{os.path.join(folder, 'runs.jsonl')}: no ok runs to report")
    files = table["file"].nunique() if len(table) else 1
    return base.Context(r, folder, Figures(folder), table, profiled, files, paired.no_rounds(r))


def build(folder: str) -> dict:
    ctx = context(folder)
    r = ctx.results
    made = {kind: kind(ctx) for kind in SECTIONS}
    title = f"loadbench report: {r.env.get('experiment') or os.path.basename(folder)}"
    question = r.env.get("experiment_file", {}).get("question") or ""
    parts = [f"# {title}", question, *base.render([made[kind] for kind in SECTIONS])]
    markdown = "\n\n".join(p for p in parts if p) + "\n"
    with open(os.path.join(folder, "report.md"), "w", encoding="utf-8") as f:
        f.write(markdown)
    with open(os.path.join(folder, "report.html"), "w", encoding="utf-8") as f:
        f.write(html_page.page(title, parts, folder))
    out = {"folder": folder, **base.summary([made[kind] for kind in SUMMARY])}
    with open(os.path.join(folder, "summary.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, indent=2, default=json_default)
    return {"report": os.path.join(folder, "report.md"), "figures": len(ctx.figs.items),
            "summary": out, "results": r, "table": ctx.table}


def main(argv: list[str]) -> int:
    p = Arguments(prog="analysis.report", description=__doc__.splitlines()[0])
    p.add_argument("folder", help="a results folder (runs.jsonl, env.json)")
    p.add_argument("--brief", action="store_true",
                   help="print only report.html's path and the verdict, one line a question")
    p.add_argument("--export", nargs=2, action="append", default=[], metavar=("FMT", "FILE"),
                   help="also write the summary table, one row per condition and strategy, "
                        f"as {', '.join(export.WRITERS)} into FILE (repeatable)")
    args = p.parse_args(argv)
    why = export.check(args.export)
    if why:
        p.refuse(why)
    return guard("analysis.report", [args.folder], lambda: run(args))


def run(args) -> int:
    t0 = time.monotonic()
    out = build(args.folder)
    written = export.write(args.export, rows.export(rows.summary(out["results"], out["table"]),
                                                    args.folder))
    if args.brief:
        print(f"report: {os.path.join(args.folder, 'report.html')}")
        print("\n".join(brief.lines(out["summary"]) + [f"table: {w}" for w in written]))
        return 0
    print(f"{out['report']} (+ report.html, summary.json, {out['figures']} figures in "
          f"{os.path.join(args.folder, 'figures')}) in {time.monotonic() - t0:.1f} s")
    for w in written:
        print(f"table: {w}")
    return 0
