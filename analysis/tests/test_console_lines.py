"""The report gives what the console gives at the end of a run: the fixtures of
fixtures/console/ (runs.jsonl, and expected.json with figures worked out by make_console.py by
other routes), whose console lines harness/stats/tests/console_lines_test.cc checks against the
harness's functions, here through the report's own entry point (`python3 -m analysis.report
DIR`: summary.json and report.md), figure for figure: the summary table's rows and the ceiling
line, the many-readers rows, the paired ratios, the runs not paired, a ceiling that is not one,
drift and outliers."""
import json
import os
import shutil
import subprocess
import sys

import pytest

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "console")
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FIXTURES = ["rounds", "readers", "link"]
KEY = ("cache", "procs", "link", "strategy_spec")


@pytest.fixture(scope="module", params=FIXTURES)
def built(request, tmp_path_factory):
    """(expected.json, summary.json, report.md) of a copy of the fixture, reported."""
    folder = tmp_path_factory.mktemp("console") / request.param
    shutil.copytree(os.path.join(HERE, request.param), folder)
    subprocess.run([sys.executable, "-m", "analysis.report", str(folder)], cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL)
    with open(folder / "expected.json", encoding="utf-8") as f:
        expected = json.load(f)
    with open(folder / "summary.json", encoding="utf-8") as f:
        summary = json.load(f)
    return expected, summary, (folder / "report.md").read_text(encoding="utf-8")


def keyed(rows, key=KEY):
    out = {tuple(r[k] for k in key): r for r in rows}
    assert len(out) == len(rows), rows
    return out


def near(got, want, names):
    """Each figure as the fixture has it, up to the rounding of summing in another order (rel
    1e-9, far below the digits either side prints)."""
    for ours, theirs in names:
        assert got[ours] == pytest.approx(want[theirs], rel=1e-9), (ours, got, want)


def test_summary_rows(built):
    expected, summary, md = built
    got = keyed(summary["groups"])
    assert set(got) == set(keyed(expected["summary"]))
    for key, want in keyed(expected["summary"]).items():
        assert got[key]["n"] == want["n"], key
        near(got[key], want, [(c, c) for c in ("median_s", "min_s", "max_s", "gb_per_s",
                                                "peak_rss_bytes", "read_bytes", "minor_faults")])
        assert f"\n| {want['report_label']} |" in md, want["report_label"]


def test_ceiling_line(built):
    expected, summary, _ = built
    want = expected["ceiling"]
    if want is None:
        assert summary["ceiling"] == []
        return
    (got,) = summary["ceiling"]
    assert (got["n"], got["not_ok"]) == (want["n"], want["not_ok"])
    near(got, want, [(c, c) for c in ("median_gb_per_s", "min_gb_per_s", "max_gb_per_s")])


def test_readers_rows(built):
    expected, summary, _ = built
    got = keyed([r for r in summary.get("many_readers", []) if r["procs"] > 1])
    assert set(got) == set(keyed(expected["readers"]))
    for key, want in keyed(expected["readers"]).items():
        assert got[key]["rounds"] == want["rounds"], key
        assert got[key]["rounds"] - got[key]["failed_rounds"] == want["whole_rounds"], key
        near(got[key], want, [(c, c) for c in ("duration_s", "gb_per_s", "spread")])


def table_row(md, cache, label):
    """The row of `label` in the report's table of `cache` start."""
    section = md.split(f"## {cache.capitalize()} start", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith(f"| {label} |")]
    assert len(rows) == 1, (label, rows)
    return rows[0]


def test_paired(built):
    expected, summary, md = built
    got = keyed(summary["paired"])
    assert set(got) == set(keyed(expected["paired"]))
    for key, want in keyed(expected["paired"]).items():
        g = got[key]
        assert g["n"] == want["n"] and g["bounded"] == (want["low"] is not None), key
        near(g, want, [("ratio", "ratio")])
        # The ratio and its interval as both print them, in the row of its table.
        assert f"| {want['text']} |" in table_row(md, want["cache"], want["report_label"]), key
        if want["low"] is None:
            continue
        near(g, want, [("ratio_low", "low"), ("ratio_high", "high"), ("level", "level")])
        assert g["verdict"] == want["verdict"], key
    assert sum(not g["bounded"] for g in got.values()) == len(expected["too_few"])


def test_broken_runs(built):
    expected, summary, _ = built
    key = KEY + ("rep",)
    assert set(keyed(summary["broken_rounds"], key)) == set(keyed(expected["broken"]["runs"], key))


def test_broken_runs_reasons(built):
    expected, summary, _ = built
    if not expected["broken"]["runs"]:
        pytest.skip("no broken run in this fixture")
    key = KEY + ("rep",)
    got = keyed(summary["broken_rounds"], key)
    for k, want in keyed(expected["broken"]["runs"], key).items():
        assert got[k]["reason"] == want["reason"], k


def test_ceiling_beaten(built):
    expected, summary, _ = built
    got = keyed(summary["ceiling_beaten"], ("cache", "strategy_spec"))
    want_rows = keyed(expected["ceiling_beaten"], ("cache", "strategy_spec"))
    assert set(got) == set(want_rows)
    for key, want in want_rows.items():
        assert (got[key]["n"], got[key]["beats_fastest"]) == (want["n"], want["beats_fastest"])
        near(got[key], want, [(c, c) for c in ("strategy_gb_per_s", "ceiling_fastest_gb_per_s")])


def test_drift(built):
    expected, summary, _ = built
    key = ("series", "cache", "procs", "link")
    got = keyed([{**r, "procs": r["procs"] and int(r["procs"])} for r in summary["drift"]], key)
    want_rows = keyed([{"cache": None, "procs": None, "link": None, **r}
                       for r in expected["drift"]], key)
    assert set(got) == set(want_rows)
    for k, want in want_rows.items():
        assert (got[k]["n"], got[k]["detected"]) == (want["n"], want["detected"]), k
        near(got[k], want, [(c, c) for c in ("tau", "p", "first_third", "last_third")])


def test_outliers(built):
    expected, summary, _ = built
    got = keyed(summary["outliers"], ("run_id",))
    want_rows = keyed(expected["outliers"]["runs"], ("run_id",))
    assert set(got) == set(want_rows)
    for k, want in want_rows.items():
        assert got[k]["rep"] == want["rep"]
        near(got[k], want, [(c, c) for c in ("wall_s", "median_s", "z")])


def test_condition_names(built):
    expected, summary, _ = built
    assert set(summary["verdict"]) == {c["report"] for c in expected["conditions"]}
