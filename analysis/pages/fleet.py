"""`/usr/bin/python3 -m analysis.fleet RESULTS [--nic RATE --uplink RATE --model SIZE
--cpu-per-node S --cores-per-node C --deadline S]`: a fleet experiment's fabric, rounds,
model and curves as Markdown on stdout, a described topology beside the measured one (the
experiment and the model: analysis/models/fleet.py)."""

from __future__ import annotations

import argparse
import sys

from analysis.core.results import Results, guard, load
from analysis.models.fleet import DEADLINE_S, DESCRIBED, Options, analyse, check, option
from analysis.sections import base
from analysis.sections.fleet import (FleetCurves, FleetFabric, FleetModel, FleetOutlook,
                                     FleetRounds, TITLE)


def text(a: dict, results: Results) -> str:
    """What the command prints, as Markdown: the fabric, the fleet table, the model against
    the measurements, each model's curve and the outlook, each a section."""
    ctx = (a, results)
    sections = [FleetFabric(ctx), FleetRounds(ctx), FleetModel(ctx),
                *[FleetCurves(ctx, name) for name in a["models"]], FleetOutlook(ctx)]
    parts = [f"# {TITLE}: {results.folder}", *base.render(sections)]
    return "\n\n".join(p for p in parts if p) + "\n"


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="analysis.fleet", description=__doc__.splitlines()[0])
    p.add_argument("folder", help="a results folder (runs.jsonl, env.json) of a fleet experiment")
    p.add_argument("--nic", default=DESCRIBED["nic"],
                   help="the described topology's NIC per node, as tc writes a rate "
                        f"(default {DESCRIBED['nic']})")
    p.add_argument("--uplink", default=DESCRIBED["uplink"],
                   help=f"the described store's uplink (default {DESCRIBED['uplink']})")
    p.add_argument("--model", help="the described model's size: 16GB, 8GiB (default: the "
                                   "measured M)")
    p.add_argument("--cpu-per-node", help="CPU seconds per GB a described node moves in and "
                                          "out (default: fitted from the records)")
    p.add_argument("--cores-per-node", help="cores of a described node's own CPU (default: "
                                            "this machine's, env.json cluster.cores)")
    p.add_argument("--deadline", default=str(DEADLINE_S),
                   help="seconds a round may last (default 600: NCCL's watchdog)")
    args = p.parse_args(argv)
    return guard("analysis.fleet", [args.folder], lambda: run(args))


def run(args) -> int:
    number = {name: None if value is None else option(f"--{name.replace('_', '-')}", value,
                                                       float)
              for name, value in (("cpu_per_node", args.cpu_per_node),
                                  ("cores_per_node", args.cores_per_node),
                                  ("deadline", args.deadline))}
    options = Options(nic=args.nic, uplink=args.uplink, model=args.model, **number)
    check(options)
    results = load(args.folder)
    print(text(analyse(results, options), results), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
