"""The link: models read through the experiment's server over a shaped network link (the
experiment's `[link] rate = [...]`: a veth pair into a network namespace, shaped with tc TBF),
each design set against the link's own limit and the server's. Part of the report's *Remote*
section (analysis/sections/remote.py calls it), shown only where records carry `link`. It imports
nothing of remote: it is given remote.summarize's rows, and it holds SERVER_BUSY, the server's
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

1. Throughput against the link (`throughput`; a table per link and cache state, the figure `link-
   throughput`). The groups are analysis/sections/remote.py's rows: each remote design and each
   peer (an exec command reading through the server), and each condition's best local strategy
   for reference (GB/s and CPU only: its bytes never crossed the link, so it has no fraction of
   either ceiling). GB/s: one reader's, file bytes over the median wall time (remote.py's);
   several readers', the median over complete rounds of the round's throughput as
   analysis/stats/readers.py counts it (every reader's tensor bytes over the time from the first
   reader's start to the last reader's end). Of link: per round, the round's GB/s (one reader:
   the run's file bytes over its wall time; several: readers.py's) over that round's link
   ceiling; the median over the rounds, with the exact distribution-free 95% interval of the
   median (stats.median_interval, none under 6 rounds): a share of the limit, higher is nearer it
   (1: at it). With no round paired, the GB/s over the condition's link ceiling, without interval
   ("unpaired"); with no link ceiling at all, none: "no link ceiling". Of server: the same
   against the server ceiling. Limited by, the first that holds: "link" where of link ≥ 0.9;
   "server" where of server ≥ 0.9, or where the server's CPU seconds per second of the run
   (remote.py's server_busy, the median over the runs) ≥ SERVER_BUSY (0.8); "client CPU" where
   the client's CPU seconds per second of the run ((user_s + sys_s, plus the s3fs mount's
   mount_cpu_s) / wall_s: remote.py's client_busy) ≥ 0.9; else "design" (none of them held it
   back: the way it reads did), or "unknown: no link ceiling" where there is no link ceiling to
   tell. The figure: per link and cache state, a bar per remote design of its share of the link
   with its 95% interval, a line at 1 (the link's ceiling) and a diamond at the server's ceiling
   over the link's (where the server would stop it). 2. The concurrency that reaches the link
   (`reach`): remote designs whose spec has a `concurrency=N` option, grouped by the rest of the
   spec (`http_ranges:chunk=16MiB: concurrency=N`) and by condition, where two values of N or
   more ran: the lowest N whose share of the link (1.) is ≥ 0.9; else "not reached (best: X at
   N)", the highest share and its N (the lowest N of a tie); "no link ceiling" where no N has
   one. 3. Herds (`herds`; the table and the figure `link-herds`): rounds of several readers of a
   remote design on a link, counted as analysis/stats/readers.py counts them (a round with a
   reader that does not count has no figures), with the same design's single-reader rounds as the
   reference row. Per (link, cache, design, readers, pattern): the rounds (complete ones); GB/s,
   all readers: the median round throughput (for one reader: its tensor bytes over its wall
   time); of link: each round's throughput over its round's link ceiling, median and interval as
   in 1.; spread: the slowest reader's wall time over the median reader's, the median over
   rounds; server CPU s: the server's CPU seconds in the round (server_cpu_s, the same on each
   reader's record), median; on the wire / loaded: the bytes the client's end of the link
   received in the round (link_rx_bytes, the same on each reader's record: Ethernet frames,
   headers included) over the bytes the readers loaded (their tensor bytes summed), median over
   rounds: above 1, headers, retransmissions and bytes fetched twice. The figure: per link and
   cache state, GB/s against the number of readers, one line per design and pattern through the
   median round, every complete round's throughput as a circle, every ok reader's own GB/s (its
   tensor bytes over its wall time) as a dot, and the median link ceiling of each number of
   readers (iperf3 runs more streams for more readers) as a grey line. """

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from analysis.core.results import CONDITION, GROUP, Results
from analysis.stats import aggregates as stats, readers


NEAR = 0.9  # the share of a ceiling at which it is the limit


CLIENT_BUSY = 0.9  # client CPU seconds per second of the run at which its CPU is the limit


# Server CPU seconds per second of the run's wall time above which the server may be the
# limit: most of one core busy serving. Kept here, below remote.py, whose own server figures
# (server_limited, the server's paragraph) take it from this module, which needs nothing of it.
SERVER_BUSY = 0.8


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
