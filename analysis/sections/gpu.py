"""Into GPU memory: the report's section on the CUDA strategies (strategy names `cuda_*`), which
load a file's tensors into device memory and verify them there with a device checksum.

Per group of comparable ok runs: the median time to device (wall_s: every tensor on the device
and the device's checksum back), GB/s (tensor bytes over that median, 1e9 bytes/s), the medians
of the `device` object's phases and of the page-locked host memory, and the GB/s as a fraction
of the lower of two ceilings: the disk (the median of the condition's ceiling reads, a raw
O_DIRECT read of the file once per round; none for a warm cache, where the file is in memory)
and the host-to-device copy from pinned memory (env.json probe `h2d_pinned`, its best rep).
Where a ceiling the fraction needs was not measured the fraction is NaN and `ceiling_reason`
says why: no figure is made up.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from analysis.core.labels import condition
from analysis.core.results import CONDITION, GROUP, Results, records
from analysis.core.units import size_text
from analysis.sections.base import Section
from analysis.stats import paired

TITLE = "Into GPU memory"
PREFIX = "cuda_"
# Fields of a run's `device` object whose medians the table shows.
DEVICE = ["on_device_s", "device_verify_s", "pinned_bytes", "copied_bytes", "device_bytes",
          "context_s"]
COLUMNS = GROUP + ["strategy", "n", "median_s", "tensor_bytes", "gb_per_s"] + DEVICE + [
    "peak_rss_bytes", "disk_gb_per_s", "h2d_pinned_gb_per_s", "lower_ceiling", "of_ceiling",
    "ceiling_reason"]


def _is_device(frame: pd.DataFrame) -> pd.Series:
    return frame["strategy"].astype(str).str.startswith(PREFIX)


def shown(results: Results) -> bool:
    """Whether a report needs the section: some record, of any status, is a device strategy's."""
    return bool(_is_device(results.runs).any())


def _median(values: pd.Series) -> float:
    values = pd.to_numeric(values, errors="coerce").dropna()
    return float(values.median()) if len(values) else math.nan


def _device_field(frame: pd.DataFrame, key: str) -> pd.Series:
    if "device" not in frame:
        return pd.Series(np.nan, index=frame.index)
    return frame["device"].map(lambda d: d.get(key) if isinstance(d, dict) else None)


def h2d(env: dict, key: str = "h2d_pinned") -> tuple[dict | None, str]:
    """The probe's host-to-device ceiling `key` and "" when it has a figure, else None and
    why not."""
    probe = env.get("probe")
    if not isinstance(probe, dict):
        return None, "env.json has no probe"
    entry = (probe.get("ceilings") or {}).get(key)
    if not isinstance(entry, dict):
        return None, (f"the probe has no {key} (a probe from before the host-to-device "
                      "ceilings were measured)")
    if not isinstance(entry.get("gb_per_s"), (int, float)):
        return None, f"the probe did not measure {key}: {entry.get('reason') or 'no figure'}"
    return entry, ""


def no_reads(env: dict, of: str = "of this condition") -> str:
    """Why there is no ceiling read `of` a cold condition (or of any)."""
    if (env.get("rounds") or {}).get("ceiling") is False:
        return "no ceiling reads: the experiment did not set `ceiling = true`"
    return f"no ceiling read {of} in runs.jsonl"


def _disk(results: Results) -> dict[tuple, tuple[float, str]]:
    """condition -> (the median GB/s of its ok ceiling reads, or NaN and why there is none)."""
    out = {}
    for _, c in paired.ceiling_table(results).iterrows():
        key = tuple(c[k] for k in CONDITION)
        if c["n"] > 0:
            out[key] = (float(c["median_gb_per_s"]), "")
        else:
            out[key] = (math.nan, f"none of the condition's {c['not_ok']} ceiling reads was ok")
    return out


def _lower(cache: str, disk: float, disk_why: str, pinned: float, pinned_why: str):
    """(which ceiling is lower, its GB/s, "") or (None, NaN, why the lower one is unknown)."""
    if cache != "cold":
        # The file is in memory: only the copy into the device bounds the load.
        if math.isnan(pinned):
            return None, math.nan, pinned_why
        return "h2d_pinned", pinned, ""
    missing = [why for why in (disk_why, pinned_why) if why]
    if missing:
        return None, math.nan, "; ".join(missing)
    return ("disk", disk, "") if disk <= pinned else ("h2d_pinned", pinned, "")


def summarize(results: Results) -> pd.DataFrame:
    """One row per group of comparable ok runs of a device strategy (GROUP), sorted by cache
    state then median time to device."""
    ok = results.ok[_is_device(results.ok)] if not results.ok.empty else results.ok
    if ok.empty:
        return pd.DataFrame(columns=COLUMNS)
    entry, pinned_why = h2d(results.env)
    pinned = float(entry["gb_per_s"]) if entry else math.nan
    disks = _disk(results)
    rows = []
    for key, group in ok.groupby(GROUP, sort=False):
        row = dict(zip(GROUP, key))
        median_s = _median(group["wall_s"])
        tensor_bytes = _median(group["tensor_bytes"]) if "tensor_bytes" in group else math.nan
        cache = row["cache"]
        if cache == "cold":
            disk, disk_why = disks.get(tuple(row[k] for k in CONDITION),
                                       (math.nan, no_reads(results.env)))
        else:
            disk, disk_why = math.nan, ""
        gbps = tensor_bytes / median_s / 1e9 if median_s > 0 else math.nan
        lower, ceiling, why = _lower(cache, disk, disk_why, pinned, pinned_why)
        rows.append({
            **row,
            "strategy": group["strategy"].iloc[0],
            "n": len(group),
            "median_s": median_s,
            "tensor_bytes": tensor_bytes,
            "gb_per_s": gbps,
            **{k: _median(_device_field(group, k)) for k in DEVICE},
            "peak_rss_bytes": _median(group["peak_rss_bytes"]),
            "disk_gb_per_s": disk,
            "h2d_pinned_gb_per_s": pinned,
            "lower_ceiling": lower,
            "of_ceiling": gbps / ceiling if lower and ceiling > 0 else math.nan,
            "ceiling_reason": why or None,
        })
    table = pd.DataFrame(rows, columns=COLUMNS)
    return table.sort_values(["cache", "median_s"], kind="stable").reset_index(drop=True)


def _seconds(s: float) -> str:
    return "?" if math.isnan(s) else f"{s:.3f} s"


def device_md(env: dict) -> str:
    gpu = env.get("gpu")
    if not isinstance(gpu, dict):
        return "GPU: env.json has no `gpu` (results from before it was recorded)."
    if not gpu.get("available"):
        return f"GPU: none: {gpu.get('reason') or 'no reason recorded'}."
    d = gpu.get("device") or {}
    memory = d.get("memory_bytes")
    return (f"GPU: {d.get('name', '?')}, {size_text(memory) if memory else '?'}, "
            "compute capability "
            f"{d.get('compute_capability', '?')}, driver {d.get('driver_version', '?')}, runtime "
            f"{d.get('runtime_version', '?')} (PCI {d.get('pci_bus_id', '?')}).")


def _h2d_line(env: dict, key: str, name: str) -> str:
    entry, why = h2d(env, key)
    if entry is None:
        return f"{name}: not measured ({why})"
    reps = entry.get("reps_gb_per_s") or []
    median = entry.get("median_gb_per_s")
    tail = f", median {median:.2f}" if isinstance(median, (int, float)) else ""
    return f"{name} {entry['gb_per_s']:.2f} GB/s (best of {len(reps) or '?'}{tail})"


def ceilings_md(results: Results, files: int) -> str:
    lines = []
    table = paired.ceiling_table(results)
    if table.empty:
        lines.append(f"- disk: {no_reads(results.env, 'of the file')}.")
    for _, c in table.iterrows():
        if c["n"] > 0:
            lines.append(f"- disk, {condition(c, files)}: {c['median_gb_per_s']:.2f} GB/s, the "
                         f"median of {c['n']} ceiling reads (the file read cold by the fastest "
                         "read recipe, once per round).")
        else:
            lines.append(f"- disk, {condition(c, files)}: none of its {c['not_ok']} ceiling "
                         "reads was ok.")
    lines.append("- host to device (the probe's cudaMemcpy): "
                 + _h2d_line(results.env, "h2d_pinned", "from pinned memory") + "; "
                 + _h2d_line(results.env, "h2d_pageable", "from pageable memory") + ".")
    return "The ceilings:\n\n" + "\n".join(lines)


def table_md(table: pd.DataFrame, files: int) -> str:
    several = table[CONDITION].drop_duplicates().shape[0] > 1
    lines = ["| strategy | runs | time to device (median) | GB/s | of lower ceiling | on device "
             "| verify | pinned | peak RSS |", "|---|---|---|---|---|---|---|---|---|"]
    reasons = []
    for _, t in table.iterrows():
        name = t["strategy_spec"] + (f" ({condition(t, files)})" if several else "")
        if t["lower_ceiling"]:
            of = f"{t['of_ceiling']:.0%} ({'disk' if t['lower_ceiling'] == 'disk' else 'h2d'})"
        else:
            of = "n/a"
            reasons.append(f"- {name}: n/a, {t['ceiling_reason']}.")
        gbps = "?" if math.isnan(t["gb_per_s"]) else f"{t['gb_per_s']:.2f}"
        lines.append(f"| {name} | {t['n']} | {_seconds(t['median_s'])} | {gbps} | {of} | "
                     f"{_seconds(t['on_device_s'])} | {_seconds(t['device_verify_s'])} | "
                     f"{size_text(t['pinned_bytes'])} | {size_text(t['peak_rss_bytes'])} |")
    note = ("Medians of the ok runs. Time to device: until every tensor is in device memory and "
            "the device's checksum of them came back (the load's end); GB/s: the tensors' bytes "
            "over it; of lower ceiling: that GB/s over the lower of the disk (cold only) and "
            "the pinned host-to-device copy, the lower one in brackets (a share of the limit: "
            "higher is nearer it); on device: until the "
            "last copy landed; verify: the device checksum; pinned: page-locked host memory at "
            "the strategy's peak.")
    context = table["context_s"].dropna()
    if len(context):
        note += (f" The CUDA context is created before the timed region and is in none of "
                 f"these times: median {context.min():.3f} to {context.max():.3f} s over the "
                 "strategies.")
    text = note + "\n\n" + "\n".join(lines)
    if reasons:
        text += "\n\nWhere the fraction is n/a, the ceiling it needs is missing:\n\n" + \
            "\n".join(reasons)
    return text


def not_run_md(results: Results) -> str:
    x = results.excluded
    if x.empty:
        return ""
    x = x[_is_device(x)]
    if x.empty:
        return ""
    lines = [f"- {r['strategy_spec']}, {r['cache']}: {r['status']} ({r['count']} "
             f"run{'' if r['count'] == 1 else 's'}): {'; '.join(r['errors'])[:300]}"
             for _, r in x.iterrows()]
    return "Device strategies that did not run (or whose runs do not count):\n\n" + \
        "\n".join(lines)


def section_md(results: Results) -> str:
    files = max(results.runs["file"].nunique(), 1)
    table = summarize(results)
    if table.empty:
        body = ("No device strategy has an ok run: nothing was loaded into GPU memory"
                + (" (see below for why)." if not_run_md(results) else "."))
    else:
        body = table_md(table, files)
    parts = [device_md(results.env), ceilings_md(results, files), body, not_run_md(results)]
    return "\n\n".join(p for p in parts if p)


class Gpu(Section):
    title = TITLE

    def shown(self) -> bool:
        return shown(self.ctx.results)

    def markdown(self) -> str:
        return section_md(self.ctx.results)

    def summary(self) -> dict:
        return {"gpu": records(summarize(self.ctx.results))}
