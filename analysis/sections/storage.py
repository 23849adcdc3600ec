"""The report's *Storages* (analysis/stats/storage.py): the storages the tool made for the runs
side by side, shown where the folder has two storages or more, or one made storage.

Per condition but its storage (in most experiments per cache state), a table of each strategy
on each storage: its median time, its share of that storage's own ceiling (the strategy's GB/s,
the file's bytes over its median time, over the median GB/s of the storage's ceiling reads, one
per cold round; only for rows whose bytes came from the storage, as the machines report decides:
cold, or warm with O_DIRECT, analysis/models/load.reads_storage) and its rank on that storage;
a heat map of the shares (strategies by storages); the order flips between storages, paired
within each storage's rounds (analysis/models/machines.py's flips, over the folder's storage
variants, as `make machines` sets machines side by side); then the device counters that explain
the ranks: per strategy and storage the median bytes per read request, beside the request size
the model gives the strategy before the run (analysis/models/load.request_bytes, from its params
and the storage's loop device), and the median reads per second."""

from __future__ import annotations

import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from analysis.core.labels import condition  # noqa: E402
from analysis.core.results import records, spec_label  # noqa: E402
from analysis.models import load as model, machine_figures as mf  # noqa: E402
from analysis.models.machines import WORKLOAD, flips, variants  # noqa: E402
from analysis.sections.base import Section  # noqa: E402
from analysis.sections.machines import flips_md, kib  # noqa: E402
from analysis.stats import ceiling, storage  # noqa: E402

TITLE = "Storages"
INTRO = (
    "The same model on each storage the tool made for the runs (*here*: the data folder as it "
    "is). Rounds are per storage: no two storages are pooled, and every paired figure is within "
    "one storage's rounds. Per strategy and storage: *s*, its median time; *of ceiling*, its "
    "GB/s (the file's bytes over its median time) over that storage's own ceiling (the median "
    "GB/s of its ceiling reads, one per cold round), for rows whose bytes came from the storage "
    f"(cold, or warm with O_DIRECT; {ceiling.BEYOND}: above it); *rank*, its place on that "
    "storage (1: the fastest).")
COUNTERS_INTRO = (
    "What the storages' block devices counted over the runs (medians; empty for a storage "
    "without one, as a tmpfs, and for the data folder as it is): *request KiB*, the bytes per "
    "read request, predicted before the run from the strategy's params and the storage's loop "
    "device (O_DIRECT and io_uring: the chunk up to the device's largest request, "
    "max_sectors_kb; buffered reads and mappings: the read-ahead window up to it) / measured; "
    "*reads/s*, read requests completed per second. Small requests on a device limited in "
    "operations per second cost more than their bytes: where the ranks flip, they say why.")


def storages_md(r, labels: list[str]) -> str:
    """One line per storage: what it is, its device class, its loop device and its probe."""
    lines = []
    for label in labels:
        if not label:
            lines.append(f"- *{storage.HERE}*: the data folder as it is.")
            continue
        made = storage.entry(r.env, label)
        if made is None:
            lines.append(f"- *{label}*: env.json names no such storage (`storages`).")
            continue
        f = mf.from_storage(r.env, label, label)
        facts = mf.storage_facts(r.env, label, f)
        device = f.figures.get("device_gb_per_s")
        probe = (f"its probe: device {device:.3g} GB/s" if device else
                 f"not predicted: {f.lacks}" if f.lacks else "")
        probe += f", {facts['device reads/s (probe)']} reads/s" \
            if device and f.figures.get("device_iops") else ""
        lines.append(f"- *{label}*: {facts['storage made']}; device class "
                     f"{facts['device class']}; read-ahead / largest request "
                     f"{facts['read-ahead / largest request']}" + (f"; {probe}" if probe else "")
                     + ".")
    return "\n".join(lines)


def reads_storage(row) -> bool:
    """Whether the row's bytes came from its storage: cold, or warm with O_DIRECT all the same
    (models/load.reads_storage, as the machines report decides its limit)."""
    return model.reads_storage({"cache": row["cache"], "strategy_flags": row["strategy_flags"],
                                "read_bytes": row["read_bytes"], "bytes": row["file_bytes"]})


def predicted_requests(r, t: pd.DataFrame) -> list[float]:
    """Per row of `t`, the request bytes the model gives it on its storage, known before the
    run (models/load.request_bytes from its params and the storage's loop device); NaN where
    its bytes do not come from the storage, or a figure is missing."""
    figures = {s: mf.from_storage(r.env, s, storage.name(s)).figures for s in set(t["storage"])}
    sizes = [model.request_bytes(row, figures[row["storage"]]) if row["reads"] else None
             for _, row in t.iterrows()]
    return [np.nan if size is None else size for size in sizes]


def table_of(r, table: pd.DataFrame) -> pd.DataFrame:
    """stats/storage.rows of the report's groups, their shares only where they read the
    storage (`reads`), and the model's request bytes (`predicted_request_bytes`)."""
    t = storage.rows(table, r)
    if t.empty:
        return t
    t["reads"] = [reads_storage(row) for _, row in t.iterrows()]
    t["share"] = t["share"].where(t["reads"])
    t["predicted_request_bytes"] = predicted_requests(r, t)
    return t


def cell_rows(r, g: pd.DataFrame, on: list[str], cells) -> list[list[str]]:
    """One row per strategy of condition `g`: its name, then `cells(row)` per storage of `on`
    (blank cells where it did not run there)."""
    rows = []
    width = len(cells(None))
    for n in dict.fromkeys(spec_label(row) for _, row in g.iterrows()):
        out = [n]
        for s in on:
            hit = g[(g["storage"] == s) & (g.apply(spec_label, axis=1) == n)]
            out += cells(hit.iloc[0]) if len(hit) else [""] * width
        rows.append(out)
    return rows


def _table(head: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(lines + ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |"
                              for row in rows])


def times_cells(row) -> list[str]:
    if row is None:
        return ["", "", ""]
    return [f"{row['median_s']:.3f}",
            ceiling.share_cell(row["share"], ceiling.above_one(row["share"])),
            str(row["rank"])]


def counters_cells(row) -> list[str]:
    if row is None:
        return ["", ""]
    predicted, measured = row["predicted_request_bytes"], row["device_request_bytes"]
    asked = "" if pd.isna(predicted) and pd.isna(measured) else \
        f"{kib(predicted)} / {kib(measured)}"
    reads = row["device_reads_per_s"]
    return [asked, "" if pd.isna(reads) else f"{reads:.0f}"]


def ceilings_md(r, g: pd.DataFrame, on: list[str]) -> str:
    """The line naming each storage's ceiling for the condition's file."""
    c = storage.ceilings(r)
    parts = []
    for s in on:
        hit = c[(c["storage"] == s) & (c["file"] == g["file"].iloc[0])]
        parts.append(f"{storage.name(s)} " + (
            f"{hit['ceiling_gb_per_s'].iloc[0]:.3g} GB/s ({hit['ceiling_reads'].iloc[0]} reads)"
            if len(hit) else "no ceiling reads"))
    return "Ceilings (median of each storage's ceiling reads): " + "; ".join(parts) + "."


def heat_map(g: pd.DataFrame, on: list[str], title: str, figs) -> str:
    """Shares of each storage's ceiling, strategies by storages; "" where none has one."""
    names = list(dict.fromkeys(spec_label(row) for _, row in g.iterrows()))
    grid = np.full((len(names), len(on)), np.nan)
    for _, row in g.iterrows():
        grid[names.index(spec_label(row)), on.index(row["storage"])] = row["share"]
    if np.isnan(grid).all():
        return ""
    fig, ax = plt.subplots(figsize=(2.2 + 1.8 * len(on), max(2.6, 1.0 + 0.32 * len(names))))
    image = ax.imshow(grid, cmap="viridis", aspect="auto", vmin=0)
    for (i, j), v in np.ndenumerate(grid):
        if not np.isnan(v):
            ax.text(j, i, f"{v:.0%}", ha="center", va="center", fontsize=8,
                    color="white" if v < np.nanmax(grid) * 0.6 else "black")
    ax.set_xticks(range(len(on)), [storage.name(s) for s in on], fontsize=8)
    ax.set_yticks(range(len(names)), names, fontsize=8)
    fig.colorbar(image, ax=ax).set_label("share of the storage's ceiling", fontsize=8)
    ax.set_title(title, fontsize=9)
    n = len([i for i in figs.items if i[0].startswith("storage-share-")]) + 1
    figs.save(fig, f"storage-share-{n}", f"Shares of each storage's own ceiling: {title}")
    return figs.md(f"storage-share-{n}")


def workload(g: pd.DataFrame) -> tuple:
    """The condition's workload as models/machines names it (its flips' key)."""
    row = g.iloc[0]
    return (os.path.basename(str(row["file"]).rstrip("/")), float(row["file_bytes"]),
            *[row[c] for c in WORKLOAD[2:]])


def condition_md(r, g: pd.DataFrame, found: pd.DataFrame, files: int, figs) -> str:
    """One condition's tables, heat map and flips."""
    on = storage.order(r, g)
    title = condition(g.iloc[0].drop("storage"), files)
    head = ["strategy"] + [f"{storage.name(s)} {c}" for s in on
                           for c in ("s", "of ceiling", "rank")]
    counters_head = ["strategy"] + [f"{storage.name(s)} {c}" for s in on
                                    for c in ("request KiB, predicted / measured", "reads/s")]
    parts = [f"### {title}", ceilings_md(r, g, on), _table(head, cell_rows(r, g, on, times_cells)),
             heat_map(g, on, title, figs), flips_md(found, workload(g), "storage")]
    if g[storage.COUNTERS + ["predicted_request_bytes"]].notna().any().any():
        parts += [_table(counters_head, cell_rows(r, g, on, counters_cells))]
    return "\n\n".join(p for p in parts if p)


def storage_flips(r) -> pd.DataFrame:
    """The order flips between the folder's storages (models/machines.flips over its storage
    variants: each storage's runs, paired within its own rounds)."""
    return flips(variants("", [r], 0, alone=True))


class Storages(Section):
    title = TITLE

    def shown(self) -> bool:
        return storage.shown(self.ctx.results)

    def markdown(self) -> str:
        r, ctx = self.ctx.results, self.ctx
        self.rows = table_of(r, ctx.table)
        self.flips = storage_flips(r)
        parts = [INTRO, storages_md(r, storage.labels(r))]
        if self.rows.empty:
            return "\n\n".join(parts + ["No strategy has an ok run on a storage."])
        counted = self.rows[storage.COUNTERS + ["predicted_request_bytes"]].notna().any().any()
        parts.append(COUNTERS_INTRO if counted else "")
        for _, g in self.rows.groupby(storage.PLACE, sort=False, dropna=False):
            parts.append(condition_md(r, g, self.flips, ctx.files, ctx.figs))
        return "\n\n".join(p for p in parts if p)

    def summary(self) -> dict:
        if not hasattr(self, "rows"):
            self.markdown()
        keep = storage.PLACE + ["storage", "strategy_spec", "role", "n", "median_s", "gb_per_s",
                                "ceiling_gb_per_s", "ceiling_reads", "share", "rank",
                                *storage.COUNTERS, "predicted_request_bytes"]
        flipped = self.flips.rename(columns={"machine_a": "storage_a", "machine_b": "storage_b"})
        return {"storage": records(self.rows[[c for c in keep if c in self.rows]]),
                "storage_flips": records(flipped),
                "storage_ceilings": records(storage.ceilings(self.ctx.results))}
