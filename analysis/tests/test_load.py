"""`from analysis import load`: a results folder as pandas tables (analysis/stats/folder.py),
through the one reader: the example of analysis/README.md runs as written; the tables are the
reader's and the report's; `import analysis` alone imports no pandas; a folder that is none is
the reader's one-line ResultsError."""

import json
import os
import re
import subprocess
import sys

import pytest
from conftest import write_rounds

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def example(page: str, heading: str) -> str:
    """The first Python example under `heading` of the page (a path in the checkout)."""
    with open(os.path.join(REPO, page), encoding="utf-8") as f:
        text = f.read()
    section = text.split(heading + "\n", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                          text=True, env=dict(os.environ, PYTHONPATH=REPO), timeout=120)


def test_the_readme_example_runs_as_written():
    p = run(example("analysis/README.md", "## From Python: `from analysis import load`"))
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0] == ("<loadbench results results/reference/quick: 84 runs, 84 ok, "
                        "6 ceiling reads>")
    assert re.search(r"mmap_prefetch +cold +6 +0\.547950 +0\.53× \(0\.51–0\.58\)", p.stdout)
    assert "GB/s ceiling" in p.stdout and "file_cached_bytes" in p.stdout


def test_the_results_formats_examples_run_as_written():
    p = run(example("docs/results-format.md", "## From Python"))
    assert p.returncode == 0, p.stderr
    assert "0.53× (0.51–0.58)" in p.stdout and p.stdout.endswith(" 84 timelines\n")
    pytest.importorskip("jsonschema", reason="python3-jsonschema is not installed "
                                             "(scripts/setup.sh installs it)")
    p = run(example("docs/results-format.md", "## The record's JSON Schema"))
    assert (p.returncode, p.stdout) == (0, ""), p.stderr


def test_import_analysis_imports_no_pandas():
    p = run("import sys, analysis; assert 'pandas' not in sys.modules; "
            "print(callable(analysis.load))")
    assert (p.returncode, p.stdout) == (0, "True\n"), p.stderr


def test_the_tables_are_the_readers_and_the_reports(tmp_path):
    from analysis import load
    from analysis.core.results import ResultsError
    from analysis.pages import report

    records = write_rounds(str(tmp_path), rounds=6, failed=[("odirect", "cold", 2)])
    lines = (tmp_path / "runs.jsonl").read_text().splitlines()
    (tmp_path / "runs.jsonl").write_text("\n".join(lines[:3] + ["junk"] + lines[3:]) + "\n")
    f = load(tmp_path)
    ceilings = [r for r in records if r["strategy"] == "ceiling"]
    assert (len(f.runs), len(f.ceilings)) == (len(records) - len(ceilings), len(ceilings))
    assert len(f.ok) == len(f.runs) - 1 and f.excluded["count"].sum() == 1
    assert f.env["experiment"] == "synthetic" and f.adaptive is None
    assert f.problems == ["runs.jsonl line 4: not JSON: skipped"]
    assert len(f.timelines) == 0 and list(f.timelines) == []
    with pytest.raises(KeyError):
        f.timelines["r0001"]
    # The summary is the report's table: its medians and ratios, one row a group.
    report.build(str(tmp_path))
    groups = json.loads((tmp_path / "summary.json").read_text())["groups"]
    by = {(g["strategy_spec"], g["cache"]): g for g in groups}
    assert len(f.summary) == len(groups)
    for _, row in f.summary.iterrows():
        g = by[(row["strategy_spec"], row["cache"])]
        assert row["median_s"] == pytest.approx(g["median_s"]) and row["n"] == g["n"]
        assert (row["ratio"] == pytest.approx(g["time_ratio"]) if g["time_ratio"] is not None
                else row["ratio"] != row["ratio"])
        assert row["mean_s"] == pytest.approx(sum(row["times"]) / row["n"])
    with pytest.raises(ResultsError, match="no such file"):
        load(tmp_path / "none")
