"""A fleet's records as rounds (records with `nodes`, env.json `cluster`; the experiment
and every figure are described in analysis/models/fleet.py's docstring): each node's record,
each round (one rep of one design at N nodes, under one `nic` and `uplink`) and its duration,
spread and read amplification, the series' medians, and the fabric's lower bound per design
from the links measured in each round's session."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from analysis.core.labels import plural
from analysis.core.results import Results, UNVERIFIED
from analysis.core.units import parse_rate, rate_text
from analysis.stats import aggregates as stats, readers

FLEET = "fleet"
DESIGNS = ("every", "bcast", "stripe", "chain")
CHUNK = 4 * 2**20  # the strategy's default chunk
# A round, and a series of rounds, never pools runs under different [cluster] rates: `nic` and
# `uplink` are the rate texts a record ran under ("" for records from before they were kept).
ROUND = ["file", "cache", "strategy_spec", "nodes", "nic", "uplink", "rep"]
SERIES = ["file", "cache", "strategy_spec", "nodes", "nic", "uplink"]
SPEC = ["design", "label", "kind", "chunk"]  # what every record of a spec shares
BYTES = ["tensor_bytes", "store_bytes", "peer_rx_bytes", "peer_tx_bytes"]
NODE_COLUMNS = ROUND + ["node", "session"] + SPEC + [
    "status", "error", "counted", "wall_s", "load_start_unix_s", "ready_s", "connect_s", "cpu_s",
    "store_requests"] + BYTES
FIGURES = ["model_bytes", "duration_s", "first_s", "spread", "slowest", "amplification",
           "nic_in", "nic_in_node", "nic_out", "nic_out_node", "ready_s"]
BOUNDS = ["bound_s", "of_bound", "best_bound_s", "of_best"]
ROUND_COLUMNS = ROUND + ["session"] + SPEC + ["nodes_recorded", "ok_nodes"] + FIGURES + BOUNDS \
    + ["reason"]
SUMMARY_COLUMNS = SERIES + SPEC + ["rounds", "failed", "seconds", "spread", "slowest",
                                   "amplification", "nic_in", "nic_out", "model_bytes"] + BOUNDS



def positive(value) -> float | None:
    """A number above 0, else None (a figure not measured, or of the wrong type)."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    return float(value) if ok and math.isfinite(value) and value > 0 else None


# --- the records -------------------------------------------------------------------------------

def _field(frame: pd.DataFrame, name: str) -> pd.Series:
    """The column, or nulls where no record has it."""
    return frame[name] if name in frame else pd.Series(None, index=frame.index, dtype=object)


def _from(objects: pd.Series, key: str, number: bool = True) -> pd.Series:
    """Each row's object's `key` (details, params: dicts, results.load keeps them whole);
    numbers coerced, null where a row has none."""
    values = objects.map(lambda d: d.get(key) if isinstance(d, dict) else None)
    return pd.to_numeric(values, errors="coerce") if number else values


def shown(results: Results) -> bool:
    """Whether a report needs the section: some record carries `nodes` (a cluster's)."""
    return bool(_field(results.runs, "nodes").notna().any())


def design_of(strategy: str, spec: str, details, params) -> str:
    """A record's design: a fleet record's details.design, else its params.design, else its
    spec's `design=` option; any other strategy's spec itself."""
    if strategy != FLEET:
        return str(spec)
    for source in (details, params):
        if isinstance(source, dict) and isinstance(source.get("design"), str):
            return source["design"]
    found = [o[len("design="):] for o in str(spec).split(":") if o.startswith("design=")]
    return found[0] if found else str(spec)


def label_of(strategy: str, spec: str, design: str) -> str:
    """A spec in the tables: a fleet spec as its design and its other options
    (`bcast (chunk=1MiB)`), any other as itself."""
    if strategy != FLEET:
        return str(spec)
    rest = [o for o in str(spec).split(":")[1:] if not o.startswith("design=")]
    return design + (f" ({', '.join(rest)})" if rest else "")


def nodes_table(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per node's record of a cluster experiment (results.load's `runs` with `nodes`),
    every status (NODE_COLUMNS): node (proc, else details.node), session (its index into
    env.json `sessions`, null for records from before it was kept), nic and uplink (the rates
    it ran under, "" where not recorded), design and label, kind (the design the bound and the
    model give it: one of DESIGNS, `every` for any other strategy), chunk (params.chunk, else
    CHUNK), cpu_s (the timed region's load_user_s + load_sys_s, else the worker's user_s +
    sys_s), the details' figures. Another strategy's record without details.store_bytes read
    everything from the store (its details.bytes_received, else its tensor_bytes) and nothing
    from a peer."""
    runs = runs[pd.to_numeric(_field(runs, "nodes"), errors="coerce").notna()]
    details, params = _field(runs, "details"), _field(runs, "params")
    fleet = runs["strategy"] == FLEET
    design = [design_of(*a) for a in zip(runs["strategy"], runs["strategy_spec"], details, params)]
    number = {c: pd.to_numeric(_field(runs, c), errors="coerce")
              for c in ("wall_s", "user_s", "sys_s", "load_user_s", "load_sys_s",
                        "tensor_bytes", "load_start_unix_s", "session")}
    # The timed region's CPU where the record has it (what competes with the transfers), as
    # stats.load_or_process prefers it; else the whole worker's.
    cpu = (number["load_user_s"] + number["load_sys_s"]).fillna(
        number["user_s"] + number["sys_s"])
    store = _from(details, "store_bytes")
    store = store.where(fleet, store.fillna(_from(details, "bytes_received"))
                        .fillna(number["tensor_bytes"]))
    out = runs.assign(
        nodes=pd.to_numeric(runs["nodes"], errors="coerce").astype("int64"),
        node=pd.to_numeric(_field(runs, "proc"), errors="coerce").fillna(
            _from(details, "node")).fillna(0).astype("int64"),
        design=design,
        label=[label_of(s, p, d) for s, p, d in zip(runs["strategy"], runs["strategy_spec"],
                                                    design)],
        kind=[d if d in DESIGNS else "every" for d in design],
        chunk=_from(params, "chunk").fillna(CHUNK),
        wall_s=number["wall_s"], tensor_bytes=number["tensor_bytes"],
        load_start_unix_s=number["load_start_unix_s"], session=number["session"],
        # Strings, so that grouping keeps the records that have none.
        **{c: _field(runs, c).fillna("") for c in ("nic", "uplink")},
        cpu_s=cpu, store_bytes=store,
        **{c: _from(details, c) for c in ("ready_s", "connect_s", "store_requests")},
        **{c: _from(details, c).where(fleet, _from(details, c).fillna(0))
           for c in ("peer_rx_bytes", "peer_tx_bytes")})
    return out[NODE_COLUMNS].reset_index(drop=True)


def why_not(node) -> str:
    """Why a node's record does not count: its status and error, or what its ok record lacks."""
    if node["status"] != "ok":
        return f"node {node['node']}: {node['status']}: {node['error']}"
    if not node["wall_s"] > 0:
        return f"node {node['node']}: ok, no wall time"
    return f"node {node['node']}: {UNVERIFIED}"


def _round(key: tuple, group: pd.DataFrame) -> dict:
    """One round's row (ROUND_COLUMNS but BOUNDS; the module's docstring, 1.)."""
    row = {**dict(zip(ROUND, key)), **group.iloc[0][SPEC].to_dict(),
           "session": next(iter(group["session"].dropna().astype(int)), None),
           **{c: None for c in FIGURES}}
    ok = group[group["counted"]].drop_duplicates("node", keep="last")
    missing = sorted(set(range(int(row["nodes"]))) - set(group["node"]))
    why = [why_not(r) for _, r in group[~group["counted"]].iterrows()]
    why += [f"node {k}: no record" for k in missing]
    row.update(nodes_recorded=group["node"].nunique(), ok_nodes=len(ok),
               reason="; ".join(why) or None)
    if why:
        return row
    wall = ok.set_index("node")["wall_s"].astype(float)
    model = float(ok["tensor_bytes"].median())
    into = (ok["store_bytes"] + ok["peer_rx_bytes"]).set_axis(ok["node"]) / model
    out = ok["peer_tx_bytes"].set_axis(ok["node"]) / model
    # The same duration as every round of several readers: the first start to the last end.
    row.update(model_bytes=model, duration_s=readers.duration(ok)[0], first_s=float(wall.min()),
               spread=float(wall.max() / wall.min()),
               slowest=int(wall.idxmax()) if wall.max() > wall.min() else None,
               amplification=ok["store_bytes"].sum(min_count=len(ok)) / model,
               ready_s=float(ok["ready_s"].max()) if ok["ready_s"].notna().all() else None)
    for name, share in (("nic_in", into), ("nic_out", out)):
        if share.notna().all():
            row.update({name: float(share.max()), f"{name}_node": int(share.idxmax())})
    return row


def rounds(nodes: pd.DataFrame, env: dict | None = None) -> pd.DataFrame:
    """One row per round (ROUND_COLUMNS) of `nodes_table`'s rows: a failed round has no
    figures and its `reason`; a complete one none, and its bounds from the fabric of the
    session it ran in (`with_bounds`; `env`: env.json)."""
    out = [_round(key, g) for key, g in nodes.groupby(ROUND, sort=False, dropna=False)]
    return with_bounds(pd.DataFrame(out, columns=ROUND_COLUMNS), env or {})


def with_bounds(table: pd.DataFrame, env: dict) -> pd.DataFrame:
    """The rounds with BOUNDS for each complete one, from the fabric of the session it ran in
    (`fabric_of`): the bound of its own design, the best design's (the lowest of DESIGNS' at
    its N), and each over its duration (1: at the fabric's limit); null without a fabric."""
    fabrics: dict = {}
    values = []
    for _, r in table.iterrows():
        session = None if pd.isna(r["session"]) else int(r["session"])
        if session not in fabrics:
            fabrics[session] = fabric_of(env, session)
        fabric = fabrics[session]
        if fabric is None or pd.isna(r["duration_s"]):
            values.append([math.nan] * len(BOUNDS))
            continue
        n, m, chunk = int(r["nodes"]), float(r["model_bytes"]), float(r["chunk"])
        own = bound(r["kind"], n, m, chunk, fabric)
        best = min(bound(k, n, m, chunk, fabric) for k in DESIGNS)
        values.append([own, own / r["duration_s"], best, best / r["duration_s"]])
    return table.assign(**{c: [v[i] for v in values] for i, c in enumerate(BOUNDS)})


def _most(values: pd.Series) -> str:
    """The node most often slowest, and how often (of the rounds whose nodes did not all
    finish at once): `node 3 (2 of 3)`; `—` where every round's did."""
    counts = values.dropna().astype(int).value_counts()
    if counts.empty:
        return "—"  # every node of every round finished at once
    return f"node {counts.index[0]} ({counts.iloc[0]} of {counts.sum()})"


def _order(frame: pd.DataFrame) -> pd.DataFrame:
    """Cold first, then the designs in DESIGNS' order (others after), each by its nodes."""
    rank = {k: i for i, k in enumerate(DESIGNS)}
    return frame.assign(_c=frame["cache"].map({"cold": 0, "warm": 1}),
                        _d=frame["design"].map(rank).fillna(len(rank))).sort_values(
        ["file", "_c", "_d", "strategy_spec", "nodes"], kind="stable").drop(
        columns=["_c", "_d"]).reset_index(drop=True)


def summarize(rounds_table: pd.DataFrame) -> pd.DataFrame:
    """One row per series (SUMMARY_COLUMNS; the module's docstring, 2.): the medians over its
    complete rounds, each round's bounds its own (no bound without a fabric)."""
    rows = []
    for key, g in rounds_table.groupby(SERIES, sort=False):
        done = g[g["duration_s"].notna()]
        rows.append({**dict(zip(SERIES, key)), **g.iloc[0][SPEC].to_dict(), "rounds": len(g),
                     "failed": len(g) - len(done), "slowest": _most(done["slowest"]),
                     **{c: stats.median_of(done[c]) for c in ["spread", "amplification",
                                                              "nic_in", "nic_out",
                                                              "model_bytes"] + BOUNDS},
                     "seconds": stats.median_of(done["duration_s"])})
    return _order(pd.DataFrame(rows, columns=SUMMARY_COLUMNS))


# --- the fabric and its bound ------------------------------------------------------------------

@dataclass(frozen=True)
class Fabric:
    """The links a model crosses (bits per second), the CPU its nodes have, and where the
    figures came from (`source`, in words)."""
    uplink_bps: float
    nic_in_bps: float
    nic_out_bps: float
    cores: float | None = None  # CPU seconds per second; None: CPU is no resource
    shared_cpu: bool = True  # one CPU for every node (the measured machine), else one each
    source: str = ""


def iperf_rates(links: list[dict], direction: str) -> list[float]:
    """The links' measured iperf3 figures of one direction (`down_bits_per_s`, `up_...`)."""
    found = [positive((link.get("iperf3") or {}).get(direction)) for link in links
             if isinstance(link.get("iperf3"), dict)]
    return [x for x in found if x is not None]


def configured(cluster: dict, key: str) -> float | None:
    """A configured rate: cluster.KEY_bits_per_s, else cluster.KEY parsed as tc's."""
    bits = positive(cluster.get(f"{key}_bits_per_s"))
    if bits is None and isinstance(cluster.get(key), str):
        try:
            bits = parse_rate(cluster[key])
        except ValueError:
            bits = None
    return bits


def _rate(measured: list[float], cluster: dict, key: str, what: str, how: str,
          words: list[str]) -> float | None:
    """A link's rate: the median of its measured figures, else its configured rate, said so."""
    if measured:
        value = float(np.median(measured))
        words.append(f"{what} {rate_text(value)} (iperf3, {how})")
        return value
    value = configured(cluster, key)
    if value is not None:
        words.append(f"{what} {rate_text(value)} (configured: no iperf3 figure measured)")
    return value


def cluster_of(env: dict, session: int | None = None) -> dict | None:
    """The cluster a round ran on: env.json `sessions[session].cluster`, that session's own
    (a resumed experiment makes and measures the cluster again), else the top-level `cluster`
    (the latest session's, and all that records from before `session` have)."""
    sessions = env.get("sessions") or []
    if session is not None and 0 <= session < len(sessions):
        own = sessions[session].get("cluster")
        if isinstance(own, dict):
            return own
    cluster = env.get("cluster")
    return cluster if isinstance(cluster, dict) else None


def fabric_of(env: dict, session: int | None = None) -> Fabric | None:
    """The measured fabric (the module's docstring, 3.) of a session's cluster (`cluster_of`);
    None without one, or without a rate for the uplink or the NIC."""
    cluster = cluster_of(env, session)
    if cluster is None:
        return None
    links = [x for x in cluster.get("links") or [] if isinstance(x, dict)]
    store = [x for x in links if x.get("name") == "store"]
    nodes = [x for x in links if x.get("name") != "store"]
    words: list[str] = []
    uplink = _rate(iperf_rates(store, "up_bits_per_s"), cluster, "uplink", "store uplink",
                   "out of the store", words)
    down, up = iperf_rates(nodes, "down_bits_per_s"), iperf_rates(nodes, "up_bits_per_s")
    nic_in = _rate(down, cluster, "nic", "node NIC in",
                   f"the median of the down figures of {plural(len(down), 'node')}", words)
    nic_out = _rate(up, cluster, "nic", "node NIC out",
                    f"the median of the up figures of {plural(len(up), 'node')}", words)
    if uplink is None or nic_in is None or nic_out is None:
        return None
    host = env.get("host") or {}
    cores = positive(cluster.get("cores")) or positive(host.get("cores"))
    words.append(f"{cores:g} cores shared by every node and the store" if cores else
                 "cores unknown: CPU left out of the model")
    return Fabric(uplink, nic_in, nic_out, cores, True, "; ".join(words))


def median_fabric(fabrics: list[Fabric]) -> Fabric:
    """One fabric for a series whose rounds ran in several sessions: each rate the median of
    theirs."""
    def rate(name: str) -> float:
        return float(np.median([getattr(f, name) for f in fabrics]))

    return replace(fabrics[0], uplink_bps=rate("uplink_bps"), nic_in_bps=rate("nic_in_bps"),
                   nic_out_bps=rate("nic_out_bps"),
                   source=f"the median of {len(fabrics)} sessions' measured links")


def series_fabrics(rounds_table: pd.DataFrame, env: dict) -> dict[tuple, Fabric | None]:
    """Per series (SERIES' values), the fabric its complete rounds ran on: their session's, or
    `median_fabric` of theirs where they ran in several; None where one had no fabric."""
    out = {}
    for key, g in rounds_table[rounds_table["duration_s"].notna()].groupby(SERIES, sort=False):
        sessions = dict.fromkeys(None if pd.isna(x) else int(x) for x in g["session"])
        found = [fabric_of(env, x) for x in sessions]
        out[key] = (None if any(f is None for f in found) else
                    found[0] if len(found) == 1 else median_fabric(found))
    return out


def fill_chunks(kind: str, n: int) -> int:
    """The chunks a pipelined design's last node waits behind the first: bcast one to the
    owner and one on (one with a single other node), chain one per hop, none otherwise."""
    if kind == "bcast":
        return min(2, n - 1)
    return n - 1 if kind == "chain" else 0


def bound(kind: str, n: int, model: float, chunk: float, fabric: Fabric) -> float:
    """The fabric's lower bound (seconds) on a round of `n` nodes loading `model` bytes by
    design `kind` (the module's docstring, 3.): rates are bits per second, sizes bytes."""
    up, nic = fabric.uplink_bps / 8, fabric.nic_in_bps / 8  # bytes per second
    if kind == "stripe":  # the stripes in (the store's M, a node's M/N), then the rest
        return max(model / up, model / n / nic) + (n - 1) / n * model / nic
    if kind in ("bcast", "chain"):
        return model / min(up, nic) + fill_chunks(kind, n) * chunk / nic
    return max(n * model / up, model / nic)
