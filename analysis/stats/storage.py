"""Storages side by side: what the records say of runs on the storages the tool made (an
experiment's `[[storage]]` axis: one model on ext4, xfs or btrfs on a loop device, a squashfs
or erofs image, an overlay, a tmpfs, a FUSE mount, some with a device class throttling reads).

A record of a run on a made storage carries `storage`, the storage's label ("xfs",
"xfs:preset=gp3"); one on the data folder as it is, `here`, carries none (results.load reads it
as "", shown as HERE), as does every record of a folder from before storages. The storage is
part of a run's condition (results.CONDITION): rounds are per storage, so two storages are never
pooled or paired. Where the storage has a block device the record carries its counters over the
run (`device_reads`, `device_read_bytes`, `device_request_bytes`: bytes per read request,
`device_reads_per_s`, ...); ceiling records (one per cold round) carry the storage and counters
too. env.json `storages` describes each made storage (`entry`): its kind, device class, loop
device (`read_ahead_kb`, `max_sectors_kb`) and, where it was probed, its own probe.

Per group of a storage (`rows`, from the report's groups table): its median time, GB/s (the
group's `gb_per_s`: the file's bytes over the median time), the storage's own ceiling (the
median GB/s of the storage's ok ceiling reads of the file, its cold rounds: `ceilings`), the
share of it (GB/s over the ceiling's GB/s), its rank among the strategies of the same condition
on the same storage (1: the fastest) and the medians of its device counters (`COUNTERS`).
"""

from __future__ import annotations

import dataclasses
import pandas as pd

from analysis.core.results import CEILING, CONDITION, GROUP, HERE, Results
from analysis.stats.aggregates import median_of

# A condition without its storage: what a strategy's rows on several storages share.
PLACE = [c for c in CONDITION if c != "storage"]
# The device counters that explain a rank: bytes per read request and reads per second.
COUNTERS = ["device_request_bytes", "device_reads_per_s"]
ROW_COLUMNS = ["ceiling_gb_per_s", "ceiling_reads", "share", "rank", *COUNTERS, "params"]


def labels(results: Results) -> list[str]:
    """The storages of the folder's runs and ceiling reads, in the order first met ("" for the
    data folder as it is)."""
    frames = [f["storage"] for f in (results.runs, results.ceiling)
              if not f.empty and "storage" in f]
    return list(dict.fromkeys(pd.concat(frames).fillna(""))) if frames else [""]


def shown(results: Results) -> bool:
    """Whether the folder sets storages side by side: two or more, or one made storage."""
    found = labels(results)
    return len(found) > 1 or any(found)


def name(label) -> str:
    """A storage as the tables name it: its label, HERE for the data folder as it is."""
    return label if isinstance(label, str) and label else HERE


def entry(env: dict, label: str) -> dict | None:
    """env.json's `storages` entry of the storage `label`; None for the data folder as it is
    (""), or where env.json names no such storage."""
    if not label:
        return None
    found = [s for s in env.get("storages") or [] if isinstance(s, dict)
             and s.get("label") == label]
    return found[0] if found else None


def on(results: Results, label: str) -> Results:
    """The folder's results of one storage: its runs, the groups left out and its ceiling
    reads (a new Results: what was derived from the whole is made again)."""
    def of(frame: pd.DataFrame) -> pd.DataFrame:
        if frame.empty or "storage" not in frame:
            return frame if not label else frame.iloc[0:0]
        return frame[frame["storage"].fillna("") == label].reset_index(drop=True)
    return dataclasses.replace(results, runs=of(results.runs), ok=of(results.ok),
                               excluded=of(results.excluded), ceiling=of(results.ceiling))


def ceilings(results: Results) -> pd.DataFrame:
    """Per file and storage: the storage's own ceiling, the median GB/s of its ok ceiling
    reads (one per cold round), and how many there were."""
    columns = ["file", "storage", "ceiling_gb_per_s", "ceiling_reads"]
    c = results.ceiling
    if c.empty:
        return pd.DataFrame(columns=columns)
    c = c[(c["strategy"] == CEILING) & (c["status"] == "ok")]
    c = c.assign(gb=pd.to_numeric(c.get("gb_per_s"), errors="coerce")).dropna(subset=["gb"])
    c = c[c["gb"] > 0]
    if c.empty:
        return pd.DataFrame(columns=columns)
    return (c.groupby(["file", "storage"], sort=False)["gb"]
            .agg(ceiling_gb_per_s="median", ceiling_reads="size").reset_index()[columns])


def counters(results: Results) -> pd.DataFrame:
    """Per group (GROUP): the medians of its runs' device counters (COUNTERS; NaN where no
    run recorded one: a storage without a block device, or the data folder as it is) and the
    params its runs recorded (the first; {} where none did), which say its read size."""
    rows = []
    for key, g in results.ok.groupby(GROUP, sort=False):
        params = next((p for p in g["params"] if isinstance(p, dict)), {}) \
            if "params" in g else {}
        rows.append({**dict(zip(GROUP, key)),
                     **{c: median_of(g.get(c)) for c in COUNTERS}, "params": params})
    return pd.DataFrame(rows, columns=GROUP + [*COUNTERS, "params"])


def rows(table: pd.DataFrame, results: Results) -> pd.DataFrame:
    """The report's groups (`table`: analysis/stats/aggregates.py's summarize) with, per
    group, its storage's ceiling (`ceilings`), its share of it (gb_per_s over it), its rank
    within its condition on its storage (1: the fastest median), its device counters and its
    params (`counters`)."""
    if table.empty:
        return table.assign(**{c: pd.Series(dtype=float) for c in ROW_COLUMNS})
    t = table.drop(columns=[c for c in ROW_COLUMNS if c in table])
    t = t.merge(counters(results), on=GROUP, how="left")
    t = t.merge(ceilings(results), on=["file", "storage"], how="left")
    t["share"] = t["gb_per_s"] / t["ceiling_gb_per_s"]
    t["rank"] = t.groupby(CONDITION, dropna=False)["median_s"].rank(method="min").astype(int)
    return t


def order(results: Results, frame: pd.DataFrame) -> list[str]:
    """The storages of `frame`'s rows, in the folder's order (`labels`)."""
    present = set(frame["storage"])
    return [s for s in labels(results) if s in present] + \
        sorted(present - set(labels(results)))

