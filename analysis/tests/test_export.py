"""`--export FMT FILE` (repeatable) of `analysis.report` and `analysis.compare`: the summary
table, one row per condition and strategy, as CSV (raw figures, names with units), Markdown
(the report's cells) and JSON (hyperfine's `results` with `command`, `mean`, `stddev`,
`median`, `min`, `max`, `times`, then every column); an unknown format, a file in no folder or a
folder given as the file: one line on stderr, exit 2, nothing built."""

import csv
import json
import os
import re
import statistics
import subprocess
import sys

import pytest
from conftest import write_rounds

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def run(*args):
    return subprocess.run([sys.executable, "-m", *map(str, args)], cwd=REPO,
                          capture_output=True, text=True)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    d = tmp_path_factory.mktemp("export")
    write_rounds(str(d / "x"), rounds=6, times={"fread": 10.0, "mmap_seq": 1.0})
    p = run("analysis.report", d / "x", "--brief", "--export", "csv", d / "t.csv",
            "--export", "md", d / "t.md", "--export", "json", d / "t.json")
    assert p.returncode == 0, p.stderr
    return d, p.stdout


def test_the_brief_says_where_the_tables_are(exported):
    d, out = exported
    assert out.splitlines()[-3:] == [f"table: {d / 't.csv'}", f"table: {d / 't.md'}",
                                     f"table: {d / 't.json'}"]


def test_csv_has_one_row_per_group_with_the_reports_figures(exported):
    d, _ = exported
    with open(d / "t.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    groups = json.loads((d / "x" / "summary.json").read_text())["groups"]
    assert len(rows) == len(groups) == 4
    assert list(rows[0])[:8] == ["name", "strategy", "strategy_spec", "cache", "file",
                                 "file_bytes", "n", "median_s"]
    for r, g in zip(rows, groups):
        assert (r["strategy_spec"], r["cache"]) == (g["strategy_spec"], g["cache"])
        assert float(r["median_s"]) == pytest.approx(g["median_s"]) and r["n"] == "6"
        assert r["peak_rss_bytes"] == str(int(g["peak_rss_bytes"]))
    base = next(r for r in rows if r["strategy_spec"] == "fread")
    assert (base["ratio_text"], base["verdict"], base["ratio"]) == ("1 (baseline)", "baseline",
                                                                    "1.0")
    fast = next(r for r in rows if r["strategy_spec"] == "mmap_seq")
    assert re.match(r"0\.\d+× \(0\.\d+–0\.\d+\)$", fast["ratio_text"])
    assert fast["verdict"] == "faster"
    assert "storage" not in rows[0]  # a condition column only where some row has one


def test_markdown_and_json(exported):
    d, _ = exported
    md = (d / "t.md").read_text().splitlines()
    assert md[0] == ("| strategy | cache | n | median s (95% CI) | mean ± σ s | min s | max s | "
                     "× fread's time, paired (95% CI) | paired test | peak RSS |")
    assert len(md) == 6 and md[1] == "|" + "---|" * 10
    assert re.match(r"\| mmap_seq \| cold \| 6 \| \d\.\d{3} \(\d\.\d{3}–\d\.\d{3}\) \| "
                    r"\d\.\d{3} ± 0\.0\d\d \| .* \| 0\.0\d+× \(.*\) \| faster \| 3\.73 GiB \|$",
                    md[2]), md[2]
    doc = json.loads((d / "t.json").read_text())
    first = doc["results"][0]
    assert doc["folder"] == str(d / "x")
    assert list(first)[:9] == ["command", "mean", "stddev", "median", "user", "system", "min",
                               "max", "times"]
    assert first["command"] == "mmap_seq" and len(first["times"]) == first["n"] == 6
    assert first["median"] == pytest.approx(statistics.median(first["times"]))
    assert first["ratio_low"] is not None and first["user"] is None  # no CPU times recorded


def test_compare_exports_its_rows(tmp_path):
    write_rounds(str(tmp_path / "a"), rounds=6, seed=1)
    write_rounds(str(tmp_path / "b"), rounds=6, seed=2)
    p = run("analysis.compare", tmp_path / "a", tmp_path / "b", "--out", tmp_path / "c",
            "--export", "csv", tmp_path / "c.csv", "--export", "json", tmp_path / "c.json")
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[-1].endswith(f"{tmp_path / 'c.csv'}, {tmp_path / 'c.json'}")
    with open(tmp_path / "c.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    rows_json = json.loads((tmp_path / "c.json").read_text())["results"]
    assert len(rows) == len(rows_json) == 6  # three strategies, cold and warm
    assert {"strategy", "cache", "n_a", "n_b", "ratio", "ci_low", "ci_high",
            "ratio_text"} <= set(rows[0])
    assert rows_json[0]["ratio_text"].endswith(")") and rows_json[0]["n_a"] == 6


@pytest.mark.parametrize("args,says", [
    (["--export", "xml", "{d}/t.xml"], "--export: unknown format 'xml' (one of csv, md, json)"),
    (["--export", "csv", "{d}/no/t.csv"], "no such folder"),
    (["--export", "csv", "{d}"], "a folder, not a file"),
])
def test_a_bad_export_is_one_line_and_exit_2_before_any_work(tmp_path, args, says):
    write_rounds(str(tmp_path), rounds=3, caches=("cold",))
    args = [a.format(d=tmp_path) for a in args]
    for command in (["analysis.report", tmp_path], ["analysis.compare", tmp_path, tmp_path]):
        p = run(*command, *args)
        err = p.stderr.splitlines()
        assert (p.returncode, len(err)) == (2, 1) and says in err[0], p.stderr
        assert err[0].startswith(command[0] + ": ")
    assert not (tmp_path / "report.md").exists()
