"""The fleet (analysis/fleet.py) on synthetic records whose times are worked out by hand from the
fabric (closed forms of each design's max-min shares, never the module's own model): a round
lasts from its first node's start to its last node's end, as a round of Many readers does, and
counts only whole, a failed or missing node is named; the read amplification is N for every and
1 for the other designs; the bound and the max-min allocator agree with numbers worked by hand;
a round faster than its bound is marked; the model agrees with the hand-worked times (its CPU
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

from analysis.core import units
from analysis.core.results import load
from analysis.models import fleet, flow
from analysis.pages import report
from analysis.sections import fleet as fleet_sections, fleet_figures
from analysis.stats import fleet_rounds, readers

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODEL = 64 * 2**20  # M: the model's tensor bytes
CHUNK = 4 * 2**20
NIC, UPLINK = 200e6, 400e6  # bits per second, as iperf3 measured them
CORES = 2  # shared by every node
CPU_PER_BYTE = 1.5e-8  # a node's CPU seconds per byte it moves, in and out
START = 0.4  # the fixed start cost of a round
COUNTS = (1, 2, 4)
FABRIC = fleet_rounds.Fabric(UPLINK, NIC, NIC, CORES, True, "synthetic")


def hand_times(design, n, start=START, nic=NIC, uplink=UPLINK):
    """Each node's seconds in a round of `n` nodes, worked out by hand: the rate every flow of
    the design gets when the store's uplink, each NIC and the shared CPU are split max-min
    fairly (every design's flows are alike, so each gets the least of the resources' equal
    shares), the pipeline's fill, and `start`."""
    up, link = uplink / 8, nic / 8  # bytes per second
    hop = CHUNK / link  # one chunk through a NIC
    if design == "every" or (design == "stripe" and n == 1):
        rate = min(up / n, link, CORES / (n * CPU_PER_BYTE))  # N flows of M from the store
        return [MODEL / rate + start] * n
    if design == "stripe":
        # Each node's M/N from the store, then each sends it to N - 1 nodes while it takes in
        # N - 1 stripes: (N - 1) per byte on every NIC out and in, 2 (N - 1) on the CPU.
        first = min(up / n, link, CORES / (n * CPU_PER_BYTE))
        then = min(link / (n - 1), CORES / (2 * (n - 1) * n * CPU_PER_BYTE))
        return [MODEL / n / first + MODEL / n / then + start] * n
    # bcast and chain: one flow of M; the CPU pays for the store's bytes into node 0, and for
    # N - 1 nodes' bytes in and N - 1 sends on.
    rate = min(up, link, CORES / ((2 * n - 1) * CPU_PER_BYTE))
    if design == "bcast":
        return [MODEL / rate + start] + [MODEL / rate + min(2, n - 1) * hop + start] * (n - 1)
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
                spec=None, start=1.7e9, **extra):
    """Node k's record of a round of `n` nodes, as the C++ side writes it: its bytes those the
    design gives node k, its CPU seconds CPU_PER_BYTE times the bytes it moved, its wall time
    `hand_times`' unless `wall` is given, released at `start` (load_start_unix_s)."""
    store, rx, tx = (x * MODEL for x in flow.shares(design, n))
    cpu = CPU_PER_BYTE * (store[k] + rx[k] + tx[k])
    wall = hand_times(design, n)[k] if wall is None else wall
    return {"run_id": f"r{i:04d}", "experiment": "fleet", "strategy": "fleet",
            "strategy_spec": spec or f"fleet:design={design}",
            "params": {"design": design, "chunk": CHUNK, "concurrency": 4, "port": 29400},
            "file": FILE, "format": "wlf", "file_bytes": MODEL + 4096, "cache": cache,
            "rep": rep, "procs": n, "proc": k, "nodes": n, "pattern": "replicated",
            "rank": k, "ranks": n, "host": f"node{k}", "status": status, "error": error,
            "checksum_ok": True if status == "ok" else None,
            "wall_s": wall if status == "ok" else None, "user_s": 0.25 * cpu,
            "sys_s": 0.75 * cpu, "load_user_s": 0.25 * cpu, "load_sys_s": 0.75 * cpu,
            "tensor_bytes": MODEL, "load_start_unix_s": start,
            "details": {"design": design, "node": k, "nodes": n, "ready_s": wall - 0.01,
                        "store_bytes": store[k], "peer_rx_bytes": rx[k],
                        "peer_tx_bytes": tx[k], "store_requests": store[k] / CHUNK,
                        "connect_s": 0.02}, **extra}


def http_record(i, n, k, rep):
    """An http_ranges node of a cluster experiment: every node reads M from the store."""
    r = node_record(i, "every", n, k, rep=rep)
    r.update(strategy="http_ranges", strategy_spec="http_ranges:concurrency=4",
             params={"concurrency": 4},
             details={"bytes_received": MODEL, "bytes_requested": MODEL, "requests": 16})
    return r


def fleet_records():
    """Every design at N = 1, 2, 4, cold and warm, 3 rounds each; in round 1 of bcast at 4
    nodes, cold, node 2 fails; and http_ranges on 2 and 4 nodes, cold."""
    out = []
    for design in fleet_rounds.DESIGNS:
        for n in COUNTS:
            for cache in ("cold", "warm"):
                for rep in range(3):
                    for k in range(n):
                        broken = (design, n, cache, rep, k) == ("bcast", 4, "cold", 1, 2)
                        out.append(node_record(
                            len(out), design, n, k, rep=rep, cache=cache,
                            **({"status": "failed", "error": "peer 0 closed the connection"}
                               if broken else {})))
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
    assert row["amplification"] == pytest.approx(1.0)
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
    assert ("- bcast, cold, 4 nodes, round 1: node 2: failed: peer 0 closed the connection"
            in fleet_sections.failed_md(rounds))


def test_a_missing_node_fails_its_round(tmp_path):
    records = [node_record(k, "stripe", 4, k) for k in (0, 1, 3)]
    r = load(str(write(tmp_path / "missing", records)))
    row = fleet_rounds.rounds(fleet_rounds.nodes_table(r.runs)).iloc[0]
    assert pd.isna(row["duration_s"]) and row["reason"] == "node 2: no record"


def test_read_amplification_is_n_for_every_and_1_for_the_others(analysed):
    s = analysed["summary"]
    for n in COUNTS:
        assert one(s, strategy_spec="fleet:design=every", nodes=n, cache="cold")[
            "amplification"] == pytest.approx(n)
        for design in ("bcast", "stripe", "chain"):
            assert one(s, strategy_spec=f"fleet:design={design}", nodes=n, cache="warm")[
                "amplification"] == pytest.approx(1.0)
    # Another strategy of the cluster: by its spec, each node reading it all from the store.
    http = one(s, strategy_spec="http_ranges:concurrency=4", nodes=4)
    assert http["amplification"] == pytest.approx(4) and http["kind"] == "every"
    # bcast at 4 nodes: node 0 carries M in and M out, the others M in and 2/3 M out.
    bcast = one(s, strategy_spec="fleet:design=bcast", nodes=4, cache="warm")
    assert bcast["nic_in"] == pytest.approx(1.0) and bcast["nic_out"] == pytest.approx(1.0)


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
    for design in fleet_rounds.DESIGNS:
        for n in (1, 2, 3, 4, 8, 64):
            assert m.seconds(design, n) == pytest.approx(
                fleet_rounds.bound(design, n, MODEL, CHUNK, FABRIC)), (design, n)


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
    assert len(p) == len(analysed["summary"]) == 4 * 3 * 2 + 2
    # The hand's closed forms and the simulation agree to the rounding of a start time of
    # 1.7e9 s (2.4e-7 s), held out as well as fitted: a wrong share, weight or fill would not.
    for column in ("error", "held_out_error"):
        assert p[column].abs().max() < 1e-6, column
    # The CPU, shared by every node of this machine, holds back a 4-node broadcast.
    bcast = one(p, strategy_spec="fleet:design=bcast", nodes=4, cache="cold")
    assert bcast["limited_by"] == "CPU (shared)"
    assert one(p, strategy_spec="fleet:design=every", nodes=4, cache="cold")[
        "limited_by"] == "store uplink"
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
    # No CPU, no start: the model is the bound (4 s for M at a NIC, 2 s at the uplink).
    m = flow.Model(fleet_rounds.Fabric(400e6, 200e6, 200e6), 100e6, 4e6)
    assert fleet.changes(m) == [(1, ("every", "bcast", "stripe", "chain")),
                                (2, ("every", "stripe")), (3, ("bcast", "chain")),
                                (4, ("bcast",))]
    # every: 2 s per node at the uplink passes 600 s at 301 nodes; the others never do.
    assert fleet.first_past(m, 600.0) == {"every": 301, "bcast": None, "stripe": None,
                                          "chain": None}
    c = fleet.curve(m)
    assert len(c) == 11 * 4 and c["nodes"].max() == 1024


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
    assert "**Scaling, modelled.**" in section
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
