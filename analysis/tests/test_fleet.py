"""The fleet (analysis/fleet.py) on synthetic records whose times are worked out by hand from the
fabric (closed forms of each design's max-min shares, never the module's own model): a round
lasts from its first node's start to its last node's end, as a round of Many readers does, and
counts only whole, a failed or missing node is named; the read amplification is N for every and
1 for the other designs; under tp chain relays the whole model as under replicated, each node
receiving N times what it needs, its bound and model the replicated chain's; the connect
column is the slowest node's connect_s; the bound and the max-min allocator agree with numbers
worked by hand; a round faster than its bound is marked; the model agrees with the hand-worked times (its CPU
per byte and its start cost too), and where the records hold what it does not model (a start
cost that grows with N) its held-out errors, each series left out and the largest N predicted
from the smaller, are the ones worked out by hand and band its curves; rounds of a resumed
experiment use the links their own session measured and never pool across [cluster] rates;
the command prints its tables and is one line and exit 2 on bad input; and the report gains a
Fleet section only where records carry `nodes`."""

import json
import os
import statistics
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from conftest import FILE, write_rounds

from analysis.core import ratios, units
from analysis.core.results import load
from analysis.models import fleet, flow
from analysis.pages import report
from analysis.sections import fleet as fleet_sections, fleet_figures, fleet_series
from analysis.stats import fleet_bounds, fleet_paired, fleet_rounds, readers

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODEL = 64 * 2**20  # M: the model's tensor bytes
CHUNK = 4 * 2**20
NIC, UPLINK = 200e6, 400e6  # bits per second, as iperf3 measured them
CORES = 2  # shared by every node
CPU_PER_BYTE = 1.5e-8  # a node's CPU seconds per byte it moves, in and out
START = 0.4  # the fixed start cost of a round
COUNTS = (1, 2, 4)
FABRIC = fleet_rounds.Fabric(UPLINK, NIC, NIC, CORES, True, "synthetic")


PIPELINED = fleet_rounds.PIPELINED
ENGINES = ("torch_bcast", "torch_stripe")
KINDS = ("every", "bcast", "stripe", PIPELINED, "chain") + ENGINES


def hand_times(design, n, start=START, nic=NIC, uplink=UPLINK, pattern="replicated"):
    """Each node's seconds in a round of `n` nodes, worked out by hand: the rate every flow of
    the design gets when the store's uplink, each NIC and the shared CPU are split max-min
    fairly (every design's flows are alike, so each gets the least of the resources' equal
    shares), the pipeline's fill, and `start`."""
    if design == "chain":
        pattern = "replicated"  # the relay moves M through every node whatever each keeps
    up, link = uplink / 8, nic / 8  # bytes per second
    hop = CHUNK / link  # one chunk through a NIC
    cpu = CORES / CPU_PER_BYTE  # the bytes a second the shared CPU moves
    if pattern == "tp" and design in ("bcast", "torch_bcast"):
        # Node 0 pulls M and sends each of the others its M/N: one flow of M that loads node
        # 0's NIC out by (N - 1)/N, each other's in by 1/N, the CPU by 1 + 2 (N - 1)/N.
        rate = min(up, link, link * n / (n - 1), cpu / (1 + 2 * (n - 1) / n))
        return [MODEL / rate + start] + [MODEL / rate + hop + start] * (n - 1)
    if pattern == "tp":  # each node pulls its own M/N: N flows on the uplink, one per NIC
        rate = min(up / n, link, cpu / n)
        return [MODEL / n / rate + start] * n
    if design == "every" or (design in ("stripe", PIPELINED, "torch_stripe") and n == 1):
        rate = min(up / n, link, cpu / n)  # N flows of M from the store
        return [MODEL / rate + start] * n
    if design == "stripe":
        # Each node's M/N from the store, then each sends it to N - 1 nodes while it takes in
        # N - 1 stripes: (N - 1) per byte on every NIC out and in, 2 (N - 1) on the CPU.
        first = min(up / n, link, cpu / n)
        then = min(link / (n - 1), cpu / (2 * (n - 1) * n))
        return [MODEL / n / first + MODEL / n / then + start] * n
    if design in (PIPELINED, "torch_stripe"):
        # N flows of M/N, each through its puller on to the N - 1 others: every NIC in takes N
        # of them, the CPU 1 + 2 (N - 1) per byte of each; then the last chunk's hop (the
        # pipelined stripe), or gloo's ring all-gather of the last round, N - 1 hops.
        rate = min(up / n, link / n, cpu / (n * (2 * n - 1)))
        hops = 1 if design == PIPELINED else n - 1
        return [MODEL / n / rate + hops * hop + start] * n
    # bcast, chain and torch_bcast: one flow of M; the CPU pays for the store's bytes into
    # node 0, and for N - 1 nodes' bytes in and N - 1 sends on.
    rate = min(up, link, cpu / (2 * n - 1))
    if design == "bcast":
        return [MODEL / rate + start] + [MODEL / rate + min(2, n - 1) * hop + start] * (n - 1)
    if design == "torch_bcast":
        # gloo's binomial tree: node 0 sends each chunk to ceil(log2 N) nodes (2 at 3 or 4
        # nodes), and node v waits its set bits in hops.
        sends = max(1, (n - 1).bit_length())
        rate = min(up, link / sends, cpu / (2 * n - 1))
        return [MODEL / rate + bin(k).count("1") * hop + start for k in range(n)]
    return [MODEL / rate + k * hop + start for k in range(n)]


def cluster(nodes=4, iperf=True, nic=NIC, nic_text="200mbit"):
    """env.json's `cluster` for `nodes` nodes, with iperf3 figures (the NICs' `nic`) or
    without (null)."""
    def link(name, rate, bits):
        tc = {"egress": {"qdisc": "tbf", "rate": rate, "burst": "32kb", "latency": "50ms"},
              "ingress": {"qdisc": "tbf", "rate": rate, "dev": f"ifb-{name}"}}
        figures = {"down_bits_per_s": bits, "up_bits_per_s": bits} if iperf else \
            {"down_bits_per_s": None, "up_bits_per_s": None}
        return {"name": name, "rate": rate, "tc": tc, "iperf3": figures}

    return {"nodes": nodes, "nic": nic_text, "uplink": "400mbit",
            "nic_bits_per_s": units.parse_rate(nic_text), "uplink_bits_per_s": 4e8,
            "cores": CORES,
            "topology": "a bridge in namespace lb-fleet: the store and each node on a veth pair",
            "store": {"netns": "lb-store", "address": "169.254.7.1", "dev": "st0"},
            "node_list": [{"node": k, "netns": f"lb-node{k}", "address": f"169.254.7.{10 + k}",
                           "dev": f"nd{k}"} for k in range(nodes)],
            "links": [link("store", "400mbit", UPLINK)]
            + [link(f"node{k}", nic_text, nic) for k in range(nodes)]}


def node_record(i, design, n, k, *, rep=0, cache="cold", wall=None, status="ok", error=None,
                spec=None, start=1.7e9, pattern="replicated", old=False, **extra):
    """Node k's record of a round of `n` nodes of `design` (a kind: the pipelined stripe and
    the engines' too) under `pattern`, as the C++ side (an engine's command: the exec
    protocol) writes it: its bytes those the design gives node k, its CPU seconds CPU_PER_BYTE
    times the bytes it moved, its needed bytes (M, or M/N under tp) and its NIC's counters (2%
    and 1000 bytes above what it counted), its wall time `hand_times`' unless `wall` is given,
    released at `start` (load_start_unix_s); `old`: as a record from before needed_bytes, the
    NIC counters and the stripe option."""
    store, rx, tx = (x * MODEL for x in flow.shares(design, n, pattern))
    cpu = CPU_PER_BYTE * (store[k] + rx[k] + tx[k])
    wall = hand_times(design, n, pattern=pattern)[k] if wall is None else wall
    needed = MODEL if pattern == "replicated" else MODEL // n
    strategy, name = ("exec", design) if design in ENGINES else ("fleet", design.split()[0])
    params = {"design": name, "chunk": CHUNK, "concurrency": 4, "port": 29400}
    details = {"design": name, "node": k, "nodes": n, "ready_s": wall - 0.01,
               "store_bytes": store[k], "peer_rx_bytes": rx[k], "peer_tx_bytes": tx[k],
               "store_requests": store[k] / CHUNK, "connect_s": 0.02}
    default = f"exec:label={design}" if strategy == "exec" else f"fleet:design={name}"
    if name == "stripe" and not old:
        variant = "pipelined" if design == PIPELINED else "phased"
        params["stripe"] = details["stripe"] = variant
        default += ":stripe=pipelined" if design == PIPELINED else ""
    record = {"run_id": f"r{i:04d}", "experiment": "fleet", "strategy": strategy,
              "strategy_spec": spec or default, "params": {} if strategy == "exec" else params,
              "file": FILE, "format": "wlf", "file_bytes": MODEL + 4096, "cache": cache,
              "rep": rep, "procs": n, "proc": k, "nodes": n, "pattern": pattern,
              "rank": k, "ranks": n, "host": f"node{k}", "status": status, "error": error,
              "checksum_ok": True if status == "ok" else None,
              "wall_s": wall if status == "ok" else None, "user_s": 0.25 * cpu,
              "sys_s": 0.75 * cpu, "load_user_s": 0.25 * cpu, "load_sys_s": 0.75 * cpu,
              "tensor_bytes": needed, "load_start_unix_s": start, "details": details}
    if strategy == "exec":
        record.update(exec={"timed": "region"}, verify="xxh3")
        details["chunk"] = CHUNK
    if not old:
        record.update(needed_bytes=needed, nic_rx_bytes=1.02 * (store[k] + rx[k]) + 1000,
                      nic_tx_bytes=1.02 * tx[k] + 1000)
    return {**record, **extra}


def http_record(i, n, k, rep):
    """An http_ranges node of a cluster experiment: every node reads M from the store."""
    r = node_record(i, "every", n, k, rep=rep)
    r.update(strategy="http_ranges", strategy_spec="http_ranges:concurrency=4",
             params={"concurrency": 4},
             details={"bytes_received": MODEL, "bytes_requested": MODEL, "requests": 16})
    return r


def fleet_records():
    """Every kind at N = 1, 2, 4, cold and warm, 3 rounds each; in round 1 of bcast at 4
    nodes, cold, node 2 fails; every kind under tp at N = 2 and 4, cold, 3 rounds each; and
    http_ranges on 2 and 4 nodes, cold."""
    out = []
    for design in KINDS:
        for n in COUNTS:
            for cache in ("cold", "warm"):
                for rep in range(3):
                    for k in range(n):
                        broken = (design, n, cache, rep, k) == ("bcast", 4, "cold", 1, 2)
                        out.append(node_record(
                            len(out), design, n, k, rep=rep, cache=cache,
                            **({"status": "failed", "error": "peer 0 closed the connection"}
                               if broken else {})))
    for design in KINDS:
        for n in COUNTS[1:]:
            for rep in range(3):
                out += [node_record(len(out) + k, design, n, k, rep=rep, pattern="tp")
                        for k in range(n)]
    for n in (2, 4):
        for rep in range(3):
            out += [http_record(len(out) + k, n, k, rep) for k in range(n)]
    return out


def write(folder, records, env=None):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (folder / "env.json").write_text(json.dumps(
        env if env is not None else {"experiment": "fleet", "host": {"cores": 2},
                                     "cluster": cluster()}))
    return folder


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return write(tmp_path_factory.mktemp("fleet") / "results", fleet_records())


@pytest.fixture(scope="module")
def analysed(folder):
    return fleet.analyse(load(str(folder)))


def one(table, **key):
    """The one row of `table` with `key`'s values (pattern replicated unless it says)."""
    if "pattern" in table:
        key.setdefault("pattern", "replicated")
    found = table[(table[list(key)] == list(key.values())).all(axis=1)]
    assert len(found) == 1, key
    return found.iloc[0]


def cli(*args):
    return subprocess.run([sys.executable, "-m", "analysis.fleet", *map(str, args)], cwd=REPO,
                          capture_output=True, text=True)


# --- rounds ------------------------------------------------------------------------------------

def test_a_round_lasts_from_its_first_start_to_its_last_end_as_in_many_readers(tmp_path):
    # Released 0.25 s apart, the nodes end at 102.0, 102.75 and 104.0: 4.0 s from the first
    # start, where the largest wall time alone is 3.5 s.
    records = [node_record(k, "chain", 3, k, wall=w, start=100.0 + 0.25 * k)
               for k, w in enumerate([2.0, 2.5, 3.5])]
    r = load(str(write(tmp_path / "max", records)))
    row = fleet_rounds.rounds(fleet_rounds.nodes_table(r.runs)).iloc[0]
    assert row["duration_s"] == 4.0  # sums of quarters: exact
    # One duration for one round: the Many readers section's is the same.
    assert readers.rounds(r.runs, r.env).iloc[0]["duration_s"] == row["duration_s"]
    assert row["first_s"] == 2.0 and row["spread"] == pytest.approx(1.75, rel=1e-12)
    assert row["slowest"] == 2 and row["reason"] is None
    # The store sent M once; the three nodes need 3 M together.
    assert row["amplification"] == pytest.approx(1 / 3)
    assert row["received_median"] == row["received_max"] == pytest.approx(1.0)
    # chain: node 0 takes M from the store and every node but the last sends M on.
    assert row["nic_in"] == pytest.approx(1.0) and row["nic_out"] == pytest.approx(1.0)


def test_a_failed_node_fails_its_round_and_is_named(analysed):
    rounds = analysed["rounds"]
    failed = one(rounds, strategy_spec="fleet:design=bcast", nodes=4, cache="cold", rep=1)
    assert pd.isna(failed["duration_s"]) and pd.isna(failed["amplification"])
    assert failed["reason"] == "node 2: failed: peer 0 closed the connection"
    assert failed["ok_nodes"] == 3
    series = one(analysed["summary"], strategy_spec="fleet:design=bcast", nodes=4, cache="cold")
    assert series["rounds"] == 3 and series["failed"] == 1
    assert "| bcast | cold | 4 | 3 (1 failed) |" in fleet_sections.series_md(analysed["summary"])
    assert ("- bcast [replicated], cold, 4 nodes, round 1: node 2: failed: peer 0 closed the "
            "connection"
            in fleet_sections.failed_md(rounds))


def test_a_missing_node_fails_its_round(tmp_path):
    records = [node_record(k, "stripe", 4, k) for k in (0, 1, 3)]
    r = load(str(write(tmp_path / "missing", records)))
    row = fleet_rounds.rounds(fleet_rounds.nodes_table(r.runs)).iloc[0]
    assert pd.isna(row["duration_s"]) and row["reason"] == "node 2: no record"


def test_read_amplification_is_the_store_bytes_over_what_the_nodes_need(analysed):
    s = analysed["summary"]
    for n in COUNTS:
        # Each node needs M and every node pulls it: N M over N M.
        assert one(s, strategy_spec="fleet:design=every", nodes=n, cache="cold")[
            "amplification"] == pytest.approx(1.0)
        for spec in ("fleet:design=bcast", "fleet:design=stripe",
                     "fleet:design=stripe:stripe=pipelined", "fleet:design=chain",
                     "exec:label=torch_bcast", "exec:label=torch_stripe"):
            row = one(s, strategy_spec=spec, nodes=n, cache="warm")
            assert row["amplification"] == pytest.approx(1 / n), spec  # M once, for N M
            assert row["received_median"] == row["received_max"] == pytest.approx(1.0)
    # Another strategy of the cluster: by its spec, each node reading it all from the store.
    http = one(s, strategy_spec="http_ranges:concurrency=4", nodes=4)
    assert http["amplification"] == pytest.approx(1.0) and http["kind"] == "every"
    # bcast at 4 nodes: node 0 carries M in and M out, the others M in and 2/3 M out.
    bcast = one(s, strategy_spec="fleet:design=bcast", nodes=4, cache="warm")
    assert bcast["nic_in"] == pytest.approx(1.0) and bcast["nic_out"] == pytest.approx(1.0)


def test_under_tp_amplification_is_over_the_slices_the_nodes_need(analysed):
    s = analysed["summary"]
    for n in (2, 4):
        for spec in ("fleet:design=every", "fleet:design=stripe:stripe=pipelined",
                     "exec:label=torch_stripe"):
            # Each node pulls its own M/N: M from the store for the M the nodes need.
            row = one(s, strategy_spec=spec, nodes=n, pattern="tp")
            assert row["amplification"] == pytest.approx(1.0)
            assert row["received_median"] == row["received_max"] == pytest.approx(1.0)
            assert row["model_bytes"] == MODEL and row["needed_bytes"] == MODEL
        for spec in ("fleet:design=bcast", "exec:label=torch_bcast"):
            # Node 0 pulls M and scatters: it receives M for its M/N (N times what it needs),
            # every other node its M/N (the median of 2 and 1 at 2 nodes: 1.5).
            row = one(s, strategy_spec=spec, nodes=n, pattern="tp")
            assert row["amplification"] == pytest.approx(1.0)
            assert row["received_median"] == pytest.approx(1.5 if n == 2 else 1.0)
            assert row["received_max"] == pytest.approx(n)
        # chain relays M down the line, each node keeping its M/N: the store sends M once (1),
        # and every node receives M for its M/N (N), node 0 from the store.
        row = one(s, strategy_spec="fleet:design=chain", nodes=n, pattern="tp")
        assert row["amplification"] == pytest.approx(1.0)
        assert row["received_median"] == row["received_max"] == pytest.approx(n)
        assert row["nic_in"] == pytest.approx(1.0) and row["nic_out"] == pytest.approx(1.0)
        assert row["bound_s"] == pytest.approx(one(s, strategy_spec="fleet:design=chain",
                                                   nodes=n, cache="cold")["bound_s"])
    md = fleet_sections.series_md(s)
    assert md.index("**Each node needs the whole model**") < md.index(
        "**Each node needs its 1/N slice of every tensor** (pattern `tp`")
    tp = md.split("(pattern `tp`", 1)[1]
    assert "| bcast | cold | 4 | 3 | " in tp and "| 1.00 | 1.00, 4.00 |" in tp
    assert "| chain | cold | 4 | 3 | " in tp and "| 1.00 | 4.00, 4.00 |" in tp


def test_chain_under_tp_received_over_needed_is_n_in_a_round(tmp_path):
    # 4 nodes each needing M/4 of a chain: node 0 takes M from the store, every other node M
    # from the one before it; each keeps its quarter.
    records = [node_record(k, "chain", 4, k, pattern="tp") for k in range(4)]
    for k, r in enumerate(records):
        assert r["needed_bytes"] == MODEL // 4
        assert r["details"]["store_bytes"] + r["details"]["peer_rx_bytes"] == MODEL
        assert r["details"]["peer_tx_bytes"] == (MODEL if k < 3 else 0)
    row = fleet_rounds.rounds(fleet_rounds.nodes_table(
        load(str(write(tmp_path / "chain", records))).runs)).iloc[0]
    assert row["reason"] is None and row["model_bytes"] == MODEL
    assert row["received_median"] == row["received_max"] == pytest.approx(4.0)
    assert row["amplification"] == pytest.approx(1.0)


def test_the_nics_own_counters_beside_the_nodes_counts(analysed):
    # The synthetic NICs carried 2% and 1000 bytes above what each node counted.
    bcast = one(analysed["summary"], strategy_spec="fleet:design=bcast", nodes=4, cache="warm")
    assert bcast["wire_in_median"] == pytest.approx(1.02 * MODEL + 1000)
    assert bcast["wire_out_max"] == pytest.approx(1.02 * MODEL + 1000)  # node 0 sends M
    assert bcast["wire_out_median"] == pytest.approx(1.02 * MODEL * 2 / 3 + 1000)
    assert bcast["wire_over_median"] == pytest.approx(1.02 + 1000 / MODEL)
    md = fleet_sections.series_md(analysed["summary"])
    assert "| 0.25 | 1.00, 1.00 | 65.3, 65.3 / 43.5, 65.3 | 1.02, 1.02 |" in md


def test_the_connect_column_is_the_slowest_nodes_connect_s(tmp_path):
    # 2 nodes of bcast, 3 rounds: node 1 connects last, 0.15, 0.25 and 0.35 s; an engine's
    # round beside it, and http_ranges, which sends no connect_s.
    records = []
    for rep_ in range(3):
        for k in range(2):
            r = node_record(len(records), "bcast", 2, k, rep=rep_)
            r["details"]["connect_s"] = 0.1 + 0.1 * rep_ + 0.05 * k
            records.append(r)
    records += [node_record(len(records) + k, "torch_bcast", 2, k) for k in range(2)]
    records += [http_record(len(records) + k, 2, k, 0) for k in range(2)]
    a = fleet.analyse(load(str(write(tmp_path / "connect", records))))
    bcast = a["rounds"][a["rounds"]["design"] == "bcast"].sort_values("rep")
    assert bcast["connect_s"].tolist() == pytest.approx([0.15, 0.25, 0.35])
    s = a["summary"]
    assert one(s, strategy_spec="fleet:design=bcast")["connect_s"] == pytest.approx(0.25)
    assert one(s, strategy_spec="exec:label=torch_bcast")["connect_s"] == pytest.approx(0.02)
    assert pd.isna(one(s, strategy_spec="http_ranges:concurrency=4")["connect_s"])
    md = fleet_sections.series_md(s)
    assert "| median s (95% interval) | connect s (slowest node) | bound s |" in md
    cells = {line.split(" | ")[0]: line.split(" | ") for line in md.split("\n")
             if line.startswith("| ") and " | cold | 2 | " in line}
    assert cells["| bcast"][5] == "0.25" and cells["| torch_bcast"][5] == "0.02"
    assert cells["| http_ranges:concurrency=4"][5] == ""
    # Under the table: the project's designs count their connecting in wall_s, the engines'
    # do not.
    assert fleet_series.CONNECT_NOTE in md
    assert "inside their timed load" in md and "before their timed region starts" in md
    series = fleet_sections.summary_of(a)["series"]
    assert {r["label"]: r["connect_s"] for r in series}["bcast"] == pytest.approx(0.25)


def test_old_records_without_needs_counters_or_stripe_option_still_read(tmp_path):
    # Records from before needed_bytes, the NICs' counters and the stripe option: each node
    # needed the whole model (its tensor_bytes), and a stripe was phased.
    records = [node_record(i, d, 2, k, old=True) for i, (d, k) in enumerate(
        (d, k) for d in ("stripe", "every") for k in range(2))]
    for r in records:
        r.pop("pattern")
        assert "needed_bytes" not in r and "stripe" not in r["details"]
    a = fleet.analyse(load(str(write(tmp_path / "old", records))))
    stripe = one(a["summary"], strategy_spec="fleet:design=stripe")
    assert stripe["label"] == "stripe" and stripe["kind"] == "stripe"
    assert stripe["amplification"] == pytest.approx(0.5)  # M for the 2 M two nodes need
    assert stripe["bound_s"] == pytest.approx(
        fleet_rounds.bound("stripe", 2, MODEL, CHUNK, FABRIC))
    assert pd.isna(stripe["wire_in_median"])
    row = next(x for x in fleet_sections.series_md(a["summary"]).split("\n")
               if x.startswith("| stripe | cold | 2 | 1 | "))
    assert "| 0.50 | 1.00, 1.00 |  |  |" in row
    assert a["predictions"]["held_out_error"].abs().max() < 1e-6


# --- the bound and the allocator, by hand ------------------------------------------------------

def test_the_bound_by_hand():
    fabric = fleet_rounds.Fabric(400e6, 200e6, 200e6)  # 50 MB/s out of the store, 25 MB/s a NIC
    m, chunk = 100e6, 4e6  # a chunk at the NIC: 0.16 s
    assert fleet_rounds.bound("every", 1, m, chunk, fabric) == pytest.approx(4.0)  # the NIC
    # 4 M at the uplink
    assert fleet_rounds.bound("every", 4, m, chunk, fabric) == pytest.approx(8.0)
    assert fleet_rounds.bound("bcast", 2, m, chunk, fabric) == pytest.approx(4.0 + 0.16)
    assert fleet_rounds.bound("bcast", 4, m, chunk, fabric) == pytest.approx(4.0 + 2 * 0.16)
    assert fleet_rounds.bound("chain", 4, m, chunk, fabric) == pytest.approx(4.0 + 3 * 0.16)
    assert fleet_rounds.bound("stripe", 4, m, chunk, fabric) == pytest.approx(2.0 + 0.75 * 4.0)
    assert fleet_rounds.bound("stripe", 1, m, chunk, fabric) == pytest.approx(4.0)
    # Rates in bits, sizes in bytes: a gigabit link moves 125 MB a second.
    assert fleet_rounds.bound("every", 1, 125e6, chunk, fleet_rounds.Fabric(1e10, 1e9, 1e9)) == 1.0


def test_the_new_designs_bounds_by_hand():
    fabric = fleet_rounds.Fabric(400e6, 200e6, 100e6)  # 50 MB/s uplink, 25 in, 12.5 out
    m, chunk = 100e6, 4e6  # M at a NIC in: 4 s; a chunk: 0.16 s
    bound = fleet_rounds.bound
    # The pipelined stripe: max(M / uplink, M / nic) and one chunk's hop; torch_stripe the
    # same.
    for kind in (PIPELINED, "torch_stripe"):
        assert bound(kind, 4, m, chunk, fabric) == pytest.approx(4.0 + 0.16)
        assert bound(kind, 1, m, chunk, fabric) == pytest.approx(4.0)  # no hop at one node
    # torch_bcast: gloo's binomial tree sends M out of node 0 ceil(log2 N) times (2 at 4 nodes,
    # 8 s each at 12.5 MB/s), then bcast's two chunks' fill; bcast itself M at the NIC.
    assert bound("torch_bcast", 4, m, chunk, fabric) == pytest.approx(16.0 + 2 * 0.16)
    assert bound("bcast", 4, m, chunk, fabric) == pytest.approx(4.0 + 2 * 0.16)
    # Each node its M/N: every and the stripes max(M / uplink, M/N / nic); 2 s at the uplink.
    for kind in ("every", "stripe", PIPELINED, "torch_stripe"):
        assert bound(kind, 4, m, chunk, fabric, "tp") == pytest.approx(2.0)
        assert bound(kind, 2, m, chunk, fabric, "tp") == pytest.approx(2.0)
    # The scatter: node 0 takes M in (4 s) and sends 3/4 M out at 12.5 MB/s (6 s), then a hop.
    for kind in ("bcast", "torch_bcast"):
        assert bound(kind, 4, m, chunk, fabric, "tp") == pytest.approx(6.0 + 0.16)
        assert bound(kind, 2, m, chunk, fabric, "tp") == pytest.approx(4.0 + 0.16)
    # chain under tp: the relay moves M through every node, as under replicated: M at the NIC
    # (4 s) and a chunk per hop.
    for n in (2, 4, 8):
        assert bound("chain", n, m, chunk, fabric, "tp") == pytest.approx(
            bound("chain", n, m, chunk, fabric)) == pytest.approx(4.0 + (n - 1) * 0.16)
    # The best design's bound: the pipelined stripe's whole, every's under tp.
    assert fleet_bounds.best_bound(4, m, chunk, fabric) == pytest.approx(4.16)
    assert fleet_bounds.best_bound(4, m, chunk, fabric, "tp") == pytest.approx(2.0)


def test_gloos_tree_and_the_shares_by_hand():
    # gloo's binomial broadcast from node 0 at 8 nodes: 0 sends to 1, 2, 4; 1 to 3, 5; 2 to 6;
    # 3 to 7; the depths are the set bits.
    assert flow.tree_children(8).tolist() == [3, 2, 1, 1, 0, 0, 0, 0]
    assert flow.tree_children(5).tolist() == [3, 1, 0, 0, 0]  # 1 -> 3; 5 is past the end
    assert flow.tree_children(6).tolist() == [3, 2, 0, 0, 0, 0]  # 2 -> 6 is past the end
    assert flow.tree_depth(8).tolist() == [0, 1, 1, 2, 1, 2, 2, 3]
    store, rx, tx = flow.shares("torch_bcast", 4)
    assert store.tolist() == [1, 0, 0, 0] and rx.tolist() == [0, 1, 1, 1]
    assert tx.tolist() == [2, 1, 0, 0]
    store, rx, tx = flow.shares("bcast", 4, "tp")  # the scatter
    assert store.tolist() == [1, 0, 0, 0] and rx.tolist() == [0, 0.25, 0.25, 0.25]
    assert tx.tolist() == [0.75, 0, 0, 0]
    for kind in ("every", "stripe", PIPELINED, "torch_stripe"):
        assert flow.shares(kind, 4, "tp")[0].tolist() == [0.25] * 4
    # chain under tp: the replicated chain's relay, each node keeping its part.
    for got, want in zip(flow.shares("chain", 4, "tp"), flow.shares("chain", 4)):
        assert got.tolist() == want.tolist()
    store, rx, tx = flow.shares("chain", 4, "tp")
    assert store.tolist() == [1, 0, 0, 0] and rx.tolist() == [0, 1, 1, 1]
    assert tx.tolist() == [1, 1, 1, 0]
    assert flow.flow_key("chain", 4, "tp") == flow.flow_key("chain", 4)
    assert flow.fill_of("chain", 4, "tp").tolist() == [0, 1, 2, 3]


def test_max_min_by_hand():
    # Three flows share a link of 9; the third is held to 1 by a second link: 4, 4, 1.
    rates, neck = flow.max_min(np.array([[1, 0], [1, 0], [1, 1]]), [9, 1])
    assert rates == pytest.approx([4, 4, 1]) and list(neck) == [0, 0, 1]
    # Weights: a flow using a link twice per byte (a relay in and out) gets its fair share of
    # the growth, 10 / 3 each.
    rates, _ = flow.max_min(np.array([[2.0], [1.0]]), [10])
    assert rates == pytest.approx([10 / 3, 10 / 3])
    # A flow on no limited resource is not held at all.
    rates, neck = flow.max_min(np.array([[0.0, 1.0], [1.0, 0.0]]), [5, np.inf])
    assert rates[0] == np.inf and rates[1] == 5 and neck[0] == -1


def test_flows_share_then_take_what_is_left_and_wait_for_each_other():
    link = np.array([10.0, 5.0])
    flows = [flow.Flow(10.0, np.array([0]), np.array([1.0])),
             flow.Flow(30.0, np.array([0]), np.array([1.0])),
             flow.Flow(10.0, np.array([1]), np.array([1.0]), after=(0,))]
    end, _ = flow.simulate(flows, link)
    # 5 each until the first ends at 2; then the second alone at 10 (20 left: 2 s more); the
    # third starts at 2 on its own link of 5.
    assert end == pytest.approx([2.0, 4.0, 4.0])


def test_without_cpu_the_model_is_the_bound():
    m = flow.Model(FABRIC, MODEL, CHUNK)
    for pattern in ("replicated", "tp"):
        for design in fleet_bounds.KINDS:
            for n in (1, 2, 3, 4, 8, 64):
                if design in ENGINES and n > 2 and pattern == "replicated":
                    continue  # gloo's tree and ring: below
                assert m.seconds(design, n, pattern) == pytest.approx(
                    fleet_rounds.bound(design, n, MODEL, CHUNK, FABRIC, pattern)), (design, n)
    # The engines' own algorithms: gloo's tree at 8 nodes sends each chunk 3 times from node
    # 0, at a third of its NIC, and the last node is 3 hops down; its ring all-gathers the last
    # round of N chunks in N - 1 hops.
    hop = CHUNK * 8 / NIC
    assert m.seconds("torch_bcast", 8) == pytest.approx(3 * MODEL * 8 / NIC + 3 * hop)
    assert m.seconds("torch_stripe", 8) == pytest.approx(MODEL * 8 / NIC + 7 * hop)


# --- the model ---------------------------------------------------------------------------------

def test_the_fabric_is_the_measured_links(analysed):
    fabric = analysed["fabric"]
    assert (fabric.uplink_bps, fabric.nic_in_bps, fabric.nic_out_bps) == (UPLINK, NIC, NIC)
    assert fabric.cores == 2 and fabric.shared_cpu
    assert "iperf3" in fabric.source and "configured" not in fabric.source


def test_configured_rates_stand_in_only_where_nothing_was_measured():
    env = {"cluster": cluster(iperf=False)}
    env["cluster"]["links"][0]["iperf3"]["up_bits_per_s"] = 3.5e8  # the store's measured
    fabric = fleet_rounds.fabric_of(env)
    assert fabric.uplink_bps == 3.5e8 and fabric.nic_in_bps == 2e8
    assert "store uplink 350 Mbit/s (iperf3" in fabric.source
    assert "node NIC in 200 Mbit/s (configured: no iperf3 figure measured)" in fabric.source
    assert fleet_rounds.fabric_of({}) is None


def test_the_model_agrees_with_the_times_worked_out_by_hand(analysed):
    # One cost per kind of byte for every design: the synthetic nodes pay the same for both.
    assert analysed["cpu"] == pytest.approx({"store": CPU_PER_BYTE, "peer": CPU_PER_BYTE},
                                            rel=1e-9)
    assert analysed["start_s"] == pytest.approx(START, rel=1e-6)
    assert "A fixed start cost of 0.4 s per round" in analysed["start_note"]
    p = analysed["predictions"]
    # 7 designs at 3 Ns, cold and warm; 7 under tp at 2 Ns; http_ranges at 2 Ns.
    assert len(p) == len(analysed["summary"]) == 7 * 3 * 2 + 7 * 2 + 2
    # The hand's closed forms and the simulation agree to the rounding of a start time of
    # 1.7e9 s (2.4e-7 s), held out as well as fitted: a wrong share, weight or fill would not.
    for column in ("error", "held_out_error"):
        assert p[column].abs().max() < 1e-6, column
    # The CPU, shared by every node of this machine, holds back a 4-node broadcast.
    bcast = one(p, strategy_spec="fleet:design=bcast", nodes=4, cache="cold")
    assert bcast["limited_by"] == "CPU (shared)"
    assert one(p, strategy_spec="fleet:design=every", nodes=4, cache="cold")[
        "limited_by"] == "store uplink"
    # gloo's tree: node 0 sends every chunk to two nodes at 4, its NIC out the limit.
    assert one(p, strategy_spec="exec:label=torch_bcast", nodes=4, cache="cold")[
        "limited_by"] == "node 0 NIC out"
    # chain under tp: the model predicts the relay of M (the hand's replicated chain), held out
    # too, the replicated chain's time at the same N.
    for n in (2, 4):
        chain = one(p, strategy_spec="fleet:design=chain", nodes=n, pattern="tp")
        assert chain["measured_s"] == pytest.approx(max(hand_times("chain", n)), abs=1e-6)
        assert abs(chain["held_out_error"]) < 1e-6
        assert chain["modelled_s"] == pytest.approx(one(
            p, strategy_spec="fleet:design=chain", nodes=n, cache="cold")["modelled_s"])
    engines = p[p["design"].isin(ENGINES)]
    assert len(engines) == 2 * 3 * 2 + 2 * 2  # the engines' rows are predicted, held out too
    assert engines["held_out_error"].abs().max() < 1e-6
    assert "Largest error of the fit (in sample): 0% " in fleet_sections.model_md(analysed)


def growing_start(n):
    """A start cost the model does not have: it grows with the nodes (0.3, 0.4, 0.6 s)."""
    return 0.2 + 0.1 * n


@pytest.fixture(scope="module")
def growing(tmp_path_factory):
    """Every design at 1, 2 and 4 nodes, cold, one round each, its times worked out by hand
    with `growing_start`; released at 0 s, so that every duration is its last node's time."""
    records = []
    for design in fleet_rounds.DESIGNS:
        for n in COUNTS:
            times = hand_times(design, n, start=growing_start(n))
            records += [node_record(len(records) + k, design, n, k, wall=times[k], start=0.0)
                        for k in range(n)]
    folder = write(tmp_path_factory.mktemp("growing") / "results", records)
    return fleet.analyse(load(str(folder)))


def test_held_out_errors_are_the_ones_worked_out_by_hand(growing):
    p = growing["predictions"].set_index(["design", "nodes"])
    starts = {(d, n): growing_start(n) for d in fleet_rounds.DESIGNS for n in COUNTS}
    # The fit on every series: the median of the 12 starts, 0.4 s; in sample, N = 4 is 0.2 s
    # short and N = 1 0.1 s long.
    assert growing["start_s"] == pytest.approx(0.4, abs=1e-9)
    for (design, n), start in starts.items():
        measured = max(hand_times(design, n, start=start))
        row = p.loc[(design, n)]
        assert row["measured_s"] == pytest.approx(measured, rel=1e-12)
        assert row["error"] == pytest.approx((0.4 - start) / measured, abs=1e-9)
        # Held out: the start cost the other 11 series give, the series' own left out.
        others = statistics.median(v for k, v in starts.items() if k != (design, n))
        assert row["held_out_error"] == pytest.approx((others - start) / measured, abs=1e-9)
        # The largest N from a fit on 1 and 2 nodes alone: 0.35 s where it takes 0.6 s.
        if n == max(COUNTS):
            assert row["from_smaller_error"] == pytest.approx((0.35 - 0.6) / measured,
                                                              abs=1e-9)
        else:
            assert np.isnan(row["from_smaller_error"])
    worst = p["from_smaller_error"].min()
    assert worst < p["error"].min() < 0  # extrapolated, the model errs more than in sample
    assert growing["held_out"] == pytest.approx(
        (worst, max(p["held_out_error"].max(), p["from_smaller_error"].max())), abs=1e-12)


def test_the_curves_carry_a_band_from_the_held_out_errors(growing):
    low, high = growing["held_out"]
    c = growing["measured_curve"]
    assert c["low_s"].tolist() == pytest.approx((c["seconds"] / (1 + high)).tolist(), rel=1e-12)
    assert c["high_s"].tolist() == pytest.approx((c["seconds"] / (1 + low)).tolist(), rel=1e-12)
    assert (c["high_s"] > c["seconds"]).all()  # the model was too fast where it erred most
    md = fleet_sections.model_md(growing)
    assert "are a fit, in sample" in md and "Held out: " in md
    assert "the largest N from the smaller ones: -" in md
    outlook = fleet_sections.outlook_md(growing)
    assert "The band about each curve spans the held-out errors" in outlook
    summary = fleet_sections.summary_of(growing)
    assert summary["band_errors"] == [low, high]
    assert summary["held_out_largest_error"] > summary["largest_error"]


def test_a_round_faster_than_its_bound_is_marked(tmp_path):
    # One node pulls M at a NIC of 25 MB/s: the bound is 2.68 s; a round of 2 s beat it.
    r = load(str(write(tmp_path / "fast", [node_record(0, "every", 1, 0, wall=2.0)])))
    a = fleet.analyse(r)
    row = a["summary"].iloc[0]
    assert row["bound_s"] == pytest.approx(MODEL * 8 / NIC, rel=1e-12)
    assert row["of_bound"] == pytest.approx(MODEL * 8 / NIC / 2.0, rel=1e-9)
    md = fleet_sections.series_md(a["summary"])
    assert "| 1.34 ⚠ | 1.34 ⚠ |" in md
    assert "⚠ every, cold, 1 nodes: its median round of 2 s beat the bound of 2.68 s" in md
    assert "not the fabric's limit there" in md


def test_each_round_uses_the_links_of_its_session_and_rates_never_pool(tmp_path):
    """A resumed experiment: session 0 measured NICs of 200 Mbit/s in rounds 0 and 1, session
    1 (the same [cluster] rates, made again) 100 Mbit/s in rounds 2 and 3; session 2 ran with
    nic = "100mbit", whose rounds start at 0 again; a record without `session` (from before it
    was kept) has the top-level cluster, session 2's."""
    slow = 100e6
    env = {"experiment": "fleet", "host": {"cores": 2}, "cluster": cluster(nic=slow,
                                                                          nic_text="100mbit"),
           "sessions": [{"started_at": "t0", "cluster": cluster(nic=NIC)},
                        {"started_at": "t1", "cluster": cluster(nic=slow)},
                        {"started_at": "t2", "cluster": cluster(nic=slow, nic_text="100mbit")}]}
    records = []
    for session, nic, reps in ((0, "200mbit", (0, 1)), (1, "200mbit", (2, 3)),
                               (2, "100mbit", (0, 1))):
        for rep in reps:
            records += [node_record(len(records), "every", 2, k, rep=rep, wall=10.0,
                                    session=session, nic=nic, uplink="400mbit")
                        for k in range(2)]
    records += [node_record(len(records) + k, "every", 2, k, rep=5, wall=10.0)
                for k in range(2)]
    a = fleet.analyse(load(str(write(tmp_path / "sessions", records, env))))
    t = a["rounds"]
    assert len(t) == 7 and t["reason"].isna().all()  # no round mixes two sessions' nodes
    # every, 2 nodes: max(2 M / uplink, M / NIC): the uplink's 2.68 s at 200 Mbit/s NICs, the
    # NIC's 5.37 s at 100 Mbit/s.
    by_session = t.groupby(t["session"].fillna(-1))["bound_s"].agg(["min", "max"])
    assert by_session.loc[0.0].tolist() == pytest.approx([2 * MODEL * 8 / UPLINK] * 2, rel=1e-9)
    for session in (1.0, 2.0, -1.0):
        assert by_session.loc[session].tolist() == pytest.approx([MODEL * 8 / slow] * 2,
                                                                 rel=1e-9)
    s = a["summary"].set_index("nic")
    assert sorted(s.index) == ["", "100mbit", "200mbit"]  # three series: never pooled
    assert s.loc["200mbit", "rounds"] == 4 and s.loc["100mbit", "rounds"] == 2
    md = fleet_sections.series_md(a["summary"])
    assert "| every [nic 200mbit, uplink 400mbit] | cold | 2 | 4 |" in md
    assert "session 0 (t0), nic 200mbit, uplink 400mbit: store uplink" in fleet_sections.fabric_md(
        a, env)


def test_curves_crossings_and_the_deadline_by_hand():
    # No CPU, no start: the model is the bound (4 s for M at a NIC, 2 s at the uplink, a
    # chunk 0.16 s at a NIC) but for the engines' (gloo's tree and ring).
    m = flow.Model(fleet_rounds.Fabric(400e6, 200e6, 200e6), 100e6, 4e6)
    assert fleet.changes(m, kinds=fleet_rounds.DESIGNS) == [
        (1, ("every", "bcast", "stripe", "chain")), (2, ("every", "stripe")),
        (3, ("bcast", "chain")), (4, ("bcast",))]
    # The pipelined stripe, 4 s and one chunk's hop, takes over from 3 nodes: the phased
    # stripe and every 4.67 s and 6 s there, bcast and chain two chunks behind the store.
    assert fleet.changes(m) == [(1, KINDS), (2, ("every", "stripe")), (3, (PIPELINED,))]
    # Each node its 1/N: every node's own pull (and each design that pulls its own) is at the
    # uplink's 2 s from 2 nodes on, the scatters at node 0's NIC in.
    assert fleet.changes(m, pattern="tp") == [
        (1, KINDS),
        (2, ("every", "stripe", PIPELINED, "torch_stripe"))]
    # every: 2 s per node at the uplink passes 600 s at 301 nodes; the others never do
    # (torch_bcast: 4 s per level of its tree, 40 s at 1024 nodes).
    assert fleet.first_past(m, 600.0) == {k: 301 if k == "every" else None for k in KINDS}
    assert m.seconds("torch_bcast", 1024) == pytest.approx(10 * 4.0 + 10 * 0.16)
    c = fleet.curve(m, patterns=("replicated", "tp"))
    assert len(c) == 11 * 7 * 2 and c["nodes"].max() == 1024
    # chain under tp is the replicated chain's relay: 4 s and a chunk per hop.
    tp = c[(c["pattern"] == "tp") & (c["design"] == "chain")].set_index("nodes")["seconds"]
    assert tp[8] == pytest.approx(4.0 + 7 * 0.16)
    assert fleet.first_past(m, 600.0, pattern="tp")["chain"] is None


def test_the_described_topology_has_a_cpu_per_node(analysed):
    described = analysed["models"]["described"]
    assert described.fabric.nic_in_bps == 100e9 and described.fabric.uplink_bps == 25e9
    assert not described.fabric.shared_cpu and described.model_bytes == MODEL
    assert set(analysed) >= {"described_curve", "measured_curve", "measured_first_past"}


# The values harness/net/link.cc's ParseLinkRate gives (harness/net/tests/link_test.cc pins the
# first three): decimal prefixes, bps in bytes, 1mbit to 1tbit.
@pytest.mark.parametrize("text, bits", [("1gbit", 1e9), ("2.5gbit", 2.5e9), ("100mbps", 8e8),
                                        ("200mbit", 2e8), ("25gbit", 2.5e10), ("1gbps", 8e9),
                                        ("1mbit", 1e6), ("1tbit", 1e12), ("1000kbit", 1e6)])
def test_rates_parse_as_the_harness_parses_them(text, bits):
    assert units.parse_rate(text) == bits


# What ParseLinkRate refuses: no rate ("not a rate") or outside 1mbit to 1tbit; and "unshaped",
# which it takes as 0, is no fabric's rate.
@pytest.mark.parametrize("text", ["", "1", "1 gbit", "1Gbit", "gbit", "-1gbit", "1gbit/s",
                                  "500kbit", "2tbit", "1mibit", "1000", "200mbits", "fast",
                                  "0mbit", "200m", "1e3mbit", "unshaped"])
def test_what_the_harness_refuses_is_refused(text):
    with pytest.raises(ValueError):
        units.parse_rate(text)


def test_sizes_parse():
    assert units.parse_size("16GB") == 16e9 and units.parse_size("8GiB") == 8 * 2**30
    assert units.parse_size("4194304") == 4194304
    with pytest.raises(ValueError):
        units.parse_size("big")


# --- the engine, paired ----------------------------------------------------------------------

RATIOS = [0.5, 0.62, 0.55, 0.57, 0.6, 0.52]  # the pipelined stripe over torch_bcast, by rep


def paired_records():
    """At 2 and 4 nodes, 6 rounds each, cold: torch_bcast, the pipelined stripe and bcast,
    every node released at 0 s so that a round lasts its last node's time: torch_bcast 10 s
    times 1 + rep / 100 (the rounds drift), the pipelined stripe RATIOS[rep] of it, bcast 0.8
    of it."""
    out = []
    for n in (2, 4):
        for rep in range(6):
            engine = 10.0 * (1 + rep / 100)
            for design, wall in (("torch_bcast", engine), (PIPELINED, RATIOS[rep] * engine),
                                 ("bcast", 0.8 * engine)):
                out += [node_record(len(out) + k, design, n, k, rep=rep, wall=wall, start=0.0)
                        for k in range(n)]
    return out


def test_the_best_design_over_torch_bcast_paired_by_round(tmp_path):
    a = fleet.analyse(load(str(write(tmp_path / "paired", paired_records()))))
    v = a["versus"]
    assert set(v["nodes"]) == {4} and len(v) == 2  # the largest N only, the engine not itself
    best = one(v, label=PIPELINED)
    assert best["best"] and not one(v, label="bcast")["best"]
    # The Hodges–Lehmann estimate: the median of the Walsh averages of the log ratios, worked
    # out here; at 6 pairs the signed-rank interval runs from the least to the largest.
    d = np.log(RATIOS)
    walsh = [(d[i] + d[j]) / 2 for i in range(6) for j in range(i, 6)]
    assert best["pairs"] == 6 and best["bounded"] and best["verdict"] == "faster"
    assert best["ratio"] == pytest.approx(np.exp(np.median(walsh)), rel=1e-9)
    assert (best["ratio_low"], best["ratio_high"]) == pytest.approx((0.5, 0.62), rel=1e-9)
    assert one(v, label="bcast")["ratio"] == pytest.approx(0.8, rel=1e-9)
    md = fleet_sections.versus_md(v)
    text = ratios.ratio_text(best["ratio"], 0.5, 0.62)
    assert (f"- pattern `replicated`, cold, 4 nodes: the project's best design, stripe "
            f"(pipelined), took {text} torch_bcast's time over 6 rounds paired, 96.9% "
            "interval: faster.") in md
    assert "| stripe (pipelined) (best) | replicated | cold | 4 | " in md
    summary = fleet_sections.summary_of(a)
    assert [r["label"] for r in summary["versus"] if r["best"]] == [PIPELINED]


def test_an_engines_command_is_a_node_by_what_it_sent(tmp_path):
    # An exec command's record with no `nodes` of its own (a run outside a cluster) is a node
    # by the details it sent; spelled as the experiment writes it, its row is its design.
    records = [node_record(k, "torch_stripe", 2, k, spec="fleet:design=torch_stripe")
               for k in range(2)]
    for r in records:
        del r["nodes"], r["proc"]
    r = load(str(write(tmp_path / "engine", records)))
    assert fleet_rounds.shown(r)
    row = fleet_rounds.rounds(fleet_rounds.nodes_table(r.runs)).iloc[0]
    assert row["label"] == row["kind"] == "torch_stripe" and row["reason"] is None
    assert row["nodes"] == 2 and row["amplification"] == pytest.approx(0.5)


def test_without_the_engine_no_comparison(analysed):
    # The fixture's engine rounds are 3 to a series: a ratio, no interval under 6 pairs.
    v = analysed["versus"]
    assert set(v["nodes"]) == {4} and set(v["pattern"]) == {"replicated", "tp"}
    assert not v["bounded"].any() and (v["verdict"] == "too few rounds").all()
    assert fleet_paired.versus_engine(analysed["rounds"].iloc[:0]).empty
    assert fleet_sections.versus_md(analysed["versus"].iloc[:0]) == ""


# --- the command and the report ----------------------------------------------------------------

def test_the_command_prints_its_tables(folder):
    p = cli(folder, "--nic", "100gbit", "--uplink", "25gbit", "--model", "16GB",
            "--deadline", "600")
    assert p.returncode == 0, p.stderr
    out = p.stdout
    for heading in ("## Rounds", "## The model against the measurements",
                    "## Curves: the measured fabric", "## Curves: described: store uplink "
                    "25 Gbit/s, node NIC 100 Gbit/s each way"):
        assert heading in out
    assert "| every | cold | 4 | 3 |" in out and "| 1024 |" in out
    assert "| torch_bcast | cold | 4 | 3 |" in out and "**Against the engine.**" in out
    assert "first N past 600 s" in out and "14.90 GiB" in out and "64 MiB" in out


def test_no_fleet_records_is_exit_2_in_one_line(tmp_path):
    plain = tmp_path / "plain"
    write_rounds(str(plain), rounds=2)
    p = cli(plain)
    assert p.returncode == 2
    assert p.stderr.count("\n") == 1 and str(plain) in p.stderr
    assert "no fleet records" in p.stderr


@pytest.mark.parametrize("args, named", [(["--nic", "200mbits"], "--nic 200mbits"),
                                         (["--uplink", "x"], "--uplink x"),
                                         (["--model", "huge"], "--model huge"),
                                         (["--deadline", "-3"], "--deadline -3")])
def test_bad_values_are_exit_2_in_one_line(folder, args, named):
    p = cli(folder, *args)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and named in p.stderr


def test_a_missing_folder_is_exit_2_in_one_line(tmp_path):
    p = cli(tmp_path / "nowhere")
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "nowhere" in p.stderr


@pytest.fixture(scope="module")
def built(folder, tmp_path_factory):
    copy = tmp_path_factory.mktemp("built") / "results"
    write(copy, fleet_records())
    report.build(str(copy))
    return copy


def test_the_report_gains_a_fleet_section(built):
    md = (built / "report.md").read_text()
    assert f"## {fleet_sections.TITLE}" in md
    section = md.split(f"## {fleet_sections.TITLE}\n", 1)[1].split("\n## ", 1)[0]
    assert "**The fabric**" in section and "| store | 400mbit |" in section
    assert "| every | cold | 4 | 3 |" in section and "**The model against" in section
    # The engines' rows beside the project's designs, in both patterns' tables.
    for pattern in ("the whole model", "its 1/N slice of every tensor"):
        table = section.split(f"**Each node needs {pattern}**", 1)[1]
        for name in ("torch_bcast", "torch_stripe", "stripe (pipelined)", "chain"):
            assert f"| {name} | cold | 4 | 3 |" in table.split("\n\n**")[0]
    assert "**Against the engine.**" in section
    assert "**Scaling, modelled.**" in section
    assert "Connect s: the longest a node of the round took to connect" in section
    figures = fleet_figures
    for name in (figures.FIGURE_TIME, figures.FIGURE_STORE, figures.FIGURE_CURVES):
        assert f"(figures/{name}.png)" in section
        assert (built / "figures" / f"{name}.png").stat().st_size > 0
    summary = json.loads((built / "summary.json").read_text())["fleet"]
    assert summary["start_s"] == pytest.approx(START, rel=1e-6)
    assert summary["held_out_largest_error"] < 1e-6  # the hand's times: held out as well
    assert len(summary["band_errors"]) == 2
    assert {"low_s", "high_s"} <= set(summary["curves"]["measured"]["points"][0])
    assert set(summary["curves"]) == {"measured", "described"}
    assert "Fleet" in (built / "report.html").read_text()


def test_no_nodes_no_section(tmp_path):
    plain = tmp_path / "plain"
    write_rounds(str(plain), rounds=2)
    report.build(str(plain))
    assert f"## {fleet_sections.TITLE}" not in (plain / "report.md").read_text()
    assert "fleet" not in json.loads((plain / "summary.json").read_text())


def test_cpu_is_fitted_per_kind_of_byte_for_every_design():
    # A byte from the store (HTTP) costs 3 ns, one to or from a peer 1 ns, in every design.
    rows = [(1e8, 0, 0), (2e8, 0, 0), (1e8, 1e8, 0), (0, 2e8, 1e8), (5e7, 1.5e8, 1e8)]
    nodes = pd.DataFrame([{"counted": True, "store_bytes": st, "peer_rx_bytes": rx,
                           "peer_tx_bytes": tx, "cpu_s": 3e-9 * st + 1e-9 * (rx + tx)}
                          for st, rx, tx in rows])
    assert fleet.cpu_fit(nodes) == pytest.approx({"store": 3e-9, "peer": 1e-9})
    # Without peer bytes a peer byte is taken to cost a store byte's.
    assert fleet.cpu_fit(nodes.iloc[:2]) == pytest.approx({"store": 3e-9, "peer": 3e-9})
    assert fleet.cpu_fit(nodes.iloc[:0]) == {}
