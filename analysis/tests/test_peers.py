"""Peers: exec commands measured beside loadbench's strategies, on the synthetic fixture in
fixtures/peers (its figures worked out by hand in its README.md): which runs count (an
unverified command's do, marked wherever they show), each peer paired against the fastest
loadbench strategy of its cache state, its start-up share and memory, the commands as run, the
failed and unsupported ones with why, the section and summary.json in a built report, and no
section for results without exec runs."""

import json
import math
import os
import sys

import pytest
from conftest import build_report_of, row_cells, section_of, written_by


FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")
FIXTURE = os.path.join(FIXTURES, "peers")
SMALL = os.path.join(FIXTURES, "small")
sys.path.insert(0, FIXTURES)
import make_peers  # noqa: E402

from analysis.core import html_page, results
from analysis.pages import compare, report
from analysis.sections import peers
from analysis.stats import aggregates as stats, compare as compare_stats

DD_COMMAND = "/bin/sh -c 'dd if=/data/llama-2GB.wlf of=/dev/null bs=1M status=none'"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return build_report_of(tmp_path_factory, FIXTURE)


@pytest.fixture(scope="module")
def rows():
    table = peers.summarize(results.load(FIXTURE))
    return {(r["label"], r["cache"]): r for _, r in table.iterrows()}


def section(md: str) -> str:
    return section_of(md, peers.TITLE)


row_of = row_cells


def test_the_fixture_is_what_its_generator_writes():
    assert written_by(FIXTURE, make_peers.records())


def test_an_unverified_command_counts_and_is_marked():
    r = results.load(FIXTURE)
    dd = r.ok[r.ok["strategy_spec"] == "exec:label=dd"]
    assert len(dd) == 12 and not dd["verified"].any()
    assert r.ok.loc[r.ok["strategy"] != "exec", "verified"].all()
    assert set(r.excluded["strategy_spec"]) == {"exec:label=fio", "exec:label=torch-load"}
    table = stats.summarize(r).set_index(["strategy_spec", "cache"])
    assert table.loc[("exec:label=dd", "cold"), "n"] == 6
    assert table.loc[("exec:label=dd", "cold"), "median_s"] == pytest.approx(3.03)
    assert not table.loc[("exec:label=dd", "cold"), "verified"]
    assert table.loc[("exec:label=numpy-fromfile", "warm"), "verified"]
    assert results.spec_label({"strategy_spec": "exec:label=dd", "role": "",
                               "verified": False}) == "dd (unverified)"
    assert results.spec_label({"strategy_spec": "exec:label=dd", "role": ""}) == "dd"


def test_only_an_exec_command_without_a_checksum_counts_unverified(tmp_path):
    """The one rule: a loadbench strategy's ok run without a verified checksum stays out, and
    so does an exec run that sent a checksum the record does not confirm, or that failed."""
    base = make_peers.records(1)[0]
    dd = next(r for r in make_peers.records(1) if r["strategy_spec"] == "exec:label=dd")
    records = [base, {**base, "run_id": "a", "checksum_ok": None, "verify": "none"},
               {**dd, "run_id": "b"}, {**dd, "run_id": "c", "verify": "checksum"},
               {**dd, "run_id": "d", "status": "failed", "error": "killed at timeout"}]
    (tmp_path / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    r = results.load(str(tmp_path))
    assert list(r.ok["run_id"]) == [base["run_id"], "b"]
    assert list(r.ok["verified"]) == [True, False]
    x = r.excluded.set_index(["strategy_spec", "status"])["count"]
    assert x[("fread", results.UNVERIFIED)] == 1
    assert x[("exec:label=dd", results.UNVERIFIED)] == 1
    assert x[("exec:label=dd", "failed")] == 1


def test_each_peer_is_paired_against_the_fastest_strategy_of_its_cache_state(rows):
    for cache, best, median in (("cold", "mmap", 2.0), ("warm", "mmap_populate", 0.5)):
        assert rows[(best, cache)]["is_fastest"] and rows[(best, cache)]["ratio"] == 1.0
        for label in ("numpy-fromfile", "dd"):
            assert rows[(label, cache)]["fastest"] == best
            assert rows[(label, cache)]["fastest_median_s"] == pytest.approx(median)
            assert rows[(label, cache)]["pairs"] == 6
    expected = {("numpy-fromfile", "cold"): (2.0, 1.6, 2.5, "slower"),
                ("numpy-fromfile", "warm"): (3.0, 2.4, 3.75, "slower"),
                ("dd", "cold"): (1.5, 1.5 / 1.05, 1.575, "slower"),
                ("dd", "warm"): (0.8, 0.8 / 1.05, 0.84, "faster")}
    for key, (ratio, low, high, verdict) in expected.items():
        got = rows[key]
        assert (got["ratio"], got["ratio_low"], got["ratio_high"]) == pytest.approx(
            (ratio, low, high), rel=1e-9), key
        assert got["bounded"] and got["verdict"] == verdict
    # Paired by round, not a ratio of medians: dd's cold median over mmap's is 3.03 / 2.
    assert rows[("dd", "cold")]["median_s"] / 2.0 == pytest.approx(1.515)


def test_start_up_share_own_load_and_memory(rows):
    numpy_cold, numpy_warm, dd = (rows[("numpy-fromfile", "cold")],
                                  rows[("numpy-fromfile", "warm")], rows[("dd", "cold")])
    assert numpy_cold["startup_share"] == pytest.approx(0.125)
    assert numpy_warm["startup_share"] == pytest.approx(0.2)
    assert numpy_cold["done_s"] == pytest.approx(3.5)
    assert numpy_warm["done_s"] == pytest.approx(1.2)
    assert math.isnan(dd["startup_share"]) and math.isnan(dd["done_s"])  # it sent no `done`
    assert numpy_cold["peak_rss_bytes"] == 2.10e9
    assert numpy_cold["cgroup_peak_bytes"] == 4.20e9
    assert numpy_warm["cgroup_peak_bytes"] == 2.20e9
    assert dd["peak_rss_bytes"] == 2e6 and dd["cgroup_peak_bytes"] == 2.002e9
    assert numpy_cold["verified"] and not dd["verified"]
    assert dd["command"] == DD_COMMAND


def test_the_section_shows_each_cache_state_against_its_fastest(built):
    md = (built / "report.md").read_text()
    text = section(md)
    assert "**cold**: against mmap, the fastest loadbench strategy here (median 2.000 s)." in text
    assert ("**warm**: against mmap_populate, the fastest loadbench strategy here (median "
            "0.500 s).") in text
    assert "at least 95% and depends on the rounds: 96.9% at 6 rounds, the fewest here." in text
    cold = "**cold**"
    assert row_of(text, "mmap", cold)[5] == "1 (fastest)"
    assert row_of(text, "numpy-fromfile", cold) == [
        "numpy-fromfile", "6", "4.000", "3.500", "12.5%", "2.00× (1.60–2.50)", "slower",
        "1.96 GiB", "3.91 GiB", "yes"]
    assert row_of(text, "dd (unverified)", cold) == [
        "dd (unverified)", "6", "3.030", "", "", "1.50× (1.42–1.58)", "slower", "1.91 MiB",
        "1.86 GiB", "no: no checksum sent"]
    warm = "**warm**"
    assert row_of(text, "numpy-fromfile", warm)[2:7] == [
        "1.500", "1.200", "20.0%", "3.00× (2.40–3.75)", "slower"]
    assert row_of(text, "dd (unverified)", warm)[5:7] == ["0.80× (0.76–0.84)", "faster"]
    assert "| × fastest's time, paired (95% CI) |" in text
    assert "below 1: the peer is faster" in text


def test_unverified_rows_are_marked_in_the_strategy_tables(built):
    md = (built / "report.md").read_text()
    cold = md.split("## Cold start", 1)[1].split("\n## ", 1)[0]
    assert row_of(cold, "dd (unverified)")[1] == "6"
    assert row_of(cold, "numpy-fromfile")[1] == "6"
    assert "(unverified): a command's runs that count" in cold
    assert "60 ok (12 of them (unverified): commands that sent no checksum)" in md
    left_out = md.split("## Runs left out", 1)[1].split("\n## ", 1)[0]
    assert "| dd" not in left_out and "| fio | cold | failed | 6 |" in left_out


def test_commands_failures_and_unsupported_ones_are_listed(built):
    text = section((built / "report.md").read_text())
    assert f"| dd | `{DD_COMMAND}` |" in text
    assert ("| numpy-fromfile | `/usr/bin/python3 /src/loadbench/loaders/peers/numpy_fromfile.py "
            "/data/llama-2GB.wlf` |") in text
    assert f"Measured: {make_peers.MEASURED}." in text
    assert (f"- fio, cold: failed (6 runs): {make_peers.FIO_WHY}; stderr ends: "
            "`fio: engine libaio not loadable ⏎ fio: failed to load engine ⏎ fio: "
            "file:ioengines.c:134, func=dlopen, error=libaio: cannot open shared object "
            "file`") in text
    assert ("- torch-load, warm: unsupported (6 runs): the command says: no module named "
            "torch: install python3-torch") in text


def test_summary_json_carries_the_peers(built):
    summary = json.loads((built / "summary.json").read_text())
    got = {(p["label"], p["cache"]): p for p in summary["peers"]}
    dd = got[("dd", "warm")]
    assert dd["fastest"] == "mmap_populate" and dd["pairs"] == 6 and dd["verified"] is False
    assert dd["ratio"] == pytest.approx(0.8) and dd["verdict"] == "faster"
    assert dd["startup_share"] is None and dd["command"] == DD_COMMAND
    assert got[("numpy-fromfile", "cold")]["startup_share"] == pytest.approx(0.125)
    assert got[("mmap", "cold")]["is_fastest"] is True
    not_run = {(p["label"], p["cache"]): p for p in summary["peers_not_run"]}
    assert not_run[("fio", "cold")]["stderr_tail"].endswith("cannot open shared object file")
    assert not_run[("torch-load", "cold")]["status"] == "unsupported"
    groups = {(g["strategy_spec"], g["cache"]): g for g in summary["groups"]}
    assert groups[("exec:label=dd", "cold")]["verified"] is False


def test_under_six_rounds_a_peer_has_too_few_rounds(tmp_path):
    make_peers.write(str(tmp_path), rounds=3)
    table = peers.summarize(results.load(str(tmp_path)))
    numpy_cold = table[(table["label"] == "numpy-fromfile") & (table["cache"] == "cold")].iloc[0]
    assert numpy_cold["pairs"] == 3 and numpy_cold["verdict"] == "too few rounds"
    # Ratios 2, 2 / 1.1 and 2.5: the median of the 6 Walsh averages of their logs is the mean
    # of ln 2 and (ln(2 / 1.1) + ln 2.5) / 2, so the estimate is sqrt(2 sqrt(50 / 11)) = 2.065.
    assert numpy_cold["ratio"] == pytest.approx(math.sqrt(2 * math.sqrt(50 / 11)))
    text = peers.section_md(results.load(str(tmp_path)))
    assert row_of(text, "numpy-fromfile")[5:7] == ["2.06× (–)", "too few rounds"]


def test_results_without_exec_runs_have_no_peers(tmp_path_factory):
    folder = build_report_of(tmp_path_factory, SMALL)
    assert f"## {peers.TITLE}" not in (folder / "report.md").read_text()
    summary = json.loads((folder / "summary.json").read_text())
    assert "peers" not in summary and "peers_not_run" not in summary


def test_a_pipe_in_a_command_stays_in_its_cell():
    cell = peers.code("cat /data/m.wlf | md5sum")
    assert cell == "`cat /data/m.wlf \\| md5sum`"
    page = html_page.table(["| peer | command |", "|---|---|", f"| cat | {cell} |"])
    assert "<td>cat</td><td><code>cat /data/m.wlf | md5sum</code></td>" in page


def test_compare_marks_unverified_rows(tmp_path):
    c = compare_stats.compare(FIXTURE, FIXTURE)
    dd = next(r for r in c["rows"] if r["strategy_spec"] == "exec:label=dd")
    assert dd["verified"] is False
    assert "| dd (unverified) | cold |" in compare.to_markdown(c)


def test_a_report_of_peers_that_all_failed_says_why(tmp_path):
    kept = [r for r in make_peers.records(2) if r["strategy_spec"] in
            ("exec:label=fio", "exec:label=torch-load")]
    (tmp_path / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in kept))
    report.build(str(tmp_path))
    text = section((tmp_path / "report.md").read_text())
    assert "No peer has an ok run." in text and "- torch-load, cold: unsupported" in text
