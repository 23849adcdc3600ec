"""Peers: commands that load the model their own way (strategy `exec`: a user's own loader, fio,
dd, numpy, PyTorch), run in the same rounds as loadbench's strategies, with the cache prepared
and checked the same way before each run.

Per condition, every peer is set beside the fastest loadbench strategy there (the lowest median
wall time of a strategy that is not exec; ceiling reads are no strategy): its time over the
fastest's within the rounds both ran in, by analysis/stats/paired.py as every paired figure of the
report; its start-up share (the median over its ok runs of exec.startup_s over the whole
command's time, exec.command_s, or wall_s in records without it: the interpreter, imports and
exit around its own load; NaN when it sent no `done`); its own load time (exec.done_s) and
ready (exec.ready_s); its peak memory, of its largest process (peak_rss_bytes) and of its
whole process tree with the page cache it caused (memory.cgroup_peak_bytes); and whether a
checksum verified it. Peers whose runs failed or could not run are listed with why, and the end of
their stderr.
"""

from __future__ import annotations

import math
import shlex

import numpy as np
import pandas as pd

from analysis.core.labels import condition
from analysis.core.ratios import paired_cell
from analysis.core.results import CONDITION, EXEC, GROUP, Results, exec_label, records, spec_label
from analysis.core.units import size_text
from analysis.sections.base import Section
from analysis.stats import aggregates as stats, paired

TITLE = "Peers"
# The paired figures each peer's row takes from paired.paired_table.
PAIRED = ["ratio", "ratio_low", "ratio_high", "bounded", "significant", "verdict"]
COLUMNS = GROUP + ["strategy", "label", "command", "is_fastest", "n", "median_s", "done_s",
                   "ready_s", "startup_share", "peak_rss_bytes", "cgroup_peak_bytes",
                   "verified", "fastest", "fastest_median_s", "pairs"] + PAIRED
STDERR_LINES = 3  # of a failed run's stderr tail, shown in the report


def is_exec(frame: pd.DataFrame) -> pd.Series:
    return frame["strategy"].astype(str) == EXEC


def shown(results: Results) -> bool:
    """Whether a report needs the section: some record, of any status, is an exec command's."""
    return bool(is_exec(results.runs).any())


def command_text(command) -> str:
    """The argv as one shell-quoted line (a shell command's is ["/bin/sh", "-c", "..."])."""
    if isinstance(command, (list, tuple)):
        return shlex.join(str(a) for a in command)
    return command if isinstance(command, str) else ""


def _field(frame: pd.DataFrame, column: str, key: str) -> pd.Series:
    """The numbers under `key` of each record's object `column` (exec, memory); NaN where
    absent."""
    if column not in frame:
        return pd.Series(np.nan, index=frame.index)
    return pd.to_numeric(frame[column].map(lambda d: d.get(key) if isinstance(d, dict)
                                           else None), errors="coerce")


def fastest(table: pd.DataFrame) -> dict[tuple, pd.Series]:
    """condition -> the summary table's row (stats.summarize) of its fastest loadbench
    strategy, by median wall time."""
    if table.empty:
        return {}
    own = table[~is_exec(table)]
    return {key: g.loc[g["median_s"].idxmin()] for key, g in own.groupby(CONDITION, sort=False)}


def _paired(results: Results, chosen: dict[tuple, pd.Series]) -> dict[tuple, pd.Series]:
    """(condition..., spec, role) -> paired.paired_table's row of an exec group against the
    fastest strategy of its condition (that strategy as the baseline)."""
    out = {}
    for spec in sorted({row["strategy_spec"] for row in chosen.values()}):
        table = paired.paired_table(results, baseline=spec)
        for _, p in table[is_exec(table)].iterrows():
            key = tuple(p[c] for c in CONDITION)
            if key in chosen and chosen[key]["strategy_spec"] == spec:
                out[key + (p["strategy_spec"], p["role"])] = p
    return out


def _ready(group: pd.DataFrame) -> pd.Series:
    """Each run's own ready time: a command's `exec.ready_s` (its record's ready_s is null unless
    its own region is timed), a strategy's ready_s."""
    own = pd.to_numeric(group["ready_s"], errors="coerce") if "ready_s" in group else None
    command = _field(group, "exec", "ready_s")
    return command if own is None else command.fillna(own)


def _group_row(key: tuple, group: pd.DataFrame) -> dict:
    """The medians of one group of ok runs (an exec command's or a strategy's)."""
    wall = pd.to_numeric(group["wall_s"], errors="coerce")
    spec = key[GROUP.index("strategy_spec")]
    return {**dict(zip(GROUP, key)), "strategy": group["strategy"].iloc[0],
            "label": exec_label(spec) or spec,
            "command": command_text(group["command"].iloc[0]) if "command" in group else "",
            "n": len(group), "median_s": stats.median_of(wall),
            "done_s": stats.median_of(_field(group, "exec", "done_s")),
            "ready_s": stats.median_of(_ready(group)),
            "startup_share": stats.median_of(_field(group, "exec", "startup_s")
                                             / _field(group, "exec", "command_s").fillna(wall)),
            "peak_rss_bytes": stats.median_of(group.get("peak_rss_bytes")),
            "cgroup_peak_bytes": stats.median_of(_field(group, "memory", "cgroup_peak_bytes")),
            "verified": bool(group["verified"].all())}


def _against(best: pd.Series | None, p: pd.Series | None) -> dict:
    """A peer's comparison with the fastest strategy of its condition; the verdict says why
    there is none."""
    out = {"fastest": None, "fastest_median_s": math.nan, "pairs": 0,
           **{c: math.nan for c in PAIRED[:3]}, "bounded": False, "significant": False}
    if best is None:
        return {**out, "verdict": "no loadbench strategy ran in this condition"}
    out.update(fastest=spec_label(best), fastest_median_s=float(best["median_s"]))
    if p is None:
        return {**out, "verdict": f"no round shared with {out['fastest']}"}
    return {**out, "pairs": int(p["n"]), **{c: p[c] for c in PAIRED}}


def summarize(results: Results, table: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per condition, the fastest loadbench strategy's row (is_fastest, ratio 1) and one row
    per group of an exec command's ok runs with its paired ratio to it; `table` is
    stats.summarize's, when the caller has it."""
    table = stats.summarize(results) if table is None else table
    chosen = fastest(table)
    pairs = _paired(results, chosen)
    groups = dict(list(results.ok.groupby(GROUP, sort=False))) if not results.ok.empty else {}
    rows = []
    for key, group in groups.items():
        cond = tuple(key[GROUP.index(c)] for c in CONDITION)
        best = chosen.get(cond)
        if is_exec(group).all():
            row = _group_row(key, group)
            p = pairs.get(cond + (row["strategy_spec"], row["role"]))
            rows.append({**row, "is_fastest": False, **_against(best, p)})
        elif best is not None and tuple(best[GROUP]) == key and shown_in(results, cond):
            rows.append({**_group_row(key, group), "is_fastest": True, **_against(best, None),
                         "ratio": 1.0, "verdict": ""})
    frame = pd.DataFrame(rows, columns=COLUMNS)
    order = ["cache", "file", "procs", "memory_limit_bytes", "is_fastest", "median_s"]
    return frame.sort_values(order, ascending=[True] * 4 + [False, True],
                             kind="stable").reset_index(drop=True)


def shown_in(results: Results, cond: tuple) -> bool:
    """Whether some exec command has an ok run in the condition."""
    ok = results.ok[is_exec(results.ok)]
    return bool((ok[CONDITION] == pd.Series(cond, index=CONDITION)).all(axis=1).any())


def not_run(results: Results) -> pd.DataFrame:
    """The exec commands' runs that do not count, per group and status (results.excluded's
    rows), with the label and the stderr tail of the latest such run that kept one."""
    columns = GROUP + ["label", "status", "count", "errors", "stderr_tail"]
    x = results.excluded
    x = x[is_exec(x)] if not x.empty else x
    rows = []
    for _, e in x.iterrows():
        runs = results.runs[(results.runs[GROUP] == e[GROUP]).all(axis=1)
                            & (results.runs["status"] == e["status"])]
        tails = _text_field(runs, "exec", "stderr_tail").dropna()
        rows.append({**{c: e[c] for c in GROUP}, "label": exec_label(e["strategy_spec"]),
                     "status": e["status"], "count": int(e["count"]), "errors": e["errors"],
                     "stderr_tail": _lines(tails.iloc[-1]) if len(tails) else None})
    return pd.DataFrame(rows, columns=columns)


def _lines(tail) -> str:
    """A stderr tail (text, or a list of lines) as its non-empty lines."""
    lines = tail if isinstance(tail, list) else str(tail).splitlines()
    return "\n".join(str(line) for line in lines if str(line).strip())


def _text_field(frame: pd.DataFrame, column: str, key: str) -> pd.Series:
    """The values under `key` of each record's object `column`; None where absent."""
    if column not in frame:
        return pd.Series(None, index=frame.index, dtype=object)
    return frame[column].map(lambda d: d.get(key) if isinstance(d, dict) else None)


# --- the report's section --------------------------------------------------------------------

INTRO = ("Commands that load the model their own way (`exec`), run in the same rounds as "
         "loadbench's strategies with the cache prepared the same way, each set beside the "
         "fastest loadbench strategy of its condition (by median time; its row comes first). "
         "× fastest's time: over the rounds both ran in, the peer's time over the fastest "
         "strategy's (below 1: the peer is faster), the Hodges–Lehmann estimate with the 95% "
         "interval of the signed-rank test, as every paired figure of this report; *faster* / "
         "*slower*: the interval leaves out 1; *n.s.*: it holds 1; *too few rounds*: under 6 "
         "pairs, where the estimate shows with `(–)`. Own "
         "load: the median of the time the command reported itself (`done`); start-up share: "
         "the median over its runs of the rest of the whole command's time (interpreter, "
         "imports, exit) over that time, empty when it reported no `done`; peak RSS: its "
         "largest single process; tree peak: the memory its whole process tree was charged, "
         "the page cache it caused included (empty where not measured); verified: whether the "
         "command sent the model's checksum. An unverified peer's runs count in every "
         "statistic and its rows say *(unverified)* wherever they appear: nothing checked the "
         "bytes it loaded.")


def _seconds(v: float) -> str:
    return "" if math.isnan(v) else f"{v:.3f}"


def _ratio_cell(r: pd.Series) -> str:
    return "1 (fastest)" if r["is_fastest"] else paired_cell(r)


def condition_md(rows: pd.DataFrame, files: int) -> str:
    """One condition's table: the fastest strategy's row, then its peers'."""
    first = rows.iloc[0]
    if first["is_fastest"]:
        head = (f"**{condition(first, files)}**: against {first['fastest']}, the fastest "
                f"loadbench strategy here (median {first['median_s']:.3f} s).")
    else:
        head = f"**{condition(first, files)}**: {first['verdict']}."
    lines = ["| peer | n | median s | own load s | start-up share | × fastest's time, paired "
             "(95% CI) | paired test | peak RSS | tree peak | verified |", "|" + "---|" * 10]
    for _, r in rows.iterrows():
        share = "" if math.isnan(r["startup_share"]) else f"{r['startup_share']:.1%}"
        verdict = "" if r["is_fastest"] or not r["pairs"] else r["verdict"]
        lines.append(
            f"| {spec_label(r)} | {r['n']} | {_seconds(r['median_s'])} | "
            f"{_seconds(r['done_s'])} | {share} | {_ratio_cell(r)} | {verdict} | "
            f"{size_text(r['peak_rss_bytes'], '')} | {size_text(r['cgroup_peak_bytes'], '')} | "
            f"{'yes' if r['verified'] else 'no: no checksum sent'} |")
    unpaired = [f"{spec_label(r)}: {r['verdict']}" for _, r in rows.iterrows()
                if not r["is_fastest"] and not r["pairs"] and first["is_fastest"]]
    tail = ("\n\nNo paired figure for " + "; ".join(unpaired) + ".") if unpaired else ""
    return head + "\n\n" + "\n".join(lines) + tail


def code(text: str, cell: bool = True) -> str:
    """Text as code; in a table `cell`, its pipes escaped so that they do not split it."""
    if cell:
        text = text.replace("|", "\\|")
    return f"`{text}`" if "`" not in text else text


def commands_md(results: Results) -> str:
    """Every exec command as run, one row per label and command line (placeholders filled),
    then how their memory, CPU, faults and bytes read were measured (exec.measured), each
    way once."""
    runs = results.runs[is_exec(results.runs)]
    frame = pd.DataFrame({
        "label": runs["strategy_spec"].map(exec_label),
        "command": runs["command"].map(command_text) if "command" in runs else "",
        "measured": _text_field(runs, "exec", "measured")})
    lines = ["| peer | command |", "|---|---|"]
    lines += [f"| {label} | {code(command)} |"
              for label, command in frame[["label", "command"]].drop_duplicates().itertuples(
                  index=False)]
    parts = ["Commands:", "\n".join(lines)]
    ways = frame.dropna(subset=["measured"]).groupby("measured", sort=False)["label"].unique()
    if len(ways) == 1:
        parts.append(f"Measured: {ways.index[0]}.")
    elif len(ways) > 1:
        parts += ["Measured:", "\n".join(f"- {', '.join(labels)}: {way}"
                                         for way, labels in ways.items())]
    return "\n\n".join(parts)


def not_run_md(results: Results, files: int) -> str:
    table = not_run(results)
    if table.empty:
        return ""
    lines = []
    for _, x in table.iterrows():
        line = (f"- {x['label']}, {condition(x, files)}: {x['status']} ({x['count']} "
                f"run{'' if x['count'] == 1 else 's'}): {'; '.join(x['errors'])[:300]}")
        if x["stderr_tail"]:
            last = x["stderr_tail"].splitlines()[-STDERR_LINES:]
            line += "; stderr ends: " + code(" ⏎ ".join(last)[:400], cell=False)
        lines.append(line)
    return "Peers whose runs failed or could not run (not in any statistic):\n\n" + \
        "\n".join(lines)


def section_md(results: Results, table: pd.DataFrame | None = None) -> str:
    files = max(results.runs["file"].nunique(), 1)
    rows = summarize(results, table)
    parts = [" ".join(p for p in (INTRO, paired.levels_note(rows["pairs"])) if p)]
    if rows.empty:
        parts.append("No peer has an ok run.")
    for _, g in rows.groupby(CONDITION, sort=False):
        parts.append(condition_md(g, files))
    parts += [commands_md(results), not_run_md(results, files)]
    return "\n\n".join(p for p in parts if p)


def summary(results: Results, table: pd.DataFrame | None = None) -> dict:
    """summary.json's figures: `peers`, the rows of the section's tables; `peers_not_run`,
    the exec commands' runs that do not count, with why."""
    return {"peers": records(summarize(results, table)),
            "peers_not_run": records(not_run(results))}


class Peers(Section):
    title = TITLE

    def shown(self) -> bool:
        return shown(self.ctx.results)

    def markdown(self) -> str:
        return section_md(self.ctx.results, self.ctx.table)

    def summary(self) -> dict:
        return summary(self.ctx.results, self.ctx.table)
