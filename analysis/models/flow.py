"""The fleet's flow-level model: max-min fair sharing of the store's uplink, the NICs and
the CPU among a design's flows, each flow waiting for the ones it depends on (the experiment
and the model are described in analysis/models/fleet.py's docstring)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy import sparse

from analysis.stats.fleet_rounds import CHUNK, DESIGNS, Fabric, fill_chunks

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
