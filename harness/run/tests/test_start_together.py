"""The readers of a run start together (docs/many-readers.md#the-start-barrier): each worker sets
up, says it is ready and waits at the start barrier, and the runner releases them at once. A
reader slow to start (the test hook LOADBENCH_TEST_SLOW_START, docs/testing.md) holds the others
back, so the run's start spread stays far below its delay; the wait counts toward the run's
timeout.

Run with /usr/bin/python3 -m pytest harness/run/tests. LOADBENCH_BIN names the binary (default
build/loadbench of this checkout)."""
import json
import os
import subprocess
import time

import pytest
from conftest import BIN


DELAY_S = 1.0  # reader 2's late start
BOUND_S = 0.1  # what the spread may be with the barrier (2 busy cores): a tenth of the delay


def lb(env, *args):
    return subprocess.run([BIN, *args], env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    d = tmp_path_factory.mktemp("start")
    env = dict(os.environ, LOADBENCH_LOCK_DIR=str(d / "locks"))
    env.pop("LOADBENCH_LOCK_FD", None)
    env.pop("LOADBENCH_TEST_SLOW_START", None)
    model = str(d / "m.wlf")
    p = lb(env, "gen", "--size", "16MiB", "--out", model, "--quiet")
    assert p.returncode == 0, p.stderr
    return d, env, model


def runs_of(out):
    runs = {}
    for line in open(out / "runs.jsonl"):
        r = json.loads(line)
        runs.setdefault((r["strategy_spec"], r["rep"]), []).append(r)
    return runs


def test_a_slow_reader_holds_the_others_at_the_barrier(setup):
    d, env, model = setup
    out = d / "slow"
    began = time.time()
    p = lb(dict(env, LOADBENCH_TEST_SLOW_START=f"2:{DELAY_S}"), "run", "--file", model,
           "--strategies", "fread,mmap", "--cache", "cold", "--reps", "2", "--procs", "3",
           "--sample-ms", "0", "--out", str(out))
    assert p.returncode == 0, p.stderr
    runs = runs_of(out)
    assert len(runs) == 4
    for key, readers in runs.items():
        assert sorted(r["proc"] for r in readers) == [0, 1, 2], key
        starts = [r["load_start_unix_s"] for r in readers]
        assert all(r["status"] == "ok" for r in readers), readers
        assert all(began < s < time.time() for s in starts), starts
        spread = max(starts) - min(starts)
        # Every record of the run carries the same spread, the one its starts give.
        assert {r["start_spread_s"] for r in readers} == {readers[0]["start_spread_s"]}, key
        assert readers[0]["start_spread_s"] == pytest.approx(spread, abs=2e-6), key
        assert spread < BOUND_S, f"{key}: readers started {spread:.3f} s apart (delay {DELAY_S} s)"


def test_one_reader_has_a_start_but_no_spread(setup):
    d, env, model = setup
    out = d / "one"
    p = lb(env, "run", "--file", model, "--strategies", "fread", "--cache", "cold", "--reps", "1",
           "--sample-ms", "0", "--out", str(out))
    assert p.returncode == 0, p.stderr
    [r] = [json.loads(line) for line in open(out / "runs.jsonl")]
    assert r["status"] == "ok" and isinstance(r["load_start_unix_s"], float)
    assert "start_spread_s" not in r


def test_the_wait_at_the_barrier_counts_toward_the_timeout(setup):
    d, env, model = setup
    out = d / "timeout"
    p = lb(dict(env, LOADBENCH_TEST_SLOW_START="1:2"), "run", "--file", model, "--strategies",
           "fread", "--cache", "warm", "--reps", "1", "--procs", "2", "--timeout", "1",
           "--sample-ms", "0", "--out", str(out))
    assert p.returncode == 1, p.stderr
    readers = [json.loads(line) for line in open(out / "runs.jsonl")]
    assert len(readers) == 2
    for r in readers:
        assert r["status"] == "failed" and "timed out" in r["error"], r
        assert r["load_start_unix_s"] is None and "start_spread_s" not in r
