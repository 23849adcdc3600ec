"""`make machines DIRS="a b c ..."`: results folders from one machine or many in one report,
each strategy measured against its own machine's limits, and a model of a load from each
machine's primitives. Writes machines.md, machines.html, machines.json and figures/ into OUT.

Machines. Each folder's env.json says which machine ran it (machine_figures.IDENTITY: CPU,
cores, memory, kernel, virtualisation, storage device, file system, GPU) and in which state
(machine_figures.STATE: THP, tuned or not, free page reporting, DAMON, read-ahead, scheduler).
Folders pool into one machine only where both match; the same machine in two states is two
columns, named by the settings that differ ("vm (tuned)", "vm (untuned)"). A pooled machine's
figures are the median of its folders' probes'. A machine whose runs were on storages the tool
made (records with `storage`, an experiment's [[storage]] axis) is one variant per storage, a
column each, named by the storage's label ("vm / xfs:preset=gp3", the label alone where there is
one machine; "here" for the data folder as it is): its runs those of that storage, paired only
within its rounds, its device figures the storage's own probe's (env.json storages[i].probe),
the rest its machine's.

Workloads. A workload is what the folders may share: the file (its name and size, the path
aside), the cache state, the readers (procs, pattern), the memory limit, the link and a
cluster's fabric (its [cluster] rates, results.load's `fabric`). Per workload and machine, each
strategy's median time (every counted run of its folders: one value per run, from its first
reader's start to its last one's end, as analysis/stats/paired.py counts it), its share of the
machine's limit (the bytes all its readers delivered, by analysis/stats/readers.py's rule, over
the median time, over the limit: the link's ceiling for a run through a server, the probe's
device figure (the one the main report draws) for a run whose bytes came from storage, cold or
warm with O_DIRECT as analysis/models/load.py prices it, its page cache read for any other warm
one; above 1 for a strategy that copies less than a read() from the cache does, a mapping, and
marked there as every share above 1 is), and its rank on that machine (1: the fastest).

Flips. For every two machines sharing a workload, each pair of strategies whose order by median
differs: on each machine the first one's time over the second's, paired within the rounds both
ran in (analysis/paired.signed_rank_interval, the Hodges–Lehmann estimate with its
signed-rank interval; rounds never pair across folders). A flip is sure where both intervals
leave out 1, on opposite sides.

The model (analysis/models/load.py): per row, the time the machine's probe figures predict, beside
the median measured, and their ratio (on a storage whose probe measured its reads per second,
the device's rate is the lesser of its bytes per second and those reads times the request size
the strategy issues, known from its params and the storage's loop device, set beside the
request size the run's device counters measured); per family of strategies, the median ratio and its range.
`--predict machine.json` (machine_figures.read: a machine's figures, an env.json or a folder)
gives each strategy of each workload its expected time there, from the counts (first touches)
of the first machine, in the order given, that ran it.

    /usr/bin/python3 -m analysis.machines DIR [DIR ...] [--out OUT] [--predict FILE]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

import pandas as pd

from analysis.core import html_page
from analysis.core.figures import Figures
from analysis.core.ratios import number
from analysis.core.results import ResultsError, guard, json_default
from analysis.models import machine_figures as mf
from analysis.models.machines import families, flips, open_machines, predictions
from analysis.sections import base
from analysis.sections.machines import Context, MachinesTable, Model, Predicted, Workloads, shared


# The page's sections in order, under its title and opening (`intro_md`).
SECTIONS = [MachinesTable, Workloads, Model, Predicted]


def write(report: dict, out: str) -> int:
    """machines.md, machines.html and the figures into `out`; the count of figures."""
    ctx = Context(report, Figures(out))
    parts = [intro_md(report), *base.render([kind(ctx) for kind in SECTIONS])]
    parts = [p for p in parts if p]
    with open(os.path.join(out, "machines.md"), "w", encoding="utf-8") as f:
        f.write("\n\n".join(parts) + "\n")
    with open(os.path.join(out, "machines.html"), "w", encoding="utf-8") as f:
        f.write(html_page.page("Machines side by side", parts, out))
    return len(ctx.figs.items)


def _clean(value):
    """NaN as None, inside dicts and lists too: machines.json is strict JSON."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def _records(frame: pd.DataFrame) -> list[dict]:
    return [_clean(r) for r in frame.to_dict("records")]


def as_json(report: dict) -> dict:
    target = report["target"]
    return {"machines": [{"label": m.label, "storage": m.storage,
                          "folders": [r.folder for r in m.runs],
                          "fingerprint": m.facts, "figures": m.figures.figures,
                          "links": m.figures.links, "lacks": m.figures.lacks,
                          "caveat": m.figures.caveat,
                          "rows": _records(m.table)} for m in report["machines"]],
            "flips": _records(report["flips"]), "families": _records(report["families"]),
            "predict": None if target is None else
            {"name": target.name, "figures": target.figures, "thp": target.thp,
             "rows": _records(report["predicted"])}}


def console(built: dict) -> str:
    machines, f = built["machines"], built["flips"]
    lines = [f"machines: {m.label}: {len(m.runs)} folders, {len(m.table)} rows"
             + (f" ({m.figures.lacks})" if m.figures.lacks else "") for m in machines]
    if not shared(machines):
        lines.append("no workload is shared by two machines: each is shown alone")
    else:
        lines.append(f"order flips: {len(f)}, {int(f['sure'].sum()) if len(f) else 0} sure")
    for _, r in built["families"].iterrows():
        lines.append(f"model, {r['family']}: predicted ÷ measured {number(r['median'])} "
                     f"(median of {r['rows']}; {number(r['low'])}–{number(r['high'])})")
    if built["target"] is not None:
        known = built["predicted"]["predicted_s"].notna().sum() if len(built["predicted"]) else 0
        lines.append(f"predicted for {built['target'].name}: {known} of "
                     f"{len(built['predicted'])} rows")
    return "\n".join(lines)


def intro_md(report: dict) -> str:
    machines = report["machines"]
    folders = len({r.folder for m in machines for r in m.runs})
    both = shared(machines)
    text = (f"{folders} results folders, {len(machines)} machines (a machine in two states "
            f"counts as two; folders pool only where the machine and its state match). ")
    made = [m.label for m in machines if m.storage is not None]
    if made:
        text += (f"Each storage the runs were on is a variant of its machine, named by the "
                 f"storage's label, its device the storage's own probe's: {', '.join(made)}. ")
    text += (f"{len(both)} workloads are shared by two machines or more." if both else
             "No workload (file, cache state, readers) is shared by two machines: each machine "
             "is shown alone.")
    return "# Machines side by side\n\n" + text


def build(folders: list[str], out: str, predict: str | None = None) -> dict:
    """The report of `folders` into `out`: what it wrote and its figures, as a dict."""
    target = mf.read(predict) if predict else None
    machines = open_machines(folders)
    report = {"machines": machines, "flips": flips(machines), "families": families(machines),
              "target": target,
              "predicted": predictions(machines, target) if target else pd.DataFrame()}
    os.makedirs(out, exist_ok=True)
    written = write(report, out)
    with open(os.path.join(out, "machines.json"), "w", encoding="utf-8") as f:
        json.dump(as_json(report), f, indent=1, default=json_default)
    return {**report, "written": written}


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="analysis.machines", description=__doc__.splitlines()[0])
    p.add_argument("folders", nargs="+", help="results folders, from one machine or many")
    p.add_argument("--out", help="where machines.md, machines.html, machines.json and figures/ "
                                 "go (default: results/machines-<UTC time>)")
    p.add_argument("--predict", metavar="FILE",
                   help="a machine to predict each strategy's time on: a JSON of its figures, "
                        "an env.json, or a results folder")
    args = p.parse_args(argv)
    return guard("analysis.machines", args.folders, lambda: run(args))


def run(args) -> int:
    t0 = time.monotonic()
    out = args.out or os.path.join("results", time.strftime("machines-%Y%m%d-%H%M%S",
                                                            time.gmtime()))
    for folder in args.folders:
        if not os.path.isdir(folder):
            raise ResultsError(f"{folder}: no such folder")
    built = build(args.folders, out, args.predict)
    print(console(built))
    print(f"report: {os.path.join(out, 'machines.html')} (+ machines.md, machines.json, "
          f"{built['written']} figures) in {time.monotonic() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
