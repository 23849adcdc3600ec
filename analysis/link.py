"""The link: models read through the experiment's server over a shaped network link (the
experiment's `[link] rate = [...]`: a veth pair into a network namespace, shaped with tc TBF),
each design set against the link's own limit and the server's. Part of the report's *Remote*
section (analysis/remote.py calls it), shown only where records carry `link`. It imports
nothing of remote.py: it is given remote.summarize's rows, and it holds SERVER_BUSY, the server's
CPU per second of the run at which the server may be the limit, which remote.py uses too.

The records. Every record of such an experiment names its link condition (`link`: "1gbit",
"unshaped", as the experiment wrote it); results.load makes it part of GROUP and CONDITION, so
that no group, median or paired ratio mixes two links. In every round of every condition the
harness measures two ceilings beside the strategies, which results.load keeps apart as it keeps
the disk's `ceiling` (never a strategy, in no other table): `link_ceiling`, iperf3 over the link
as the round shapes it (gb_per_s: the payload received over its seconds; GB = 10^9 bytes), and
`server_ceiling`, the model's objects fetched from the server into reused buffers with the
link's shaping lifted (the server's own limit). Only ok ceiling records with a gb_per_s count.

Which ceiling a run is set against: its round's, the ok ceiling records of the same condition
(file, cache, procs, pattern, memory limit, link) and rep (their median, were there several);
where the condition has none in that rep (records written without procs or pattern), those of
the same file, cache, link and rep. A condition's own ceiling (the tables' `link GB/s` and
`server GB/s`): the median of its ok ceiling records, by condition, else by file, cache and
link.

1. Throughput against the link (`throughput`; a table per link and cache state, the figure
   `link-throughput`). The groups are analysis/remote.py's rows: each remote design and each
   peer (an exec command reading through the server), and each condition's best local strategy
   for reference (GB/s and CPU only: its bytes never crossed the link, so it has no fraction
   of either ceiling). GB/s: one reader's, file bytes over the median wall time (remote.py's);
   several readers', the median over complete rounds of the round's throughput as
   analysis/readers.py counts it (every reader's tensor bytes over the time from the first
   reader's start to the last reader's end). Of link: per round, the round's GB/s (one reader:
   the run's file bytes over its wall time; several: readers.py's) over that round's link
   ceiling; the median over the rounds, with the exact distribution-free 95% interval of the
   median (stats.median_interval, none under 6 rounds): a share of the limit, higher is nearer
   it (1: at it). With no round paired, the GB/s over the condition's link ceiling, without
   interval ("unpaired"); with no link ceiling at all, none: "no link ceiling". Of server: the
   same against the server ceiling. Limited by, the first that holds: "link" where of link ≥
   0.9; "server" where of server ≥ 0.9, or where the server's CPU seconds per second of the run
   (remote.py's server_busy, the median over the runs) ≥ SERVER_BUSY (0.8); "client CPU"
   where the client's CPU seconds per second of the run ((user_s + sys_s, plus the s3fs
   mount's mount_cpu_s) / wall_s: remote.py's client_busy) ≥ 0.9; else "design" (none of them
   held it back: the way it reads did), or "unknown: no link ceiling" where there is no link
   ceiling to tell. The figure: per link and cache state, a bar per remote design of its share
   of the link with its 95% interval, a line at 1 (the link's ceiling) and a diamond at the
   server's ceiling over the link's (where the server would stop it).
2. The concurrency that reaches the link (`reach`): remote designs whose spec has a
   `concurrency=N` option, grouped by the rest of the spec (`http_ranges:chunk=16MiB:
   concurrency=N`) and by condition, where two values of N or more ran: the lowest N whose
   share of the link (1.) is ≥ 0.9; else "not reached (best: X at N)", the highest share and
   its N (the lowest N of a tie); "no link ceiling" where no N has one.
3. Herds (`herds`; the table and the figure `link-herds`): rounds of several readers of a
   remote design on a link, counted as analysis/readers.py counts them (a round with a reader
   that does not count has no figures), with the same design's single-reader rounds as the
   reference row. Per (link, cache, design, readers, pattern): the rounds (complete ones);
   GB/s, all readers: the median round throughput (for one reader: its tensor bytes over its
   wall time); of link: each round's throughput over its round's link ceiling, median and
   interval as in 1.; spread: the slowest reader's wall time over the median reader's, the
   median over rounds; server CPU s: the server's CPU seconds in the round (server_cpu_s, the
   same on each reader's record), median; on the wire / loaded: the bytes the client's end of
   the link received in the round (link_rx_bytes, the same on each reader's record: Ethernet
   frames, headers included) over the bytes the readers loaded (their tensor bytes summed),
   median over rounds: above 1, headers, retransmissions and bytes fetched twice. The figure:
   per link and cache state, GB/s against the number of readers, one line per design and
   pattern through the median round, every complete round's throughput as a circle, every ok
   reader's own GB/s (its tensor bytes over its wall time) as a dot, and the median link
   ceiling of each number of readers (iperf3 runs more streams for more readers) as a grey
   line.
"""

from __future__ import annotations

import math
import os

import matplotlib.pyplot as plt
from matplotlib.transforms import offset_copy
import numpy as np
import pandas as pd

from analysis import readers, stats
from analysis.noise import records
from analysis.results import CONDITION, GROUP, REPLICATED, Results, spec_label

NEAR = 0.9  # the share of a ceiling at which it is the limit
CLIENT_BUSY = 0.9  # client CPU seconds per second of the run at which its CPU is the limit
# Server CPU seconds per second of the run's wall time above which the server may be the
# limit: most of one core busy serving. Kept here, below remote.py, whose own server figures
# (server_limited, the server's paragraph) take it from this module, which needs nothing of it.
SERVER_BUSY = 0.8
FIGURE = "link-throughput"
HERDS_FIGURE = "link-herds"
ROUND = CONDITION + ["rep"]
LOOSE = ["file", "cache", "link"]
NO_LINK = "no link ceiling"
NO_SERVER = "no server ceiling"
SHARE = ["of", "low", "high", "rounds"]


def shown(results: Results) -> bool:
    """Whether some record names a link."""
    return bool((results.runs["link"] != "").any()) if "link" in results.runs else False


def order(results: Results) -> dict[str, int]:
    """link -> its place: env.json's link.rates in order, then the records' in file order."""
    rates = (results.env.get("link") or {}).get("rates") or []
    return {k: i for i, k in enumerate(dict.fromkeys(list(rates) + list(results.runs["link"])))}


# --- the ceilings ------------------------------------------------------------------------------

class Ceilings:
    """The ok records of one ceiling (results.link_ceiling or server_ceiling), looked up per
    round and per condition: by the condition first, else by file, cache and link."""

    def __init__(self, frame: pd.DataFrame):
        self.frame = frame
        if frame.empty or "gb_per_s" not in frame:
            self.ok = pd.DataFrame(columns=ROUND + ["gb_per_s"])
            return
        ok = frame[frame["status"] == "ok"]
        self.ok = ok.assign(gb_per_s=pd.to_numeric(ok["gb_per_s"], errors="coerce"),
                            rep=pd.to_numeric(ok["rep"], errors="coerce")
                            ).dropna(subset=["gb_per_s"])[ROUND + ["gb_per_s"]]

    def _lookup(self, values: pd.DataFrame, exact: list[str], loose: list[str]) -> pd.Series:
        out = pd.Series(np.nan, index=values.index, dtype=float)
        if self.ok.empty or values.empty:
            return out
        keyed = values.assign(rep=pd.to_numeric(values["rep"], errors="coerce")) \
            if "rep" in values else values
        for keys in (exact, loose):
            median = self.ok.groupby(keys)["gb_per_s"].median()
            found = median.reindex(pd.MultiIndex.from_frame(keyed[keys])).to_numpy()
            out = out.fillna(pd.Series(found, index=values.index, dtype=float))
        return out

    def per_round(self, values: pd.DataFrame) -> pd.Series:
        """Per row of `values` (ROUND columns) its round's ceiling GB/s; NaN where none."""
        return self._lookup(values, ROUND, LOOSE + ["rep"])

    def per_condition(self, values: pd.DataFrame) -> pd.Series:
        """Per row of `values` (CONDITION columns) its condition's median ceiling GB/s."""
        return self._lookup(values, CONDITION, LOOSE)

    def why_none(self, link: str, cache: str, file: str) -> str:
        """Why a link, cache state and file has no ok ceiling: the others' statuses and first
        error; "" when some is ok or no record exists."""
        f = self.frame
        if f.empty:
            return ""
        mine = f[(f["link"] == link) & (f["cache"] == cache) & (f["file"] == file)]
        if mine.empty or (mine["status"] == "ok").any():
            return ""
        first = mine.iloc[0]
        return f"{len(mine)} {first['status']}: {str(first.get('error') or '')[:200]}"


def share(per_round: pd.Series, gb_per_s: float, ceiling: float) -> dict:
    """A fraction of a ceiling (SHARE): the median of the per-round fractions with the 95%
    interval of the median; without one, GB/s over the condition's ceiling, unpaired (rounds
    0); NaN without a ceiling."""
    x = pd.to_numeric(per_round, errors="coerce").dropna()
    if len(x):
        low, high = stats.median_interval(x)
        return {"of": float(x.median()), "low": low, "high": high, "rounds": len(x)}
    of = gb_per_s / ceiling if pd.notna(gb_per_s) and pd.notna(ceiling) else math.nan
    return {"of": of, "low": math.nan, "high": math.nan, "rounds": 0}


# --- 1. throughput against the link ------------------------------------------------------------

def round_values(results: Results, many: pd.DataFrame) -> pd.DataFrame:
    """Per round of each series on a link (readers.SERIES, rep): its GB/s, one reader's run's
    file bytes over its wall time, several readers' round throughput (`many`: readers.rounds'
    complete rounds)."""
    ok = results.ok[(results.ok["link"] != "") & (results.ok["procs"] == 1)]
    one = ok.assign(gb_per_s=pd.to_numeric(ok["file_bytes"], errors="coerce")
                    / ok["wall_s"].astype(float) / 1e9)
    several = many[(many["link"] != "") & (many["procs"] > 1) & many["gb_per_s"].notna()]
    columns = readers.SERIES + ["rep", "gb_per_s"]
    frames = [f[columns] for f in (one, several) if not f.empty]
    out = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)
    return out.assign(gb_per_s=out["gb_per_s"].astype(float))


def limited_by(row: dict) -> str:
    """What held a design back (the module's docstring, 1.)."""
    if row["is_local"]:
        return "— (local read, not over the link)"
    if row["of_link"] >= NEAR:
        return "link"
    if row["of_server"] >= NEAR or row["server_busy"] >= SERVER_BUSY:
        return "server"
    if row["client_busy"] >= CLIENT_BUSY:
        return "client CPU"
    return "unknown: " + NO_LINK if pd.isna(row["of_link"]) else "design"


THROUGHPUT = GROUP + ["strategy", "label", "how", "transport", "is_local", "n", "gb_per_s",
                      "link_gb_per_s"] + [f"{c}_link" for c in SHARE] + ["server_gb_per_s"] + \
    [f"{c}_server" for c in SHARE] + ["server_busy", "client_busy", "limited_by"]


def throughput(results: Results, rows: pd.DataFrame, many: pd.DataFrame) -> pd.DataFrame:
    """Per row of remote.summarize's table on a link: its GB/s, its fractions of the link's and
    the server's ceilings and what limited it (THROUGHPUT; `many`: readers.rounds')."""
    rows = rows[rows["link"] != ""].reset_index(drop=True)
    if rows.empty:
        return pd.DataFrame(columns=THROUGHPUT)
    values = round_values(results, many)
    link, server = Ceilings(results.link_ceiling), Ceilings(results.server_ceiling)
    values = values.assign(link_gb=link.per_round(values), server_gb=server.per_round(values))
    groups = {k: g for k, g in values.groupby(readers.SERIES, sort=False)}
    link_gb, server_gb = link.per_condition(rows), server.per_condition(rows)
    out = []
    for i, r in rows.iterrows():
        v = groups.get(tuple(r[c] for c in readers.SERIES), values.iloc[0:0])
        gb = r["gb_per_s"] if r["procs"] == 1 else stats.median_of(v["gb_per_s"])
        # A local read's bytes never crossed the link: no fraction of it, nor of the server.
        none = {"of": math.nan, "low": math.nan, "high": math.nan, "rounds": 0}
        on_link = share(v["gb_per_s"] / v["link_gb"], gb, link_gb[i]) if not r["is_local"] \
            else none
        on_server = share(v["gb_per_s"] / v["server_gb"], gb, server_gb[i]) \
            if not r["is_local"] else none
        row = {**{c: r[c] for c in GROUP + ["strategy", "label", "how", "transport", "is_local",
                                            "n", "server_busy", "client_busy"]},
               "gb_per_s": gb, "link_gb_per_s": link_gb[i], "server_gb_per_s": server_gb[i],
               **{f"{c}_link": x for c, x in on_link.items()},
               **{f"{c}_server": x for c, x in on_server.items()}}
        out.append({**row, "limited_by": limited_by(row)})
    return pd.DataFrame(out, columns=THROUGHPUT)


# --- 2. the concurrency that reaches the link --------------------------------------------------

def family(spec) -> tuple[str, int] | None:
    """(the spec with its concurrency as N, N) for a spec with one `concurrency=N` option;
    None for any other."""
    name, *options = str(spec).split(":")
    found = [o for o in options if o.startswith("concurrency=")]
    if len(found) != 1 or not found[0][len("concurrency="):].isdigit():
        return None
    rest = ["concurrency=N" if o == found[0] else o for o in options]
    return ":".join([name] + rest), int(found[0][len("concurrency="):])


REACH_KEY = ["link", "cache", "file", "procs", "pattern", "memory_limit_bytes", "design"]
REACH = REACH_KEY + ["concurrencies", "reached_at", "best", "best_at", "text"]


def reach(through: pd.DataFrame) -> pd.DataFrame:
    """Per design swept over `concurrency=N` (two values or more) and condition: the lowest N
    at NEAR of the link or more, else the best fraction and its N (REACH)."""
    t = through[~through["is_local"].astype(bool)]
    fam = t["strategy_spec"].map(family)
    t = t[fam.notna()]
    t = t.assign(design=fam[fam.notna()].map(lambda f: f[0]),
                 concurrency=fam[fam.notna()].map(lambda f: f[1]))
    rows = []
    for key, g in t.groupby(REACH_KEY, sort=False):
        if g["concurrency"].nunique() < 2:
            continue
        g = g.sort_values("concurrency", kind="stable")
        known = g.dropna(subset=["of_link"])
        hit = known[known["of_link"] >= NEAR]
        row = {**dict(zip(REACH_KEY, key)), "reached_at": None, "best": None, "best_at": None,
               "concurrencies": ", ".join(str(n) for n in dict.fromkeys(g["concurrency"]))}
        if known.empty:
            row["text"] = NO_LINK
        else:
            best = known.loc[known["of_link"].idxmax()]  # the first: the lowest N of a tie
            row.update(best=float(best["of_link"]), best_at=int(best["concurrency"]))
            if len(hit):
                row["reached_at"] = int(hit["concurrency"].iloc[0])
                row["text"] = str(row["reached_at"])
            else:
                row["text"] = f"not reached (best: {row['best']:.2f} at {row['best_at']})"
        rows.append(row)
    return pd.DataFrame(rows, columns=REACH)


# --- 3. herds ----------------------------------------------------------------------------------

def _number(frame: pd.DataFrame, column: str) -> pd.Series:
    if column not in frame:
        return pd.Series(np.nan, index=frame.index)
    return pd.to_numeric(frame[column], errors="coerce")


def herd_rounds(results: Results, rows: pd.DataFrame, many: pd.DataFrame) -> pd.DataFrame:
    """The rounds (readers.rounds' rows) of every remote design on a link that ran with several
    readers, its single-reader rounds included, each with its round's link ceiling (`link`),
    the server's CPU seconds and the bytes the link carried (the median of its readers')."""
    herd = rows[~rows["is_local"].astype(bool) & (rows["procs"] > 1) & (rows["link"] != "")]
    keys = {tuple(r) for r in herd[readers.REFERENCE].itertuples(index=False)}
    m = many[[tuple(k) in keys for k in many[readers.REFERENCE].itertuples(index=False)]]
    if m.empty:
        return m.assign(server_cpu_s=np.nan, link_rx_bytes=np.nan, link_gb=np.nan)
    runs = results.runs.assign(server_cpu_s=_number(results.runs, "server_cpu_s"),
                               link_rx_bytes=_number(results.runs, "link_rx_bytes"))
    extra = runs.groupby(readers.ROUND, sort=False)[["server_cpu_s", "link_rx_bytes"]].median()
    m = m.join(extra, on=readers.ROUND)
    return m.assign(link_gb=Ceilings(results.link_ceiling).per_round(m)).reset_index(drop=True)


HERDS = ["link", "cache", "file", "strategy_spec", "pattern", "procs", "memory_limit_bytes",
         "rounds", "complete", "gb_per_s", "link_gb_per_s"] + [f"{c}_link" for c in SHARE] + \
    ["spread", "server_cpu_s", "wire_over_loaded"]


def herds(results: Results, rounds: pd.DataFrame) -> pd.DataFrame:
    """Per series of herd_rounds' (readers.SERIES): the module's docstring's figures (HERDS),
    the single reader first, then each pattern by its number of readers."""
    if rounds.empty:
        return pd.DataFrame(columns=HERDS)
    conditions = rounds.drop_duplicates(readers.SERIES).reset_index(drop=True)
    ceiling = Ceilings(results.link_ceiling).per_condition(conditions)
    by = dict(zip((tuple(k) for k in conditions[readers.SERIES].itertuples(index=False)),
                  ceiling))
    rows = []
    for key, g in rounds.groupby(readers.SERIES, sort=False):
        done = g[g["duration_s"].notna()]
        gb = pd.to_numeric(done["gb_per_s"], errors="coerce")
        median = stats.median_of(gb)
        rows.append({**dict(zip(readers.SERIES, key)), "rounds": len(g), "complete": len(done),
                     "gb_per_s": median, "link_gb_per_s": by[key],
                     **{f"{c}_link": x for c, x in share(gb / done["link_gb"], median,
                                                         by[key]).items()},
                     "spread": stats.median_of(done["spread"]),
                     "server_cpu_s": stats.median_of(done["server_cpu_s"]),
                     "wire_over_loaded": stats.median_of(
                         done["link_rx_bytes"] / pd.to_numeric(done["bytes"], errors="coerce"))})
    out = pd.DataFrame(rows, columns=HERDS)
    return out.sort_values(["link", "cache", "file", "strategy_spec", "memory_limit_bytes",
                            "procs", "pattern"], kind="stable",
                           key=lambda c: c.map(order(results)) if c.name == "link" else c
                           ).reset_index(drop=True)


def _linked(frame: pd.DataFrame, results: Results, columns: list[str]) -> pd.DataFrame:
    """`frame` sorted by `columns`, links in their order (`order`), stably."""
    rank = order(results)
    return frame.sort_values(columns, kind="stable", key=lambda c: c.map(rank).fillna(len(rank))
                             if c.name == "link" else c).reset_index(drop=True)


def tables(results: Results, rows: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The three figures' tables (`through`, `reach`, `herds`) and the herds' rounds
    (`herd_rounds`) from remote.summarize's `rows`."""
    many = readers.rounds(results.runs, results.env)
    through = _linked(throughput(results, rows, many), results, ["link", "cache"])
    rounds = herd_rounds(results, rows, many)
    return {"through": through, "reach": reach(through), "herd_rounds": rounds,
            "herds": herds(results, rounds)}


# --- the figures -------------------------------------------------------------------------------

def _panels(frame: pd.DataFrame, results: Results) -> list[tuple[str, str]]:
    """The (link, cache state) pairs of `frame`, links in their order, cold first."""
    links = sorted(set(frame["link"]), key=lambda k: order(results).get(k, math.inf))
    return [(k, c) for k in links for c in ("cold", "warm")
            if ((frame["link"] == k) & (frame["cache"] == c)).any()]


def name(row, files: int) -> str:
    """A row of `throughput` in words: its label (best local marked), readers and pattern,
    memory limit and file where they tell rows apart."""
    text = str(row["label"]) + (" (best local)" if bool(row.get("is_local", False)) else "")
    text += f" ×{int(row['procs'])}" if row["procs"] > 1 else ""
    text += f" {row['pattern']}" if row["pattern"] != REPLICATED else ""
    if row["memory_limit_bytes"] > 0:
        text += f" ≤{row['memory_limit_bytes'] / 2**30:.2f} GiB"
    return text + (f" [{os.path.basename(str(row['file']))}]" if files > 1 else "")


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
    head += f" ≤{limit / 2**30:.2f} GiB" if limit > 0 else ""
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
        lines.append([spec_label(r) + (f" ≤{limit / 2**30:.2f} GiB" if limit > 0 else "") + where,
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
