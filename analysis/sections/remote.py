"""Remote: models read through the experiment's server (env.json `server`: nginx over HTTP, or
s3rver as S3, optionally mounted with s3fs) rather than from the file itself.

A run is remote when its record names what the readers opened (`read_as`: an http:// or s3://
URL, or a path inside the s3fs mount), or its strategy is one of the HTTP ones (http_get,
http_ranges, http_stream), or its spec reads `via=` something other than `local`. Remote runs
keep `file` = the local path, so they share the rounds, and the conditions, of the local runs
of the same bytes: each remote design (and each peer, an exec command reading through the
server) is set beside the best local strategy of its condition (the lowest median wall time of
a strategy that is neither remote nor exec), its time over the local one's within the rounds
both ran in, by analysis/stats/paired.py as every paired figure of the report.

Per group of ok runs (GROUP): how it reads; the medians of wall time; GB/s (file bytes over
the median time); client CPU seconds per GB ((user_s + sys_s) / GB, the worker's rusage, or
the command's process tree, plus mount_cpu_s, the s3fs process's, for a run through the mount);
server CPU seconds per GB (server_cpu_s / GB, the server's processes over the run); server CPU per wall second; requests and connections, the over-read
(bytes_received / bytes_requested - 1), time to first byte and the per-request latency p50 and
p99 (the medians of each run's, from `details`). GB: 10^9 bytes.

On a shaped network link (records with `link`, a condition like the cache state: no row, median
or pair mixes two links), each row is also set against the link's own ceiling and the
server's, measured in the same rounds: analysis/stats/link.py, whose docstring says how.
"""

from __future__ import annotations

import os

import matplotlib.pyplot as plt
import pandas as pd

# link.py sits below this module (the link's part of the section) and imports nothing of it.
from analysis.core.labels import condition
from analysis.core.ratios import paired_cell, ratio_text
from analysis.core.results import CONDITION, EXEC, Results, network, records, spec_label
from analysis.core.units import size_text
from analysis.sections import link
from analysis.sections.base import Section
from analysis.stats import paired
from analysis.stats.link import SERVER_BUSY
from analysis.stats.remote import (PAIRED, comparisons, not_run, ranges_points, server_of,
                                   server_program, shown, summarize, through_s3fs)

TITLE = "Remote"
FIGURE = "remote-ranges"


# --- which runs are remote, and how they read ------------------------------------------------


# --- the figures of each group ---------------------------------------------------------------


# --- the figure --------------------------------------------------------------------------------


def plot_ranges(results: Results, figs) -> None:
    """`remote-ranges`: for http_ranges, the median GB/s against the number of ranged requests
    in flight (concurrency, log 2), one line per chunk size (and link or fabric), cold and warm
    side by side. A line that rises with concurrency was waiting on each request's round trip;
    one that is flat was held by something else (the server's CPU, the client's copy, the
    link). Drawn for the cache states with two concurrency values or more; none when no state
    has them."""
    points = ranges_points(results)
    caches = [c for c in ("cold", "warm")
              if points.loc[points["cache"] == c, "concurrency"].nunique() >= 2]
    if not caches:
        return
    files = points["file"].nunique()
    fig, axes = plt.subplots(1, len(caches), figsize=(6 * len(caches), 4.5), squeeze=False,
                             sharey=True)
    for ax, cache in zip(axes[0], caches):
        t = points[points["cache"] == cache]
        for (chunk, file, *_), g in t.groupby(["chunk", "file", "link", "fabric"], sort=True):
            g = g.sort_values("concurrency")
            where = f" [{os.path.basename(file)}]" if files > 1 else ""
            name = f"chunk {size_text(chunk)}" + where + network(g.iloc[0], ", ")
            ax.plot(g["concurrency"], g["gb_per_s"], marker="o", label=name)
        ax.set_xscale("log", base=2)
        ticks = sorted(t["concurrency"].unique())
        ax.set_xticks(ticks, [f"{v:g}" for v in ticks])
        ax.set_xlabel("concurrency: ranged requests in flight (log)")
        ax.set_title(f"{cache} cache")
        ax.legend(fontsize=8)
    axes[0][0].set_ylim(0, 1.1 * points["gb_per_s"].max())  # shared: from 0 in every panel
    axes[0][0].set_ylabel("throughput, file bytes / median time (GB/s)")
    figs.save(fig, FIGURE, "http_ranges: median throughput against the number of ranged "
                           "requests in flight, one line per chunk size, per cache state. "
                           "Rising: the requests' round trips held it; flat: something else "
                           "(the server's CPU, the client's copy).")


# --- the report's section ----------------------------------------------------------------------

INTRO = ("Models read through the experiment's server ({server}) instead of from the file: "
         "per condition the best local strategy (the fastest by median time that is neither "
         "remote nor a command; its row comes first), then every remote design and every peer "
         "(a command reading through the server). × best local's time: over the rounds both "
         "ran in, the row's time over the best local strategy's (below 1: faster), the "
         "Hodges–Lehmann estimate with the 95% interval of the signed-rank test, as every "
         "paired figure of this report; *faster* / *slower*: the interval leaves out 1; "
         "*n.s.*: it holds 1; "
         "*too few rounds*: under 6 pairs, where the estimate shows with `(–)`. GB/s: file "
         "bytes over the median time. Client CPU: the reader's user + system time (a "
         "command's: its process tree's), per GB (10^9 bytes) of the file; server CPU: the "
         "server's processes' over the run, per GB, counted in clock ticks, so short runs "
         "show it coarsely. Requests, connections, first byte and latency p50 / p99 (each "
         "run's percentiles over its requests) are the medians of the runs' own counts; "
         "over-read: bytes received over bytes requested, less 1. Empty: no run recorded it "
         "(a command's or the s3fs mount's requests are not seen by loadbench).")
HEAD = ["design", "how it reads", "n", "median s", "GB/s", "client CPU s/GB", "server CPU s/GB",
        "requests", "connections", "over-read", "first byte ms", "latency p50 / p99 ms",
        "× best local's time, paired (95% CI)", "paired test"]


def _f(v, fmt: str, scale: float = 1.0) -> str:
    return "" if v is None or pd.isna(v) else f"{v * scale:{fmt}}"


def _ratio_cell(r: pd.Series) -> str:
    return "1 (best local)" if r["is_local"] else paired_cell(r)


def _cells(r: pd.Series) -> list[str]:
    latency = "" if pd.isna(r["latency_p50_s"]) else \
        f"{r['latency_p50_s'] * 1e3:.1f} / {_f(r['latency_p99_s'], '.1f', 1e3)}"
    name = r["label"] + (" (best local)" if r["is_local"] else "")
    return [name, r["how"], str(r["n"]), f"{r['median_s']:.3f}", _f(r["gb_per_s"], ".2f"),
            _f(r["client_cpu_s_per_gb"], ".2f"), _f(r["server_cpu_s_per_gb"], ".2f"),
            _f(r["requests"], ".0f"), _f(r["connections"], ".0f"), _f(r["over_read"], ".1%"),
            _f(r["first_byte_s"], ".2f", 1e3), latency, _ratio_cell(r),
            "" if r["is_local"] or not r["best_local"] else r["verdict"]]


def condition_md(rows: pd.DataFrame, files: int) -> str:
    """One condition's table: the best local strategy's row, then the remote ones."""
    first = rows.iloc[0]
    head = f"**{condition(first, files)}**" + (
        f": against {first['best_local']}, the best local strategy here (median "
        f"{first['best_local_median_s']:.3f} s)." if first["best_local"] else
        ": no local strategy ran here, so nothing to pair with.")
    lines = ["| " + " | ".join(HEAD) + " |", "|" + "---|" * len(HEAD)]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in _cells(r)) + " |"
              for _, r in rows.iterrows()]
    return head + "\n\n" + "\n".join(lines)


def _against(p, base: str) -> str:
    """A paired ratio (PAIRED's figures) against `base`, in words, as the verdict gives one."""
    if not p["pairs"]:
        return str(p["verdict"])
    n = int(p["pairs"])
    rounds = f"{n} round" + ("" if n == 1 else "s")
    if not p["bounded"]:
        return (f"{ratio_text(p['ratio'])} the time of {base} ({rounds}: too few for a 95% "
                "interval, which needs 6)")
    sure = "a sure difference" if p["significant"] else f"not distinguishable in {rounds}"
    return (f"{ratio_text(p['ratio'], p['ratio_low'], p['ratio_high'])} the time of {base} "
            f"({paired.coverage_text(n)} interval, {rounds}): {sure}")


def _prefixed(entry: pd.Series, prefix: str) -> dict:
    return {c: entry[f"{prefix}_{c}"] for c in PAIRED}


def best_md(results: Results, rows: pd.DataFrame, files: int) -> str:
    """Per condition, one sentence: the fastest remote design against the best local
    strategy, and the fastest peer against that design."""
    lines = []
    medians = {(r["label"], tuple(r[CONDITION])): r["median_s"] for _, r in rows.iterrows()}
    gone = not_run(results)
    failed_peers = {tuple(k) for k in gone.loc[gone["strategy"] == EXEC, CONDITION].itertuples(
        index=False)} if not gone.empty else set()
    for _, c in comparisons(results, rows).iterrows():
        cond = tuple(c[CONDITION])
        text = f"- {condition(c, files)}: "
        if c["best_remote"] is None:
            text += "no loadbench remote design has an ok run"
        else:
            text += (f"the fastest remote design, {c['best_remote']} ({c['best_remote_how']}; "
                     f"median {medians[(c['best_remote'], cond)]:.3f} s), "
                     + ("took " + _against(_prefixed(c, "remote"), f"{c['best_local']}, the "
                                                                   "best local strategy")
                        if c["best_local"] else "with no local strategy here to compare"))
        if c["best_peer"] is not None and c["best_remote"] is not None:
            text += (f"; the fastest peer, {c['best_peer']} (median "
                     f"{medians[(c['best_peer'], cond)]:.3f} s), took "
                     + _against(_prefixed(c, "peer"), c["best_remote"]))
        elif c["best_peer"] is None and cond in failed_peers:
            text += "; no peer reading through the server has an ok run (below)"
        lines.append(text + ".")
    return "\n".join(lines)


def server_md(rows: pd.DataFrame, env: dict, files: int) -> str:
    """Where the server was busy more than SERVER_BUSY s of CPU per second of the run: it may
    have been the limit; else the most it was busy."""
    remote = rows[~rows["is_local"] & rows["server_busy"].notna()]
    if remote.empty:
        return ""
    server = server_of(env)
    workers = (server.get("config") or {}).get("worker_processes") \
        if isinstance(server.get("config"), dict) else None
    who = server_program(server) or "the server"
    who += f", with {workers} worker process{'' if workers == 1 else 'es'}" if workers else ""
    busy = remote[remote["server_limited"]]
    if busy.empty:
        top = remote.loc[remote["server_busy"].idxmax()]
        return (f"The server ({who}) was busy at most {top['server_busy']:.2f} s of CPU per "
                f"second of a run ({top['label']}, {condition(top, files)}), under the "
                f"{SERVER_BUSY} that would make its CPU the likely limit.")
    lines = [f"- {r['label']}, {condition(r, files)}: the server used {r['server_cpu_s']:.2f} s "
             f"of CPU in a median {r['median_s']:.3f} s ({r['server_busy']:.2f} s per second), "
             f"the client {_f(r['client_cpu_s'], '.2f')} s ({_f(r['client_busy'], '.2f')} s per "
             "second)" for _, r in busy.iterrows()]
    return (f"**The server's CPU may be the limit** where it was busy more than {SERVER_BUSY} s "
            f"of CPU per second of the run, about one core of {who} (medians over the runs; "
            "server_cpu_s counts from the end of the run's cache preparation, so a warm "
            "start's read through the server is not in it):\n\n" + "\n".join(lines))


S3FS_NOTE = ("Through the s3fs mount the HTTP requests are s3fs's own, not the reader's: its "
             "rows have no requests, connections, over-read or latencies. The s3fs process's "
             "CPU time (mount_cpu_s) is in the client's column: it works for the reader.")


def s3fs_md(results: Results, rows: pd.DataFrame, files: int) -> str:
    """mmap against fread through the s3fs mount, paired, and what the mount hides."""
    if not (rows["transport"] == "s3fs").any():
        return ""
    lines = [f"- {condition(p, files)}: {p['mmap']} (median {p['mmap_median_s']:.3f} s) took "
             + _against(p, f"{p['fread']} (median {p['fread_median_s']:.3f} s)") + "."
             for _, p in through_s3fs(results, rows).iterrows()]
    head = "**mmap against fread through the s3fs mount:**\n\n" + "\n".join(lines) + "\n\n" \
        if lines else ""
    return head + S3FS_NOTE


def residency_md(rows: pd.DataFrame, files: int) -> str:
    """The remote groups whose server files were not in the state their cache says."""
    odd = rows[~rows["is_local"] & rows["server_resident_before"].notna()
               & (((rows["cache"] == "cold") & (rows["server_resident_before"] > 0.01))
                  | ((rows["cache"] == "warm") & (rows["server_resident_before"] < 0.99)))]
    lines = [f"- {r['label']}, {condition(r, files)}: {r['server_resident_before']:.0%} of the "
             "server's copy in its page cache before the run (median)" for _, r in odd.iterrows()]
    return ("**Not the cache state the row says** (the server's files, server_resident_before):"
            "\n\n" + "\n".join(lines)) if lines else ""


def not_run_md(results: Results, files: int) -> str:
    table = not_run(results)
    if table.empty:
        return ""
    lines = [f"- {spec_label(x)}, {condition(x, files)}: {x['status']} ({x['count']} "
             f"run{'' if x['count'] == 1 else 's'}): {'; '.join(x['errors'])[:300]}"
             for _, x in table.iterrows()]
    return ("Remote runs that failed or could not run (in no figure above):\n\n"
            + "\n".join(lines))


def section_md(results: Results, table: pd.DataFrame | None = None, figs=None) -> str:
    """The section: per condition the best local strategy and the remote rows, the best remote
    design and peer, the server, s3fs, residency, the remote runs that did not run; on a link,
    analysis/stats/link.py's part (its figures drawn and shown where `figs`, report.Figures, is
    given)."""
    files = max(results.runs["file"].nunique(), 1)
    rows = summarize(results, table)
    server = server_of(results.env)
    intro = INTRO.format(server=", ".join(f"{k} {server[k]}" for k in ("kind", "program",
                                                                         "version", "endpoint")
                                          if server.get(k)) or "not in env.json")
    parts = [" ".join(p for p in (intro, paired.levels_note(rows["pairs"])) if p)]
    if rows.empty:
        parts.append("No remote run is ok.")
    for _, g in rows.groupby(CONDITION, sort=False):
        parts.append(condition_md(g, files))
    if not rows.empty:
        parts += [best_md(results, rows, files), server_md(rows, results.env, files),
                  s3fs_md(results, rows, files), residency_md(rows, files),
                  link.section_md(results, rows, figs)]
    parts.append(not_run_md(results, files))
    return "\n\n".join(p for p in parts if p)


def summary(results: Results, table: pd.DataFrame | None = None) -> dict:
    """summary.json's figures: `remote`, the rows of the section's tables; `remote_best`, per
    condition the fastest remote design against the best local strategy and the fastest peer
    against it; `remote_s3fs`, mmap against fread through the s3fs mount; `remote_not_run`,
    the remote runs that do not count, with why; on a link, analysis/stats/link.py's
    `link_throughput`, `link_reach` and `link_herds`."""
    rows = summarize(results, table)
    empty = pd.DataFrame()
    return {"remote": records(rows),
            "remote_best": records(comparisons(results, rows) if not rows.empty else empty),
            "remote_s3fs": records(through_s3fs(results, rows) if not rows.empty else empty),
            "remote_not_run": records(not_run(results)),
            **(link.summary(results, rows) if not rows.empty else {})}


class Remote(Section):
    title = TITLE

    def shown(self) -> bool:
        return shown(self.ctx.results)

    def figures(self) -> None:
        plot_ranges(self.ctx.results, self.ctx.figs)

    def markdown(self) -> str:
        c = self.ctx
        md = section_md(c.results, c.table, c.figs)
        return "\n\n".join(p for p in (md, c.figs.md(FIGURE)) if p)

    def summary(self) -> dict:
        return summary(self.ctx.results, self.ctx.table)
