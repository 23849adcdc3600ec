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
- stripe: node k pulls the chunks c with c mod N == k (M/N) and sends them to every other node
  (an all-gather): the store sends M in all. Phased (option stripe = "phased", and every
  record from before the option: the row `stripe`), once its whole stripe is in; pipelined
  (stripe = "pipelined": the row `stripe (pipelined)`), each chunk as it lands;
- chain: node 0 pulls, and node k forwards each chunk to node k+1 as it arrives (a relay).
The engines' designs, PyTorch's torch.distributed on gloo, one exec command per node (strategy
`exec`, label and details.design `torch_bcast` or `torch_stripe`, the same details as the
strategy's, timed over its own region), are rows of the same tables beside the project's:
- torch_bcast: node 0 pulls M, each chunk broadcast (async work handles, several in flight);
  gloo's broadcast is a binomial tree: node 0 sends each chunk whole to ceil(log2 N) nodes,
  each of which passes it on (gloo/broadcast.cc);
- torch_stripe: each node pulls 1/N of each round of N chunks, then all_gather (gloo's is a
  ring, gloo/allgather.cc), the next round's pulls under way meanwhile.
What each node needs is the run's `pattern`: `replicated` (records without one too), the whole
model; `tp` (or any other pattern), its 1/N part (tensor parallel: its slice of every tensor).
Under a pattern of parts every node of every, the stripes and torch_stripe pulls its own part
and nothing moves between nodes; bcast and torch_bcast scatter, node 0 pulling M and sending
each node its part; chain relays the whole model down the line as under replicated, each node
keeping its part (node 0 pulls M, node k takes M from node k-1 and sends M to node k+1, the
last sends nothing): every node receives N times what it needs. Every design serves every
pattern. Any other strategy whose records carry `nodes` (http_ranges run on every node) is a
row of the same tables by its strategy spec, and counts as `every` in the bound and the model:
each of its nodes reads what it needs from the store by itself.

1. Rounds (`rounds`). The records of one (file, cache, pattern, strategy spec, nodes, nic,
   uplink, rep), one per node (`proc`, else details.node), are a round: `nic` and `uplink` are
   the [cluster] rates the record ran under ("" in records from before they were kept), so
   that rounds under different rates, or of different patterns, never pool. It counts only
   whole: every node's record there and counted (results.load's rule: ok, its bytes verified,
   a wall time), else it is a failed round whose `reason` names each node that failed and why.
   Its duration is every round of several readers' (readers.duration): from its first node's
   start to its last node's end (load_start_unix_s + wall_s; the nodes are released together
   from the start barrier, and a node's clock stops once it holds every byte and has done its
   forwarding), the largest wall_s in records without a start; its spread, the last node's
   wall_s over the first's, the slowest node named. Its bytes: each node's needs, its
   `needed_bytes` (a record from before it was kept: its tensor_bytes, the whole model); M,
   their median under replicated, their sum under a pattern of parts; its read amplification,
   the nodes' store_bytes summed over the bytes they need summed (every under replicated: 1, N
   M over N M; a broadcast under replicated: 1/N; every design under tp: 1 at best); each
   node's bytes received (store_bytes + peer_rx_bytes) over its needed_bytes, the median and
   the largest over the nodes (1 at best; bcast under replicated: 1, under tp: N for node 0;
   chain under tp: N for every node); each NIC's own counters over the run (nic_rx_bytes,
   nic_tx_bytes, from /proc/net/dev in the node's namespace; none outside a cluster), their
   median and largest over the nodes, and the wire over the counted bytes, nic_rx_bytes /
   (store_bytes + peer_rx_bytes), what the wire carried beyond the payload (headers,
   retransmits, the harness's own traffic); the busiest NIC in and out in units of M (nic_in,
   nic_out). The longest a node took to connect to its peers (connect_s, the largest
   details.connect_s over the nodes): the project's designs open their mesh inside their
   timed load, so it is in their wall_s; the engines' commands rendezvous before their timed
   region, so it is not in theirs. Its bounds (3.) are from the fabric of the session it ran
   in (`session`, the records' index into env.json `sessions`; `with_bounds`): its design's
   (`bound_s`) and the best design's (the lowest of every design's under its pattern at that
   N), and each over its duration (`of_bound`, `of_best`; 1: at the fabric's limit, above 1
   marked: the round beat the bound).
2. Series (`summarize`): per (file, cache, pattern, spec, nodes, nic, uplink) the median
   duration over the complete rounds and its 95% interval (the sign test's order statistics,
   none under 6 rounds), the rounds and failed ones, the medians of the figures above and of
   the rounds' bounds and shares of them, the node most often slowest. The engine's rows are
   set against the project's designs paired by round (analysis/stats/fleet_paired.py): at the
   largest N, each series' duration over torch_bcast's in the round of the same rep.
3. The fabric and its bound (`fabric_of`; the bounds are analysis/stats/fleet_bounds.py's). A
   session's cluster (`cluster_of`): env.json `sessions[i].cluster` (each session of a resumed
   experiment makes and measures the cluster again), else the top-level `cluster` (the latest
   session's; records without `session` use it). Its links as MEASURED (iperf3 over each link,
   cluster.links: "down" into that end, "up" out of it): the uplink is the store link's up
   figure; a node's NIC the median of the nodes' down figures (in) and up figures (out); a
   configured rate (cluster.uplink_bits_per_s, nic_bits_per_s) stands in only where no figure
   was measured, and `Fabric.source` says so. Rates are bits per second, M is bytes: a time is
   8 M / rate. The lower bound on a round's duration, every node needing M: every, max(N M /
   uplink, M / nic); bcast, chain and torch_bcast, M / min(uplink, nic) plus the pipeline's
   fill (bcast and torch_bcast: min(2, N-1) chunks at nic, one to the owner and one on; chain:
   N-1 chunks); stripe (phased), max(M / uplink, M/N / nic) + (N-1)/N M / nic (the store sends
   M, each node takes its M/N, and only then does the all-gather of the rest begin); stripe
   (pipelined) and torch_stripe, max(M / uplink, M / nic) + one chunk at nic (the last chunk's
   one hop from its puller). Each node needing its M/N: every, the stripes and torch_stripe,
   max(M / uplink, M/N / nic); bcast and torch_bcast (a scatter), max(M / uplink, M / nic into
   node 0, (N-1)/N M / nic out of node 0) + one chunk at nic; chain, the replicated chain's
   (the relay moves M through every node).
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
   the last out 1); torch_bcast, one flow of M through gloo's binomial tree (uplink 1; every
   node in 1; node v out its children in the tree, ceil(log2 N) for node 0); stripe (phased),
   N flows of M/N from the store, then, as each ends, its node's all-gather flow of M/N (its
   NIC out N-1, every other node's NIC in 1); stripe (pipelined) and torch_stripe, N flows of
   M/N, each from the store through its puller on to every other node at once (uplink 1, its
   puller's NIC in 1 and out N-1, every other node's NIC in 1: gloo's ring moves the same
   bytes through each NIC). Under a pattern of parts: every design but the broadcasts, a flow
   of M/N per node (uplink 1, its NIC in 1); bcast and torch_bcast, one flow of M (uplink 1;
   node 0 in 1 and out (N-1)/N; every other node in 1/N); chain, the replicated chain's flow
   and fill. Each flow's CPU weight is each kind
   of byte's CPU cost times the bytes of that kind it moves at each node (the store's own CPU,
   nginx's, is not in it: no record has it). A node's time is when its own flows end (every,
   and each design whose nodes pull only their own parts), else when the last flow ends, plus
   its fill, chunks at nic (`flow.fill_of`): the bound's for bcast, the pipelined stripe and a
   scatter; k for chain's node k; node v's hops in gloo's tree for torch_bcast; N-1 for
   torch_stripe (its last round's ring all-gather); plus a start cost per round fitted from
   the records (the median of measured less modelled seconds) where it lowers the largest
   error (`fit_start` says so). The engines' rows are predicted as the project's are, by the
   same fit, and held out the same way.
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
   design changes (the first N, found between powers of 2 by bisection; per pattern the
   records hold, among every design), and the first N at which the slowest node
   would pass a deadline (`--deadline`, default 600 s: NCCL's watchdog
   timeout of 10 minutes), per design (bisection too, assuming time grows with N). Each
   curve carries a band (`low_s`, `high_s`): the model's time over 1 + the highest and the
   lowest held-out error (`held_out_range`), the times a measurement would have given had the
   model erred there as it did on the series it did not see.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from analysis.core.results import Results, ResultsError
from analysis.core.units import parse_rate, parse_size, rate_text
from analysis.models.flow import Model
from analysis.stats import aggregates as stats
from analysis.stats.fleet_bounds import DESIGNS, ENGINES, KINDS, REPLICATED, whole
from analysis.stats.fleet_paired import versus_engine
from analysis.stats.fleet_rounds import (CHUNK, Fabric, SERIES, SPEC, fabric_of, nodes_table,
                                         rounds, series_fabrics, summarize)

NODE_COUNTS = [2**i for i in range(11)]  # the curves' N: 1 ... 1024
DEADLINE_S = 600.0  # NCCL's watchdog: a collective that waits 10 minutes kills the job
DESCRIBED = {"nic": "100gbit", "uplink": "25gbit"}
TIE = 1e-3  # designs within 0.1% of the fastest tie with it


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
    known = flow.notna()
    measured, flow = measured[known], flow[known]
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
    with CPU per byte `cpu` and no start cost, on the series' own M, chunk, fabric and
    pattern) and limited_by."""
    rows, seen = [], {}
    for s in series.to_dict("records"):
        # Series that differ only in what the model does not see (the cache state) are one
        # simulation.
        what = (fabrics[tuple(s[c] for c in SERIES)], float(s["model_bytes"]),
                float(s["chunk"]))
        if what not in seen:
            seen[what] = replace(base, fabric=what[0], model_bytes=what[1], chunk=what[2],
                                 cpu=cpu, start_s=0.0)
        t, neck = seen[what].times(s["kind"], int(s["nodes"]), s["pattern"])
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


def patterns_of(summary: pd.DataFrame) -> list[str]:
    """The patterns the curves are drawn for: replicated, then each other one the records hold
    (each of N nodes its part)."""
    return [REPLICATED] + sorted({p for p in summary["pattern"] if not whole(p)})


def curve(model: Model, counts: list[int] = NODE_COUNTS,
          errors: tuple[float, float] | None = None,
          patterns: list[str] | tuple[str, ...] = (REPLICATED,)) -> pd.DataFrame:
    """The modelled duration of each design under each of `patterns` at each N of
    `counts` (pattern, nodes, design, seconds, limited_by) and its band (low_s, high_s: the
    times that the held-out errors `errors`, (lowest, highest) of modelled / measured - 1,
    would have measured; null without them)."""
    low, high = errors if errors else (math.nan, math.nan)
    return pd.DataFrame([{"pattern": p, "nodes": n, "design": k,
                          "seconds": model.seconds(k, n, p),
                          "low_s": model.seconds(k, n, p) / (1 + high),
                          "high_s": model.seconds(k, n, p) / (1 + low),
                          "limited_by": model.times(k, n, p)[1]}
                         for p in patterns for n in counts for k in KINDS])


def fastest(model: Model, n: int, pattern=REPLICATED, kinds=None) -> tuple[str, ...]:
    """The fastest design at N under `pattern` of `kinds` (default: every design), with those
    within TIE of it."""
    kinds = kinds or KINDS
    t = {k: model.seconds(k, n, pattern) for k in kinds}
    best = min(t.values())
    return tuple(k for k in kinds if t[k] <= best * (1 + TIE))


def changes(model: Model, counts: list[int] = NODE_COUNTS, pattern=REPLICATED,
            kinds=None) -> list[tuple[int, tuple]]:
    """(N, the fastest designs) at the first of `counts` and at each N where they change: the
    first such N, found between two counts by bisection."""
    def best(n: int) -> tuple:
        return fastest(model, n, pattern, kinds)

    out = [(counts[0], best(counts[0]))]
    for a, b in zip(counts, counts[1:]):
        while best(b) != out[-1][1]:
            lo, hi = a, b  # the fastest at lo is out[-1]'s, at hi not
            while hi - lo > 1:
                mid = (lo + hi) // 2
                lo, hi = (mid, hi) if best(mid) == out[-1][1] else (lo, mid)
            out.append((hi, best(hi)))
            a = hi
    return out


def first_past(model: Model, deadline: float, counts: list[int] = NODE_COUNTS,
               pattern=REPLICATED) -> dict[str, int | None]:
    """Per design the first N under `pattern` at which the round's last node would pass
    `deadline` seconds (bisection between the counts: time grows with N); None within the
    counts."""
    out = {}
    for kind in KINDS:
        out[kind], below = None, 0
        for n in counts:
            if model.seconds(kind, n, pattern) > deadline:
                lo, hi = below, n
                while hi - lo > 1:
                    mid = (lo + hi) // 2
                    lo, hi = (lo, mid) if model.seconds(kind, mid, pattern) > deadline \
                        else (mid, hi)
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


def option(name: str, value, parse):
    try:
        return parse(value)
    except ValueError as e:
        raise ResultsError(f"{name} {value}: {e}") from None


def described(options: Options, measured: Fabric | None) -> Fabric:
    """The user's topology: each node's NIC (both ways) and its own CPU, the store's uplink."""
    nic = option("--nic", options.nic, parse_rate)
    uplink = option("--uplink", options.uplink, parse_rate)
    cores = options.cores_per_node or (measured.cores if measured else None) or 1.0
    return Fabric(uplink, nic, nic, cores, False,
                  f"described: store uplink {rate_text(uplink)}, node NIC {rate_text(nic)} "
                  f"each way, {cores:g} cores of its own per node")


def check(options: Options) -> None:
    """A ResultsError naming the first value of `options` that is none."""
    described(options, None)
    if options.model is not None:
        option("--model", options.model, parse_size)
    for name, value in (("--cpu-per-node", options.cpu_per_node),
                        ("--cores-per-node", options.cores_per_node),
                        ("--deadline", options.deadline)):
        if value is not None and not (math.isfinite(value) and value > 0):
            raise ResultsError(f"{name} {value}: must be a number above 0")


def analyse(results: Results, options: Options | None = None) -> dict:
    """Every table of the module for a results folder: nodes, rounds, summary, versus (each
    series over torch_bcast's time, paired by round, at its largest N: fleet_paired's),
    patterns (the curves', `patterns_of`), fabric (the latest session's), cpu, predictions
    with start_s and start_note (the fit on every series) and held_out (held_out_range's),
    models (measured and described) and per model its curve (every pattern's), and per pattern
    its changes and first_past. A ResultsError where no record has `nodes`."""
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
    own_designs = nodes["design"].isin(DESIGNS + ENGINES)
    chunk = float(nodes.loc[own_designs, "chunk"].median()) if own_designs.any() \
        else float(CHUNK)
    out = {"nodes": nodes, "rounds": table, "summary": summary, "versus": versus_engine(table),
           "patterns": patterns_of(summary), "fabric": fabric, "cpu": cpu_fit(nodes),
           "model_bytes": model_bytes, "chunk": chunk, "start_s": 0.0, "start_note": "",
           "predictions": pd.DataFrame(columns=PREDICTION_COLUMNS), "held_out": None,
           "models": {}, "deadline": options.deadline}
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
        out[f"{name}_curve"] = curve(m, errors=out["held_out"], patterns=out["patterns"])
        out[f"{name}_changes"] = {p: changes(m, pattern=p) for p in out["patterns"]}
        out[f"{name}_first_past"] = {p: first_past(m, options.deadline, pattern=p)
                                     for p in out["patterns"]}
    return out
