"""The fleet's designs, what each node needs (the run's pattern), and the fabric's lower bound
on a round of each: the one place the bounds are written (docs/fleet.md "The figures of a
round"; the experiment is described in analysis/models/fleet.py's docstring).

A design's *kind* is what the bound and the model give it: one of KINDS. The project's designs
are the strategy's (`every`, `bcast`, `stripe`, `chain`), the stripe named by its variant: a
phased stripe (option stripe = "phased", and every record from before the option) is plain
`stripe`, a pipelined one PIPELINED, `stripe (pipelined)`, in every table and figure. The
engines' designs (ENGINES) are PyTorch's torch.distributed on gloo, run one command per node.

Rates are bits per second (a Fabric's `uplink_bps`, `nic_in_bps`, `nic_out_bps`), sizes bytes:
a time is 8 bytes / rate."""

from __future__ import annotations

import math

REPLICATED = "replicated"  # every node needs the whole model (records without a pattern too)
DESIGNS = ("every", "bcast", "stripe", "chain")  # the strategy's own (details.design)
PIPELINED = "stripe (pipelined)"  # stripe = "pipelined": each chunk forwarded as it lands
ENGINES = ("torch_bcast", "torch_stripe")  # torch.distributed's collectives, gloo backend
PROJECT = ("every", "bcast", "stripe", PIPELINED, "chain")
KINDS = PROJECT + ENGINES
# The designs in which node 0 alone pulls from the store and the others get it from peers.
BROADCASTS = ("bcast", "chain", "torch_bcast")
# The designs in which each node pulls a stripe and sends it to every other (an all-gather).
STRIPES = ("stripe", PIPELINED, "torch_stripe")


def whole(pattern) -> bool:
    """Whether a run's pattern has every node need the whole model: `replicated`, or none
    recorded; any other (tp, tp:1, pp, files) gives each of N nodes its part, about M/N."""
    return not isinstance(pattern, str) or pattern in ("", REPLICATED)


def moved(kind: str, pattern):
    """The pattern whose bytes a design moves under `pattern`: chain relays every byte of the
    model down the line whatever each node keeps (under a pattern of parts each node keeps its
    part of what it relays), so its bytes, bound and flows are the replicated chain's; any other
    design's are the pattern's own."""
    return REPLICATED if kind == "chain" else pattern


def fill_chunks(kind: str, n: int, pattern=REPLICATED) -> int:
    """The chunks the bound adds for a pipelined design, each at the NIC's rate in: the hops
    the last chunk still has to make once the store has sent it. bcast and torch_bcast, one to
    the owner and one on (min(2, N-1)); chain, one per hop (N-1), under any pattern (`moved`);
    the pipelined stripe and torch_stripe, one (the last chunk from its puller to the others,
    one hop); under a pattern of parts bcast and torch_bcast scatter, one hop from node 0 (1);
    none for the others, and none at one node."""
    pattern = moved(kind, pattern)
    if n <= 1:
        return 0
    if not whole(pattern):
        return 1 if kind in ("bcast", "torch_bcast") else 0
    if kind in ("bcast", "torch_bcast"):
        return min(2, n - 1)
    if kind == "chain":
        return n - 1
    return 1 if kind in (PIPELINED, "torch_stripe") else 0


def bound(kind: str, n: int, model: float, chunk: float, fabric, pattern=REPLICATED) -> float:
    """The fabric's lower bound (seconds) on a round of `n` nodes of design `kind` loading a
    model of `model` bytes in chunks of `chunk` under `pattern`; a kind outside KINDS (another
    strategy on every node) is `every`. Every design serves every pattern.

    Whole model (M), U the store's uplink, I a node's NIC in:
    - every: max(N M / U, M / I);
    - bcast, chain: M / min(U, I) + fill;
    - torch_bcast: gloo's broadcast is a binomial tree (node 0 sends each chunk whole to
      ceil(log2 N) nodes, which pass it on), so node 0's NIC out carries ceil(log2 N) M:
      max(M / min(U, I), ceil(log2 N) M / O) + fill, the design's own bound as every's counts
      its N pulls; `best_bound` is the fabric's (the lowest of every design's);
    - stripe (phased): max(M / U, M/N / I) + (N-1)/N M / I;
    - stripe (pipelined), torch_stripe: max(M / U, M / I) + fill (torch_stripe all-gathers
      each round of N chunks while the next is pulled: pipelined). The fill is one chunk, the
      last one's hop from its puller, as the flow model has it; where the store is the limit
      the last chunk's N-1 sends out of its puller, (N-1) C / O after M / U, can take longer.
    Each node its part (tp: M/N), O a node's NIC out:
    - every, the stripes, torch_stripe: max(M / U, M/N / I) (each pulls its own part);
    - bcast, torch_bcast (node 0 scatters): max(M / U, M / I, (N-1)/N M / O) + fill;
    - chain: the replicated chain's, M / min(U, I) + (N-1) chunks: the relay moves M through
      every node, which keeps its part (`moved`)."""
    kind = kind if kind in KINDS else "every"
    pattern = moved(kind, pattern)
    up, nic, out = fabric.uplink_bps / 8, fabric.nic_in_bps / 8, fabric.nic_out_bps / 8
    fill = fill_chunks(kind, n, pattern) * chunk / nic
    if not whole(pattern):
        if kind in ("bcast", "torch_bcast"):
            return max(model / up, model / nic, (n - 1) / n * model / out) + fill
        return max(model / up, model / n / nic)
    if kind == "stripe":  # the stripes in (the store's M, a node's M/N), then the rest
        return max(model / up, model / n / nic) + (n - 1) / n * model / nic
    if kind in (PIPELINED, "torch_stripe"):
        return max(model / up, model / nic) + fill
    if kind == "torch_bcast":
        return max(model / min(up, nic), math.ceil(math.log2(n)) * model / out) + fill
    if kind in BROADCASTS:
        return model / min(up, nic) + fill
    return max(n * model / up, model / nic)


def best_bound(n: int, model: float, chunk: float, fabric, pattern=REPLICATED) -> float:
    """The lowest bound of every kind at N under `pattern`: what the fabric allows any
    design."""
    return min(bound(k, n, model, chunk, fabric, pattern) for k in KINDS)
