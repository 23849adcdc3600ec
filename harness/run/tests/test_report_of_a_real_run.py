"""A small real run, measured by the binary and read by the analysis: the report's medians are the
medians of the ok runs' wall_s in runs.jsonl, and its run count is the records'.

Run with /usr/bin/python3 -m pytest harness/run/tests (Debian's interpreter: it has pandas and
matplotlib). LOADBENCH_BIN names the binary (default build/loadbench of this checkout)."""
import json
import os
import re
import statistics
import subprocess
import sys

import pytest
from conftest import BIN, REPO


def rows_of(section: str) -> dict[str, list[str]]:
    """The cells of a markdown table's rows, by their first cell."""
    out = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| ") and len(cells) > 3 and not set(cells[0]) <= {"-"}:
            out[cells[0]] = cells
    return out


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    d = tmp_path_factory.mktemp("real")
    model = str(d / "m.wlf")
    env = dict(os.environ, LOADBENCH_LOCK_DIR=str(d / "locks"))
    env.pop("LOADBENCH_LOCK_FD", None)
    subprocess.run([BIN, "gen", "--preset", "llama", "--size", "32MiB", "--out", model,
                    "--quiet"], check=True, env=env)
    out = str(d / "results")
    subprocess.run([BIN, "run", "--file", model, "--strategies", "fread,mmap_seq",
                    "--cache", "warm", "--reps", "3", "--out", out], check=True, env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    report = subprocess.run([sys.executable, "-m", "analysis.report", out], cwd=REPO,
                            capture_output=True, text=True, env=env)
    assert report.returncode == 0, report.stderr
    return out


def test_the_report_gives_the_medians_of_the_recorded_runs(folder):
    with open(os.path.join(folder, "runs.jsonl")) as f:
        runs = [json.loads(line) for line in f]
    assert len(runs) == 6
    text = open(os.path.join(folder, "report.md")).read()
    assert re.search(r"\b6 runs in `", text), text[:400]
    warm = rows_of(text.split("## Warm start", 1)[1].split("\n## ", 1)[0])
    for spec in ("fread", "mmap_seq"):
        walls = [r["wall_s"] for r in runs if r["strategy_spec"] == spec and r["status"] == "ok"]
        assert len(walls) == 3
        row = warm[spec]
        assert row[1] == "3", row
        median = float(row[2].split()[0])
        assert median == pytest.approx(round(statistics.median(walls), 3), abs=0.0015), row
