"""The *Fleet* section's design × nodes tables, one per pattern, the engines' rows beside the
project's designs, the failed rounds, and the designs against torch_bcast paired by round
(analysis/stats/fleet_rounds.py, fleet_paired.py); the shared cells of every fleet table."""

from __future__ import annotations

import os

import pandas as pd

from analysis.core.ratios import ratio_text
from analysis.core.units import MIB
from analysis.sections.fleet_figures import seconds_text
from analysis.stats import ceiling, paired
from analysis.stats.fleet_bounds import whole


def _f(x, fmt: str) -> str:
    return "" if x is None or pd.isna(x) else f"{x:{fmt}}"


def md_table(head: list[str], lines: list[list[str]]) -> str:
    return "\n".join(["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
                     + ["| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"
                        for cells in lines])


def apart_of(frame: pd.DataFrame) -> tuple[int, int, int]:
    """What a row's name must tell apart in `frame`: (its files, its [cluster] rates, its
    patterns)."""
    patterns = frame["pattern"].nunique() if "pattern" in frame else 1
    return frame["file"].nunique(), len(frame[["nic", "uplink"]].drop_duplicates()), patterns


def series_name(row, apart: tuple[int, ...]) -> str:
    """A series in the tables: its label, its file's name where there are several files, its
    [cluster] rates where the rounds ran under several, its pattern where there are several."""
    where = f" [{os.path.basename(str(row['file']))}]" if apart[0] > 1 else ""
    if apart[1] > 1:
        where += f" [nic {row['nic'] or '?'}, uplink {row['uplink'] or '?'}]"
    if len(apart) > 2 and apart[2] > 1:
        where += f" [{row['pattern']}]"
    return str(row["label"]) + where


def _share(x) -> str:
    """A share of a bound, marked above 1 as every share of a limit is (ceiling.share_cell)."""
    return ceiling.share_cell(x, ceiling.above_one(x), percent=False)


def _two(row, name: str, fmt) -> str:
    """A per-node figure's median and largest over the nodes (`name`_median, `name`_max) as
    one cell, `1.00, 1.02`; "" where the rounds had none."""
    low, high = row[f"{name}_median"], row[f"{name}_max"]
    return "" if pd.isna(low) or pd.isna(high) else f"{fmt(low)}, {fmt(high)}"


def _mib(x: float) -> str:
    """Bytes in MiB: three significant digits from 1 MiB up, two decimals below (`0.00`: a
    NIC that carried a few packets' worth)."""
    v = x / MIB
    return f"{v:.3g}" if v >= 1 else f"{v:.2f}"


def _ratio(x: float) -> str:
    return f"{x:.2f}"


def seconds_cell(row) -> str:
    """The median round with the median's 95% interval where it has one (6 rounds or more)."""
    text = seconds_text(row["seconds"])
    if pd.notna(row["seconds_low"]) and pd.notna(row["seconds_high"]):
        text += f" ({seconds_text(row['seconds_low'])}–{seconds_text(row['seconds_high'])})"
    return text


SERIES_HEAD = ["design", "cache", "nodes", "rounds", "median s (95% interval)",
               "connect s (slowest node)", "bound s",
               "of bound", "of best design's bound", "store bytes / needed",
               "received / needed per node: median, max",
               "NIC wire in / out per node, MiB: median, max",
               "wire in / counted in: median, max", "spread: last / first node",
               "slowest node"]


def pattern_text(pattern) -> str:
    """What each node needs under a pattern, as a table's title."""
    if whole(pattern):
        return "**Each node needs the whole model** (pattern `replicated`)"
    part = "its 1/N slice of every tensor" if str(pattern).startswith("tp") else "its part"
    return (f"**Each node needs {part}** (pattern `{pattern}`; one node needs the whole model "
            "under any pattern: its rounds are in the replicated table)")


def _lines(summary: pd.DataFrame) -> list[list[str]]:
    apart = apart_of(summary)[:2]
    lines = []
    for _, r in summary.iterrows():
        failed = f" ({r['failed']} failed)" if r["failed"] else ""
        wire = (f"{_two(r, 'wire_in', _mib)} / {_two(r, 'wire_out', _mib)}"
                if pd.notna(r["wire_in_median"]) else "")
        lines.append([series_name(r, apart), r["cache"], str(r["nodes"]), f"{r['rounds']}{failed}",
                      seconds_cell(r), seconds_text(r["connect_s"]), seconds_text(r["bound_s"]),
                      _share(r["of_bound"]),
                      _share(r["of_best"]), _f(r["amplification"], ".2f"),
                      _two(r, "received", _ratio), wire, _two(r, "wire_over", _ratio),
                      _f(r["spread"], ".2f"), r["slowest"]])
    return lines


CONNECT_NOTE = (
    "Connect s: the longest a node of the round took to connect to its peers (details."
    "connect_s, the largest over the round's nodes), the median over the complete rounds. The "
    "project's designs open their mesh inside their timed load, so their connecting is in "
    "their wall_s and their round; the engines' (torch_bcast, torch_stripe: exec commands) "
    "rendezvous and pass a barrier before their timed region starts, so theirs is not.")


def series_md(summary: pd.DataFrame) -> str:
    """The fleet tables (SERIES_HEAD), one per pattern (replicated first), a row per series,
    each under its title; under them, what the connect column holds (`CONNECT_NOTE`, where a
    series has one) and what a share of a bound above 1 says (`beyond_md`)."""
    parts = []
    patterns = list(dict.fromkeys(summary["pattern"]))
    for pattern in patterns:
        rows = summary[summary["pattern"] == pattern]
        table = md_table(SERIES_HEAD, _lines(rows))
        parts.append(f"{pattern_text(pattern)}\n\n{table}" if len(patterns) > 1 or not whole(
            pattern) else table)
    parts.append(CONNECT_NOTE if summary["connect_s"].notna().any() else "")
    parts.append(beyond_md(summary))
    return "\n\n".join(p for p in parts if p)


def beyond_md(summary: pd.DataFrame) -> str:
    """A line per series whose median round was faster than its design's bound (of bound
    above 1, marked): the bound, from the links as iperf3 measured them, is not the fabric's
    limit there. "" where none was."""
    apart = apart_of(summary)
    beat = summary[summary["of_bound"] > 1]
    lines = [f"{ceiling.BEYOND} {series_name(r, apart)}, {r['cache']}, {r['nodes']} nodes: its "
             f"median round of {seconds_text(r['seconds'])} s beat the bound of "
             f"{seconds_text(r['bound_s'])} s ({seconds_text(r['of_bound'])} of it)"
             for _, r in beat.iterrows()]
    if not lines:
        return ""
    return ("\n".join(f"- {x}" for x in lines) + "\n\nA round faster than its bound shows that "
            "the bound is not the fabric's limit there: the links carried more than iperf3 "
            "measured over them (a shaper's burst, a measurement that fell short), and its "
            "shares of the bound overstate how near the design comes to the fabric's limit.")


def failed_md(table: pd.DataFrame) -> str:
    """The failed rounds, each with the nodes that failed it."""
    apart = apart_of(table)
    lines = [f"- {series_name(r, apart)}, {r['cache']}, {r['nodes']} nodes, round {r['rep']}: "
             f"{r['reason']}" for _, r in table[table["reason"].notna()].iterrows()]
    return ("Failed rounds (a round counts only when every node's record is there and ok):\n\n"
            + "\n".join(lines)) if lines else ""


VERSUS_HEAD = ["design", "pattern", "cache", "nodes", "median s", "torch_bcast median s",
               "rounds paired", "over torch_bcast (paired, 95% interval)", "verdict"]


def _cell(r) -> str:
    if not r["pairs"]:
        return ""
    return ratio_text(r["ratio"], r["ratio_low"], r["ratio_high"]) if r["bounded"] \
        else ratio_text(r["ratio"])


def _best_text(r, apart: tuple[int, ...]) -> str:
    level = paired.coverage_text(int(r["pairs"]))
    interval = f", {level} interval" if r["bounded"] else ", no interval under 6 rounds"
    where = f"pattern `{r['pattern']}`, {r['cache']}"
    return (f"- {where}, {r['nodes']} nodes: the project's best design, {series_name(r, apart)}, "
            f"took {_cell(r)} torch_bcast's time over {r['pairs']} rounds paired{interval}: "
            f"{r['verdict']}.")


def versus_md(versus: pd.DataFrame) -> str:
    """Every series against torch_bcast at the largest N it ran (fleet_paired), with a line per
    pattern on the project's best design there; "" without the engine's rounds."""
    if versus.empty:
        return ""
    apart = apart_of(versus)[:2]
    lines = [[series_name(r, apart) + (" (best)" if r["best"] else ""), r["pattern"], r["cache"],
              str(r["nodes"]), seconds_text(r["seconds"]), seconds_text(r["engine_seconds"]),
              str(r["pairs"]), _cell(r), r["verdict"] if r["pairs"] else "no round shared"]
             for _, r in versus.iterrows()]
    best = "\n".join(_best_text(r, apart) for _, r in versus[versus["best"]].iterrows())
    note = paired.levels_note(versus["pairs"])
    return "\n\n".join(p for p in (
        "**Against the engine.** At the largest N torch_bcast ran, each design's round over "
        "torch_bcast's round of the same rep (paired as every comparison of the report is: the "
        "Hodges–Lehmann estimate and the signed-rank interval of the ratios; below 1, the "
        "design was faster). The project's best design is the one with the lowest median "
        "there, marked (best).", md_table(VERSUS_HEAD, lines), best, note) if p)
