"""The whole analysis keys on a cluster run's fabric (its records' `nic` and `uplink`, the
[cluster] rates it ran under) as it keys on `link`: a cluster experiment resumed in a second
session under another NIC rate, whose rounds reuse the rep numbers 0 to 2, keeps its two fabrics
apart in the groups of the start tables, in the paired comparisons and the verdict, in the rounds
and series of Many readers, in compare's and make machines' rows, and in the report's labels; a
folder from before the fabric was recorded reads as it did (`fabric` "")."""

import json

import pytest
from conftest import write_rounds
from test_fleet import cluster, node_record, write

from analysis.core import labels
from analysis.core.labels import condition
from analysis.core.results import load
from analysis.pages import machines, report
from analysis.stats import aggregates as stats, compare as compare_stats, paired, readers

EVERY, BCAST = "fleet:design=every", "fleet:design=bcast"
FAST, SLOW = "nic 200mbit, uplink 400mbit", "nic 100mbit, uplink 400mbit"
# (session, nic, its NICs as iperf3 measured them, {(spec, nodes): seconds}): under the slower
# NIC every node's pull takes twice as long and bcast gains less on every.
SESSIONS = ((0, "200mbit", 200e6, {(EVERY, 1): 4.0, (EVERY, 2): 8.0,
                                   (BCAST, 1): 4.0, (BCAST, 2): 4.4}),
            (1, "100mbit", 100e6, {(EVERY, 1): 8.0, (EVERY, 2): 16.0,
                                   (BCAST, 1): 8.0, (BCAST, 2): 12.0}))
REPS = 3  # in each session, reps 0, 1, 2


def drift(rep):
    """Round `rep`'s factor on every time of the round: the ratios within a round stay."""
    return 1 + 0.01 * rep


def resumed_records():
    """Per session, per rep, per number of nodes (1, 2) a round of every then bcast, each
    node's record carrying its session and the rates it ran under."""
    out = []
    for session, nic, _, times in SESSIONS:
        for rep in range(REPS):
            for n in (1, 2):
                for position, spec in enumerate((EVERY, BCAST)):
                    design = spec.split("=")[1]
                    out += [node_record(len(out) + k, design, n, k, rep=rep, position=position,
                                        wall=times[(spec, n)] * drift(rep), session=session,
                                        nic=nic, uplink="400mbit",
                                        start=1.7e9 + 1000 * session)
                            for k in range(n)]
    return out


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    env = {"experiment": "fleet", "host": {"cores": 2},
           "cluster": cluster(nodes=2, nic=100e6, nic_text="100mbit"),
           "sessions": [{"started_at": f"t{s}", "cluster": cluster(nodes=2, nic=bits,
                                                                   nic_text=nic)}
                        for s, nic, bits, _ in SESSIONS]}
    return write(tmp_path_factory.mktemp("fabric") / "results", resumed_records(), env)


@pytest.fixture(scope="module")
def results(folder):
    return load(str(folder))


@pytest.fixture(scope="module")
def built(folder, tmp_path_factory):
    copy = tmp_path_factory.mktemp("built") / "results"
    copy.mkdir()
    for name in ("runs.jsonl", "env.json"):
        (copy / name).write_text((folder / name).read_text())
    report.build(str(copy))
    return copy


def expected(spec, n):
    """Each fabric's median time of `spec` on `n` nodes (the middle rep's), slower last."""
    return [times[(spec, n)] * drift(1) for *_, times in SESSIONS]


def test_the_groups_of_the_start_tables_keep_the_fabrics_apart(results):
    t = stats.summarize(results)
    for spec in (EVERY, BCAST):
        for n in (1, 2):
            rows = t[(t["strategy_spec"] == spec) & (t["procs"] == n)]
            # One group per fabric, each of its own session's rounds (n readers each).
            assert sorted(rows["median_s"]) == pytest.approx(expected(spec, n)), (spec, n)
            assert list(rows["n"]) == [REPS * n] * 2


def test_paired_comparisons_pair_only_rounds_of_one_fabric(results):
    # bcast over every on 2 nodes: 0.55 at 200 Mbit/s and 0.75 at 100 Mbit/s in every round;
    # pooled, rep r of one session would pair with rep r of the other. (A round's time is its
    # last end less its first start, each near 1.7e9 s: within 1e-6 of the times written.)
    p = paired.paired_table(results)
    two = p[(p["strategy_spec"] == BCAST) & (p["procs"] == 2)].sort_values("ratio")
    assert list(two["n"]) == [REPS, REPS]
    assert list(two["ratio"]) == pytest.approx([4.4 / 8.0, 12.0 / 16.0], rel=1e-6)
    assert list(two["baseline"]) == [EVERY, EVERY]


def test_many_readers_rounds_and_series_keep_the_fabrics_apart(results):
    rounds = readers.rounds(results.runs, results.env)
    two = rounds[rounds["procs"] == 2]
    # 2 fabrics x 2 designs x 3 reps, each of its own 2 nodes, none of 4.
    assert len(two) == 2 * 2 * REPS and (two["readers"] == 2).all()
    assert two["reason"].isna().all()
    s = readers.summarize(rounds)
    bcast = s[(s["strategy_spec"] == BCAST) & (s["procs"] == 2)].sort_values("duration_s")
    assert list(bcast["rounds"]) == [REPS, REPS]
    assert list(bcast["duration_s"]) == pytest.approx(expected(BCAST, 2))
    # Each set against the single node of its own fabric.
    assert list(bcast["vs_single"]) == pytest.approx([4.4 / 4.0, 12.0 / 8.0])


def test_the_report_names_each_fabric(built):
    md = (built / "report.md").read_text()
    summary = json.loads((built / "summary.json").read_text())
    # The verdict per condition, its name the fabric's where it is one.
    assert {f"cold ×2 {FAST}", f"cold ×2 {SLOW}", f"cold {FAST}",
            f"cold {SLOW}"} <= set(summary["verdict"])
    # The start table's rows (2 nodes' records in each of 3 rounds), and the Many readers
    # table's (3 rounds): one per fabric.
    for fabric in (FAST, SLOW):
        assert f"| {BCAST} ×2 {fabric} | 6 (3 paired) |" in md
        assert f"| {BCAST} {fabric} | cold | replicated | 2 | 3 |" in md
    groups = [g for g in summary["groups"] if g["strategy_spec"] == BCAST and g["procs"] == 2]
    assert sorted(g["median_s"] for g in groups) == pytest.approx(expected(BCAST, 2))
    assert sorted(g["fabric"] for g in groups) == sorted([FAST, SLOW])
    many = [m for m in summary["many_readers"] if m["strategy_spec"] == BCAST]
    assert sorted(m["fabric"] for m in many if m["procs"] == 2) == sorted([FAST, SLOW])


def test_compare_keeps_the_fabrics_apart(folder, tmp_path):
    c = compare_stats.compare(str(folder), str(folder))
    rows = [r for r in c["rows"] if r["strategy_spec"] == BCAST and r["procs"] == 2]
    assert sorted(r["fabric"] for r in rows) == sorted([FAST, SLOW])
    assert all(r["ratio"] == pytest.approx(1.0) for r in rows)


def test_make_machines_keeps_the_fabrics_apart(folder, tmp_path):
    built = machines.build([str(folder)], str(tmp_path / "machines"))
    t = built["machines"][0].table
    bcast = t[(t["strategy_spec"] == BCAST) & (t["procs"] == 2)]
    assert sorted(bcast["fabric"]) == sorted([FAST, SLOW])
    assert list(bcast["rank"]) == [1, 1]  # each the fastest of its own workload
    md = (tmp_path / "machines" / "machines.md").read_text()
    assert f"### llama-4GiB.wlf (64 MiB), cold ×2 {SLOW}" in md


def test_a_folder_without_a_fabric_reads_as_before(tmp_path):
    write_rounds(str(tmp_path / "plain"), rounds=2)
    r = load(str(tmp_path / "plain"))
    assert (r.runs["fabric"] == "").all()
    row = r.runs.iloc[0]
    assert condition(row, 1) == row["cache"]
    assert labels.label(row, 1) == row["strategy_spec"]
