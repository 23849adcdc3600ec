"""What the *Remote* section is drawn from (analysis/sections/remote.py says what it shows):
which runs read the model through a server or with the remote strategies, how each reads
(transport, method), per group its figures (CPU per GB on both sides, requests, over-read,
first byte, latencies), the best local strategy of each condition and each remote design's
paired ratio to it, reads through an s3fs mount, the commands that did not run, and the points
of the concurrency x chunk figure."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

# link.py sits below this module (the link's part of the section) and imports nothing of it.
from analysis.core.results import CONDITION, EXEC, GROUP, Results, spec_label
from analysis.core.units import size_text
from analysis.stats import aggregates as stats, paired
from analysis.stats.link import SERVER_BUSY


HTTP_STRATEGIES = ("http_get", "http_ranges", "http_stream")


PAIRED = ["pairs", "ratio", "ratio_low", "ratio_high", "bounded", "significant", "verdict"]


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


def server_of(env: dict) -> dict:
    server = env.get("server")
    return server if isinstance(server, dict) else {}


def server_program(server: dict) -> str:
    return " ".join(str(server[k]) for k in ("program", "version") if server.get(k))


def transport(read_as, spec, env: dict) -> str:
    """What a run reached the bytes through: "http", "s3", "s3fs" (the bucket's s3fs mount),
    or the server's kind for an HTTP strategy without read_as."""
    mount = server_of(env).get("mount")
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
    return via_of(spec) or str(server_of(env).get("kind") or "other")


def method(strategy: str, params) -> str:
    """How a strategy reads, in words, with its chunk, concurrency and memory limit."""
    p = params if isinstance(params, dict) else {}
    if strategy == "http_get":
        return "one GET"
    if strategy == "http_ranges":
        return (f"ranged GETs of {size_text(p.get('chunk'))}, "
                f"{p.get('concurrency', '?')} in flight")
    if strategy == "http_stream":
        return (f"streamed ranged GETs of {size_text(p.get('chunk'))}, "
                f"{p.get('concurrency', '?')} in flight, ≤ {size_text(p.get('memory_limit'))} "
                "buffered")
    return "a command" if strategy == EXEC else strategy


def how(group: pd.DataFrame, env: dict) -> tuple[str, str]:
    """(how the group reads in words, its transport) from its first record."""
    first = group.iloc[0]
    way = transport(_read_as(group).iloc[0], first["strategy_spec"], env)
    server = server_of(env)
    program = server_program(server) or "the server"
    mount = server.get("mount") if isinstance(server.get("mount"), dict) else {}
    where = {"http": f"HTTP from {program}", "s3": f"S3 via {program}",
             "s3fs": f"through an s3fs mount ({server_program(mount) or 's3fs'}) of {program}"}
    text = method(str(first["strategy"]), first.get("params"))
    return f"{text}, {where.get(way, 'through the server')}", way


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
