"""The report builds from a small fixture: every strategy's row is in the tables, every figure
is a non-empty image, summary.json is there for other tools, and bad input is one line and
exit 2."""

import json
import os
import struct
import subprocess
import sys

import pytest
from conftest import build_report_of

from analysis import report

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
    # No round holds both fread and mmap (reps 0-2 and 4-6): no paired speed-up, as null.
    assert mmap["speedup"] is None and mmap["baseline"] == "fread"
    assert mmap["ci_low_s"] is None and mmap["role"] == ""  # 3 runs: no interval
    fread = next(g for g in groups if (g["strategy_spec"], g["cache"]) == ("fread", "cold"))
    assert fread["speedup"] == 1.0 and fread["is_baseline"] is True


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
