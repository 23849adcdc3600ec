"""The report builds from a small fixture: every strategy's row is in the tables, every figure
is a non-empty image, summary.json is there for other tools, and bad input is one line and
exit 2. It opens with the verdict (the fastest strategy per cache state, paired against the
baseline and the runner-up, and how sure that is) and the time figure, shows each figure right
after its table, and ends with noise, the machine and the runs left out; `--brief` prints the
report's path and the verdict only."""

import json
import os
import re
import struct
import subprocess
import sys

import pytest
from conftest import build_report_of, write_rounds

from analysis.core import machine as machine_core
from analysis.pages import report
from analysis.sections import machine, verdict

FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "small")
REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return build_report_of(tmp_path_factory, FIXTURE)


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n", path
    return struct.unpack(">II", head[16:24])


def test_every_strategy_has_its_row(built):
    md = (built / "report.md").read_text()
    for spec in ("| fread |", "| mmap |", "| io_uring:qd=4 |"):
        assert spec in md
    assert "## Cold start" in md and "## Warm start" in md
    assert "| mmap | cold | invalid | 1 |" in md  # left out, and said so
    html = (built / "report.html").read_text()
    assert html.count("<table>") >= 3 and "io_uring:qd=4" in html


def test_figures_are_non_empty_images_embedded_in_the_html(built):
    figures = sorted(p for p in os.listdir(built / "figures") if p.endswith(".png"))
    assert {"time.png", "memory.png", "throughput-cold.png"} <= set(figures)
    for name in figures:
        width, height = png_size(built / "figures" / name)
        assert width > 100 and height > 100
        assert (built / "figures" / name.replace(".png", ".svg")).stat().st_size > 0
    html = (built / "report.html").read_text()
    assert html.count('src="data:image/png;base64,') == len(figures)


def test_summary_json_has_every_group(built):
    groups = json.loads((built / "summary.json").read_text())["groups"]
    keys = {(g["strategy_spec"], g["cache"]) for g in groups}
    assert keys == {("fread", "cold"), ("mmap", "cold"), ("fread", "warm"),
                    ("io_uring:qd=4", "warm")}
    mmap = next(g for g in groups if g["strategy_spec"] == "mmap")
    assert mmap["n"] == 3 and mmap["median_s"] == 3.0
    # No round holds both fread and mmap (reps 0-2 and 4-6): no paired time ratio, as null.
    assert mmap["time_ratio"] is None and mmap["baseline"] == "fread"
    assert mmap["ci_low_s"] is None and mmap["role"] == ""  # 3 runs: no interval
    fread = next(g for g in groups if (g["strategy_spec"], g["cache"]) == ("fread", "cold"))
    assert fread["time_ratio"] == 1.0 and fread["is_baseline"] is True
    assert not any(k.startswith("speedup") for g in groups for k in g)


def test_the_noise_section_says_what_old_results_lack(built):
    """The fixture predates rounds: its reps pair nothing (one strategy per rep), no ceiling,
    no stability check, no adaptive.json."""
    md = (built / "report.md").read_text()
    noise = md.split("## Noise: rounds, ceiling, drift, outliers", 1)[1].split("\n## ", 1)[0]
    assert "env.json has no `rounds`" in noise and "No ceiling reads" in noise
    assert "Stability: no check recorded" in noise and "Adaptive" not in noise
    assert "- the round factor of cold: no drift (6 rounds" in noise
    assert "Outliers: none" in noise
    assert not (built / "figures" / "rounds.png").exists()  # no round held two strategies
    summary = json.loads((built / "summary.json").read_text())
    assert summary["paired"] == [] and summary["ceiling"] == [] and summary["adaptive"] is None
    assert summary["stability"] == {"before": None, "sessions": []}


def test_the_reference_table_is_set_beside_the_published_one(tmp_path):
    folder = tmp_path / "ref"
    folder.mkdir()
    rows = []
    for i, (spec, wall) in enumerate([("fread", 100.0), ("mmap", 5.0), ("mmap_seq", 4.0)]):
        rows.append({"run_id": f"r{i}", "strategy": spec, "strategy_spec": spec, "file": "/f",
                     "file_bytes": 14 * 10**9, "cache": "cold", "status": "ok", "error": None,
                     "checksum_ok": True, "wall_s": wall, "peak_rss_bytes": 14 * 10**9,
                     "major_faults": 0, "minor_faults": 10, "timeline": None})
    (folder / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    report.build(str(folder))
    assert "published" not in (folder / "report.md").read_text()  # only for reference-table
    (folder / "env.json").write_text(json.dumps({"experiment": "reference-table"}))
    report.build(str(folder))
    md = (folder / "report.md").read_text()
    assert "## The published reference table" in md
    assert "| mmap | 5.00 | 0.050 | 10 | 0.38 |" in md
    assert "The order of the three holds here." in md


def test_a_folder_without_runs_is_exit_2_in_one_line(tmp_path):
    p = subprocess.run([sys.executable, "-m", "analysis.report", str(tmp_path)], cwd=REPO,
                       capture_output=True, text=True)
    assert p.returncode == 2
    assert p.stderr.count("\n") == 1 and "runs.jsonl: no such file" in p.stderr


def test_sweeps_and_sizes_get_their_figures(tmp_path):
    folder = tmp_path / "sweep"
    folder.mkdir()
    rows = []
    for qd in (1, 4, 16):
        for size_gib in (1, 2):
            for rep in range(2):
                rows.append({"run_id": f"q{qd}-{size_gib}-{rep}", "strategy": "io_uring",
                             "strategy_spec": f"io_uring:qd={qd}",
                             "params": {"qd": qd, "chunk": 1048576, "direct": "off"},
                             "file": f"/d/llama-{size_gib}GiB.wlf",
                             "file_bytes": size_gib << 30, "cache": "cold", "status": "ok",
                             "error": None, "checksum_ok": True,
                             "wall_s": size_gib * (1 + 1 / qd) + rep * 0.01,
                             "peak_rss_bytes": 1, "major_faults": 0, "minor_faults": 0,
                             "timeline": None})
    (folder / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    report.build(str(folder))
    figures = set(os.listdir(folder / "figures"))
    assert {"scaling.png", "sweep-io_uring-qd.png"} <= figures
    md = (folder / "report.md").read_text()
    assert "throughput against qd" in md and "log-log" in md


# --- the verdict and the order ------------------------------------------------------------


@pytest.fixture(scope="module")
def rounds12(tmp_path_factory):
    """12 synthetic rounds: mmap_seq 0.1x fread's time, odirect 0.5x (the runner-up)."""
    folder = tmp_path_factory.mktemp("rounds") / "results"
    write_rounds(str(folder))
    report.build(str(folder))
    return folder


def headings(md):
    return [line[3:] for line in md.splitlines() if line.startswith("## ")]


def figures_and_what_precedes_them(md):
    """Per figure of report.md, its name and the block before it, past the figures before it:
    `table`, `text` or the heading it follows."""
    out, previous = [], "nothing"
    for b in md.split("\n\n"):
        if b.startswith("!["):
            out.append((b.split("](figures/", 1)[1].split(".png)", 1)[0], previous))
            continue
        previous = "table" if b.startswith("|") else b if b.startswith("#") else "text"
    return out


def test_the_report_opens_with_the_verdict_and_ends_with_the_noise(built):
    md = (built / "report.md").read_text()
    assert headings(md) == ["Verdict", "Cold start", "Warm start", "Memory and reads",
                            "Noise: rounds, ceiling, drift, outliers", "The machine",
                            "Runs left out"]
    assert md.index("## Verdict") < md.index("](figures/time.png)") < md.index("| fread |")
    assert "## Figures" not in md


def test_each_figure_follows_its_table(rounds12):
    md = (rounds12 / "report.md").read_text()
    placed = dict(figures_and_what_precedes_them(md))
    assert set(placed) == {p[:-4] for p in os.listdir(rounds12 / "figures") if p.endswith(".png")}
    assert placed.pop("time") == "text"  # the verdict's, before the first table
    assert placed.pop("rounds") == "text"  # closes the noise section
    assert set(placed) == {"throughput-cold", "throughput-warm", "memory"}
    assert set(placed.values()) == {"table"}
    cold = md.split("## Cold start", 1)[1].split("\n## ", 1)[0]
    assert "](figures/throughput-cold.png)" in cold


def test_the_verdict_is_paired_against_the_baseline_and_the_runner_up(rounds12):
    cold = json.loads((rounds12 / "summary.json").read_text())["verdict"]["cold"]
    assert (cold["fastest"], cold["baseline"], cold["rounds"], cold["sure"]) == (
        "mmap_seq", "fread", 12, True)
    assert cold["lo"] < cold["ratio"] < cold["hi"] < 1
    assert cold["ratio"] == pytest.approx(0.1, rel=0.05)
    ru = cold["runner_up"]
    assert (ru["strategy"], ru["rounds"], ru["sure"]) == ("odirect", 12, True)
    assert ru["ratio"] == pytest.approx(0.2, rel=0.05)
    md = (rounds12 / "report.md").read_text()
    line = next(x for x in md.splitlines() if x.startswith("- **cold**: "))
    assert line.startswith("- **cold**: mmap_seq is fastest (median 1.0")
    # At 12 rounds the signed-rank interval's exact level is 95.8%, not 95%.
    assert ("s): 0.10× (0.099–0.11) the time of fread, the baseline (95.8% interval, 12 "
            "rounds), a sure difference; 0.20× (0.19–0.21) the time of odirect, the runner-up "
            "(95.8% interval, 12 rounds), a sure difference.") in line


def test_the_table_legend_gives_the_exact_level_of_the_fewest_rounds(rounds12, tmp_path):
    cold = (rounds12 / "report.md").read_text().split("## Cold start", 1)[1]
    assert ("The intervals' exact level is at least 95% and depends on the rounds: 95.8% at "
            "12 rounds, the fewest here.") in cold.split("\n\n| strategy", 1)[0]
    # 6 rounds, odirect's first failed: its 5 pairs have no interval, so the fewest with one
    # are 6.
    write_rounds(str(tmp_path), rounds=6, failed=[("odirect", "cold", 0)])
    report.build(str(tmp_path))
    cold = (tmp_path / "report.md").read_text().split("## Cold start", 1)[1]
    assert "at least 95% and depends on the rounds: 96.9% at 6 rounds, the fewest here." in cold


def test_a_verdict_whose_medians_and_rounds_disagree_says_so(tmp_path):
    """mmap fails in the 6 fast rounds of a drift to 3x: its median comes from the slow rounds
    alone and is above mmap_seq's, which comes from all 12, though in the 6 rounds both ran in
    mmap_seq took 1.05x mmap's time every round."""
    write_rounds(str(tmp_path), rounds=12, times={"fread": 10.0, "mmap_seq": 1.0, "mmap": 0.95},
                 drift=3.0, sigma=0.01, ceiling=False, caches=("cold",),
                 failed=[("mmap", "cold", rep) for rep in range(6)])
    report.build(str(tmp_path))
    cold = json.loads((tmp_path / "summary.json").read_text())["verdict"]["cold"]
    assert cold["fastest"] == "mmap_seq" and cold["medians_and_rounds_disagree"] is True
    faster = cold["faster_in_rounds"]
    assert (faster["strategy"], faster["rounds"], faster["sure"]) == ("mmap", 6, True)
    assert 1 < faster["lo"] < faster["ratio"] < faster["hi"] < 1.1
    assert faster["median_s"] > cold["median_s"]
    line = next(x for x in (tmp_path / "report.md").read_text().splitlines()
                if x.startswith("- **cold**: "))
    assert "is fastest" not in line
    assert line.startswith(
        f"- **cold**: the medians and the paired rounds disagree: mmap_seq has the lowest "
        f"median ({cold['median_s']:.3f} s; mmap {faster['median_s']:.3f} s), but in the rounds "
        "both ran in it took 1.05× (1.03–1.08) the time of mmap, the runner-up (96.9% interval, "
        "6 rounds), a sure difference; neither is named fastest.")


def test_few_rounds_give_no_interval_and_say_how_many_would(tmp_path):
    write_rounds(str(tmp_path), rounds=3)
    report.build(str(tmp_path))
    cold = json.loads((tmp_path / "summary.json").read_text())["verdict"]["cold"]
    assert (cold["rounds"], cold["lo"], cold["hi"], cold["sure"]) == (3, None, None, False)
    assert cold["runner_up"]["rounds"] == 3 and cold["runner_up"]["lo"] is None
    md = (tmp_path / "report.md").read_text()
    assert ("0.10× (–) the time of fread, the baseline (3 rounds: too few for a 95% interval; 6 "
            "rounds would give one).") in md
    assert "runner-up" not in md.split("## Verdict", 1)[1].split("\n## ", 1)[0]


def test_a_difference_the_rounds_cannot_tell(tmp_path):
    write_rounds(str(tmp_path), rounds=6, times={"fread": 1.0, "mmap": 1.0}, sigma=0.05)
    report.build(str(tmp_path))
    cold = json.loads((tmp_path / "summary.json").read_text())["verdict"]["cold"]
    shown = cold if cold["fastest"] == "mmap" else cold["runner_up"]
    assert shown["rounds"] == 6 and shown["lo"] < 1 < shown["hi"] and not shown["sure"]
    assert ("(96.9% interval, 6 rounds), not distinguishable in 6 rounds."
            in (tmp_path / "report.md").read_text())


def test_the_verdict_says_how_long_the_experiment_took(tmp_path_factory):
    folder = build_report_of(tmp_path_factory, os.path.join(os.path.dirname(FIXTURE),
                                                            "profiles"))
    assert ("The experiment took 26 s (2026-12-02 01:00:25 to 01:00:51 UTC). 8 runs in"
            in (folder / "report.md").read_text())


def test_brief_prints_the_report_and_the_verdict_only(rounds12):
    p = subprocess.run([sys.executable, "-m", "analysis.report", "--brief", str(rounds12)],
                       cwd=REPO, capture_output=True, text=True, check=True)
    out = p.stdout.splitlines()
    assert out[0] == f"report: {rounds12}/report.html" and len(out) == 4
    # One line a question: the fastest, its median, its paired ratio to the baseline.
    assert re.fullmatch(r"cold: mmap_seq 1\.\d\d\d s, 0\.10× \(0\.\d+–0\.\d+\) fread, sure; "
                        r"0\.\d+× \(0\.\d+–0\.\d+\) odirect, sure", out[1]), out[1]
    assert out[2].startswith("warm: mmap_seq 0.1")
    # mmap_seq loads 4 GB in 1 s against a ceiling of about 2 GB/s: the verdict ends with it.
    assert out[3].startswith("cold: caveat: the ceiling (recipe O_DIRECT io_uring QD32 (before "
                             "recipes), fastest read 2.")


def test_the_verdict_lines_stay_few(rounds12):
    cold = json.loads((rounds12 / "summary.json").read_text())["verdict"]["cold"]
    lines = verdict.lines({"verdict": {f"cold [f{i}]": cold for i in range(5)}})
    assert len(lines) == 5 and lines[0].startswith("cold [f0]: mmap_seq is fastest")
    assert lines[2] == "... and 3 more conditions: see the report"
    # Then the caveats of the conditions shown, those of the others in the report only.
    assert [line.split(": ", 2)[:2] for line in lines[3:]] == [["cold [f0]", "caveat"],
                                                              ["cold [f1]", "caveat"]]


def test_the_machine_facts_give_the_state_and_warn_when_it_was_not_the_tuned_one():
    tuned = {"system": {"tuned": True, "page_reporting": "off", "not_tuned_because": [],
                        "tune": {"by": "experiment", "page_reporting": "off"}},
             "sessions": [{"system_tuned": True}]}
    assert machine_core.machine_facts(tuned)["state"] == \
        "tuned by experiment: free page reporting held off"
    kept = {"system": {"tuned": True, "page_reporting": "on", "not_tuned_because": [],
                       "tune": {"by": "system tune", "page_reporting": "keep"}}}
    assert machine_core.machine_state(kept) == "tuned by system tune: free page reporting kept on, " \
        "by choice"
    untuned = {"system": {"tuned": False, "page_reporting": "on", "tune": None,
                          "not_tuned_because": ["free page reporting is on (...)"]}}
    state = machine.machine_md(untuned)
    assert "- state: **WARNING: not the tuned state**: free page reporting is on (...)" in state
    # A resumed folder whose earlier session ran untuned warns too.
    tuned["sessions"].insert(0, {"system_tuned": False})
    assert "WARNING" in machine_core.machine_state(tuned)
    assert machine_core.machine_state({}).startswith("not recorded")
    nothing_to_tune = {"system": {"tuned": True, "page_reporting": "absent", "tune": None}}
    assert machine_core.machine_state(nothing_to_tune) == "tuned: free page reporting absent from " \
        "this kernel"
    damon_stopped = {"system": {"tuned": True, "page_reporting": "off", "damon_pageout": "off",
                                "tune": {"by": "experiment", "page_reporting": "off"}}}
    assert machine_core.machine_state(damon_stopped) == "tuned by experiment: free page reporting " \
        "held off; DAMON's pageout stopped"
