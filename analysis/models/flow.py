"""The fleet's flow-level model: max-min fair sharing of the store's uplink, the NICs and
the CPU among a design's flows, each flow waiting for the ones it depends on, for the
project's designs and the engines' (torch_bcast, torch_stripe), under each pattern (the
experiment and the model are described in analysis/models/fleet.py's docstring)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy import sparse

from analysis.stats.fleet_bounds import (BROADCASTS, KINDS, REPLICATED, STRIPES, fill_chunks,
                                         moved, whole)
from analysis.stats.fleet_rounds import CHUNK, Fabric

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

# Resources of the model: the store's uplink, the shared CPU, then per node k of N its NIC in
# (IN + k), its NIC out (IN + N + k) and its own CPU (IN + 2N + k).
UPLINK, CPU, IN = 0, 1, 2


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


def make_flows(n: int, size: float, cpu: tuple | None, shared: bool, uplink: float = 0.0,
               into=None, out=None, store=None, after=None) -> list[Flow]:
    """Flows of `size` bytes each, one per row of `into` (F rows of N: what a byte of the flow
    loads node k's NIC in by), `out` (its NIC out) and `store` (the part of into that comes
    from the store; none by default), each loading the uplink by `uplink` and CPU at each
    node: `cpu` is (seconds per byte from the store, seconds per byte to or from a peer), on
    the shared CPU or each node's own; flow i starts once the flows after[i] have ended. Built
    together, as a round of N nodes has N flows or more."""
    into = np.atleast_2d(np.asarray(into if into is not None else np.zeros(n), dtype=float))
    out = np.zeros_like(into) if out is None else np.broadcast_to(
        np.asarray(out, dtype=float), into.shape)
    store = np.zeros_like(into) if store is None else np.broadcast_to(
        np.asarray(store, dtype=float), into.shape)
    dense = np.zeros((len(into), IN + 3 * n))
    dense[:, UPLINK] = uplink
    dense[:, IN:IN + n], dense[:, IN + n:IN + 2 * n] = into, out
    if cpu:
        per_node = cpu[0] * store + cpu[1] * (into - store + out)
        if shared:
            dense[:, CPU] = per_node.sum(axis=1)
        else:
            dense[:, IN + 2 * n:] = per_node
    w = sparse.csr_matrix(dense)
    after = after or [()] * len(into)
    return [Flow(float(size), w.indices[w.indptr[i]:w.indptr[i + 1]],
                 w.data[w.indptr[i]:w.indptr[i + 1]], tuple(after[i])) for i in range(len(into))]


def make_flow(n: int, size: float, cpu: tuple | None, shared: bool, uplink: float = 0.0,
              into=None, out=None, after: tuple[int, ...] = (), store=None) -> Flow:
    """One flow of `make_flows`: `into`, `out` and `store` vectors of N."""
    return make_flows(n, size, cpu, shared, uplink, into, out, store, [after])[0]


def tree_children(n: int) -> np.ndarray:
    """Per node the nodes it sends each chunk to in gloo's broadcast from node 0 (gloo/
    broadcast.cc, what torch.distributed.broadcast runs on the gloo backend): a binomial tree,
    in which at step i every node v below 2^i that holds the chunk sends it whole to v + 2^i;
    node 0 sends to ceil(log2 N) nodes, and every node but 0 gets it from one."""
    out = np.zeros(n)
    for v in range(n):
        step = 1 << v.bit_length()  # the first step at which node v holds the chunk
        while v + step < n:
            out[v] += 1
            step <<= 1
    return out


def tree_depth(n: int) -> np.ndarray:
    """Per node the hops a chunk makes from node 0 in gloo's binomial tree (its set bits), each
    a whole chunk received before it is sent on."""
    return np.array([bin(v).count("1") for v in range(n)], dtype=float)


def shares(kind: str, n: int, pattern=REPLICATED) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(from the store, from peers, to peers) per node, in units of M: what each design's
    node k receives and sends (the module's docstring) when every node needs the whole model,
    or (a pattern of parts) its 1/N: then node 0 of bcast and torch_bcast scatters the parts,
    chain relays the whole model as under replicated (each node keeping its part: `moved`),
    every other design's node pulls its own."""
    pattern = moved(kind, pattern)
    store, rx, tx = np.zeros(n), np.zeros(n), np.zeros(n)
    if not whole(pattern):
        if kind in BROADCASTS and n > 1:  # bcast, torch_bcast (chain's is replicated here)
            store[0], tx[0], rx[1:] = 1.0, (n - 1) / n, 1.0 / n
        else:
            store[:] = 1.0 / n
    elif kind == "every" or kind not in KINDS:
        store[:] = 1.0
    elif kind in STRIPES:
        store[:], rx[:], tx[:] = 1.0 / n, (n - 1) / n, (n - 1) / n
    else:
        store[0], rx[1:] = 1.0, 1.0
        if kind == "bcast" and n > 1:
            tx[0], tx[1:] = 1.0, (n - 2) / (n - 1)
        elif kind == "chain":  # every node but the last forwards it all
            tx[:-1] = 1.0
        elif kind == "torch_bcast":
            tx[:] = tree_children(n)
    return store, rx, tx


def pulls_own(kind: str, pattern) -> bool:
    """Whether each node's flows are its own pull from the store and no one else's (every; any
    design but a broadcast under a pattern of parts; chain relays under every pattern): each
    node's time is then its flow's."""
    pattern = moved(kind, pattern)
    return kind == "every" or (not whole(pattern) and kind not in BROADCASTS)


def design_flows(kind: str, n: int, model: float, cpu: tuple | None, shared: bool,
                 pattern=REPLICATED) -> list[Flow]:
    """The flows of one round of design `kind` under `pattern` (analysis/models/fleet.py's
    docstring, 4.; chain's are the replicated chain's under every pattern: `moved`)."""
    pattern = moved(kind, pattern)
    unit = np.eye(n)
    if pulls_own(kind, pattern) or n == 1:
        part = model if whole(pattern) else model / n
        return make_flows(n, part, cpu, shared, uplink=1.0, into=unit, store=unit)
    if kind == "stripe":  # phased: each stripe whole, then its all-gather
        part = model / n
        return (make_flows(n, part, cpu, shared, uplink=1.0, into=unit, store=unit)
                + make_flows(n, part, cpu, shared, into=1.0 - unit, out=(n - 1) * unit,
                             after=[(k,) for k in range(n)]))
    if kind in STRIPES:  # pipelined: each byte of node k's stripe goes on as it lands
        return make_flows(n, model / n, cpu, shared, uplink=1.0, into=np.ones((n, n)),
                          out=(n - 1) * unit, store=unit)
    store, rx, tx = shares(kind, n, pattern)  # one pipelined flow of M through every node
    return [make_flow(n, model, cpu, shared, uplink=1.0, into=store + rx, out=tx, store=store)]


def flow_key(kind: str, n: int, pattern=REPLICATED) -> tuple:
    """What `design_flows` builds for a design, so that designs of the same flows share one
    simulation: every node its own pull (of M, or of M/N), the phased stripe, the pipelined
    all-gather (stripe (pipelined) and torch_stripe), a scatter (bcast and torch_bcast under a
    pattern of parts), each other broadcast its own (chain's relay under every pattern)."""
    pattern = moved(kind, pattern)
    if pulls_own(kind, pattern) or n == 1:
        return ("own", whole(pattern), n)
    if not whole(pattern):
        return ("scatter", n)
    return ("all-gather" if kind in STRIPES and kind != "stripe" else kind, n)


def fill_of(kind: str, n: int, pattern=REPLICATED) -> np.ndarray:
    """Per node the chunks, at the NIC's rate, that it ends behind its flows: the bound's fill
    (fleet_bounds.fill_chunks) for the last node of bcast, the pipelined stripe and a scatter;
    node k of a chain k chunks, under every pattern (`moved`); torch_bcast each node its hops
    in gloo's binomial tree (`tree_depth`); torch_stripe N-1 for every node (gloo's all-gather
    of the last round of N chunks is a ring of N-1 steps of a chunk each, gloo/allgather.cc)."""
    pattern = moved(kind, pattern)
    if n == 1 or pulls_own(kind, pattern):
        return np.zeros(n)
    if kind == "chain":
        return np.arange(n, dtype=float)
    if whole(pattern) and kind == "torch_bcast":
        return tree_depth(n)
    if whole(pattern) and kind == "torch_stripe":
        return np.full(n, n - 1.0)
    if kind in BROADCASTS:
        return np.r_[0.0, np.full(n - 1, float(fill_chunks(kind, n, pattern)))]
    return np.full(n, float(fill_chunks(kind, n, pattern)))


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
    _ends: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def cpu_of(self) -> tuple | None:
        pair = (self.cpu.get("store"), self.cpu.get("peer"))
        ok = all(v is not None and math.isfinite(v) and v >= 0 for v in pair)
        return pair if ok and any(pair) else None

    def times(self, kind: str, n: int, pattern=REPLICATED) -> tuple[np.ndarray, str]:
        """(each node's seconds, what held the last flow back) for a round of `n` nodes under
        `pattern`; a kind outside KINDS is `every`."""
        kind = kind if kind in KINDS else "every"
        key = (kind, n, whole(pattern))
        if key in self._seen:
            return self._seen[key]
        flows = flow_key(kind, n, pattern)
        if flows not in self._ends:
            self._ends[flows] = simulate(design_flows(kind, n, self.model_bytes, self.cpu_of(),
                                                      self.fabric.shared_cpu, pattern),
                                         capacity(n, self.fabric))
        end, neck = self._ends[flows]
        # Each node's own pull ends when it does; otherwise a node holds every byte once every
        # flow has ended, and then waits its fill.
        base = end if pulls_own(kind, pattern) or n == 1 else np.full(n, end.max())
        t = base + fill_of(kind, n, pattern) * self.chunk * 8 / self.fabric.nic_in_bps
        out = (t + self.start_s, resource_name(int(neck[int(np.argmax(end))]), n))
        self._seen[key] = out
        return out

    def seconds(self, kind: str, n: int, pattern=REPLICATED) -> float:
        """The round's duration: its last node's time."""
        return float(self.times(kind, n, pattern)[0].max())
