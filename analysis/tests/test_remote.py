"""Remote: models read through the experiment's server. On the synthetic fixture remote/ (nginx,
6 rounds; its figures worked out in its make_remote.py) and the measured remote-s3fs/ (s3rver
with an s3fs mount, one round): which runs are remote, each row's medians, CPU per GB and
over-read, the paired ratio to the best local strategy, the best remote design and peer, the
server that may be the limit, mmap against fread through the mount, the concurrency figure,
and no section for results without remote runs."""

import json
import math
import os
import shutil
import sys

import pytest
from conftest import build_report_of, row_cells, section_of, written_by


FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")
FIXTURE = os.path.join(FIXTURES, "remote")
S3FS = os.path.join(FIXTURES, "remote-s3fs")
SMALL = os.path.join(FIXTURES, "small")
sys.path.insert(0, FIXTURE)
import make_remote as make  # noqa: E402

from analysis.core import results
from analysis.pages import report
from analysis.sections import remote
from analysis.stats import remote as remote_stats

R16 = "http_ranges:chunk=16MiB:concurrency=4"


@pytest.fixture(scope="module")
def rows():
    table = remote_stats.summarize(results.load(FIXTURE))
    return {(r["strategy_spec"], r["cache"]): r for _, r in table.iterrows()}


@pytest.fixture(scope="module")
def s3fs_rows():
    table = remote_stats.summarize(results.load(S3FS))
    return {(r["strategy_spec"], r["cache"]): r for _, r in table.iterrows()}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return build_report_of(tmp_path_factory, FIXTURE)


@pytest.fixture(scope="module")
def built_s3fs(tmp_path_factory):
    return build_report_of(tmp_path_factory, S3FS)


def section(folder) -> str:
    with open(os.path.join(folder, "report.md"), encoding="utf-8") as f:
        return section_of(f.read(), remote.TITLE)


cells = row_cells


def test_the_fixture_is_what_its_generator_writes():
    assert written_by(FIXTURE, make.records())


def test_shown_for_remote_runs_only():
    assert remote_stats.shown(results.load(FIXTURE))
    assert remote_stats.shown(results.load(S3FS))
    assert not remote_stats.shown(results.load(SMALL))


def test_which_runs_are_remote():
    r = results.load(S3FS)
    flagged = dict(zip(r.runs["strategy_spec"], remote_stats.is_remote(r.runs)))
    assert flagged == {"http_ranges": True, "exec:label=cat-s3fs": True, "mmap:via=s3fs": True,
                       "fread:via=local": False, "fread:via=s3fs": True}


def test_rows_medians_cpu_and_requests(rows):
    get = rows[("http_get", "cold")]
    assert get["n"] == make.ROUNDS
    assert get["median_s"] == pytest.approx(3.0 * make.MEDIAN_SPEED)
    assert get["gb_per_s"] == pytest.approx(1 / (3.0 * make.MEDIAN_SPEED))
    assert get["client_cpu_s_per_gb"] == pytest.approx(0.5)
    assert get["server_cpu_s_per_gb"] == pytest.approx(0.9 * 3.0 * make.MEDIAN_SPEED)
    assert (get["requests"], get["connections"]) == (2, 2)
    assert get["first_byte_s"] == pytest.approx(0.002)
    assert get["how"] == "one GET, HTTP from nginx 1.22.1"
    ranges = rows[(R16, "warm")]
    assert ranges["median_s"] == pytest.approx(2.2 * make.MEDIAN_SPEED / 2)
    assert ranges["client_cpu_s_per_gb"] == pytest.approx(0.6)
    assert ranges["requests"] == 61 and ranges["connections"] == 5
    assert ranges["latency_p50_s"] == pytest.approx(0.04)
    assert ranges["latency_p99_s"] == pytest.approx(0.08)
    assert ranges["how"] == "ranged GETs of 16 MiB, 4 in flight, HTTP from nginx 1.22.1"


def test_over_read(rows):
    assert rows[(R16, "cold")]["over_read"] == pytest.approx(0.02)
    assert rows[("http_ranges:chunk=4MiB:concurrency=4", "cold")]["over_read"] == 0
    assert math.isnan(rows[("exec:label=curl", "cold")]["over_read"])  # a command's: not seen


def test_paired_ratio_to_the_best_local_strategy(rows):
    local = rows[("fread", "cold")]
    assert local["is_local"] and local["ratio"] == 1 and ("mmap", "cold") not in rows
    for spec, cache in [("http_get", "cold"), (R16, "warm"), ("exec:label=curl", "cold")]:
        r = rows[(spec, cache)]
        assert r["best_local"] == "fread" and r["pairs"] == make.ROUNDS and r["bounded"]
        assert r["ratio"] == pytest.approx(make.TIMES[spec] / make.TIMES["fread"])
        assert r["verdict"] == "slower"


def test_too_few_rounds_with_one(s3fs_rows):
    r = s3fs_rows[("http_ranges", "cold")]
    assert r["best_local"] == "fread:via=local" and r["pairs"] == 1 and not r["bounded"]
    assert r["ratio"] == pytest.approx(0.153027123 / 0.104040863)
    assert r["verdict"] == "too few rounds"
    assert r["how"] == "ranged GETs of 8 MiB, 8 in flight, S3 via s3rver 3.7.1"
    assert s3fs_rows[("mmap:via=s3fs", "cold")]["how"] == \
        "mmap, through an s3fs mount (s3fs 1.90) of s3rver 3.7.1"


def test_best_remote_design_and_peer():
    r = results.load(FIXTURE)
    best = remote_stats.comparisons(r, remote_stats.summarize(r)).set_index("cache")
    for cache in ("cold", "warm"):
        b = best.loc[cache]
        assert b["best_remote"] == R16 and b["best_local"] == "fread"
        assert b["remote_ratio"] == pytest.approx(2.2 / 2.0)
        assert b["best_peer"] == "curl (whole command) (unverified)"
        assert b["peer_ratio"] == pytest.approx(2.75 / 2.2) and b["peer_bounded"]


def test_server_limit(rows):
    assert rows[("http_get", "cold")]["server_limited"]
    assert rows[("http_get", "cold")]["server_busy"] == pytest.approx(0.9)
    assert not rows[(R16, "cold")]["server_limited"]


def test_the_section(built):
    text = section(built)
    head = cells(text, "design")
    row = dict(zip(head, cells(text, "http_get", after="**cold**")))
    assert row["median s"] == "3.075" and row["client CPU s/GB"] == "0.50"
    assert row["server CPU s/GB"] == "2.77" and row["requests"] == "2"
    assert row["× best local's time, paired (95% CI)"] == "1.50× (1.50–1.50)"
    assert dict(zip(head, cells(text, R16)))["over-read"] == "2.0%"
    assert cells(text, "fread (best local)")[-2] == "1 (best local)"
    assert "the fastest remote design, http_ranges:chunk=16MiB:concurrency=4" in text
    assert ("took 1.10× (1.10–1.10) the time of fread, the best local strategy (96.9% "
            "interval, 6 rounds)" in text)
    assert "at least 95% and depends on the rounds: 96.9% at 6 rounds, the fewest here." in text
    assert "the fastest peer, curl (whole command) (unverified)" in text
    assert "**The server's CPU may be the limit**" in text
    assert "- http_get, cold: the server used 2.77 s of CPU in a median 3.075 s" in text
    assert "- wget, cold: failed (1 run): command exited with status 8" in text


def test_the_concurrency_figure(built):
    assert os.path.isfile(os.path.join(built, "figures", f"{remote.FIGURE}.png"))
    assert f"(figures/{remote.FIGURE}.png)" in section(built)
    points = remote_stats.ranges_points(results.load(FIXTURE))
    assert sorted(points["concurrency"].unique()) == [1, 4]


def test_no_concurrency_figure_for_one_value(built_s3fs):
    assert not os.path.exists(os.path.join(built_s3fs, "figures", f"{remote.FIGURE}.png"))


def test_mmap_against_fread_through_s3fs(built_s3fs):
    r = results.load(S3FS)
    pairs = remote_stats.through_s3fs(r, remote_stats.summarize(r)).set_index("cache")
    assert pairs.loc["cold", "mmap"] == "mmap:via=s3fs"
    assert pairs.loc["cold", "ratio"] == pytest.approx(0.177636712 / 0.266549914)
    assert pairs.loc["warm", "verdict"] == "too few rounds"
    text = section(built_s3fs)
    assert "**mmap against fread through the s3fs mount:**" in text
    assert ("- cold: mmap:via=s3fs (median 0.178 s) took 0.67× (–) the time of fread:via=s3fs"
            in text)
    assert remote.S3FS_NOTE in text


def test_summary_and_the_main_table(built):
    with open(os.path.join(built, "summary.json"), encoding="utf-8") as f:
        out = json.load(f)
    names = {(g["strategy_spec"], g["cache"]) for g in out["remote"]}
    assert ("http_get", "warm") in names and ("fread", "warm") in names
    assert {b["cache"] for b in out["remote_best"]} == {"cold", "warm"}
    assert [x["strategy_spec"] for x in out["remote_not_run"]] == ["exec:label=wget"] * 2
    with open(os.path.join(built, "report.md"), encoding="utf-8") as f:
        md = f.read()
    warm = md.split("## Warm start", 1)[1]
    assert cells(warm, "http_get")[-1] == f"read through the server: see *{remote.TITLE}*"


def test_no_section_without_remote_runs(tmp_path):
    folder = tmp_path / "small"
    shutil.copytree(SMALL, folder)
    report.build(str(folder))
    assert f"## {remote.TITLE}" not in (folder / "report.md").read_text(encoding="utf-8")
    with open(folder / "summary.json", encoding="utf-8") as f:
        assert "remote" not in json.load(f)
