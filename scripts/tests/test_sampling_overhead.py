"""Tests of scripts/sampling-overhead.sh: a real interleaved comparison on a small generated file
and its errors. LOADBENCH_BIN names the loadbench binary (default build/loadbench)."""
import json
import os
import re
import subprocess
import tempfile

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO, "scripts", "sampling-overhead.sh")
BIN = os.path.abspath(os.environ.get("LOADBENCH_BIN", os.path.join(REPO, "build", "loadbench")))

needs_bin = pytest.mark.skipif(not os.access(BIN, os.X_OK),
                               reason=f"no loadbench at {BIN} (build it or set LOADBENCH_BIN)")


def run(*args):
    env = dict(os.environ, LOADBENCH_BIN=BIN)
    return subprocess.run(["/bin/bash", SCRIPT, *args], capture_output=True, text=True, env=env,
                          timeout=300)


@pytest.fixture(scope="module")
def model():
    """A small generated model, shared by the tests that run pairs on it."""
    with tempfile.TemporaryDirectory(dir="/var/tmp") as d:
        path = os.path.join(d, "m.wlf")
        subprocess.run([BIN, "gen", "--preset", "llama", "--size", "4MiB", "--out", path,
                        "--quiet"], check=True)
        yield path


@needs_bin
def test_missing_file_is_bad_input_naming_it():
    r = run("/nonexistent/model.wlf")
    assert r.returncode == 2
    assert "/nonexistent/model.wlf" in r.stderr and r.stderr.count("\n") == 1


@needs_bin
def test_two_pairs_measure_both_sides_of_every_strategy(model):
    out = os.path.join(os.path.dirname(model), "out-pairs")
    # A tolerance no real pair can miss: this test checks the bookkeeping, not the machine.
    r = run(model, "--pairs", "2", "--strategies", "fread,mmap", "--tolerance", "100",
            "--out", out)
    assert r.returncode == 0, r.stderr
    summary = json.load(open(os.path.join(out, "summary.json")))
    assert summary["runs_not_ok"] == 0
    assert {row["strategy"] for row in summary["rows"]} == {"fread", "mmap"}
    for row in summary["rows"]:
        assert row["n_off"] == 2 and row["n_on"] == 2
        assert row["ratio"] == pytest.approx(row["median_on_s"] / row["median_off_s"])
    # The sampled side wrote timelines, the other did not.
    for pair in (0, 1):
        on = [json.loads(l) for l in open(os.path.join(out, f"on-pair{pair}", "runs.jsonl"))]
        off = [json.loads(l) for l in open(os.path.join(out, f"off-pair{pair}", "runs.jsonl"))]
        assert all(isinstance(x["timeline"], str) for x in on)
        assert all(x["timeline"] is None for x in off)
    assert "on/off" in r.stdout and "fread" in r.stdout
    # Every run says how long it waited for the machine to settle.
    for pair, side in ((1, "on"), (1, "off"), (2, "on"), (2, "off")):
        assert re.search(rf"\[pair {pair}/2\] {side}: the machine (settled after \d+\.\d s|was "
                         r"still busy after \d+ s) of waiting", r.stderr), r.stderr


@needs_bin
def test_profile_compares_profiled_runs_with_unprofiled_ones(model):
    out = os.path.join(os.path.dirname(model), "out-profile")
    r = run(model, "--pairs", "1", "--strategies", "mmap", "--cache", "warm", "--profile",
            "--tolerance", "100", "--out", out)
    assert r.returncode == 0, r.stderr
    assert json.load(open(os.path.join(out, "summary.json")))["compared"] == "profile"
    on = [json.loads(l) for l in open(os.path.join(out, "on-pair0", "runs.jsonl"))]
    off = [json.loads(l) for l in open(os.path.join(out, "off-pair0", "runs.jsonl"))]
    # Both sides sample timelines; only the "on" side asked for profiles.
    assert all(isinstance(x["timeline"], str) for x in on + off)
    assert all("profile" in x for x in on) and not any("profile" in x for x in off)
    assert "--profile vs none" in r.stdout
