"""Remote: models read through the experiment's server (env.json `server`: nginx over HTTP, or
s3rver as S3, optionally mounted with s3fs) rather than from the file itself.

A run is remote when its record names what the readers opened (`read_as`: an http:// or s3://
URL, or a path inside the s3fs mount), or its strategy is one of the HTTP ones (http_get,
http_ranges, http_stream), or its spec reads `via=` something other than `local`. Remote runs
keep `file` = the local path, so they share the rounds, and the conditions, of the local runs
of the same bytes: each remote design (and each peer, an exec command reading through the
server) is set beside the best local strategy of its condition (the lowest median wall time of
a strategy that is neither remote nor exec), its time over the local one's within the rounds
both ran in, by analysis/paired.py as every paired figure of the report.

Per group of ok runs (GROUP): how it reads; the medians of wall time; GB/s (file bytes over
the median time); client CPU seconds per GB ((user_s + sys_s) / GB, the worker's rusage, or
the command's process tree, plus mount_cpu_s, the s3fs process's, for a run through the mount);
server CPU seconds per GB (server_cpu_s / GB, the server's processes over the run); server CPU per wall second; requests and connections, the over-read
(bytes_received / bytes_requested - 1), time to first byte and the per-request latency p50 and
p99 (the medians of each run's, from `details`). GB: 10^9 bytes.

On a shaped network link (records with `link`, a condition like the cache state: no row, median
or pair mixes two links), each row is also set against the link's own ceiling and the
server's, measured in the same rounds: analysis/link.py, whose docstring says how.
"""

from __future__ import annotations

import math
import os

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

# link.py sits below this module (the link's part of the section) and imports nothing of it.
from analysis import link, noise, paired, stats
from analysis.link import SERVER_BUSY
from analysis.noise import records
from analysis.results import (CONDITION, EXEC, GROUP, Results, network, paired_cell,
                              ratio_text, spec_label)

TITLE = "Remote"
HTTP_STRATEGIES = ("http_get", "http_ranges", "http_stream")
PAIRED = ["pairs", "ratio", "ratio_low", "ratio_high", "bounded", "significant", "verdict"]
FIGURE = "remote-ranges"


# --- which runs are remote, and how they read ------------------------------------------------

def link_rank(frame: pd.DataFrame, env: dict) -> pd.Series:
    """Per row, its link's place: env.json's link.rates in order, then the rows'."""
    rates = (env.get("link") or {}).get("rates") or []
    rank = {k: i for i, k in enumerate(dict.fromkeys(list(rates) + list(frame["link"])))}
    return frame["link"].map(rank)


def via_of(spec) -> str:
    """The `via=` option of a strategy spec ("" without one)."""
    options = [o[len("via="):] for o in str(spec).split(":")[1:] if o.startswith("via=")]
    return options[0] if options else ""


def _read_as(frame: pd.DataFrame) -> pd.Series:
    """Each record's read_as where it is a non-empty string, else None."""
    if "read_as" not in frame:
        return pd.Series(None, index=frame.index, dtype=object)
    return frame["read_as"].map(lambda v: v if isinstance(v, str) and v else None)


def by_spec(row) -> bool:
    """Whether a group's strategy or spec alone says it reads through the server (an HTTP
    strategy, or via= other than local); exec commands say it only by their records' read_as."""
    return str(row.get("strategy")) in HTTP_STRATEGIES or \
        via_of(row.get("strategy_spec", "")) not in ("", "local")


def is_remote(frame: pd.DataFrame) -> pd.Series:
    """Per record: it read through the server (read_as, an HTTP strategy or a remote via=)."""
    if frame.empty:
        return pd.Series(False, index=frame.index, dtype=bool)
    spec = frame["strategy"].isin(HTTP_STRATEGIES) | frame["strategy_spec"].map(
        lambda s: via_of(s) not in ("", "local"))
    return _read_as(frame).notna() | spec


def shown(results: Results) -> bool:
    """Whether a report needs the section: some record, of any status, is remote."""
    return bool(is_remote(results.runs).any())


def remote_keys(results: Results) -> set[tuple]:
    """The GROUP keys of the remote records."""
    runs = results.runs[is_remote(results.runs)]
    return {tuple(k) for k in runs[GROUP].itertuples(index=False)}


def _server(env: dict) -> dict:
    server = env.get("server")
    return server if isinstance(server, dict) else {}


def _program(server: dict) -> str:
    return " ".join(str(server[k]) for k in ("program", "version") if server.get(k))


def transport(read_as, spec, env: dict) -> str:
    """What a run reached the bytes through: "http", "s3", "s3fs" (the bucket's s3fs mount),
    or the server's kind for an HTTP strategy without read_as."""
    mount = _server(env).get("mount")
    root = mount.get("root") if isinstance(mount, dict) else None
    if isinstance(read_as, str) and read_as:
        if read_as.startswith(("http://", "https://")):
            return "http"
        if read_as.startswith("s3://"):
            return "s3"
        if via_of(spec) == "s3fs" or (isinstance(root, str) and read_as.startswith(root)) \
                or "s3fs" in read_as:
            return "s3fs"
        return "other"
    return via_of(spec) or str(_server(env).get("kind") or "other")


def _size(n) -> str:
    if not isinstance(n, (int, float, np.number)) or isinstance(n, bool) or math.isnan(n):
        return "?"
    return f"{n / 2**30:g} GiB" if n >= 2**30 else f"{n / 2**20:g} MiB"


def method(strategy: str, params) -> str:
    """How a strategy reads, in words, with its chunk, concurrency and memory limit."""
    p = params if isinstance(params, dict) else {}
    if strategy == "http_get":
        return "one GET"
    if strategy == "http_ranges":
        return f"ranged GETs of {_size(p.get('chunk'))}, {p.get('concurrency', '?')} in flight"
    if strategy == "http_stream":
        return (f"streamed ranged GETs of {_size(p.get('chunk'))}, "
                f"{p.get('concurrency', '?')} in flight, ≤ {_size(p.get('memory_limit'))} "
                "buffered")
    return "a command" if strategy == EXEC else strategy


def how(group: pd.DataFrame, env: dict) -> tuple[str, str]:
    """(how the group reads in words, its transport) from its first record."""
    first = group.iloc[0]
    way = transport(_read_as(group).iloc[0], first["strategy_spec"], env)
    server = _server(env)
    program = _program(server) or "the server"
    mount = server.get("mount") if isinstance(server.get("mount"), dict) else {}
    where = {"http": f"HTTP from {program}", "s3": f"S3 via {program}",
             "s3fs": f"through an s3fs mount ({_program(mount) or 's3fs'}) of {program}"}
    text = method(str(first["strategy"]), first.get("params"))
    return f"{text}, {where.get(way, 'through the server')}", way


# --- the figures of each group ---------------------------------------------------------------

def _number(frame: pd.DataFrame, column: str) -> pd.Series:
    """A column as numbers; NaN where absent or not a number."""
    if column not in frame:
        return pd.Series(np.nan, index=frame.index)
    return pd.to_numeric(frame[column].map(
        lambda v: v if isinstance(v, (int, float)) and not isinstance(v, bool) else None),
        errors="coerce")


def _detail(frame: pd.DataFrame, key: str, sub: str | None = None) -> pd.Series:
    """The numbers under details.KEY (details.KEY.SUB) of each record; NaN where absent."""
    def pick(d):
        v = d.get(key) if isinstance(d, dict) else None
        v = v.get(sub) if sub is not None and isinstance(v, dict) else v
        return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None
    if "details" not in frame:
        return pd.Series(np.nan, index=frame.index)
    return pd.to_numeric(frame["details"].map(pick), errors="coerce")


def _group_row(key: tuple, group: pd.DataFrame, env: dict, local: bool) -> dict:
    """The medians of one group of ok runs (a remote design's, a peer's or the best local
    strategy's): per run each figure, then the median over the runs that recorded it."""
    wall = _number(group, "wall_s")
    gb = _number(group, "file_bytes") / 1e9
    client = _number(group, "user_s") + _number(group, "sys_s")
    if group["strategy_spec"].astype(str).str.contains("via=s3fs").any() or (
            group.get("read_as", pd.Series(dtype=object)).astype(str).str.contains(
                "s3fs-mount").any()):
        client = client + _number(group, "mount_cpu_s").fillna(0)  # s3fs works for the reader
    server = _number(group, "server_cpu_s")
    text, way = ("local file", "local") if local else how(group, env)
    median = stats.median_of(wall)
    row = {**dict(zip(GROUP, key)), "strategy": group["strategy"].iloc[0],
           "timed": group["timed"].iloc[0], "verified": bool(group["verified"].all()),
           "how": text, "transport": way, "is_local": local, "n": len(group),
           "median_s": median, "gb_per_s": stats.median_of(gb) / median,
           "client_cpu_s": stats.median_of(client),
           "client_cpu_s_per_gb": stats.median_of(client / gb),
           "server_cpu_s": stats.median_of(server),
           "server_cpu_s_per_gb": stats.median_of(server / gb),
           "server_busy": stats.median_of(server / wall),
           "client_busy": stats.median_of(client / wall),
           "requests": stats.median_of(_detail(group, "requests")),
           "connections": stats.median_of(_detail(group, "connections")),
           "over_read": stats.median_of(_detail(group, "bytes_received")
                                        / _detail(group, "bytes_requested") - 1),
           "first_byte_s": stats.median_of(_detail(group, "first_byte_s")),
           "latency_p50_s": stats.median_of(_detail(group, "request_latency_s", "p50")),
           "latency_p99_s": stats.median_of(_detail(group, "request_latency_s", "p99")),
           "server_resident_before": stats.median_of(_number(group,
                                                             "server_resident_before"))}
    row["label"] = spec_label(row)
    row["server_limited"] = bool(row["server_busy"] > SERVER_BUSY)
    return row


def best_local(table: pd.DataFrame, remote: set[tuple]) -> dict[tuple, pd.Series]:
    """condition -> the summary table's row (stats.summarize) of its fastest local strategy by
    median time: neither remote nor an exec command."""
    if table is None or table.empty:
        return {}
    keys = [tuple(k) for k in table[GROUP].itertuples(index=False)]
    local = table[[k not in remote for k in keys] & (table["strategy"] != EXEC)]
    return {key: g.loc[g["median_s"].idxmin()] for key, g in local.groupby(CONDITION, sort=False)}


class Pairs:
    """Paired ratios (paired.paired_table) of any group against any baseline spec, each
    baseline's table computed once."""

    def __init__(self, results: Results):
        self.results, self.tables = results, {}

    def get(self, base: pd.Series | dict | None, row: dict) -> dict:
        """`row`'s time over `base`'s within the rounds both ran in (PAIRED); the verdict says
        why there is none."""
        none = {"pairs": 0, "ratio": math.nan, "ratio_low": math.nan, "ratio_high": math.nan,
                "bounded": False, "significant": False}
        if base is None:
            return {**none, "verdict": "no local strategy ran in this condition"}
        spec = base["strategy_spec"]
        if spec not in self.tables:
            self.tables[spec] = paired.paired_table(self.results, baseline=spec)
        t = self.tables[spec]
        hit = t[(t[GROUP] == pd.Series({c: row[c] for c in GROUP})).all(axis=1)] \
            if not t.empty else t
        if hit.empty:
            return {**none, "verdict": f"no round shared with {spec_label(base)}"}
        p = hit.iloc[0]
        return {"pairs": int(p["n"]), **{c: p[c] for c in PAIRED[1:]}}


COLUMNS = GROUP + ["strategy", "timed", "verified", "label", "how", "transport", "is_local",
                   "n", "median_s", "gb_per_s", "client_cpu_s", "client_cpu_s_per_gb",
                   "server_cpu_s", "server_cpu_s_per_gb", "server_busy", "client_busy",
                   "requests", "connections", "over_read", "first_byte_s", "latency_p50_s",
                   "latency_p99_s", "server_resident_before", "server_limited", "best_local",
                   "best_local_median_s"] + PAIRED


def summarize(results: Results, table: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per condition, the best local strategy's row (is_local, ratio 1), then one row per
    group of remote ok runs (designs and peers) with its paired ratio to that strategy;
    `table` is stats.summarize's, when the caller has it."""
    table = stats.summarize(results) if table is None else table
    remote = remote_keys(results)
    chosen = best_local(table, remote)
    pairs = Pairs(results)
    rows = []
    for key, group in (results.ok.groupby(GROUP, sort=False) if not results.ok.empty else ()):
        cond = tuple(key[GROUP.index(c)] for c in CONDITION)
        base = chosen.get(cond)
        against = {"best_local": spec_label(base) if base is not None else None,
                   "best_local_median_s": float(base["median_s"]) if base is not None
                   else math.nan}
        if key in remote:
            row = _group_row(key, group, results.env, local=False)
            rows.append({**row, **against, **pairs.get(base, row)})
        elif base is not None and tuple(base[GROUP]) == key and _has_remote(remote, cond):
            rows.append({**_group_row(key, group, results.env, local=True), **against,
                         "pairs": 0, "ratio": 1.0, "ratio_low": math.nan,
                         "ratio_high": math.nan, "bounded": False, "significant": False,
                         "verdict": ""})
    frame = pd.DataFrame(rows, columns=COLUMNS)
    frame["link_rank"] = link_rank(frame, results.env)
    order = ["cache", "link_rank", "fabric", "file", "procs", "pattern", "memory_limit_bytes",
             "is_local", "median_s"]
    return frame.sort_values(order, ascending=[True] * 7 + [False, True],
                             kind="stable").drop(columns="link_rank").reset_index(drop=True)


def _has_remote(remote: set[tuple], cond: tuple) -> bool:
    return any(tuple(k[GROUP.index(c)] for c in CONDITION) == cond for k in remote)


def _pick(rows: pd.DataFrame, mask) -> pd.Series | None:
    """The row of least median time among `rows[mask]`, None when there is none."""
    chosen = rows[mask]
    return None if chosen.empty else chosen.loc[chosen["median_s"].idxmin()]


def comparisons(results: Results, rows: pd.DataFrame) -> pd.DataFrame:
    """Per condition: the fastest loadbench remote design (by median time) against the best
    local strategy, and the fastest peer (an exec command reading through the server) against
    that design, both paired."""
    columns = CONDITION + ["best_local", "best_remote", "best_remote_how", "best_peer"] + \
        [f"remote_{c}" for c in PAIRED] + [f"peer_{c}" for c in PAIRED]
    pairs, out = Pairs(results), []
    for key, g in rows.groupby(CONDITION, sort=False):
        remote = g[~g["is_local"]]
        design = _pick(remote, remote["strategy"] != EXEC)
        peer = _pick(remote, remote["strategy"] == EXEC)
        entry = {**dict(zip(CONDITION, key)), "best_local": g["best_local"].iloc[0],
                 "best_remote": design["label"] if design is not None else None,
                 "best_remote_how": design["how"] if design is not None else None,
                 "best_peer": peer["label"] if peer is not None else None}
        if design is not None:
            entry.update({f"remote_{c}": design[c] for c in PAIRED})
        if design is not None and peer is not None:
            entry.update({f"peer_{c}": v for c, v in pairs.get(design, peer).items()})
        out.append(entry)
    return pd.DataFrame(out, columns=columns)


def through_s3fs(results: Results, rows: pd.DataFrame) -> pd.DataFrame:
    """Per condition where both ran through the s3fs mount: each mmap variant's time over
    fread's, paired."""
    columns = CONDITION + ["mmap", "fread", "mmap_median_s", "fread_median_s"] + PAIRED
    pairs, out = Pairs(results), []
    mounted = rows[(rows["transport"] == "s3fs") & ~rows["is_local"]]
    for key, g in mounted.groupby(CONDITION, sort=False):
        fread = _pick(g, g["strategy"] == "fread")
        if fread is None:
            continue
        for _, mmap in g[g["strategy"].astype(str).str.startswith("mmap")].iterrows():
            out.append({**dict(zip(CONDITION, key)), "mmap": mmap["label"],
                        "fread": fread["label"], "mmap_median_s": mmap["median_s"],
                        "fread_median_s": fread["median_s"], **pairs.get(fread, mmap)})
    return pd.DataFrame(out, columns=columns)


def not_run(results: Results) -> pd.DataFrame:
    """The remote groups' runs that do not count, per group and status (results.excluded's
    rows), with their errors."""
    x = results.excluded
    if x.empty:
        return x
    keep = [tuple(k) in remote_keys(results) for k in x[GROUP].itertuples(index=False)]
    return x[keep].reset_index(drop=True)


# --- the figure --------------------------------------------------------------------------------

def ranges_points(results: Results) -> pd.DataFrame:
    """Per group of http_ranges ok runs: cache, file, chunk, concurrency and GB/s (file bytes
    over the median wall time)."""
    ok = results.ok[results.ok["strategy"] == "http_ranges"] if not results.ok.empty else \
        results.ok
    rows = []
    for key, g in (ok.groupby(GROUP, sort=False) if not ok.empty else ()):
        p = g["params"].iloc[0] if "params" in g else None
        p = p if isinstance(p, dict) else {}
        chunk, concurrency = p.get("chunk"), p.get("concurrency")
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                   for v in (chunk, concurrency)):
            continue
        rows.append({**dict(zip(GROUP, key)), "chunk": chunk, "concurrency": concurrency,
                     "gb_per_s": stats.median_of(_number(g, "file_bytes"))
                     / stats.median_of(_number(g, "wall_s")) / 1e9})
    return pd.DataFrame(rows, columns=GROUP + ["chunk", "concurrency", "gb_per_s"])


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
            name = f"chunk {_size(chunk)}" + (f" [{os.path.basename(file)}]" if files > 1 else "") \
                + network(g.iloc[0], ", ")
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
    head = f"**{noise.condition(first, files)}**" + (
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
        text = f"- {noise.condition(c, files)}: "
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
    server = _server(env)
    workers = (server.get("config") or {}).get("worker_processes") \
        if isinstance(server.get("config"), dict) else None
    who = _program(server) or "the server"
    who += f", with {workers} worker process{'' if workers == 1 else 'es'}" if workers else ""
    busy = remote[remote["server_limited"]]
    if busy.empty:
        top = remote.loc[remote["server_busy"].idxmax()]
        return (f"The server ({who}) was busy at most {top['server_busy']:.2f} s of CPU per "
                f"second of a run ({top['label']}, {noise.condition(top, files)}), under the "
                f"{SERVER_BUSY} that would make its CPU the likely limit.")
    lines = [f"- {r['label']}, {noise.condition(r, files)}: the server used {r['server_cpu_s']:.2f} s "
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
    lines = [f"- {noise.condition(p, files)}: {p['mmap']} (median {p['mmap_median_s']:.3f} s) took "
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
    lines = [f"- {r['label']}, {noise.condition(r, files)}: {r['server_resident_before']:.0%} of the "
             "server's copy in its page cache before the run (median)" for _, r in odd.iterrows()]
    return ("**Not the cache state the row says** (the server's files, server_resident_before):"
            "\n\n" + "\n".join(lines)) if lines else ""


def not_run_md(results: Results, files: int) -> str:
    table = not_run(results)
    if table.empty:
        return ""
    lines = [f"- {spec_label(x)}, {noise.condition(x, files)}: {x['status']} ({x['count']} "
             f"run{'' if x['count'] == 1 else 's'}): {'; '.join(x['errors'])[:300]}"
             for _, x in table.iterrows()]
    return ("Remote runs that failed or could not run (in no figure above):\n\n"
            + "\n".join(lines))


def section_md(results: Results, table: pd.DataFrame | None = None, figs=None) -> str:
    """The section: per condition the best local strategy and the remote rows, the best remote
    design and peer, the server, s3fs, residency, the remote runs that did not run; on a link,
    analysis/link.py's part (its figures drawn and shown where `figs`, report.Figures, is
    given)."""
    files = max(results.runs["file"].nunique(), 1)
    rows = summarize(results, table)
    server = _server(results.env)
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
    the remote runs that do not count, with why; on a link, analysis/link.py's
    `link_throughput`, `link_reach` and `link_herds`."""
    rows = summarize(results, table)
    empty = pd.DataFrame()
    return {"remote": records(rows),
            "remote_best": records(comparisons(results, rows) if not rows.empty else empty),
            "remote_s3fs": records(through_s3fs(results, rows) if not rows.empty else empty),
            "remote_not_run": records(not_run(results)),
            **(link.summary(results, rows) if not rows.empty else {})}
