"""The machines page's sections (analysis/pages/machines.py; its rows are
analysis/models/machines.py's, and the page's docstring says what each figure means): the
machines and their facts, per workload the table of shares of each machine's limit with its
heat map (strategies by machines) and the order flips, the model against the measurements with
its scatter (predicted time against measured, one dot per row, the diagonal drawn), and a
described machine's predictions."""

from __future__ import annotations

from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from analysis.core.figures import Figures  # noqa: E402
from analysis.core.labels import condition  # noqa: E402
from analysis.core.ratios import number, ratio_text  # noqa: E402
from analysis.core.results import MAPS_FILE, has_flag, spec_label  # noqa: E402
from analysis.core.units import size_text  # noqa: E402
from analysis.models import load as model  # noqa: E402
from analysis.models.machines import WORKLOAD  # noqa: E402
from analysis.sections.base import Section  # noqa: E402
from analysis.stats import ceiling  # noqa: E402

FLIPS_SHOWN = 12  # per workload and two machines; the rest are counted


def workload_name(w) -> str:
    """A shared workload in words: its file and size, then its condition (core.labels)."""
    return f"{w['file_name']} ({size_text(w['file_bytes'])}), " + condition(w, 1)


def name(row) -> str:
    """The row's strategy as every table names it: spec, role, timed region, unverified."""
    return spec_label({k: row.get(k) for k in ("strategy_spec", "role", "timed", "verified")})


def _f(x, fmt=".3g", none="—") -> str:
    return none if x is None or pd.isna(x) else f"{x:{fmt}}"


def _table(head: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows]
    return "\n".join(lines)


def machines_of(machines) -> dict[tuple, int]:
    """Every workload, in the order first met, with the count of machines that ran it."""
    seen: dict[tuple, int] = {}
    for m in machines:
        for w in dict.fromkeys(tuple(r) for r in m.table[WORKLOAD].itertuples(index=False)):
            seen[w] = seen.get(w, 0) + 1
    return seen


def workloads(machines) -> list[tuple]:
    """Every workload, in the order first met; those of several machines first."""
    seen = machines_of(machines)
    return sorted(seen, key=lambda w: -min(seen[w], 2))


def shared(machines) -> list[tuple]:
    return [w for w, n in machines_of(machines).items() if n > 1]


# --- machines ---------------------------------------------------------------------------------

def machines_md(machines) -> str:
    head = ["", *[m.label for m in machines]]
    rows = [["folders", *[", ".join(f"`{r.folder}`" for r in m.runs) for m in machines]]]
    for fact in machines[0].facts:
        rows.append([fact, *[m.facts.get(fact, "?") for m in machines]])
    notes = [f"- {m.label}: {m.figures.lacks}; its rows have no share of the limit or prediction "
             "where they need what is missing." for m in machines if m.figures.lacks]
    notes += [f"- {m.label}: {m.figures.caveat}." for m in machines if m.figures.caveat]
    return "\n\n".join(p for p in [_table(head, rows), "\n".join(notes)] if p)


# --- workloads --------------------------------------------------------------------------------

def _rows_of(m, w: tuple) -> pd.DataFrame:
    t = m.table
    return t[(t[WORKLOAD] == pd.Series(w, index=WORKLOAD)).all(axis=1)]


def limits_md(m, rows: pd.DataFrame) -> str:
    """A machine's limits for a workload's rows: the limit most of them share, and each other
    limit with the rows measured against it (rows through a server beside local ones, a warm
    O_DIRECT read beside copies from the page cache)."""
    found: dict[str, list[str]] = {}
    for _, r in rows.iterrows():
        found.setdefault(f"{r['limit']} {_f(r['limit_gb_per_s'])} GB/s", []).append(name(r))
    most, *others = sorted(found, key=lambda k: -len(found[k]))
    return f"{m.label}: {most}" + "".join(f", but {k} for {', '.join(found[k])}"
                                          for k in others)


MAPS_CACHED = ("they map the cached file and copy nothing, where a read() from the page cache, "
               "the limit, copies every byte once")
NOT_A_LIMIT = ("that figure is not this machine's limit for them, and the shares of it "
               "overstate how near the strategies come to the limit")


def beyond_md(present, w: tuple) -> str:
    """Per machine and limit, the rows whose share of it is above 1 (marked), with what each
    delivered, and why it can be."""
    lines = []
    for m in present:
        above = _rows_of(m, w)[lambda t: t["share"] > 1]
        for (limit, gb), g in above.groupby(["limit", "limit_gb_per_s"], sort=False):
            maps = g["strategy_flags"].map(lambda f: has_flag(f, MAPS_FILE))
            for mapping, rows in g.groupby(maps & (limit == "page cache read"), sort=False):
                each = ", ".join(f"{name(r)} ({r['run_bytes'] / r['median_s'] / 1e9:.3g} GB/s)"
                                 for _, r in rows.iterrows())
                lines.append(f"- {ceiling.BEYOND} {m.label}: {each} passed the {limit} "
                             f"({_f(gb)} GB/s): {MAPS_CACHED if mapping else NOT_A_LIMIT}.")
    return "\n".join(lines)


def workload_md(machines, w: tuple, flips: pd.DataFrame, figs) -> str:
    present = [m for m in machines if not _rows_of(m, w).empty]
    wd = dict(zip(WORKLOAD, w))
    limits = "; ".join(limits_md(m, _rows_of(m, w)) for m in present)
    names = list(dict.fromkeys(name(r) for m in present for _, r in _rows_of(m, w).iterrows()))
    # Rows of which no run counted on a machine: their status instead of a time.
    left = [{name({"strategy_spec": k[-2], "role": k[-1]}): status
             for k, status in m.left_out.items() if k[:len(WORKLOAD)] == w} for m in present]
    names += [n for statuses in left for n in statuses if n not in names]
    head = ["strategy"] + [f"{m.label} {c}" for m in present for c in ("s", "of limit", "rank")]
    by_name = [{name(r): r for _, r in _rows_of(m, w).iterrows()} for m in present]
    rows = []
    for n in names:
        cells = [n]
        for found, statuses in zip(by_name, left):
            r = found.get(n)
            share = "" if r is None else ceiling.share_cell(
                r["share"], ceiling.above_one(r["share"]), percent=False)
            cells += ([statuses.get(n, ""), "", ""] if r is None else
                      [_f(r["median_s"], ".3f"), share, str(r["rank"])])
        rows.append(cells)
    parts = [f"### {workload_name(wd)}", f"Median time of the runs, its share of the machine's "
             f"limit (the bytes all its readers delivered over the median time, over the "
             f"limit; {ceiling.BEYOND}: above 1) and its rank (1: the fastest). Limits: "
             f"{limits}.", _table(head, rows), beyond_md(present, w)]
    parts.append(heat_map(present, w, names, figs))
    parts.append(flips_md(flips, w))
    return "\n\n".join(p for p in parts if p)


def heat_map(present, w: tuple, names: list[str], figs) -> str:
    grid = np.full((len(names), len(present)), np.nan)
    for j, m in enumerate(present):
        for _, r in _rows_of(m, w).iterrows():
            grid[names.index(name(r)), j] = r["share"]
    if np.isnan(grid).all():
        return ""
    fig, ax = plt.subplots(figsize=(2.2 + 1.6 * len(present), 1.0 + 0.32 * len(names)))
    image = ax.imshow(grid, cmap="viridis", aspect="auto", vmin=0)
    for (i, j), v in np.ndenumerate(grid):
        if not np.isnan(v):
            ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=8,
                    color="white" if v < np.nanmax(grid) * 0.6 else "black")
    ax.set_xticks(range(len(present)), [m.label for m in present], fontsize=8)
    ax.set_yticks(range(len(names)), names, fontsize=8)
    fig.colorbar(image, ax=ax, label="share of the machine's limit")
    title = workload_name(dict(zip(WORKLOAD, w)))
    ax.set_title(title, fontsize=9)
    n = len([i for i in figs.items if i[0].startswith("machines-share-")])
    figs.save(fig, f"machines-share-{n + 1}", f"Shares of each machine's limit: {title}")
    return figs.md(f"machines-share-{n + 1}")


def _ratio(side: dict) -> str:
    if not side["pairs"]:
        return "no shared round"
    return ratio_text(side["ratio"], side["low"], side["high"]) + f", {side['pairs']} rounds"


def flips_md(flips: pd.DataFrame, w: tuple, what: str = "machine") -> str:
    """The order flips of workload `w` (models/machines.flips' rows) per two machines, or per
    two storages of one (`what`: the word for a column)."""
    if flips.empty:
        return ""
    f = flips[(flips[WORKLOAD] == pd.Series(w, index=WORKLOAD)).all(axis=1)]
    if f.empty:
        return f"No pair of strategies changes order between the {what}s."
    out = []
    for (a, b), g in f.groupby(["machine_a", "machine_b"], sort=False):
        rows = [[name({"strategy_spec": r["first"][0], "role": r["first"][1]}),
                 name({"strategy_spec": r["second"][0], "role": r["second"][1]}),
                 _ratio(r["a"]), _ratio(r["b"]), "sure" if r["sure"] else "not sure"]
                for _, r in g.head(FLIPS_SHOWN).iterrows()]
        rest = g.iloc[FLIPS_SHOWN:]
        more = (f"\n\n… and {len(rest)} more ({int(rest['sure'].sum())} sure)"
                if len(rest) else "")
        out.append(f"**Order flips between {a} and {b}** ({int(g['sure'].sum())} of {len(g)} "
                   f"sure): the first strategy's time over the second's, paired within each "
                   f"{what}'s rounds (interval at 95% or more); sure where both leave out 1, "
                   f"on opposite sides.\n\n"
                   + _table(["first (faster on " + a + ")", "second", f"on {a}", f"on {b}",
                             "flip"], rows) + more)
    return "\n\n".join(out)


# --- the model --------------------------------------------------------------------------------

MODEL_INTRO = (
    "Time = bytes over the slowest stage they pass + first touches × the probe's cost of one "
    "(+ the consumer's pass over the bytes after the load, for an eager strategy). The stages "
    "follow from each strategy's flags (analysis/models/load.py lists them); every figure is the "
    "probe's, fitted on nothing. Predicted ÷ measured: above 1, the model is slower than the "
    "run was (it misses an overlap, of threads or of stages); below 1, the run paid what the "
    "model leaves out.")
REQUESTS_NOTE = (
    "On a storage whose probe measured the reads per second it sustains, the device's rate is "
    "the lesser of its bytes per second and those reads times the request the strategy issues, "
    "known before the run (O_DIRECT and io_uring: its chunk up to the device's largest request, "
    "max_sectors_kb; buffered reads and mappings: the read-ahead window up to it); *request "
    "KiB, predicted / measured* sets it beside the median bytes per read request the run's device "
    "counted, which the model never reads.")


def families_md(families: pd.DataFrame) -> str:
    rows = [[r["family"], str(r["rows"]), number(r["median"]),
             f"{number(r['low'])}–{number(r['high'])}"] for _, r in families.iterrows()]
    return _table(["family", "rows", "predicted ÷ measured (median)", "range"], rows)


def requests_shown(machines) -> bool:
    """Whether the model's rows show their read requests: some machine is a storage variant,
    or some row's runs counted their device's requests."""
    return any(m.storage is not None or pd.to_numeric(
        m.table.get("device_request_bytes", pd.Series(dtype=float)), errors="coerce")
        .notna().any() for m in machines)


def slowest_cell(r, m) -> str:
    """The slowest stage and its GB/s; a device bound by its requests says so, with the
    storage's reads per second and the request size (models/load.device_rate)."""
    text = f"{r['slowest']} {_f(r['slowest_gb_per_s'])} GB/s"
    if r["slowest"] == "device" and r.get("device_bound") == "requests":
        iops = m.figures.figures.get("device_iops")
        text += f" (requests: {_f(iops, '.0f')}/s × {kib(r['request_bytes'])} KiB)"
    return text


def kib(n) -> str:
    """A request's bytes in KiB, whole (`128`); "—" for none."""
    return "—" if n is None or pd.isna(n) else f"{n / 1024:.0f}"


def request_cell(r) -> str:
    """The request size the model gives the row beside the one its runs measured (the median
    of their device_request_bytes), in KiB: `128 / 127`; "" with neither."""
    predicted, measured = r.get("request_bytes"), r.get("device_request_bytes")
    if kib(predicted) == kib(measured) == "—":
        return ""
    return f"{kib(predicted)} / {kib(measured)}"


def model_rows_md(machines) -> str:
    requests = requests_shown(machines)
    rows = []
    for m in machines:
        for _, r in m.table.iterrows():
            stages = ", ".join(s for s, _ in model.stages(r)) if model.flags_of(r) else ""
            asked = [request_cell(r)] if requests else []
            if pd.isna(r["predicted_s"]):
                why = r["why"] or f"no figure: {r['missing']}"
                rows.append([m.label, workload_name(r), name(r), stages, why, *asked, "", "",
                             _f(r["median_s"], ".3f"), ""])
                continue
            rows.append([m.label, workload_name(r), name(r), stages, slowest_cell(r, m), *asked,
                         _f(r["touch_s"], ".3f"), _f(r["predicted_s"], ".3f"),
                         _f(r["median_s"], ".3f"), number(r["error"])])
    head = ["machine", "workload", "strategy", "stages", "slowest",
            *(["request KiB, predicted / measured"] if requests else []), "first touches s",
            "predicted s", "measured s", "÷"]
    return _table(head, rows)


def scatter(machines, figs) -> str:
    t = pd.concat([m.table for m in machines], ignore_index=True)
    t = t[pd.to_numeric(t.get("predicted_s"), errors="coerce").gt(0)] if "predicted_s" in t \
        else t.iloc[0:0]
    if t.empty:
        return ""
    fig, ax = plt.subplots(figsize=(6, 5))
    for fam, g in t.groupby("family"):
        ax.scatter(g["median_s"], g["predicted_s"], label=fam, s=22)
    low = min(t["median_s"].min(), t["predicted_s"].min()) * 0.8
    high = max(t["median_s"].max(), t["predicted_s"].max()) * 1.25
    ax.plot([low, high], [low, high], color="grey", lw=1, label="predicted = measured")
    ax.set(xscale="log", yscale="log", xlim=(low, high), ylim=(low, high),
           xlabel="measured median time (s)", ylabel="predicted time (s)")
    ax.legend(fontsize=7)
    figs.save(fig, "machines-model", "The model's time against the measured median, one dot "
                                     "per row of every machine; on the diagonal, exact")
    return figs.md("machines-model")


def model_md(report: dict, figs) -> str:
    parts = [MODEL_INTRO, "### Error per family"]
    parts.append(families_md(report["families"]) if not report["families"].empty else
                 "No row has a prediction: no machine has the probe's figures.")
    parts += [scatter(report["machines"], figs), "### Per row",
              REQUESTS_NOTE if requests_shown(report["machines"]) else "",
              model_rows_md(report["machines"])]
    return "\n\n".join(p for p in parts if p)


def predicted_md(report: dict) -> str:
    target, p = report["target"], report["predicted"]
    if target is None:
        return ""
    if p.empty:
        return "No workload to predict."
    rows = [[workload_name(r), name(r),
             _f(r["predicted_s"], ".3f") if not pd.isna(r["predicted_s"]) else
             (r["why"] or f"no figure: {r['missing']}"),
             f"{r['slowest']} {_f(r['slowest_gb_per_s'])} GB/s" if r["slowest"] else "",
             _f(r["touch_s"], ".3f"), r["counts_from"], _f(r["measured_s"], ".3f")]
            for _, r in p.iterrows()]
    figures = ", ".join(f"{k} {v:.3g}" for k, v in target.figures.items() if v is not None)
    return "\n\n".join([f"From its figures ({figures or 'none'}; THP "
                              f"{target.thp or 'not given'}) and each row's counts.",
                        _table(["workload", "strategy", "predicted s", "slowest stage",
                                "first touches s", "counts from", "measured where counted, s"],
                               rows)])


# --- the page's sections -----------------------------------------------------------------------

@dataclass
class Context:
    """What the machines page's sections share: the report (pages/machines.py's `build`:
    machines, flips, families, target, predicted) and the page's figures."""
    report: dict
    figs: Figures


class MachinesTable(Section):
    title = "Machines"

    def markdown(self) -> str:
        return machines_md(self.ctx.report["machines"])


class Workloads(Section):
    title = "Workloads"

    def markdown(self) -> str:
        machines = self.ctx.report["machines"]
        parts = [workload_md(machines, w, self.ctx.report["flips"], self.ctx.figs)
                 for w in workloads(machines)]
        return "\n\n".join(p for p in parts if p)


class Model(Section):
    title = "The model"

    def markdown(self) -> str:
        return model_md(self.ctx.report, self.ctx.figs)


class Predicted(Section):
    def shown(self) -> bool:
        target = self.ctx.report["target"]
        self.title = f"Predicted for {target.name}" if target is not None else ""
        return target is not None

    def markdown(self) -> str:
        return predicted_md(self.ctx.report)
