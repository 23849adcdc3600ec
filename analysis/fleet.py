"""Fleet: N nodes load one model from one store at once, and how the way they share the work
(the design) scales with N, measured and modelled.

    /usr/bin/python3 -m analysis.fleet RESULTS [--nic RATE --uplink RATE --model SIZE
                                               --cpu-per-node S --cores-per-node C --deadline S]

The experiment (env.json `cluster`). Each node is a network namespace with a NIC of its own,
shaped both ways (tc, `cluster.nic`); the store, nginx in a namespace of its own, sits behind its
own shaped uplink (`cluster.uplink`); a bridge joins them, all on one machine of
`cluster.cores` cores. Strategy `fleet` with `design`:
- every: each node pulls the whole model M from the store (ranged GETs);
- bcast: node 0 pulls M; each chunk c, as it arrives, goes to its owner, node 1 + c mod (N-1),
  which forwards it to every node but 0 (a pipelined scatter and all-gather): node 0's NIC
  carries M in and M out, each other node's M in and M (N-2)/(N-1) out;
- stripe: node k pulls the chunks c with c mod N == k (M/N) and, once its stripe is in, sends
  it to every other node (an all-gather): the store sends M in all;
- chain: node 0 pulls, and node k forwards each chunk to node k+1 as it arrives (a relay).
Any other strategy whose records carry `nodes` (http_ranges run on every node) is a row of the
same tables by its strategy spec, and counts as `every` in the bound and the model: each of its
nodes reads the whole model from the store by itself.

1. Rounds (`rounds`). The records of one (file, cache, strategy spec, nodes, nic, uplink, rep),
   one per node (`proc`), are a round: `nic` and `uplink` are the [cluster] rates the record
   ran under ("" in records from before they were kept), so that rounds under different
   rates never pool. It counts only whole: every node's record there and counted
   (results.load's rule: ok, its bytes verified, a wall time), else it is a failed round whose
   `reason` names each node that failed and why. Its duration is every round of several
   readers' (readers.duration): from its first node's start to its last node's end
   (load_start_unix_s + wall_s; the nodes are released together from the start barrier, and
   a node's clock stops once it holds every byte and has done its forwarding), the largest
   wall_s in records without a start; its spread, the last node's wall_s over the first's, the
   slowest node named; its read amplification, the nodes' store_bytes summed over M (every: N;
   the other designs: 1); the bytes each NIC carried, in (store_bytes + peer_rx_bytes) and out
   (peer_tx_bytes), the busiest node's in units of M. M: the nodes' tensor_bytes (each node
   gets the whole model), their median. Its bounds (3.) are from the fabric of the session it
   ran in (`session`, the records' index into env.json `sessions`; `with_bounds`): its
   design's (`bound_s`) and the best design's (the lowest of the four at that N), and each
   over its duration (`of_bound`, `of_best`; 1: at the fabric's limit, above 1 marked: the
   round beat the bound).
2. Series (`summarize`): per (file, cache, spec, nodes, nic, uplink) the median duration over
   the complete rounds, the rounds and failed ones, the medians of amplification, spread, the
   busiest NICs and the rounds' bounds and shares of them, the node most often slowest.
3. The fabric and its bound (`fabric_of`, `bound`). A session's cluster (`cluster_of`):
   env.json `sessions[i].cluster` (each session of a resumed experiment makes and measures the
   cluster again), else the top-level `cluster` (the latest session's; records without
   `session` use it). Its links as MEASURED (iperf3 over each
   link, cluster.links: "down" into that end, "up" out of it): the uplink is the store
   link's up figure; a node's NIC the median of the nodes' down figures (in) and up figures
   (out); a configured rate (cluster.uplink_bits_per_s, nic_bits_per_s) stands in only where no
   figure was measured, and `Fabric.source` says so. Rates are bits per second, M is bytes: a
   time is 8 M / rate. The lower bound on a round's duration:
   every, max(N M / uplink, M / nic); bcast and chain, M / min(uplink, nic) plus the pipeline's
   fill (bcast: min(2, N-1) chunks at nic, one to the owner and one on; chain: N-1 chunks at
   nic); stripe, max(M / uplink, M/N / nic) + (N-1)/N M / nic (the store sends M, each node
   takes its M/N, and only then does the all-gather of the rest begin).
4. The model (`Model`): a flow-level simulation (`simulate`) of each design, its rates by
   max-min fair sharing (`max_min`, progressive filling) of these resources: the store's
   uplink; each node's NIC in and NIC out; and CPU. A node's CPU cost is fitted from the
   records by kind of byte, one pair for every design (`cpu_fit`: least squares of its CPU
   seconds, load_user_s + load_sys_s of the timed region, else the worker's user_s + sys_s,
   on the bytes it got from the store and the bytes it moved to and from other nodes), so that
   the designs differ in what they move, never in what a byte costs. On the measured machine
   every node shares its `cluster.cores` (one CPU resource of that many CPU seconds per
   second); in a described topology each node has a CPU of its own. A flow is bytes that load
   several resources with weights (per byte of the flow): every, a flow of M per node (uplink
   1, its NIC in 1); bcast, one flow of M (uplink 1; node 0 in 1 and out 1; every other node
   in 1 and out (N-2)/(N-1)); chain, one flow of M (uplink 1; every node in 1, every node but
   the last out 1); stripe, N flows of M/N from the store, then, as each ends, its node's
   all-gather flow of M/N (its NIC out N-1, every other node's NIC in 1); each flow's CPU
   weight is each kind of byte's CPU cost times the bytes of that kind it moves at each node (the store's
   own CPU, nginx's, is not in it: no record has it). A node's time
   is when its flows end, plus the pipeline's fill for bcast and chain as in the bound (chain:
   k chunks at nic for node k), plus a start cost per round fitted from the records (the median
   of measured less modelled seconds) where it lowers the largest error (`fit_start` says so).
   Every measured series is predicted (`predictions`) on the fabric its rounds ran on (their
   session's; the median of each rate where they ran in several: `series_fabrics`): by the
   fit on every series (`modelled_s`, `error`: in sample, since the CPU per byte and the start
   cost were fitted on the series it scores); HELD OUT, by the same fit (`fit`) made without
   the series' records and time (`held_out_s`, `held_out_error`); and, at the largest N, by
   the fit on the smaller Ns alone (`from_smaller_s`, `from_smaller_error`): what the curves
   do. Each with the resource that held its last flow back.
5. Curves (`curve`, `changes`, `first_past`): the model at N = 1, 2, 4, ... 1024, for the
   measured fabric and for a described one (`--nic`, `--uplink`, default 100gbit and 25gbit;
   `--model`, default the measured M; `--cpu-per-node`, CPU seconds per GB moved, default the
   fitted figure; `--cores-per-node`, default the measured machine's cores): where the fastest
   design changes (the first N, found between powers of 2 by bisection), and the first N at
   which the slowest node would pass a deadline (`--deadline`, default 600 s: NCCL's watchdog
   timeout of 10 minutes), per design (bisection too, assuming time grows with N). Each
   curve carries a band (`low_s`, `high_s`): the model's time over 1 + the highest and the
   lowest held-out error (`held_out_range`), the times a measurement would have given had the
   model erred there as it did on the series it did not see.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
from dataclasses import dataclass, field, replace

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from scipy import sparse

from analysis import ceiling, readers, stats
from analysis.noise import plural, records
from analysis.results import UNVERIFIED, Results, ResultsError, guard, load

TITLE = "Fleet"
FLEET = "fleet"
DESIGNS = ("every", "bcast", "stripe", "chain")
CHUNK = 4 * 2**20  # the strategy's default chunk
NODE_COUNTS = [2**i for i in range(11)]  # the curves' N: 1 ... 1024
DEADLINE_S = 600.0  # NCCL's watchdog: a collective that waits 10 minutes kills the job
DESCRIBED = {"nic": "100gbit", "uplink": "25gbit"}
TIE = 1e-3  # designs within 0.1% of the fastest tie with it
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
# Resources of the model: the store's uplink, the shared CPU, then per node k of N its NIC in
# (IN + k), its NIC out (IN + N + k) and its own CPU (IN + 2N + k).
UPLINK, CPU, IN = 0, 1, 2


# --- units -------------------------------------------------------------------------------------

_PREFIX = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12,
           "ki": 2.0**10, "mi": 2.0**20, "gi": 2.0**30, "ti": 2.0**40}
_RATE = re.compile(r"([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)(k|m|g|t|ki|mi|gi|ti)?(bit|bps)?")
_SIZE = re.compile(r"([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)(k|m|g|t|ki|mi|gi|ti)?b?")


def parse_rate(text) -> float:
    """Bits per second of a rate written as tc writes one: a number, a prefix (k, m, g, t:
    decimal; ki, mi, gi, ti: binary) and `bit` (bits per second) or `bps` (BYTES per second,
    times 8); a bare number is bits per second, as in tc. ValueError for anything else."""
    m = _RATE.fullmatch(str(text).strip().lower())
    if not m or (m.group(2) and not m.group(3)):
        raise ValueError(f"{text!r} is not a rate (write it as tc does: 200mbit, 25gbit, 1gbps)")
    bits = float(m.group(1)) * _PREFIX[m.group(2) or ""] * (8 if m.group(3) == "bps" else 1)
    if not bits > 0 or not math.isfinite(bits):
        raise ValueError(f"{text!r}: a rate must be above 0")
    return bits


def parse_size(text) -> float:
    """Bytes of a size: a number, a prefix (k, m, g, t: decimal; ki, mi, gi, ti: binary) and an
    optional B (16GB, 8GiB, 4MiB); a bare number is bytes. ValueError for anything else."""
    m = _SIZE.fullmatch(str(text).strip().lower())
    if not m:
        raise ValueError(f"{text!r} is not a size (16GB, 8GiB, 4MiB, bytes)")
    size = float(m.group(1)) * _PREFIX[m.group(2) or ""]
    if not size > 0 or not math.isfinite(size):
        raise ValueError(f"{text!r}: a size must be above 0")
    return size


def size_text(size: float) -> str:
    """Bytes in words: GB from 1 GB up, else MB (decimal, as rates are)."""
    return f"{size / 1e9:.3g} GB" if size >= 1e9 else f"{size / 1e6:.3g} MB"


def mbit(bits_per_s: float | None) -> str:
    return "" if bits_per_s is None or pd.isna(bits_per_s) else f"{bits_per_s / 1e6:,.0f}"


def rate_text(bits_per_s: float) -> str:
    """A rate in words: Gbit/s from 1 Gbit/s up, else Mbit/s."""
    if bits_per_s >= 1e9:
        return f"{bits_per_s / 1e9:.3g} Gbit/s"
    return f"{bits_per_s / 1e6:.3g} Mbit/s"


def _positive(value) -> float | None:
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


def _iperf(links: list[dict], direction: str) -> list[float]:
    """The links' measured iperf3 figures of one direction (`down_bits_per_s`, `up_...`)."""
    found = [_positive((link.get("iperf3") or {}).get(direction)) for link in links
             if isinstance(link.get("iperf3"), dict)]
    return [x for x in found if x is not None]


def _configured(cluster: dict, key: str) -> float | None:
    """A configured rate: cluster.KEY_bits_per_s, else cluster.KEY parsed as tc's."""
    bits = _positive(cluster.get(f"{key}_bits_per_s"))
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
    value = _configured(cluster, key)
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
    uplink = _rate(_iperf(store, "up_bits_per_s"), cluster, "uplink", "store uplink",
                   "out of the store", words)
    down, up = _iperf(nodes, "down_bits_per_s"), _iperf(nodes, "up_bits_per_s")
    nic_in = _rate(down, cluster, "nic", "node NIC in",
                   f"the median of the down figures of {plural(len(down), 'node')}", words)
    nic_out = _rate(up, cluster, "nic", "node NIC out",
                    f"the median of the up figures of {plural(len(up), 'node')}", words)
    if uplink is None or nic_in is None or nic_out is None:
        return None
    host = env.get("host") or {}
    cores = _positive(cluster.get("cores")) or _positive(host.get("cores"))
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


# --- the model: max-min fair flows -------------------------------------------------------------

def max_min(weights, capacity) -> tuple[np.ndarray, np.ndarray]:
    """(rate of each flow, the resource that stopped it) by max-min fairness, progressive
    filling: every flow not yet stopped grows at the same pace (`weights[f, r]`: what a unit
    of flow f's rate uses of resource r) until some resource is full (`capacity[r]`, inf for
    none); the flows that use it stop there, and the rest go on. A flow that uses no limited
    resource is infinitely fast (its stopping resource -1)."""
    w = sparse.csr_matrix(weights, dtype=float)
    cap = np.asarray(capacity, dtype=float)
    rate, neck = np.zeros(w.shape[0]), np.full(w.shape[0], -1)
    left, limited = cap.copy(), np.isfinite(cap)
    active = np.ones(w.shape[0], dtype=bool)
    while active.any():
        load = w.T @ active.astype(float)
        use = limited & (load > 0)
        if not use.any():
            rate[active] = np.inf
            break
        reach = np.full(cap.shape, np.inf)
        reach[use] = left[use] / load[use]
        step = reach.min()
        rate[active] += step
        left[use] -= step * load[use]
        full = use & (reach <= step * (1 + 1e-9))  # every resource full at this step
        stopped = active & (w @ full.astype(float) > 0)
        if stopped.any():
            # The full resource each stopped flow leans on most is the one named.
            neck[stopped] = np.asarray(w[stopped].multiply(full).argmax(axis=1)).ravel()
        active &= ~stopped
    return rate, neck


@dataclass(frozen=True)
class Flow:
    """Bytes to move (`size`) that load resources `cols` by `vals` per byte, started once the
    flows `after` (their indices) have ended."""
    size: float
    cols: np.ndarray
    vals: np.ndarray
    after: tuple[int, ...] = ()


def simulate(flows: list[Flow], capacity: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the time each flow ends, the resource that held it back last): the running flows'
    rates by `max_min`, recomputed each time one ends and others start."""
    rows = np.repeat(np.arange(len(flows)), [len(f.cols) for f in flows])
    w = sparse.csr_matrix((np.concatenate([f.vals for f in flows]),
                           (rows, np.concatenate([f.cols for f in flows]))),
                          shape=(len(flows), len(capacity)))
    size = np.array([f.size for f in flows], dtype=float)
    left, end = size.copy(), np.full(len(flows), np.nan)
    neck = np.full(len(flows), -1)
    started = np.array([not f.after for f in flows])
    t = 0.0
    while np.isnan(end).any():
        running = np.flatnonzero(started & np.isnan(end))
        if not len(running):
            raise ValueError("flows wait on each other")
        rate, neck[running] = max_min(w[running], capacity)
        with np.errstate(divide="ignore", invalid="ignore"):
            need = np.where(rate > 0, left[running] / rate, np.inf)
        dt = float(need.min())
        if not math.isfinite(dt):
            raise ValueError("a flow has no rate")
        left[running] = np.where(np.isinf(rate), 0.0, left[running] - rate * dt)
        t += dt
        done = running[left[running] <= 1e-9 * np.maximum(size[running], 1.0)]
        end[done], left[done] = t, 0.0
        for i in np.flatnonzero(~started):
            started[i] = not np.isnan(end[list(flows[i].after)]).any()
    return end, neck


def capacity(n: int, fabric: Fabric) -> np.ndarray:
    """The resources' capacities for `n` nodes (bytes per second; CPU seconds per second)."""
    cap = np.full(IN + 3 * n, np.inf)
    cap[UPLINK] = fabric.uplink_bps / 8
    cap[IN:IN + n] = fabric.nic_in_bps / 8
    cap[IN + n:IN + 2 * n] = fabric.nic_out_bps / 8
    if fabric.cores:
        if fabric.shared_cpu:
            cap[CPU] = fabric.cores
        else:
            cap[IN + 2 * n:] = fabric.cores
    return cap


def make_flow(n: int, size: float, cpu: tuple | None, shared: bool, uplink: float = 0.0,
              into=None, out=None, after: tuple[int, ...] = (), store=None) -> Flow:
    """A flow of `size` bytes that loads the uplink by `uplink`, node k's NIC in by into[k]
    and out by out[k] per byte, and CPU at each node: `cpu` is (seconds per byte from the
    store, seconds per byte to or from a peer), `store[k]` the part of into[k] that comes from
    the store (none by default); on the shared CPU, or each node's own."""
    into = np.zeros(n) if into is None else np.asarray(into, dtype=float)
    out = np.zeros(n) if out is None else np.asarray(out, dtype=float)
    store = np.zeros(n) if store is None else np.asarray(store, dtype=float)
    dense = np.zeros(IN + 3 * n)
    dense[UPLINK] = uplink
    dense[IN:IN + n], dense[IN + n:IN + 2 * n] = into, out
    if cpu:
        per_node = cpu[0] * store + cpu[1] * (into - store + out)
        if shared:
            dense[CPU] = float(per_node.sum())
        else:
            dense[IN + 2 * n:] = per_node
    cols = np.flatnonzero(dense)
    return Flow(float(size), cols, dense[cols], after)


def shares(kind: str, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(from the store, from peers, to peers) per node, in units of M: what each design's
    node k receives and sends (the module's docstring)."""
    store, rx, tx = np.zeros(n), np.zeros(n), np.zeros(n)
    if kind == "every":
        store[:] = 1.0
    elif kind == "stripe":
        store[:], rx[:], tx[:] = 1.0 / n, (n - 1) / n, (n - 1) / n
    else:
        store[0], rx[1:] = 1.0, 1.0
        if kind == "bcast" and n > 1:
            tx[0], tx[1:] = 1.0, (n - 2) / (n - 1)
        elif kind == "chain":  # every node but the last forwards it all
            tx[:-1] = 1.0
    return store, rx, tx


def design_flows(kind: str, n: int, model: float, cpu: tuple | None,
                 shared: bool) -> list[Flow]:
    """The flows of one round of design `kind` (the module's docstring, 4.)."""
    unit = np.eye(n)
    if kind == "stripe" and n > 1:
        part = model / n
        flows = [make_flow(n, part, cpu, shared, uplink=1.0, into=unit[k], store=unit[k])
                 for k in range(n)]
        for k in range(n):
            flows.append(make_flow(n, part, cpu, shared, into=1.0 - unit[k],
                                   out=(n - 1) * unit[k], after=(k,)))
        return flows
    if kind in ("bcast", "chain"):
        store, rx, tx = shares(kind, n)
        return [make_flow(n, model, cpu, shared, uplink=1.0, into=store + rx, out=tx,
                          store=store)]
    return [make_flow(n, model, cpu, shared, uplink=1.0, into=unit[k], store=unit[k])
            for k in range(n)]


def resource_name(index: int, n: int) -> str:
    if index < 0:
        return "nothing"
    if index == UPLINK:
        return "store uplink"
    if index == CPU:
        return "CPU (shared)"
    k, which = (index - IN) % n, ("NIC in", "NIC out", "CPU")[(index - IN) // n]
    return f"node {k} {which}"


@dataclass
class Model:
    """The flow model of one fabric for a model of `model_bytes` in chunks of `chunk`: `cpu`,
    CPU seconds per byte a node moves, by kind of byte ({"store": from the store over HTTP,
    "peer": to or from another node}; empty: CPU left out), `start_s` the fixed start cost of
    a round."""
    fabric: Fabric
    model_bytes: float
    chunk: float = CHUNK
    cpu: dict = field(default_factory=dict)
    start_s: float = 0.0
    _seen: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def cpu_of(self) -> tuple | None:
        pair = (self.cpu.get("store"), self.cpu.get("peer"))
        ok = all(v is not None and math.isfinite(v) and v >= 0 for v in pair)
        return pair if ok and any(pair) else None

    def times(self, kind: str, n: int) -> tuple[np.ndarray, str]:
        """(each node's seconds, what held the last flow back) for a round of `n` nodes."""
        kind = kind if kind in DESIGNS else "every"
        if (kind, n) in self._seen:
            return self._seen[(kind, n)]
        flows = design_flows(kind, n, self.model_bytes, self.cpu_of(), self.fabric.shared_cpu)
        end, neck = simulate(flows, capacity(n, self.fabric))
        fill = fill_chunks(kind, n) * self.chunk * 8 / self.fabric.nic_in_bps
        if kind == "every":
            t = end
        elif kind == "stripe":
            t = np.full(n, end.max())
        elif kind == "bcast":
            t = np.r_[end[0], np.full(n - 1, end[0] + fill)]
        else:  # chain: node k waits k chunks behind node 0
            t = end[0] + np.arange(n) * self.chunk * 8 / self.fabric.nic_in_bps
        out = (t + self.start_s, resource_name(int(neck[int(np.argmax(end))]), n))
        self._seen[(kind, n)] = out
        return out

    def seconds(self, kind: str, n: int) -> float:
        """The round's duration: its last node's time."""
        return float(self.times(kind, n)[0].max())


def cpu_fit(nodes: pd.DataFrame) -> dict[str, float]:
    """CPU seconds per byte by kind of byte, one pair for every design: least squares of each
    counted record's cpu_s on its store_bytes and its peer bytes (peer_rx_bytes +
    peer_tx_bytes), {"store": a, "peer": b}; without records that moved bytes to or from
    peers, a peer byte is taken to cost what a store byte does. Empty without a record."""
    ok = nodes[nodes["counted"]].dropna(subset=["cpu_s", "store_bytes"])
    if ok.empty:
        return {}
    store = ok["store_bytes"].to_numpy(float)
    peer = (ok["peer_rx_bytes"].fillna(0) + ok["peer_tx_bytes"].fillna(0)).to_numpy(float)
    cpu = ok["cpu_s"].to_numpy(float)
    if not (peer > 0).any():
        a = float(np.sum(cpu * store) / np.sum(store * store)) if (store > 0).any() else 0.0
        return {"store": a, "peer": a} if a > 0 else {}
    (a, b), *_ = np.linalg.lstsq(np.c_[store, peer], cpu, rcond=None)
    return {"store": max(float(a), 0.0), "peer": max(float(b), 0.0)}


# --- the model against the measurements, and its curves ----------------------------------------

PREDICTION_COLUMNS = SERIES + SPEC + ["measured_s", "flow_s", "modelled_s", "error",
                                      "held_out_s", "held_out_error", "from_smaller_s",
                                      "from_smaller_error", "limited_by"]


def largest_error(measured, modelled) -> float:
    """The largest |modelled - measured| / measured; NaN without a point."""
    measured, modelled = np.asarray(measured, float), np.asarray(modelled, float)
    ok = ~np.isnan(modelled)
    return float(np.max(np.abs(modelled[ok] - measured[ok]) / measured[ok])) if ok.any() \
        else math.nan


def fit_start(measured: pd.Series, flow: pd.Series) -> tuple[float, str]:
    """(the start cost per round, the sentence that says what it is): the median of measured
    less modelled seconds over the series, kept only where it is above 0 and lowers the
    largest error."""
    if not len(measured):
        return 0.0, ""
    start = float(np.median(measured - flow))
    plain, fitted = largest_error(measured, flow), largest_error(measured, flow + start)
    if start > 0 and fitted < plain:
        return start, (f"A fixed start cost of {start:.3g} s per round is added to every "
                       "modelled time: the median of measured less modelled seconds over the "
                       f"{len(measured)} series (what no flow carries: starting the "
                       "transfers, connecting the peers, the first requests' round trips); it "
                       f"lowers the largest error of the fit from {plain:.0%} to {fitted:.0%}.")
    return 0.0, (f"No start cost is added: the median of measured less modelled seconds "
                 f"({start:.3g} s) would not lower the largest error ({plain:.0%}).")


def flow_times(series: pd.DataFrame, base: Model, cpu: dict, fabrics: dict) -> pd.DataFrame:
    """Per row of `series` (summary rows the model can predict): measured_s, flow_s (the model
    with CPU per byte `cpu` and no start cost, on the series' own M, chunk and fabric) and
    limited_by."""
    rows, seen = [], {}
    for _, s in series.iterrows():
        # Series that differ only in what the model does not see (the cache state) are one
        # simulation.
        what = (fabrics[tuple(s[SERIES])], float(s["model_bytes"]), float(s["chunk"]))
        if what not in seen:
            seen[what] = replace(base, fabric=what[0], model_bytes=what[1], chunk=what[2],
                                 cpu=cpu, start_s=0.0)
        t, neck = seen[what].times(s["kind"], int(s["nodes"]))
        rows.append([float(s["seconds"]), float(t.max()), neck])
    return pd.DataFrame(rows, index=series.index, columns=["measured_s", "flow_s", "limited_by"])


@dataclass
class Fit:
    """The model's two fitted figures, CPU seconds per byte by kind (`cpu_fit`) and the start
    cost with its sentence (`fit_start`), and every series' flow times under them."""
    cpu: dict
    start_s: float
    note: str
    flows: pd.DataFrame  # flow_times'

    def modelled(self) -> pd.Series:
        return self.flows["flow_s"] + self.start_s


def fit(nodes: pd.DataFrame, series: pd.DataFrame, train, base: Model,
        fabrics: dict) -> Fit:
    """The model fitted on the series `train` marks (a boolean per row of `series`) and their
    nodes' records alone, and every series modelled under that fit."""
    cpu = cpu_fit(nodes.merge(series.loc[train, SERIES], on=SERIES))
    flows = flow_times(series, base, cpu, fabrics)
    start, note = fit_start(flows.loc[train, "measured_s"], flows.loc[train, "flow_s"])
    return Fit(cpu, start, note, flows)


def predictions(nodes: pd.DataFrame, summary: pd.DataFrame, base: Model,
                fabrics: dict) -> tuple[pd.DataFrame, Fit | None]:
    """Every measured series with a fabric (`fabrics`: series_fabrics') modelled
    (PREDICTION_COLUMNS; the module's docstring, 4.): by the fit on every series (modelled_s,
    error: in sample, the series scored are those fitted), by the same fit made without the
    series (held_out_s, held_out_error) and, at the largest N, by the fit on the smaller Ns
    alone (from_smaller_s, from_smaller_error; null at the others); and the fit on every
    series (None without a series)."""
    known = [fabrics.get(tuple(k)) is not None for k in summary[SERIES].itertuples(index=False)]
    series = summary[summary["seconds"].notna() & summary["model_bytes"].notna()
                     & pd.Series(known, index=summary.index, dtype=bool)].reset_index(drop=True)
    if series.empty:
        return pd.DataFrame(columns=PREDICTION_COLUMNS), None
    full = fit(nodes, series, np.ones(len(series), dtype=bool), base, fabrics)
    held = [fit(nodes, series, series.index != i, base, fabrics).modelled().iloc[i]
            for i in series.index]
    smaller = (series["nodes"] < series["nodes"].max()).to_numpy()
    ahead = (fit(nodes, series, smaller, base, fabrics).modelled().where(~smaller)
             if smaller.any() else pd.Series(math.nan, index=series.index))
    measured = full.flows["measured_s"]
    table = series[SERIES + SPEC].assign(
        measured_s=measured, flow_s=full.flows["flow_s"], modelled_s=full.modelled(),
        held_out_s=held, from_smaller_s=ahead, limited_by=full.flows["limited_by"])
    for name in ("", "held_out_", "from_smaller_"):
        prefix = name or "modelled_"
        table[f"{name}error"] = (table[f"{prefix}s"] - measured) / measured
    return table[PREDICTION_COLUMNS], full


def held_out_range(p: pd.DataFrame) -> tuple[float, float] | None:
    """(lowest, highest) of the held-out errors (each series left out, and the largest N from
    the smaller): what the curves' band spans; None without one."""
    errors = pd.concat([p["held_out_error"], p["from_smaller_error"]]).dropna()
    return (float(errors.min()), float(errors.max())) if len(errors) else None


def curve(model: Model, counts: list[int] = NODE_COUNTS,
          errors: tuple[float, float] | None = None) -> pd.DataFrame:
    """The modelled duration of each design at each N of `counts` (nodes, design, seconds,
    limited_by) and its band (low_s, high_s: the times that the held-out errors `errors`,
    (lowest, highest) of modelled / measured - 1, would have measured; null without them)."""
    low, high = errors if errors else (math.nan, math.nan)
    return pd.DataFrame([{"nodes": n, "design": k, "seconds": model.seconds(k, n),
                          "low_s": model.seconds(k, n) / (1 + high),
                          "high_s": model.seconds(k, n) / (1 + low),
                          "limited_by": model.times(k, n)[1]}
                         for n in counts for k in DESIGNS])


def fastest(model: Model, n: int) -> tuple[str, ...]:
    """The fastest design at N, with those within TIE of it."""
    t = {k: model.seconds(k, n) for k in DESIGNS}
    best = min(t.values())
    return tuple(k for k in DESIGNS if t[k] <= best * (1 + TIE))


def changes(model: Model, counts: list[int] = NODE_COUNTS) -> list[tuple[int, tuple]]:
    """(N, the fastest designs) at the first of `counts` and at each N where they change: the
    first such N, found between two counts by bisection."""
    out = [(counts[0], fastest(model, counts[0]))]
    for a, b in zip(counts, counts[1:]):
        while fastest(model, b) != out[-1][1]:
            lo, hi = a, b  # the fastest at lo is out[-1]'s, at hi not
            while hi - lo > 1:
                mid = (lo + hi) // 2
                lo, hi = (mid, hi) if fastest(model, mid) == out[-1][1] else (lo, mid)
            out.append((hi, fastest(model, hi)))
            a = hi
    return out


def first_past(model: Model, deadline: float,
               counts: list[int] = NODE_COUNTS) -> dict[str, int | None]:
    """Per design the first N at which the round's last node would pass `deadline` seconds
    (bisection between the counts: time grows with N); None within the counts."""
    out = {}
    for kind in DESIGNS:
        out[kind], below = None, 0
        for n in counts:
            if model.seconds(kind, n) > deadline:
                lo, hi = below, n
                while hi - lo > 1:
                    mid = (lo + hi) // 2
                    lo, hi = (lo, mid) if model.seconds(kind, mid) > deadline else (mid, hi)
                out[kind] = hi
                break
            below = n
    return out


@dataclass
class Options:
    """The described topology and the deadline, as the command line gives them."""
    nic: str = DESCRIBED["nic"]
    uplink: str = DESCRIBED["uplink"]
    model: str | None = None  # a size; None: the measured M
    cpu_per_node: float | None = None  # CPU seconds per GB moved; None: the fitted figure
    cores_per_node: float | None = None  # None: the measured machine's cores
    deadline: float = DEADLINE_S


def _option(name: str, value, parse):
    try:
        return parse(value)
    except ValueError as e:
        raise ResultsError(f"{name} {value}: {e}") from None


def described(options: Options, measured: Fabric | None) -> Fabric:
    """The user's topology: each node's NIC (both ways) and its own CPU, the store's uplink."""
    nic = _option("--nic", options.nic, parse_rate)
    uplink = _option("--uplink", options.uplink, parse_rate)
    cores = options.cores_per_node or (measured.cores if measured else None) or 1.0
    return Fabric(uplink, nic, nic, cores, False,
                  f"described: store uplink {rate_text(uplink)}, node NIC {rate_text(nic)} "
                  f"each way, {cores:g} cores of its own per node")


def check(options: Options) -> None:
    """A ResultsError naming the first value of `options` that is none."""
    described(options, None)
    if options.model is not None:
        _option("--model", options.model, parse_size)
    for name, value in (("--cpu-per-node", options.cpu_per_node),
                        ("--cores-per-node", options.cores_per_node),
                        ("--deadline", options.deadline)):
        if value is not None and not (math.isfinite(value) and value > 0):
            raise ResultsError(f"{name} {value}: must be a number above 0")


def analyse(results: Results, options: Options | None = None) -> dict:
    """Every table of the module for a results folder: nodes, rounds, summary, fabric (the
    latest session's), cpu, predictions with start_s and start_note (the fit on every series)
    and held_out (held_out_range's), models (measured and described) and per model its curve,
    changes and first_past. A ResultsError where no record has `nodes`."""
    options = options or Options()
    check(options)
    nodes = nodes_table(results.runs)
    if nodes.empty:
        raise ResultsError(f"{results.folder}: no fleet records (no record has `nodes`)")
    fabric = fabric_of(results.env)
    table = rounds(nodes, results.env)
    summary = summarize(table)
    model_bytes = stats.median_of(summary["model_bytes"])
    if pd.isna(model_bytes):
        model_bytes = stats.median_of(nodes["tensor_bytes"])
    chunk = float(nodes.loc[nodes["design"].isin(DESIGNS), "chunk"].median()) \
        if nodes["design"].isin(DESIGNS).any() else float(CHUNK)
    out = {"nodes": nodes, "rounds": table, "summary": summary, "fabric": fabric,
           "cpu": cpu_fit(nodes), "model_bytes": model_bytes, "chunk": chunk, "start_s": 0.0,
           "start_note": "", "predictions": pd.DataFrame(columns=PREDICTION_COLUMNS),
           "held_out": None, "models": {}, "deadline": options.deadline}
    if pd.isna(model_bytes):
        return out
    if fabric is not None:
        pred, full = predictions(nodes, summary, Model(fabric, model_bytes, chunk),
                                 series_fabrics(table, results.env))
        if full is not None:
            out.update(predictions=pred, cpu=full.cpu, start_s=full.start_s,
                       start_note=full.note, held_out=held_out_range(pred))
        out["models"]["measured"] = Model(fabric, model_bytes, chunk, out["cpu"],
                                          out["start_s"])
    size = parse_size(options.model) if options.model is not None else model_bytes
    own = ({"store": options.cpu_per_node / 1e9, "peer": options.cpu_per_node / 1e9}
           if options.cpu_per_node else out["cpu"])
    out["models"]["described"] = Model(described(options, fabric), size, chunk, own,
                                       out["start_s"])
    for name, m in out["models"].items():
        out[f"{name}_curve"] = curve(m, errors=out["held_out"])
        out[f"{name}_changes"] = changes(m)
        out[f"{name}_first_past"] = first_past(m, options.deadline)
    return out


# --- tables ------------------------------------------------------------------------------------

def _s(x) -> str:
    """Seconds, three significant digits (whole ones from 1000 up); empty for none."""
    if x is None or pd.isna(x):
        return ""
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.3g}"


def _f(x, fmt: str) -> str:
    return "" if x is None or pd.isna(x) else f"{x:{fmt}}"


def _table(head: list[str], lines: list[list[str]]) -> str:
    return "\n".join(["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
                     + ["| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"
                        for cells in lines])


def _apart(frame: pd.DataFrame) -> tuple[int, int]:
    """What a row's name must tell apart in `frame`: (its files, its [cluster] rates)."""
    return frame["file"].nunique(), len(frame[["nic", "uplink"]].drop_duplicates())


def _name(row, apart: tuple[int, int]) -> str:
    """A series in the tables: its label, its file's name where there are several files, its
    [cluster] rates where the rounds ran under several."""
    where = f" [{os.path.basename(str(row['file']))}]" if apart[0] > 1 else ""
    if apart[1] > 1:
        where += f" [nic {row['nic'] or '?'}, uplink {row['uplink'] or '?'}]"
    return str(row["label"]) + where


def _nic(row, side: str) -> str:
    return _f(row[side], ".2f")


SERIES_HEAD = ["design", "cache", "nodes", "rounds", "median s", "spread: last / first node",
               "slowest node", "store bytes / M", "busiest NIC in / out, × M", "bound s",
               "of bound", "of best design's bound"]


def _share(x) -> str:
    """A share of a bound, marked above 1 as every share of a limit is (ceiling.share_cell)."""
    return ceiling.share_cell(x, ceiling.above_one(x), percent=False)


def series_md(summary: pd.DataFrame) -> str:
    """The fleet table (SERIES_HEAD): one row per series; under it, what a share of a bound
    above 1 says (`beyond_md`)."""
    apart = _apart(summary)
    lines = []
    for _, r in summary.iterrows():
        failed = f" ({r['failed']} failed)" if r["failed"] else ""
        nic = f"{_nic(r, 'nic_in')} / {_nic(r, 'nic_out')}" if pd.notna(r["nic_in"]) else ""
        lines.append([_name(r, apart), r["cache"], str(r["nodes"]), f"{r['rounds']}{failed}",
                      _s(r["seconds"]), _f(r["spread"], ".2f"), r["slowest"],
                      _f(r["amplification"], ".2f"), nic, _s(r["bound_s"]),
                      _share(r["of_bound"]), _share(r["of_best"])])
    return "\n\n".join(p for p in (_table(SERIES_HEAD, lines), beyond_md(summary)) if p)


def beyond_md(summary: pd.DataFrame) -> str:
    """A line per series whose median round was faster than its design's bound (of bound
    above 1, marked): the bound, from the links as iperf3 measured them, is not the fabric's
    limit there. "" where none was."""
    apart = _apart(summary)
    lines = [f"{ceiling.BEYOND} {_name(r, apart)}, {r['cache']}, {r['nodes']} nodes: its median "
             f"round of {_s(r['seconds'])} s beat the bound of {_s(r['bound_s'])} s "
             f"({_s(r['of_bound'])} of it)" for _, r in summary[summary["of_bound"] > 1].iterrows()]
    if not lines:
        return ""
    return ("\n".join(f"- {x}" for x in lines) + "\n\nA round faster than its bound shows that "
            "the bound is not the fabric's limit there: the links carried more than iperf3 "
            "measured over them (a shaper's burst, a measurement that fell short), and its "
            "shares of the bound overstate how near the design comes to the fabric's limit.")


def failed_md(table: pd.DataFrame) -> str:
    """The failed rounds, each with the nodes that failed it."""
    apart = _apart(table)
    lines = [f"- {_name(r, apart)}, {r['cache']}, {r['nodes']} nodes, round {r['rep']}: "
             f"{r['reason']}" for _, r in table[table["reason"].notna()].iterrows()]
    return ("Failed rounds (a round counts only when every node's record is there and ok):\n\n"
            + "\n".join(lines)) if lines else ""


def _words(value) -> str:
    """A value on one line (tc's own output spans several)."""
    return " ".join(str(value).split())


def _tc(tc) -> str:
    """A link's tc settings in a cell: per direction what `tc qdisc show` said (or an object's
    scalars as `key value`), on one line."""
    if not isinstance(tc, dict):
        return "" if tc is None else _words(tc)[:140]
    parts = []
    for key, value in tc.items():
        if isinstance(value, dict):
            inner = ", ".join(f"{k} {_words(v)}" for k, v in value.items()
                              if not isinstance(v, (dict, list)))
            parts.append(f"{key}: {inner}")
        elif not isinstance(value, list):
            parts.append(f"{key}: {_words(value)}")
    text = "; ".join(parts)
    return text if len(text) <= 160 else text[:159] + "…"


def _link_row(link: dict) -> list[str]:
    iperf = link.get("iperf3") if isinstance(link.get("iperf3"), dict) else {}
    rate = _configured({"rate_bits_per_s": link.get("bits_per_s"), "rate": link.get("rate")},
                       "rate")
    cells = []
    for key in ("down_bits_per_s", "up_bits_per_s"):
        got = _positive(iperf.get(key))
        share = f" ({got / rate:.0%})" if got and rate else ""
        cells.append(mbit(got) + share if got else "not measured")
    return [str(link.get("name", "?")), str(link.get("rate", "")), _tc(link.get("tc"))] + cells


def links_md(env: dict, most: int = 9) -> str:
    """The links' tc settings and iperf3 figures, a row each; past `most`, the nodes' in one
    row of their medians and ranges."""
    links = [x for x in ((env.get("cluster") or {}).get("links") or []) if isinstance(x, dict)]
    if not links:
        return ""
    head = ["link", "rate", "tc", "iperf3 in (down), Mbit/s (of rate)",
            "iperf3 out (up), Mbit/s (of rate)"]
    rows = [_link_row(x) for x in links]
    nodes = [x for x in links if x.get("name") != "store"]
    if len(links) > most and nodes:
        rows = [_link_row(x) for x in links if x.get("name") == "store"]
        cells = []
        for key in ("down_bits_per_s", "up_bits_per_s"):
            got = _iperf(nodes, key)
            cells.append(f"{mbit(np.median(got))} ({mbit(min(got))}–{mbit(max(got))})"
                         if got else "not measured")
        rows.append([f"{len(nodes)} nodes (median, range)", str(nodes[0].get("rate", "")),
                     _tc(nodes[0].get("tc"))] + cells)
    return _table(head, rows)


def fabric_md(a: dict, env: dict) -> str:
    """The fabric the bound and the model use, and the links' table."""
    fabric = a["fabric"]
    cluster = env.get("cluster") or {}
    topology = f" Topology: {cluster['topology']}." if isinstance(cluster.get("topology"), str) \
        else ""
    if fabric is None:
        text = ("**The fabric**: env.json has no `cluster` with rates for the store's uplink "
                "and the nodes' NICs: no bound and no model of the measured fabric.")
    else:
        text = f"**The fabric** (what the bound and the model use): {fabric.source}."
    return "\n\n".join(p for p in (text + topology, sessions_md(env), links_md(env)) if p)


def sessions_md(env: dict) -> str:
    """Where the experiment ran in several sessions that each measured the cluster again: a
    line per session with its rates and links; "" where fewer than two did."""
    sessions = env.get("sessions") or []
    own = [i for i, x in enumerate(sessions) if isinstance(x.get("cluster"), dict)]
    if len(own) < 2:
        return ""
    lines = []
    for i in own:
        cluster, fabric = sessions[i]["cluster"], fabric_of(env, i)
        lines.append(f"- session {i} ({sessions[i].get('started_at', '?')}), nic "
                     f"{cluster.get('nic', '?')}, uplink {cluster.get('uplink', '?')}: "
                     + (fabric.source if fabric else "no rates for the uplink and the NICs"))
    return ("The experiment ran in several sessions, each of which made and measured the "
            "cluster again: each round's bound, and each series' model, use the links of the "
            "session its rounds ran in (the fabric above is the latest session's, the curves' "
            "measured fabric; the links below are its too).\n\n" + "\n".join(lines))


TARGET = 0.15  # the model's aim: every series within 15% of its measured median, held out
MODEL_HEAD = ["design", "cache", "nodes", "measured s", "fitted s", "fit error (in sample)",
              "held out s", "held-out error", "from smaller N, error",
              "limited by (the last flow)"]


def cpu_text(cpu: dict) -> str:
    """The fitted CPU per GB moved, by kind of byte."""
    if not cpu:
        return "No record has its CPU seconds and bytes: CPU is left out of the model"
    return ("CPU seconds per GB a node moves, fitted by least squares over the counted "
            "records of every series below (each record's CPU seconds on its bytes): "
            f"{cpu['store'] * 1e9:.3g} per GB from the "
            f"store (HTTP), {cpu['peer'] * 1e9:.3g} per GB to or from another node (TCP)")


def error_text(x: float) -> str:
    """A relative error, signed (+: the model is slower than measured), `0%` when it rounds
    to none; "" for none."""
    if pd.isna(x):
        return ""
    text = f"{x:+.0%}"
    return "0%" if text in ("+0%", "-0%") else text


def _worst(p: pd.DataFrame, column: str, apart: tuple[int, int]) -> str:
    """The largest error of a column, with its series; "none" where it has none."""
    known = p[p[column].notna()]
    if known.empty:
        return "none"
    w = known.loc[known[column].abs().idxmax()]
    return f"{error_text(w[column])} ({_name(w, apart)}, {w['cache']}, {w['nodes']} nodes)"


MODEL_NOTE = (
    "*Fitted s* and its error are a fit, in sample: the CPU per byte and the start cost were "
    "fitted on these same series, so the error says how well the model can be made to agree, "
    "not how well it predicts. *Held out*: each series predicted by the same fit made without "
    "it (its records and its time left out). *From smaller N*: each series at the largest N "
    "predicted by the fit on the smaller Ns alone, as the curves below extrapolate.")


def model_md(a: dict) -> str:
    """The model's fitted and held-out times against the measured, with what it assumed and
    its largest errors."""
    if a["fabric"] is None:
        return ""
    p = a["predictions"]
    intro = ("**The model against the measurements.** A flow-level model: each design's "
             "transfers as flows sharing the store's uplink, each node's NIC in and out and the "
             "CPU by max-min fairness (progressive filling), plus the pipeline's fill for bcast "
             "and chain (analysis/fleet.py's docstring says exactly how); each series on the "
             "links of the sessions its rounds ran in. " + cpu_text(a["cpu"]) + ". "
             + a["start_note"])
    if p.empty:
        return intro + "\n\nNo complete round to set it against."
    apart = _apart(p)
    lines = [[_name(r, apart), r["cache"], str(r["nodes"]), _s(r["measured_s"]),
              _s(r["modelled_s"]), error_text(r["error"]), _s(r["held_out_s"]),
              error_text(r["held_out_error"]), error_text(r["from_smaller_error"]),
              r["limited_by"]] for _, r in p.iterrows()]
    held = largest_error(p["measured_s"], p["held_out_s"])
    verdict = "within" if held <= TARGET else "beyond"
    end = (f"Largest error of the fit (in sample): {_worst(p, 'error', apart)}. Held out: "
           f"{_worst(p, 'held_out_error', apart)}, {verdict} the {TARGET:.0%} the model aims "
           f"at; the largest N from the smaller ones: {_worst(p, 'from_smaller_error', apart)}.")
    return "\n\n".join([intro, MODEL_NOTE, _table(MODEL_HEAD, lines), end])


def _banded(r) -> str:
    """A modelled time with its band from the held-out errors: `12.3 (10.1–15.2)`."""
    band = f" ({_s(r['low_s'])}–{_s(r['high_s'])})" if pd.notna(r["low_s"]) else ""
    return _s(r["seconds"]) + band


def curve_md(table: pd.DataFrame) -> str:
    """A model's curve as a table: a row per N, a column per design (with its band), the
    fastest and what held it back."""
    lines = []
    for n, g in table.groupby("nodes", sort=True):
        g = g.set_index("design")
        best = g.index[g["seconds"] <= g["seconds"].min() * (1 + TIE)]
        lines.append([str(n)] + [_banded(g.loc[k]) for k in DESIGNS]
                     + [" = ".join(best), g.loc[best[0], "limited_by"]])
    banded = table["low_s"].notna().any()
    note = ("Each time with its band: the times the held-out errors (lowest to highest) would "
            "have measured where the model gives this one.\n\n" if banded else "")
    return note + _table(["nodes"] + [f"{k} s" for k in DESIGNS] + ["fastest", "its limit"],
                         lines)


def band_text(errors: tuple[float, float] | None) -> str:
    """What the curves' band is, in a sentence."""
    if errors is None:
        return "No series was held out (one series alone): the curves carry no band."
    return ("The band about each curve spans the held-out errors, from "
            f"{error_text(errors[0])} to {error_text(errors[1])}: the times the measurements "
            "would have been, had the model erred there as it did on a series it did not see.")


def _fastest_text(found: list[tuple[int, tuple]]) -> str:
    return "; ".join(f"{' = '.join(k)} from {n}" for n, k in found)


def outlook_md(a: dict) -> str:
    """Per model where the fastest design changes and the first N past the deadline."""
    if not a["models"]:
        return ""
    head = ["fabric", "M", "fastest design (from N nodes)"] + \
        [f"{k}: first N past {_s(a['deadline'])} s" for k in DESIGNS]
    lines = []
    for name, m in a["models"].items():
        past = a[f"{name}_first_past"]
        lines.append([m.fabric.source if name == "described" else "measured",
                      size_text(m.model_bytes), _fastest_text(a[f"{name}_changes"])]
                     + [str(past[k]) if past[k] else f"none to {NODE_COUNTS[-1]}"
                        for k in DESIGNS])
    return ("**Scaling, modelled.** The model (with its start cost) for N nodes up to "
            f"{NODE_COUNTS[-1]}, on the measured fabric (every node sharing this machine's "
            "cores) and on a described one (each node with a CPU of its own): the fastest "
            "design and the first N at which it changes (designs within "
            f"{TIE:.1%} tie), and the first N at which the last node would pass the deadline "
            f"({_s(a['deadline'])} s: NCCL's watchdog kills a collective that waits 10 "
            "minutes), each found between powers of 2 by bisection, on the model's own times. "
            + band_text(a["held_out"]) + "\n\n" + _table(head, lines))


# --- figures -----------------------------------------------------------------------------------

COLORS = {"every": "#4c72b0", "bcast": "#dd8452", "stripe": "#55a868", "chain": "#c44e52"}
FIGURE_TIME, FIGURE_STORE, FIGURE_CURVES = "fleet-time", "fleet-store", "fleet-curves"


def _colors(summary: pd.DataFrame) -> dict[str, str]:
    """A color per spec: its design's for a plain fleet spec, the cycle's for the others."""
    cycle = iter(["#8172b3", "#937860", "#da8bc3", "#8c8c8c", "#ccb974", "#64b5cd"] * 10)
    out = {}
    for spec, design in summary[["strategy_spec", "design"]].drop_duplicates().itertuples(
            index=False):
        plain = spec == f"{FLEET}:design={design}" and design in COLORS
        out[spec] = COLORS[design] if plain else next(cycle)
    return out


def plot_time(a: dict, figs) -> None:
    """Per cache state: each spec's median round against nodes, its bound dashed, each ok
    node's wall_s as a dot."""
    s, nodes = a["summary"], a["nodes"]
    caches = [c for c in ("cold", "warm") if c in set(s["cache"])]
    color = _colors(s)
    fig, axes = plt.subplots(1, len(caches), figsize=(6 * len(caches), 4.4), squeeze=False)
    for ax, cache in zip(axes[0], caches):
        for j, (spec, g) in enumerate(s[s["cache"] == cache].groupby("strategy_spec",
                                                                      sort=False)):
            g = g.sort_values("nodes")
            ax.plot(g["nodes"], g["seconds"], marker="o", color=color[spec],
                    label=g["label"].iloc[0])
            ax.plot(g["nodes"], g["bound_s"], linestyle="--", color=color[spec], linewidth=1)
            d = nodes[(nodes["strategy_spec"] == spec) & (nodes["cache"] == cache)
                      & nodes["counted"]]
            ax.scatter(d["nodes"] * (1 + 0.04 * (j + 1)), d["wall_s"], s=6, alpha=0.5,
                       color=color[spec])
        ax.plot([], [], linestyle="--", color="grey", linewidth=1,
                label="the fabric's bound (its design's color)")
        readers.readers_axis(ax, sorted(set(s["nodes"])))
        ax.set_xlabel("nodes (log)")
        ax.set_ylabel("round: the first node's start to the last one's end, median (s)")
        ax.set_title(f"{cache} cache", fontsize=10)
        ax.legend(fontsize=7)
    figs.save(fig, FIGURE_TIME,
              "Fleet: each design's round (from its first node's start to its last one's end, "
              "the median over rounds) against the number of nodes; dashed, the same color: "
              "the fabric's lower bound for that design; dots: every ok node's own wall time.")


def plot_store(a: dict, figs) -> None:
    """Bytes from the store per round against nodes, per spec (both caches: the store sends
    the same bytes cold or warm), with the model once as a reference line."""
    t = a["rounds"][a["rounds"]["amplification"].notna()]
    if t.empty:
        return
    color = _colors(a["summary"])
    fig, ax = plt.subplots(figsize=(7, 4.4))
    for j, (spec, g) in enumerate(t.groupby("strategy_spec", sort=False)):
        line = (g["amplification"] * g["model_bytes"] / 1e9).groupby(g["nodes"]).median()
        # Designs that read M once lie on one line: markers of shrinking size keep each seen.
        ax.plot(line.index, line.to_numpy(), marker="osD^v<>"[j % 7], markersize=9 - j % 5,
                color=color[spec], label=g["label"].iloc[0])
    ax.axhline(stats.median_of(t["model_bytes"]) / 1e9, linestyle="--", color="grey",
               label="the model once (M)")
    readers.readers_axis(ax, sorted(set(t["nodes"])))
    ax.set_xlabel("nodes (log)")
    ax.set_ylabel("bytes from the store per round, median (GB)")
    ax.legend(fontsize=7)
    figs.save(fig, FIGURE_STORE,
              "Fleet: the bytes the store sent in a round (every node's store_bytes), the "
              "median over the complete rounds of both cache states, against the number of "
              "nodes; dashed: the model once. every reads it once per node, the others once.")


def plot_curves(a: dict, figs) -> None:
    """Per model the designs' modelled durations to NODE_COUNTS[-1] nodes (log-log), the
    deadline, and on the measured fabric the measured medians."""
    names = list(a["models"])
    if not names:
        return
    fig, axes = plt.subplots(1, len(names), figsize=(6.2 * len(names), 4.6), squeeze=False)
    done = a["summary"][a["summary"]["design"].isin(DESIGNS) & a["summary"]["seconds"].notna()]
    for ax, name in zip(axes[0], names):
        c = a[f"{name}_curve"]
        for kind in DESIGNS:
            k = c[c["design"] == kind]
            ax.plot(k["nodes"], k["seconds"], color=COLORS[kind], label=kind)
            ax.fill_between(k["nodes"], k["low_s"], k["high_s"], color=COLORS[kind],
                            alpha=0.15, linewidth=0)
            if name == "measured":
                m = done[done["design"] == kind]
                ax.scatter(m["nodes"], m["seconds"], color=COLORS[kind], s=16, zorder=3)
        ax.axhline(a["deadline"], color="grey", linestyle="--", linewidth=1,
                   label=f"deadline {_s(a['deadline'])} s")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xticks(NODE_COUNTS, [str(n) for n in NODE_COUNTS])
        ax.minorticks_off()
        ax.set_xlabel("nodes (log)")
        ax.set_ylabel("modelled round: the last node's time (s, log)")
        m = a["models"][name]
        ax.set_title(("measured fabric" if name == "measured" else
                      f"described: NIC {rate_text(m.fabric.nic_in_bps)}, uplink "
                      f"{rate_text(m.fabric.uplink_bps)}") + f", M {size_text(m.model_bytes)}",
                     fontsize=9)
        ax.legend(fontsize=7)
    band = ("; shaded, each curve's band from the model's held-out errors"
            if a["held_out"] else "")
    figs.save(fig, FIGURE_CURVES,
              "Fleet, modelled: each design's round against the number of nodes up to "
              f"{NODE_COUNTS[-1]}, on the measured fabric (dots: the measured medians) and on "
              f"the described one{band}; dashed grey: the deadline.")


# --- the section and the command ---------------------------------------------------------------

INTRO = (
    "N nodes, each a network namespace with a shaped NIC of its own, load one model of M bytes "
    "from one store (nginx behind its own shaped uplink), all on this machine. The designs: "
    "*every* node pulls all of M from the store; *bcast*, node 0 pulls M and hands each chunk "
    "to an owner node that forwards it to the others; *stripe*, node k pulls every N-th chunk "
    "and then sends its stripe to every other node; *chain*, node 0 pulls and each node "
    "relays each chunk to the next. A round (one rep of one design at N nodes) counts only "
    "whole, every node ok; it lasts from its first node's start to its last node's end, as "
    "every round of several readers does in *Many readers* (the nodes are released together "
    "from a start barrier; each node's wall time runs until it holds every byte and has done "
    "its forwarding). Spread: the "
    "last node's time over the first's, the node most often last named; store bytes / M: the "
    "read amplification (every: N; the others: 1); busiest NIC: the most a node's NIC carried "
    "in (from the store and its peers) and out, in units of M. Bound: the fabric's lower bound "
    "for the design from the links measured in the round's session (the store's uplink, each "
    "node's NIC; the pipeline's fill for bcast and chain); of bound: bound / the round's "
    f"duration (1: at the fabric's limit; {ceiling.BEYOND}: above 1, faster than the bound); "
    "of best design's bound: the lowest of the four designs' bounds at that N over the "
    "duration, how far this design is from the best the fabric allows any of them. Medians over "
    "the complete rounds.")


def section(results: Results, figs=None, options: Options | None = None) -> dict:
    """The report's section: its Markdown ("md"; the figures drawn and shown where `figs`,
    report.Figures, is given) and summary.json's `fleet` ("summary")."""
    a = analyse(results, options)
    if figs is not None:
        plot_time(a, figs)
        plot_store(a, figs)
        plot_curves(a, figs)
    shown_figures = (lambda *names: figs.md(*names)) if figs is not None else (lambda *n: "")
    parts = [INTRO, fabric_md(a, results.env), series_md(a["summary"]), failed_md(a["rounds"]),
             shown_figures(FIGURE_TIME, FIGURE_STORE), model_md(a), outlook_md(a),
             shown_figures(FIGURE_CURVES)]
    return {"md": "\n\n".join(p for p in parts if p), "summary": summary_of(a)}


def summary_of(a: dict) -> dict:
    """summary.json's `fleet`: the series, the model's points, its start cost, its largest
    errors (of the fit, in sample; held out; the largest N from the smaller), the band's
    errors, and per model its curve, where the fastest design changes and the deadline's N."""
    p = a["predictions"]

    def largest(column: str) -> float | None:
        found = largest_error(p["measured_s"], p[column]) if len(p) else math.nan
        return None if math.isnan(found) else found

    return {"series": records(a["summary"]), "model": records(p), "start_s": a["start_s"],
            "largest_error": largest("modelled_s"),
            "held_out_largest_error": largest("held_out_s"),
            "from_smaller_largest_error": largest("from_smaller_s"),
            "band_errors": list(a["held_out"]) if a["held_out"] else None,
            "deadline_s": a["deadline"],
            "curves": {name: {"fabric": m.fabric.source, "model_bytes": m.model_bytes,
                              "points": records(a[f"{name}_curve"]),
                              "fastest_from": [{"nodes": n, "designs": list(k)}
                                               for n, k in a[f"{name}_changes"]],
                              "first_past_deadline": a[f"{name}_first_past"]}
                       for name, m in a["models"].items()}}


def text(a: dict, results: Results) -> str:
    """What the command prints: the fabric, the fleet table, the model against the
    measurements, each model's curve and the outlook, as Markdown."""
    parts = [f"# {TITLE}: {results.folder}", fabric_md(a, results.env), "## Rounds",
             series_md(a["summary"]), failed_md(a["rounds"])]
    if a["fabric"] is not None:
        parts += ["## The model against the measurements", model_md(a)]
    for name, m in a["models"].items():
        where = "the measured fabric" if name == "measured" else m.fabric.source
        parts += [f"## Curves: {where}, M {size_text(m.model_bytes)}",
                  curve_md(a[f"{name}_curve"])]
    parts.append(outlook_md(a))
    return "\n\n".join(p for p in parts if p) + "\n"


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="analysis.fleet", description=__doc__.splitlines()[0])
    p.add_argument("folder", help="a results folder (runs.jsonl, env.json) of a fleet experiment")
    p.add_argument("--nic", default=DESCRIBED["nic"],
                   help="the described topology's NIC per node, as tc writes a rate "
                        f"(default {DESCRIBED['nic']})")
    p.add_argument("--uplink", default=DESCRIBED["uplink"],
                   help=f"the described store's uplink (default {DESCRIBED['uplink']})")
    p.add_argument("--model", help="the described model's size: 16GB, 8GiB (default: the "
                                   "measured M)")
    p.add_argument("--cpu-per-node", help="CPU seconds per GB a described node moves in and "
                                          "out (default: fitted from the records)")
    p.add_argument("--cores-per-node", help="cores of a described node's own CPU (default: "
                                            "this machine's, env.json cluster.cores)")
    p.add_argument("--deadline", default=str(DEADLINE_S),
                   help="seconds a round may last (default 600: NCCL's watchdog)")
    args = p.parse_args(argv)
    return guard("analysis.fleet", [args.folder], lambda: run(args))


def run(args) -> int:
    number = {name: None if value is None else _option(f"--{name.replace('_', '-')}", value,
                                                       float)
              for name, value in (("cpu_per_node", args.cpu_per_node),
                                  ("cores_per_node", args.cores_per_node),
                                  ("deadline", args.deadline))}
    options = Options(nic=args.nic, uplink=args.uplink, model=args.model, **number)
    check(options)
    results = load(args.folder)
    print(text(analyse(results, options), results), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
