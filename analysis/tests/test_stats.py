"""The shared loader and the aggregates, on a small hand-made results folder whose figures are
computed by hand below."""

import json
import os
import shutil

import numpy as np
import pytest

from analysis import results, stats

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
    # The speed-up is paired, round by round: the fixture's fread and mmap ran in different
    # reps (0-2 and 4-6), so no round pairs them and there is none (tests/test_paired.py has
    # the paired figures).
    assert np.isnan(mmap["speedup"]) and np.isnan(mmap["pairs"])
    assert mmap["baseline"] == "fread" and not mmap["is_baseline"]
    assert fread["speedup"] == 1.0 and fread["is_baseline"]
    warm = row(table, "io_uring:qd=4", "warm")  # 1.0, 1.5 s
    assert warm["median_s"] == pytest.approx(1.25)
    assert np.isnan(warm["speedup"])
    assert np.isnan(table["of_device"]).all()  # no ceiling reads


def test_intervals_hold_the_median_and_are_reproducible(table):
    for _, r in table.iterrows():
        assert r["ci_low_s"] <= r["median_s"] <= r["ci_high_s"]
        assert r["min_s"] <= r["ci_low_s"] and r["ci_high_s"] <= r["max_s"]
        if not np.isnan(r["speedup"]):
            assert r["speedup_ci_low"] <= r["speedup"] <= r["speedup_ci_high"]
    again = stats.summarize(results.load(FIXTURE))
    assert np.array_equal(again["ci_low_s"], table["ci_low_s"])


def test_bootstrap_interval_narrows_with_more_runs():
    rng = np.random.default_rng(1)
    few = stats.interval(stats.bootstrap_medians(rng.normal(10, 1, 5), rng))
    many = stats.interval(stats.bootstrap_medians(rng.normal(10, 1, 500), rng))
    assert many[1] - many[0] < few[1] - few[0]


def test_bad_folders_are_named(tmp_path):
    with pytest.raises(results.ResultsError, match="runs.jsonl: no such file"):
        results.load(str(tmp_path))
    (tmp_path / "runs.jsonl").write_text('{"status": "ok"}\nnot json\n')
    with pytest.raises(results.ResultsError, match=r"runs.jsonl:2: not JSON"):
        results.load(str(tmp_path))


def test_a_line_cut_short_by_a_crash_is_ignored(tmp_path):
    shutil.copy(os.path.join(FIXTURE, "runs.jsonl"), tmp_path / "runs.jsonl")
    with open(tmp_path / "runs.jsonl", "a") as f:
        f.write('{"run_id": "cut')
    assert len(results.load(str(tmp_path)).runs) == 13
    assert json.loads((tmp_path / "runs.jsonl").read_text().splitlines()[0])["status"] == "ok"
