"""The shared loader and the aggregates, on a small hand-made results folder whose figures are
computed by hand below; the exact interval of the median; unverified runs and roles on
synthetic records."""

import json
import os
import shutil

import numpy as np
import pytest
from conftest import FILE, FILE_BYTES
from scipy.stats import binom

from analysis.core import results
from analysis.sections import left_out, start
from analysis.stats import aggregates as stats, compare as compare_stats, paired

FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "small")


@pytest.fixture(scope="module")
def table():
    return stats.summarize(results.load(FIXTURE))


def row(table, spec, cache):
    match = table[(table["strategy_spec"] == spec) & (table["cache"] == cache)]
    assert len(match) == 1, f"{spec} {cache}: {len(match)} rows"
    return match.iloc[0]


def test_failed_invalid_and_unsupported_runs_are_counted_and_left_out(table):
    r = results.load(FIXTURE)
    assert len(r.runs) == 13 and len(r.ok) == 10
    counts = {(x.strategy_spec, x.status): x["count"] for _, x in r.excluded.iterrows()}
    assert counts == {("fread", "failed"): 1, ("mmap", "invalid"): 1, ("nope", "unsupported"): 1}
    assert "OOM killer" in r.excluded.set_index("status").loc["failed", "errors"][0]
    assert row(table, "fread", "cold")["n"] == 3  # the failed run is not among them
    assert "nope" not in set(table["strategy_spec"])


def test_aggregates_equal_hand_computed_values(table):
    fread = row(table, "fread", "cold")  # 10, 12, 11 s
    assert fread["median_s"] == 11.0 and fread["min_s"] == 10.0 and fread["max_s"] == 12.0
    assert fread["iqr_s"] == pytest.approx(1.0)  # quartiles 10.5 and 11.5
    assert fread["gb_per_s"] == pytest.approx(1e9 / 11.0 / 1e9)
    assert fread["peak_rss_bytes"] == 1001.0  # median of 1000, 1001, 1002
    mmap = row(table, "mmap", "cold")  # 2, 4, 3 s; the invalid run left out
    assert mmap["median_s"] == 3.0 and mmap["n"] == 3
    # The time ratio is paired, round by round: the fixture's fread and mmap ran in different
    # reps (0-2 and 4-6), so no round pairs them and there is none (tests/test_paired.py has
    # the paired figures).
    assert np.isnan(mmap["time_ratio"]) and np.isnan(mmap["pairs"])
    assert mmap["baseline"] == "fread" and not mmap["is_baseline"]
    assert fread["time_ratio"] == 1.0 and fread["is_baseline"]
    warm = row(table, "io_uring:qd=4", "warm")  # 1.0, 1.5 s
    assert warm["median_s"] == pytest.approx(1.25)
    assert np.isnan(warm["time_ratio"])
    assert np.isnan(table["of_device"]).all()  # no ceiling reads


def test_groups_of_fewer_than_6_runs_have_no_interval_of_the_median(table):
    assert table["n"].max() < 6
    assert table["ci_low_s"].isna().all() and table["ci_high_s"].isna().all()
    cells = start.table_md(table, "cold", 1)
    assert "| fread | 3 | 11.000 (–) |" in cells
    assert "fewer than 6 runs: no 95% interval of the median" in cells


def test_the_interval_of_the_median_is_of_order_statistics():
    x = [9.0, 3.0, 7.0, 1.0, 5.0, 2.0, 8.0, 4.0, 10.0, 6.0]
    assert stats.median_interval(x[:6]) == (1.0, 9.0)  # n = 6: [min, max], 96.9%
    assert stats.median_interval(x) == (2.0, 9.0)  # n = 10: [x_(2), x_(9)], 97.9%
    assert all(np.isnan(stats.median_interval(x[:5])))  # [min, max] holds it 93.75% only
    assert [stats.median_rank(n) for n in (1, 5, 6, 8, 9, 10, 11, 20, 100)] == \
        [0, 0, 1, 1, 2, 2, 2, 6, 40]
    for n in range(6, 80):
        k = stats.median_rank(n)
        assert 1 - 2 * binom.cdf(k - 1, n, 0.5) >= 0.95 > 1 - 2 * binom.cdf(k, n, 0.5), n


def test_the_interval_of_the_median_reaches_its_coverage_on_skewed_times():
    """4,000 seeded samples of log-normal times (skewed, as load times are) per n: the share of
    intervals that hold the true median is the exact coverage, within sampling error, and never
    below 95%."""
    rng = np.random.default_rng(5)
    for n in (6, 10, 25):
        x = np.sort(rng.lognormal(0.0, 0.8, (4000, n)), axis=1)
        k = stats.median_rank(n)
        covered = np.mean((x[:, k - 1] <= 1.0) & (1.0 <= x[:, n - k]))
        exact = 1 - 2 * binom.cdf(k - 1, n, 0.5)
        assert covered >= 0.95 and abs(covered - exact) < 0.01, (n, covered, exact)


def write_records(folder, records, env=None):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "runs.jsonl"), "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in records)
    with open(os.path.join(folder, "env.json"), "w") as f:
        json.dump(env or {}, f)


def run(i, spec, wall, rep=0, **fields):
    return {"run_id": f"r{i:03d}", "strategy": spec.split(":")[0], "strategy_spec": spec,
            "file": FILE, "file_bytes": FILE_BYTES, "cache": "cold", "rep": rep, "position": 0,
            "status": "ok", "error": None, "checksum_ok": True, "wall_s": wall,
            "peak_rss_bytes": 1000, "major_faults": 0, "minor_faults": 10, **fields}


def test_ok_runs_whose_checksum_was_not_verified_are_counted_apart(tmp_path):
    walls = [10.0, 11.0, 12.0]
    records = [run(i, "fread", w) for i, w in enumerate(walls)]
    records += [run(3, "fread", 1.0, checksum_ok=False), run(4, "fread", 2.0, checksum_ok=None),
                {k: v for k, v in run(5, "fread", 3.0).items() if k != "checksum_ok"},
                run(6, "mmap", 4.0, checksum_ok=None)]
    write_records(tmp_path, records)
    r = results.load(str(tmp_path))
    assert list(r.ok["wall_s"]) == walls
    x = r.excluded.set_index("strategy_spec")
    assert set(x["status"]) == {"ok, checksum not verified"}
    assert x.loc["fread", "count"] == 3 and x.loc["mmap", "count"] == 1
    assert x.loc["fread", "errors"] == ["checksum_ok false: the bytes did not match",
                                        "checksum_ok null: the bytes were not checked"]
    assert stats.summarize(r).set_index("strategy_spec").loc["fread", "median_s"] == 11.0
    md = left_out.excluded_md(r)
    assert "| fread | cold | ok, checksum not verified | 3 |" in md


def shm_rounds(rounds=6):
    """`rounds` rounds of two workers each: fread (no role; read_bytes recorded) and shm
    (a creator at 10 s plus the round, an attacher at 1 s plus the round; no read_bytes)."""
    records = []
    for rep in range(rounds):
        for position, spec in enumerate(("fread", "shm")):
            for proc, role in enumerate(("creator", "attacher")):
                wall = (20.0 if spec == "fread" else 10.0 if role == "creator" else 1.0) + rep
                extra = ({"read_bytes": 5} if spec == "fread" else
                         {"details": {"role": role, "segment": "s"}})
                records.append(run(len(records), spec, wall, rep=rep, position=position,
                                   procs=2, proc=proc, **extra))
    return records


def test_roles_are_groups_of_their_own_everywhere(tmp_path):
    write_records(tmp_path / "a", shm_rounds())
    r = results.load(str(tmp_path / "a"))
    assert list(r.ok["role"].unique()) == ["", "creator", "attacher"]
    table = stats.summarize(r).set_index(["strategy_spec", "role"])
    creator, attacher = table.loc[("shm", "creator")], table.loc[("shm", "attacher")]
    assert creator["n"] == 6 and creator["median_s"] == 12.5 and attacher["median_s"] == 3.5
    assert table.loc[("fread", ""), "n"] == 12 and table.loc[("fread", ""), "read_bytes"] == 5
    assert np.isnan(creator["read_bytes"])  # no run recorded it: missing, never 0
    # Paired per role against fread's slowest worker of the round (20 + rep s).
    pairs = paired.paired_table(r).set_index("role")
    assert list(pairs.index) == ["creator", "attacher"]
    assert pairs.loc["creator", "n"] == 6 and pairs.loc["attacher", "n"] == 6
    # Each role's time over fread's, not pooled.
    assert 1 / 2.1 < creator["time_ratio"] < 1 / 1.5 and attacher["time_ratio"] < 0.25
    cold = start.table_md(stats.summarize(r), "cold", 1)
    assert "| shm[creator] ×2 | 6 | 12.500 (10.000–15.000) |" in cold
    assert "| shm[attacher] ×2 | 6 | 3.500 (1.000–6.000) |" in cold
    assert " per reader |" in cold and "each reader's own" in cold  # GB/s says whose
    write_records(tmp_path / "b", shm_rounds())
    rows = compare_stats.compare(str(tmp_path / "a"), str(tmp_path / "b"))["rows"]
    # compare takes a run of two readers as one value (the round's), per role.
    assert [(x["strategy_spec"], x["role"], x["n_a"]) for x in rows] == [
        ("fread", "", 6), ("shm", "attacher", 6), ("shm", "creator", 6)]


def test_bad_folders_are_named(tmp_path):
    with pytest.raises(results.ResultsError, match="runs.jsonl: no such file"):
        results.load(str(tmp_path))
    (tmp_path / "runs.jsonl").write_text('not json\n{"status": "ok"}\n')
    with pytest.raises(results.ResultsError, match='runs.jsonl line 2: field "strategy": missing'):
        results.load(str(tmp_path))


def test_a_line_cut_short_by_a_crash_is_ignored(tmp_path):
    shutil.copy(os.path.join(FIXTURE, "runs.jsonl"), tmp_path / "runs.jsonl")
    with open(tmp_path / "runs.jsonl", "a") as f:
        f.write('{"run_id": "cut')
    assert len(results.load(str(tmp_path)).runs) == 13
    assert json.loads((tmp_path / "runs.jsonl").read_text().splitlines()[0])["status"] == "ok"
