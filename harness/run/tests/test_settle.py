"""The check before the runs waits for a busy machine and warns only when it stays busy: a process
spinning on a core through the whole wait is named in a WARNING and in env.json; one that stops
within the wait leaves no warning, only the wait; `loadbench system settle` is the same check
alone.

Run with /usr/bin/python3 -m pytest harness/run/tests. LOADBENCH_BIN names the binary (default
build/loadbench of this checkout)."""
import json
import os
import signal
import subprocess
import time

from conftest import BIN

SPIN = ["sh", "-c", "while :; do :; done"]


def spinner(seconds=None):
    """A process spinning on a core, not a child of loadbench; for `seconds` when given."""
    cmd = ["timeout", str(seconds), *SPIN] if seconds else SPIN
    return subprocess.Popen(cmd, start_new_session=True)


def stop(p):
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()


def run(model, out, env, wait_s):
    return subprocess.run([BIN, "run", "--file", model, "--strategies", "fread", "--cache", "warm",
                           "--reps", "1", "--out", out, "--settle-wait", str(wait_s)],
                          capture_output=True, text=True, env=env, timeout=120)


def stability(out):
    with open(os.path.join(out, "env.json")) as f:
        return json.load(f)["stability"]


def test_a_process_spinning_through_the_wait_is_waited_for_then_named(model, tmp_path, env):
    p = spinner()
    t0 = time.monotonic()
    try:
        r = run(model, str(tmp_path / "out"), env, 3)
    finally:
        took = time.monotonic() - t0
        stop(p)
    assert r.returncode == 0, r.stderr
    assert "loadbench run: waiting for the machine to settle (" in r.stderr, r.stderr
    warning = [line for line in r.stderr.splitlines() if "WARNING before the runs" in line]
    assert len(warning) == 1, r.stderr
    assert "The machine was still busy after 3 s of waiting: other work used" in warning[0]
    assert f"{p.pid} (sh)" in warning[0], warning[0]
    s = stability(str(tmp_path / "out"))
    # Waited up to the bound: the command took no less (a lower bound, which a loaded machine
    # only lengthens); where its last window started (waited_s) depends on each window's length.
    assert s["settled"] is False and s["max_wait_s"] == 3 and s["waited_s"] > 0, s
    assert took >= 3, took
    assert p.pid in [b["pid"] for b in s["busy_processes"]], s
    assert s["busy"]["cpu_percent"] >= 50, s
    assert s["warnings"] == [warning[0].split("WARNING before the runs: ", 1)[1]]


def test_work_that_stops_within_the_wait_leaves_no_warning(model, tmp_path, env):
    p = spinner(1.5)
    try:
        r = run(model, str(tmp_path / "out"), env, 60)
    finally:
        stop(p)
    assert r.returncode == 0, r.stderr
    assert "WARNING" not in r.stderr, r.stderr
    assert "loadbench run: the machine settled after " in r.stderr, r.stderr
    s = stability(str(tmp_path / "out"))
    assert s["settled"] is True and 0 < s["waited_s"] < 60, s
    assert " (sh) " in s["waited_for"], s  # the spinner, a child of timeout
    assert s["warnings"] == [], s


def test_system_settle_says_how_long_it_waited_and_exits_1_while_busy(env):
    p = spinner()
    try:
        r = subprocess.run([BIN, "system", "settle", "--max-wait", "1"], capture_output=True,
                           text=True, env=env, timeout=60)
    finally:
        stop(p)
    assert r.returncode == 1, r.stdout + r.stderr
    assert r.stdout.startswith("still busy after "), r.stdout
    assert f"{p.pid} (sh)" in r.stdout, r.stdout
    assert "loadbench system settle: waiting (" in r.stderr, r.stderr

    bad = subprocess.run([BIN, "system", "settle", "--max-wait", "soon"], capture_output=True,
                         text=True, env=env, timeout=60)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1, bad.stderr
    bad_env = subprocess.run([BIN, "system", "settle"], capture_output=True, text=True,
                             env=dict(env, LOADBENCH_SETTLE_WAIT="soon"), timeout=60)
    assert bad_env.returncode == 2, bad_env.stderr
    assert bad_env.stderr == ("loadbench: LOADBENCH_SETTLE_WAIT: 'soon' is not a number of "
                              "seconds (0 to 86400)\n")
