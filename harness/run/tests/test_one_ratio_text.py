"""One pair of one real run, printed five times in one text: the console's paired line (the
binary), the report's table cell and its verdict, the verdict's brief line and compare's
column of that folder all say the strategy's time over the baseline's as `0.24× (0.23–0.25)`,
below 1 faster.

Run with /usr/bin/python3 -m pytest harness/run/tests. LOADBENCH_BIN names the binary (default
build/loadbench of this checkout)."""
import json
import os
import re
import subprocess
import sys

from conftest import BIN, REPO

RATIO = r"\d+(?:\.\d+)?(?:e-\d+)?× \(\d+(?:\.\d+)?(?:e-\d+)?–\d+(?:\.\d+)?(?:e-\d+)?\)"


def cell(md: str, column: str, first: str) -> str:
    """The cell under `column` of the markdown table row whose first cell is `first`."""
    head = next(line for line in md.splitlines() if f"| {column} |" in line)
    index = [c.strip() for c in head.strip("|").split("|")].index(column)
    row = next(line for line in md.splitlines() if line.startswith(f"| {first} |"))
    return [c.strip() for c in row.strip("|").split("|")][index]


def test_the_console_the_report_the_verdict_and_compare_print_one_text(tmp_path, model, env):
    out = str(tmp_path / "results")
    # Six rounds: the fewest that give a 95% interval. mmap_seq warm is the fastest by far.
    run = subprocess.run([BIN, "run", "--file", model, "--strategies", "fread,mmap_seq",
                          "--cache", "warm", "--reps", "6", "--out", out], capture_output=True,
                         text=True, env=env, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "paired, time over fread's in the same round (exact signed-rank interval, at least " \
        "95%; below 1: faster):" in run.stdout, run.stdout
    console = re.search(rf"\n  warm  mmap_seq: ({RATIO}), 96.9% interval, 6 rounds, ", run.stdout)
    assert console, run.stdout
    text = console.group(1)

    def python(*args):
        p = subprocess.run([sys.executable, "-m", *args], cwd=REPO, capture_output=True,
                           text=True, env=env)
        assert p.returncode == 0, p.stderr
        return p.stdout

    brief = python("analysis.report", "--brief", out)
    report_md = open(os.path.join(out, "report.md")).read()
    warm = report_md.split("## Warm start", 1)[1].split("\n## ", 1)[0]
    assert cell(warm, "× fread's time, paired (95% CI)", "mmap_seq") == text, warm
    verdict = json.load(open(os.path.join(out, "summary.json")))["verdict"]["warm"]
    assert verdict["fastest"] == "mmap_seq", verdict
    assert f"**warm**: mmap_seq is fastest (median {verdict['median_s']:.3f} s): {text} the time " \
           "of fread, the baseline" in report_md, report_md
    assert f"warm: mmap_seq {verdict['median_s']:.3f} s, {text} fread, " in brief, brief
    compared = python("analysis.compare", out, out, "--out", str(tmp_path / "compare"))
    assert cell(compared, "A: × fread's time, paired (95% CI)", "mmap_seq") == text, compared
    assert cell(compared, "B: × fread's time, paired (95% CI)", "mmap_seq") == text, compared
