"""A fleet's records as rounds (records with `nodes`, env.json `cluster`; the experiment
and every figure are described in analysis/models/fleet.py's docstring): each node's record,
each round (one rep of one design at N nodes under one pattern, `nic` and `uplink`) and its
duration, spread, read amplification (over the bytes the nodes need), each node's bytes
received over its needs and its NIC's own counters, the series' medians, and the fabric's
lower bound per design (analysis/stats/fleet_bounds.py) from the links measured in each
round's session. The engines' designs (torch_bcast, torch_stripe: exec commands, one per
node, whose details carry the design and the same counts) are rounds alongside the
project's."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from analysis.core.labels import plural
from analysis.core.results import EXEC, Results, UNVERIFIED, exec_label
from analysis.core.units import parse_rate, rate_text
from analysis.stats import aggregates as stats, readers
from analysis.stats.fleet_bounds import (DESIGNS, ENGINES, KINDS, PIPELINED, best_bound, bound,
                                         fill_chunks, whole)

__all__ = ["DESIGNS", "ENGINES", "KINDS", "PIPELINED", "bound", "fill_chunks"]  # re-exported

FLEET = "fleet"
CHUNK = 4 * 2**20  # the strategy's default chunk
# A round, and a series of rounds, never pools runs under different [cluster] rates (`nic` and
# `uplink`: the rate texts a record ran under, "" for records from before they were kept) or
# different patterns (what each node needs: results.load's `pattern`, `replicated` for one
# node and for records without one).
ROUND = ["file", "cache", "pattern", "strategy_spec", "nodes", "nic", "uplink", "rep"]
SERIES = ["file", "cache", "pattern", "strategy_spec", "nodes", "nic", "uplink"]
SPEC = ["design", "label", "kind", "chunk"]  # what every record of a spec shares
BYTES = ["tensor_bytes", "needed_bytes", "store_bytes", "peer_rx_bytes", "peer_tx_bytes",
         "nic_rx_bytes", "nic_tx_bytes"]
NODE_COLUMNS = ROUND + ["node", "session"] + SPEC + [
    "status", "error", "counted", "wall_s", "load_start_unix_s", "ready_s", "connect_s", "cpu_s",
    "store_requests"] + BYTES
# Per node, the median and the largest over a round's nodes.
PER_NODE = ["received", "wire_in", "wire_out", "wire_over"]
SPREADS = [f"{c}_{m}" for c in PER_NODE for m in ("median", "max")]
FIGURES = ["model_bytes", "needed_bytes", "store_total", "duration_s", "first_s", "spread",
           "slowest", "amplification", "nic_in", "nic_in_node", "nic_out", "nic_out_node",
           "ready_s", "connect_s"] + SPREADS
BOUNDS = ["bound_s", "of_bound", "best_bound_s", "of_best"]
ROUND_COLUMNS = ROUND + ["session"] + SPEC + ["nodes_recorded", "ok_nodes"] + FIGURES + BOUNDS \
    + ["reason"]
SUMMARY_COLUMNS = SERIES + SPEC + [
    "rounds", "failed", "seconds", "seconds_low", "seconds_high", "connect_s", "spread", "slowest",
    "amplification", "nic_in", "nic_out", "model_bytes", "needed_bytes", "store_total"] \
    + SPREADS + BOUNDS


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


def _nodes(runs: pd.DataFrame, design: pd.Series) -> pd.Series:
    """Each record's N: its `nodes`, else an engine's command's details.nodes (its place in
    the round, as the command sent it); null for a record of no round."""
    nodes = pd.to_numeric(_field(runs, "nodes"), errors="coerce")
    sent = _from(_field(runs, "details"), "nodes")
    return nodes.fillna(sent.where(design.isin(ENGINES)))


def _designs(runs: pd.DataFrame) -> pd.Series:
    details, params = _field(runs, "details"), _field(runs, "params")
    return pd.Series([design_of(*a) for a in zip(runs["strategy"], runs["strategy_spec"],
                                                   details, params)],
                     index=runs.index, dtype=object)


def shown(results: Results) -> bool:
    """Whether a report needs the section: some record carries `nodes` (a cluster's), or is an
    engine's command of a round (`_nodes`)."""
    runs = results.runs
    return bool(len(runs)) and bool(_nodes(runs, _designs(runs)).notna().any())


def design_of(strategy: str, spec: str, details, params) -> str:
    """A record's design: a fleet record's details.design, else its params.design, else its
    spec's `design=` option; an exec command's details.design (else its label) where it names
    an engine's (ENGINES); any other strategy's spec itself."""
    if strategy == EXEC:
        sent = details.get("design") if isinstance(details, dict) else None
        for name in (sent, exec_label(spec)):
            if name in ENGINES:
                return name
        return str(spec)
    if strategy != FLEET:
        return str(spec)
    for source in (details, params):
        if isinstance(source, dict) and isinstance(source.get("design"), str):
            return source["design"]
    found = [o[len("design="):] for o in str(spec).split(":") if o.startswith("design=")]
    return found[0] if found else str(spec)


def pipelined(spec: str, details, params) -> bool:
    """Whether a fleet stripe ran pipelined: its details.stripe, else params.stripe, else its
    spec's `stripe=` option, is "pipelined" (none: phased, as every record from before the
    option)."""
    for source in (details, params):
        if isinstance(source, dict) and isinstance(source.get("stripe"), str):
            return source["stripe"] == "pipelined"
    return "stripe=pipelined" in str(spec).split(":")


def label_of(strategy: str, spec: str, design: str, kind: str | None = None) -> str:
    """A spec in the tables: a fleet spec as its kind (`stripe (pipelined)` for a pipelined
    stripe) and its other options (`bcast (chunk=1MiB)`, `stripe (pipelined, chunk=1MiB)`); an
    engine's command as its label (`torch_bcast`); any other as itself."""
    if strategy == EXEC:  # its label, else (a spec without one) the engine's design
        label = exec_label(spec)
        return label if label and label != str(spec) else design
    if strategy != FLEET:
        return str(spec)
    rest = [o for o in str(spec).split(":")[1:]
            if not o.startswith("design=") and not o.startswith("stripe=")]
    if kind == PIPELINED:
        return f"stripe ({', '.join(['pipelined'] + rest)})"
    return design + (f" ({', '.join(rest)})" if rest else "")


def _kind(strategy: str, design: str, stripe_pipelined: bool) -> str:
    """The kind the bound and the model give a design (fleet_bounds' KINDS)."""
    if design == "stripe" and strategy == FLEET and stripe_pipelined:
        return PIPELINED
    return design if design in KINDS else "every"


def nodes_table(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per node's record of a cluster experiment (results.load's `runs` with `nodes`,
    and an engine's commands), every status (NODE_COLUMNS): node (proc, else details.node),
    session (its index into env.json `sessions`, null for records from before it was kept),
    pattern (results.load's), nic and uplink (the rates it ran under, "" where not
    recorded), design, label and kind (`_kind`: one of KINDS, `every` for any other strategy),
    chunk (params.chunk, else details.chunk, else CHUNK), cpu_s (the timed region's load_user_s
    + load_sys_s, else the worker's user_s + sys_s), needed_bytes (the record's, else its
    tensor_bytes: a record from before it was kept needed the whole model), the NIC's counters
    (nic_rx_bytes, nic_tx_bytes; null where not read), the details' figures. Another
    strategy's record without details.store_bytes read everything from the store (its
    details.bytes_received, else its tensor_bytes) and nothing from a peer."""
    design = _designs(runs)
    nodes = _nodes(runs, design)
    runs, design = runs[nodes.notna()], design[nodes.notna()]
    details, params = _field(runs, "details"), _field(runs, "params")
    own = (runs["strategy"] == FLEET) | design.isin(ENGINES)  # the details carry every count
    number = {c: pd.to_numeric(_field(runs, c), errors="coerce")
              for c in ("wall_s", "user_s", "sys_s", "load_user_s", "load_sys_s", "tensor_bytes",
                        "needed_bytes", "nic_rx_bytes", "nic_tx_bytes", "load_start_unix_s",
                        "session")}
    # The timed region's CPU where the record has it (what competes with the transfers), as
    # stats.load_or_process prefers it; else the whole worker's.
    cpu = (number["load_user_s"] + number["load_sys_s"]).fillna(
        number["user_s"] + number["sys_s"])
    store = _from(details, "store_bytes")
    store = store.where(own, store.fillna(_from(details, "bytes_received"))
                        .fillna(number["tensor_bytes"]))
    kind = [_kind(s, d, pipelined(p, x, q)) for s, d, p, x, q in
            zip(runs["strategy"], design, runs["strategy_spec"], details, params)]
    out = runs.assign(
        nodes=nodes[nodes.notna()].astype("int64"),
        node=pd.to_numeric(_field(runs, "proc"), errors="coerce").fillna(
            _from(details, "node")).fillna(0).astype("int64"),
        design=design, kind=kind,
        label=[label_of(s, p, d, k) for s, p, d, k in zip(runs["strategy"], runs["strategy_spec"],
                                                          design, kind)],
        chunk=_from(params, "chunk").fillna(_from(details, "chunk")).fillna(CHUNK),
        wall_s=number["wall_s"], tensor_bytes=number["tensor_bytes"],
        needed_bytes=number["needed_bytes"].fillna(number["tensor_bytes"]),
        nic_rx_bytes=number["nic_rx_bytes"], nic_tx_bytes=number["nic_tx_bytes"],
        load_start_unix_s=number["load_start_unix_s"], session=number["session"],
        # Strings, so that grouping keeps the records that have none.
        **{c: _field(runs, c).fillna("") for c in ("nic", "uplink")},
        pattern=_field(runs, "pattern").fillna("replicated"),
        cpu_s=cpu, store_bytes=store,
        **{c: _from(details, c) for c in ("ready_s", "connect_s", "store_requests")},
        **{c: _from(details, c).where(own, _from(details, c).fillna(0))
           for c in ("peer_rx_bytes", "peer_tx_bytes")})
    return out[NODE_COLUMNS].reset_index(drop=True)


def why_not(node) -> str:
    """Why a node's record does not count: its status and error, or what its ok record lacks."""
    if node["status"] != "ok":
        return f"node {node['node']}: {node['status']}: {node['error']}"
    if not node["wall_s"] > 0:
        return f"node {node['node']}: ok, no wall time"
    return f"node {node['node']}: {UNVERIFIED}"


def _per_node(values: pd.Series, name: str) -> dict:
    """`name`_median and `name`_max over a round's nodes; null where a node has none."""
    whole_round = values.notna().all() and len(values)
    return {f"{name}_median": float(values.median()) if whole_round else None,
            f"{name}_max": float(values.max()) if whole_round else None}


def _bytes(ok: pd.DataFrame, row: dict) -> dict:
    """A complete round's bytes (the module's docstring, 1.): M, what the nodes needed, what
    the store sent over it, what each node received over its needs, its NIC's counters."""
    need = ok["needed_bytes"].set_axis(ok["node"])
    needed = need.sum(min_count=len(ok))
    # M: the whole model, which each node needs (their median) or whose parts they need.
    model = float(need.median()) if whole(row["pattern"]) else needed
    into = (ok["store_bytes"] + ok["peer_rx_bytes"]).set_axis(ok["node"])
    store = ok["store_bytes"].sum(min_count=len(ok))
    out = {"model_bytes": model, "needed_bytes": needed, "store_total": store,
           "amplification": store / needed,
           **_per_node(into / need, "received"),
           **_per_node(ok["nic_rx_bytes"].set_axis(ok["node"]), "wire_in"),
           **_per_node(ok["nic_tx_bytes"].set_axis(ok["node"]), "wire_out"),
           **_per_node(ok["nic_rx_bytes"].set_axis(ok["node"]) / into, "wire_over")}
    for name, share in (("nic_in", into / model), ("nic_out", ok["peer_tx_bytes"].set_axis(
            ok["node"]) / model)):
        if share.notna().all():
            out.update({name: float(share.max()), f"{name}_node": int(share.idxmax())})
    return out


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
    # The mesh is whole once its slowest node has connected: the largest connect_s.
    connect = float(ok["connect_s"].max()) if ok["connect_s"].notna().all() else None
    # The same duration as every round of several readers: the first start to the last end.
    row.update(duration_s=readers.duration(ok)[0], first_s=float(wall.min()),
               spread=float(wall.max() / wall.min()),
               slowest=int(wall.idxmax()) if wall.max() > wall.min() else None,
               ready_s=float(ok["ready_s"].max()) if ok["ready_s"].notna().all() else None,
               connect_s=connect,
               **_bytes(ok, row))
    return row


def rounds(nodes: pd.DataFrame, env: dict | None = None) -> pd.DataFrame:
    """One row per round (ROUND_COLUMNS) of `nodes_table`'s rows: a failed round has no
    figures and its `reason`; a complete one none, and its bounds from the fabric of the
    session it ran in (`with_bounds`; `env`: env.json)."""
    out = [_round(key, g) for key, g in nodes.groupby(ROUND, sort=False, dropna=False)]
    return with_bounds(pd.DataFrame(out, columns=ROUND_COLUMNS), env or {})


def with_bounds(table: pd.DataFrame, env: dict) -> pd.DataFrame:
    """The rounds with BOUNDS for each complete one, from the fabric of the session it ran in
    (`fabric_of`): the bound of its own design under its pattern, the best design's (the
    lowest of every design's under its pattern at its N), and each over its duration (1: at the
    fabric's limit); null without a fabric."""
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
        own = bound(r["kind"], n, m, chunk, fabric, r["pattern"])
        best = best_bound(n, m, chunk, fabric, r["pattern"])
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
    """Replicated first, cold first, then the designs in KINDS' order (the project's, then the
    engines'; others after), each by its nodes."""
    rank = {k: i for i, k in enumerate(KINDS)}
    own = frame["design"].isin(DESIGNS + ENGINES)
    return frame.assign(_p=~frame["pattern"].map(whole), _c=frame["cache"].map(
        {"cold": 0, "warm": 1}), _d=frame["kind"].map(rank).where(own, len(rank))).sort_values(
        ["file", "_p", "pattern", "_c", "_d", "strategy_spec", "nodes"], kind="stable").drop(
        columns=["_p", "_c", "_d"]).reset_index(drop=True)


def summarize(rounds_table: pd.DataFrame) -> pd.DataFrame:
    """One row per series (SUMMARY_COLUMNS; the module's docstring, 2.): the medians over its
    complete rounds (seconds with the median's 95% interval, seconds_low and seconds_high, null
    under 6 rounds), each round's bounds its own (no bound without a fabric)."""
    rows = []
    for key, g in rounds_table.groupby(SERIES, sort=False):
        done = g[g["duration_s"].notna()]
        low, high = stats.median_interval(done["duration_s"])
        rows.append({**dict(zip(SERIES, key)), **g.iloc[0][SPEC].to_dict(), "rounds": len(g),
                     "failed": len(g) - len(done), "slowest": _most(done["slowest"]),
                     **{c: stats.median_of(done[c]) for c in [
                         "connect_s", "spread", "amplification", "nic_in", "nic_out", "model_bytes",
                         "needed_bytes", "store_total"] + SPREADS + BOUNDS},
                     "seconds": stats.median_of(done["duration_s"]), "seconds_low": low,
                     "seconds_high": high})
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
