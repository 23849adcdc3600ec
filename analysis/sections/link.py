"""The *Remote* section's part on a shaped link (analysis/stats/link.py works out every
figure, and its docstring says how): the link's facts, each design's GB/s against the link's
and the server's ceilings, the concurrency that reaches the link, the herds of readers, the
figures `link-throughput` and `link-herds`, and summary.json's `link_throughput`, `link_reach`,
`link_herds`."""

from __future__ import annotations

import math
import os

import matplotlib.pyplot as plt
from matplotlib.transforms import offset_copy
import numpy as np
import pandas as pd

from analysis.core.labels import condition
from analysis.core.results import REPLICATED, Results, records, spec_label
from analysis.core.units import size_text
from analysis.stats import readers
from analysis.stats.link import (CLIENT_BUSY, Ceilings, NEAR, NO_LINK, NO_SERVER, SERVER_BUSY,
                                 order, shown, tables)

FIGURE = "link-throughput"
HERDS_FIGURE = "link-herds"


# --- the ceilings ------------------------------------------------------------------------------


# --- 1. throughput against the link ------------------------------------------------------------


# --- 2. the concurrency that reaches the link --------------------------------------------------


# --- 3. herds ----------------------------------------------------------------------------------


# --- the figures -------------------------------------------------------------------------------

def _panels(frame: pd.DataFrame, results: Results) -> list[tuple[str, str]]:
    """The (link, cache state) pairs of `frame`, links in their order, cold first."""
    links = sorted(set(frame["link"]), key=lambda k: order(results).get(k, math.inf))
    return [(k, c) for k in links for c in ("cold", "warm")
            if ((frame["link"] == k) & (frame["cache"] == c)).any()]


def name(row, files: int) -> str:
    """A row of `throughput` in words: its label (best local marked) and its condition."""
    best = " (best local)" if bool(row.get("is_local", False)) else ""
    return condition(row, files, str(row["label"]) + best)


def _server_marks(ax, fraction: pd.Series, y: np.ndarray, right: float) -> None:
    """Diamonds at the server's ceiling over the link's; beyond the axis, an arrow at its edge
    with the figure."""
    inside = fraction <= right
    ax.scatter(fraction[inside], y[inside.to_numpy()], marker="D", color="#dd8452", zorder=3,
               label="server ceiling / link ceiling")
    for value, at in zip(fraction[~inside & fraction.notna()], y[(~inside).to_numpy()]):
        ax.scatter([right * 0.97], [at], marker=">", color="#dd8452", zorder=3)
        ax.annotate(f"server {value:.1f}×", (right * 0.95, at), ha="right", va="center",
                    fontsize=7, color="#dd8452")


def plot_throughput(results: Results, through: pd.DataFrame, figs) -> None:
    """`link-throughput` (the module's docstring, 1.); none without a remote row that has a
    fraction of the link."""
    t = through[~through["is_local"].astype(bool) & through["of_link"].notna()]
    if t.empty:
        return
    files = t["file"].nunique()
    panels = _panels(t, results)
    bars = [int(((t["link"] == k) & (t["cache"] == c)).sum()) for k, c in panels]
    fig, axes = plt.subplots(len(panels), 1, squeeze=False, gridspec_kw={"height_ratios": bars},
                             figsize=(8.5, 0.38 * sum(bars) + 1.3 * len(panels) + 0.8))
    for ax, (link, cache) in zip(axes[:, 0], panels):
        p = t[(t["link"] == link) & (t["cache"] == cache)].iloc[::-1]
        y = np.arange(len(p))
        ax.barh(y, p["of_link"], color="#4c72b0", label="median over rounds")
        b = p["low_link"].notna().to_numpy()
        ax.errorbar(p["of_link"][b], y[b], fmt="none", color="black", capsize=3,
                    xerr=[(p["of_link"] - p["low_link"])[b], (p["high_link"] - p["of_link"])[b]])
        right = 1.1 * max(1.2, np.nanmax(p[["of_link", "high_link"]].to_numpy(dtype=float)))
        _server_marks(ax, p["server_gb_per_s"] / p["link_gb_per_s"], y, right)
        ax.axvline(1.0, color="black", linestyle="--", linewidth=1, label="the link's ceiling")
        ax.set_xlim(0, right)
        ax.set_yticks(y, [name(r, files) for _, r in p.iterrows()], fontsize=8)
        ax.set_title(f"link {link}, {cache} cache", fontsize=10)
        ax.set_xlabel("share of the link's ceiling: throughput / iperf3's in the same round "
                      "(1: at the limit)")
    last = axes[-1, 0]  # the legend under the last panel's axis label
    last.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, 0), ncol=3,
                bbox_transform=offset_copy(last.transAxes, fig=fig, y=-34, units="points"))
    figs.save(fig, FIGURE, "Each remote design's throughput as a fraction of the link's own "
                           "ceiling (iperf3 over the same link in the same round), the median "
                           "over rounds with its 95% interval, per link and cache state; "
                           "dashed: the link's ceiling; diamond: the server's ceiling (the "
                           "model fetched with the link unshaped) over the link's.")


def _herd_lines(ax, p: pd.DataFrame, dots: pd.DataFrame, files: int) -> None:
    """One panel of `link-herds`: per design and pattern the median round's GB/s by readers,
    every complete round as a circle, every reader as a dot."""
    done = p[p["duration_s"].notna()].assign(gb=lambda f: f["gb_per_s"].astype(float))
    for j, ((spec, file), g) in enumerate(done.groupby(["strategy_spec", "file"], sort=False)):
        single = g[g["procs"] == 1]
        for pattern, h in g[g["procs"] > 1].groupby("pattern", sort=False):
            both = pd.concat([single, h])
            line = both.groupby("procs")["gb"].median()
            label = spec + (f" {pattern}" if pattern != REPLICATED else "") + \
                (f" [{os.path.basename(str(file))}]" if files > 1 else "")
            drawn, = ax.plot(line.index, line.to_numpy(), marker="o", label=label)
            ax.scatter(both["procs"], both["gb"], s=18, facecolors="none",
                       edgecolors=drawn.get_color())
            d = dots[(dots["strategy_spec"] == spec) & (dots["file"] == file)
                     & (dots["pattern"] == pattern)]
            ax.scatter(d["procs"] * (1 + 0.04 * (j + 1)), d["gb"], s=6, alpha=0.5,
                       color=drawn.get_color())


def plot_herds(results: Results, rounds: pd.DataFrame, figs) -> None:
    """`link-herds` (the module's docstring, 3.); none without a herd on a link."""
    if rounds.empty or not (rounds["procs"] > 1).any():
        return
    r = readers.readers(results.runs)
    r = r[r["counted"] & (r["procs"] > 1)]
    dots = r.assign(gb=r["tensor_bytes"] / r["wall_s"] / 1e9)
    panels = _panels(rounds, results)
    fig, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), 4.4), squeeze=False)
    files = rounds["file"].nunique()
    for ax, (link, cache) in zip(axes[0], panels):
        p = rounds[(rounds["link"] == link) & (rounds["cache"] == cache)]
        _herd_lines(ax, p, dots[(dots["link"] == link) & (dots["cache"] == cache)], files)
        ceiling = p.groupby("procs")["link_gb"].median().dropna()
        if len(ceiling):
            ax.plot(ceiling.index, ceiling.to_numpy(), color="grey", linestyle="--",
                    marker="_", label="the link's ceiling (iperf3)")
        readers.readers_axis(ax, sorted(set(p["procs"])))
        ax.set_ylabel("GB/s: all readers' bytes / round (circles), one reader's (dots)")
        ax.set_title(f"link {link}, {cache} cache", fontsize=10)
        ax.legend(fontsize=7)
    figs.save(fig, HERDS_FIGURE, "Herds on the link: per link and cache state, the throughput "
                                 "of a round (every reader's bytes from the first start to the "
                                 "last end; line: the median round, circles: each round) and "
                                 "each reader's own GB/s (dots), against the number of "
                                 "readers; dashed grey: the link's ceiling measured in the same "
                                 "rounds.")


# --- the section -------------------------------------------------------------------------------

def env_md(env: dict) -> str:
    """env.json's `link` as a line of facts: rates, ends and MTU, round trip, delay."""
    link = env.get("link") or {}
    if not link:
        return ""
    parts = [f"rates {', '.join(link['rates'])}"] if link.get("rates") else []
    for side in ("client", "server"):
        end = link.get(side) or {}
        if end:
            mtu = end.get("mtu")
            parts.append(f"{side} {end.get('dev', '?')} {end.get('address', '')}".rstrip()
                         + (f", MTU {mtu:g}" if mtu is not None else ", MTU unknown"))
    if link.get("netns"):
        parts.append(f"server in network namespace {link['netns']}")
    rtt = link.get("rtt_ms") or {}
    if rtt.get("median") is not None:
        parts.append(f"round trip {rtt['median']:.3g} ms median ({rtt.get('min', math.nan):.3g}"
                     f"–{rtt.get('max', math.nan):.3g})")
    delay = link.get("delay") or {}
    if not delay.get("asked"):
        parts.append("no delay added")
    elif delay.get("applied"):
        parts.append(f"delay {delay['asked']} added")
    else:
        parts.append(f"delay {delay['asked']} asked, not applied: {delay.get('why') or '?'}")
    return "**The link**: " + "; ".join(parts) + "."


INTRO = ("**Against the link's own ceiling.** Per link and cache state, each design's throughput "
         "(GB/s: file bytes over the median time; with several readers, the median round's, "
         "every reader's bytes from the first start to the last end) set against the link's "
         "ceiling (iperf3 over the same link in the same round) and the server's (the model "
         "fetched from the server with the link's shaping lifted, in the same round). Of link, "
         "of server: per round the run's GB/s over that round's ceiling, the median over the "
         "rounds with the 95% interval of the median, a share of the limit (higher is nearer "
         "it; 1: at it) (`(–)`: under 6 rounds; *unpaired*: no round had both, so the GB/s "
         "over the condition's median ceiling). CPU s/s: CPU "
         f"seconds per second of the run (client: the reader's, plus the s3fs mount's). Limited "
         f"by: *link* at {NEAR:.0%} of the link's ceiling or more, else *server* at {NEAR:.0%} "
         f"of the server's or with its CPU busy {SERVER_BUSY} s/s or more, else *client "
         f"CPU* at {CLIENT_BUSY} s/s or more, else *design*: the way it reads held it back.")
THROUGHPUT_HEAD = ["design", "readers", "GB/s", "link GB/s", "of link (95% CI)", "server GB/s",
                   "of server (95% CI)", "client CPU s/s", "server CPU s/s", "limited by"]


def _f(v, fmt: str = ".3g") -> str:
    return "" if v is None or pd.isna(v) else f"{v:{fmt}}"


def share_cell(r, kind: str, none: str) -> str:
    """A fraction of a ceiling with its interval, `(–)` without one, `unpaired` from the
    condition's ceiling; `none` without a ceiling."""
    of = r[f"of_{kind}"]
    if pd.isna(of):
        return none
    if not r[f"rounds_{kind}"]:
        return f"{of:.2f} (unpaired)"
    if pd.isna(r[f"low_{kind}"]):
        return f"{of:.2f} (–)"
    return f"{of:.2f} ({r[f'low_{kind}']:.2f}–{r[f'high_{kind}']:.2f})"


def _table(head: list[str], lines: list[list[str]]) -> str:
    return "\n".join(["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
                     + ["| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"
                        for cells in lines])


def _readers(r) -> str:
    return str(int(r["procs"])) + (f" {r['pattern']}" if r["pattern"] != REPLICATED else "")


def through_md(results: Results, key: tuple, g: pd.DataFrame, files: int) -> str:
    """One link and cache state's table (THROUGHPUT_HEAD)."""
    link, cache, file, limit = key
    head = f"**link {link}, {cache}**" + (f" [{os.path.basename(str(file))}]" if files > 1
                                          else "")
    head += f" ≤{size_text(limit)}" if limit > 0 else ""
    if g["link_gb_per_s"].isna().all():
        why = Ceilings(results.link_ceiling).why_none(link, cache, file)
        head += f": {NO_LINK}" + (f" ({why})" if why else " recorded")
    local = "— (local)"
    lines = [[str(r["label"]) + (" (best local)" if r["is_local"] else ""), _readers(r),
              _f(r["gb_per_s"]), _f(r["link_gb_per_s"]) or NO_LINK,
              local if r["is_local"] else share_cell(r, "link", NO_LINK),
              _f(r["server_gb_per_s"]) or NO_SERVER,
              local if r["is_local"] else share_cell(r, "server", NO_SERVER),
              _f(r["client_busy"], ".2f"),
              _f(r["server_busy"], ".2f"), r["limited_by"]] for _, r in g.iterrows()]
    return head + "\n\n" + _table(THROUGHPUT_HEAD, lines)


def reach_md(table: pd.DataFrame, files: int) -> str:
    """The concurrency that reaches NEAR of the link, per design swept over concurrency."""
    if table.empty:
        return ""
    lines = [[r["design"] + (f" [{os.path.basename(str(r['file']))}]" if files > 1 else ""),
              r["link"], r["cache"], _readers(r), r["concurrencies"], r["text"]]
             for _, r in table.iterrows()]
    return (f"**The concurrency that reaches {NEAR:.0%} of the link**: per design swept over "
            f"`concurrency=N` (the rest of its spec the same), the lowest N whose share of the "
            f"link is {NEAR} or more; else the best share and its N.\n\n"
            + _table(["design", "link", "cache", "readers", "concurrency tried",
                      f"{NEAR:.0%} of the link at"], lines))


HERDS_HEAD = ["design", "link", "cache", "readers", "rounds", "GB/s, all readers", "link GB/s",
              "of link (95% CI)", "spread: slowest / median reader's time", "server CPU s",
              "on the wire / loaded"]


def herds_md(table: pd.DataFrame, files: int) -> str:
    """The herds' table (HERDS_HEAD), each design's single reader as its reference row."""
    if table.empty or not (table["procs"] > 1).any():
        return ""
    lines = []
    for _, r in table.iterrows():
        complete = r["complete"]
        rounds = str(r["rounds"]) + (f" ({r['rounds'] - complete} failed)"
                                     if complete < r["rounds"] else "")
        where = f" [{os.path.basename(str(r['file']))}]" if files > 1 else ""
        limit = r["memory_limit_bytes"]
        lines.append([spec_label(r) + (f" ≤{size_text(limit)}" if limit > 0 else "") + where,
                      r["link"], r["cache"], _readers(r), rounds, _f(r["gb_per_s"]),
                      _f(r["link_gb_per_s"]) or NO_LINK, share_cell(r, "link", NO_LINK),
                      _f(r["spread"], ".2f"), _f(r["server_cpu_s"], ".2f"),
                      _f(r["wire_over_loaded"], ".3f")])
    return ("**Herds on the link**: several readers of one design at once, a round counted as "
            "in *Many readers* (from the first reader's start to the last one's end; a round "
            "with a reader that does not count has no figures), its single reader as the "
            "reference row. GB/s, all readers: every reader's tensor bytes over the round's "
            "time, the median round; of link: each round's over that round's link ceiling "
            "(iperf3 with as many streams as the readers keep requests in flight), higher is "
            "nearer the limit; spread: the "
            "slowest reader's time over the median reader's; server CPU s: the server's CPU "
            "seconds in the round; on the wire / loaded: the bytes the client's end of the "
            "link received in the round (frames, headers included) over the bytes the readers "
            "loaded. Medians over the complete rounds.\n\n" + _table(HERDS_HEAD, lines))


def section_md(results: Results, rows: pd.DataFrame, figs=None) -> str:
    """The Remote section's part on the link, from remote.summarize's `rows`; the figures drawn
    and shown where `figs` (report.Figures) is given. "" without a link."""
    if not shown(results):
        return ""
    t = tables(results, rows)
    files = max(results.runs["file"].nunique(), 1)
    parts = [env_md(results.env), INTRO]
    if t["through"].empty:
        parts.append("No ok run on the link.")
    for key, g in t["through"].groupby(["link", "cache", "file", "memory_limit_bytes"],
                                       sort=False):
        parts.append(through_md(results, key, g, files))
    if figs is not None:
        plot_throughput(results, t["through"], figs)
        plot_herds(results, t["herd_rounds"], figs)
    parts += [figs.md(FIGURE) if figs is not None else "", reach_md(t["reach"], files),
              herds_md(t["herds"], files), figs.md(HERDS_FIGURE) if figs is not None else ""]
    return "\n\n".join(p for p in parts if p)


def summary(results: Results, rows: pd.DataFrame) -> dict:
    """summary.json's `link_throughput`, `link_reach` and `link_herds`: the tables of the
    section's three parts; {} without a link."""
    if not shown(results):
        return {}
    t = tables(results, rows)
    return {"link_throughput": records(t["through"]), "link_reach": records(t["reach"]),
            "link_herds": records(t["herds"])}
