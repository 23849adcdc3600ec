"""One measurement per machine, one writer per results folder, nothing left running, and a full
disk that costs no record: the loadbench binary driven as a user would, two commands at once,
a harness killed by SIGKILL mid-load, a results folder on a tiny tmpfs.

Run with /usr/bin/python3 -m pytest harness/run/tests. LOADBENCH_BIN names the binary (default
build/loadbench of this checkout). Every test has a lock folder of its own (LOADBENCH_LOCK_DIR),
so it neither waits for a measurement running on this machine nor disturbs one."""
import collections
import glob
import json
import os
import signal
import subprocess
import time

import pytest
from conftest import BIN

ROOT = os.geteuid() == 0


# Cold runs only: on a VM that pages out page cache by itself, a warm run now and then finds
# part of its file gone and is invalid, which is not what these tests are about.
PLAN = """name = "twice"
reps = 6
cache = "cold"
[[file]]
path = "{model}"
[[strategy]]
name = "fread"
"""
PLAN_RUNS = 6  # 1 strategy x 1 cache state x 6 reps


@pytest.fixture
def plan(tmp_path, model):
    """The 6-run experiment on the model."""
    path = tmp_path / "twice.toml"
    path.write_text(PLAN.format(model=model))
    return str(path)


def start(args, env):
    return subprocess.Popen([BIN, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, start_new_session=True)


def finish(proc, timeout=120):
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


def holder(lock_file, timeout=30):
    """The pid written into a lock file once its holder has it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(lock_file) as f:
                return json.loads(f.read())["pid"]
        except (OSError, ValueError, KeyError):
            time.sleep(0.01)
    raise AssertionError(f"nobody took {lock_file} within {timeout} s")


def records(out_dir):
    with open(os.path.join(out_dir, "runs.jsonl")) as f:
        text = f.read()
    assert text == "" or text.endswith("\n"), "runs.jsonl must end with a whole line"
    return [json.loads(line) for line in text.splitlines()]


def keys(runs):
    return collections.Counter((r["strategy_spec"], r["cache"], r["rep"]) for r in runs)


def workers(pid):
    """The children of `pid` that are `loadbench worker` already (past fork and exec)."""
    out = []
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            with open(stat) as f:
                text = f.read()
            with open(stat[:-4] + "cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        fields = text[text.rfind(")") + 2:].split()
        if int(fields[1]) == pid and argv[1:2] == [b"worker"]:
            out.append(int(stat.split("/")[2]))
    return out


def gone(pid):
    """True when `pid` is no more, or a zombie (dead, waiting to be reaped)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return True
    return text[text.rfind(")") + 2] == "Z"


def test_two_experiments_into_one_folder_one_is_refused(tmp_path, plan, env):
    out = str(tmp_path / "same")
    first = start(["experiment", plan, "--out", out, "--quiet"], env)
    pid = holder(os.path.join(out, ".loadbench.lock"))
    assert pid == first.pid
    second = start(["experiment", plan, "--out", out, "--quiet"], env)
    code, _, err = finish(second)
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1, err
    assert "another loadbench is writing there" in err and f"pid {first.pid}" in err, err
    code, _, err = finish(first)
    assert code == 0, err
    runs = records(out)
    assert len(runs) == PLAN_RUNS
    assert set(keys(runs).values()) == {1}  # every (strategy, cache, rep) exactly once
    assert not os.path.exists(os.path.join(out, ".loadbench.lock"))


def test_two_experiments_into_two_folders_never_overlap(tmp_path, plan, env):
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    first = start(["experiment", plan, "--out", a, "--quiet"], env)
    assert holder(os.path.join(env["LOADBENCH_LOCK_DIR"], "measure.lock")) == first.pid
    second = start(["experiment", plan, "--out", b, "--quiet"], env)
    code_a, _, err_a = finish(first)
    code_b, _, err_b = finish(second)
    assert code_a == 0, err_a
    assert code_b == 0, err_b
    assert "waiting for the measurement running on this machine" in err_b, err_b
    assert f"pid {first.pid}" in err_b and "results in " + a in err_b, err_b
    runs_a, runs_b = records(a), records(b)
    assert len(runs_a) == len(runs_b) == PLAN_RUNS
    # The times have milliseconds and one form, so their text order is their time order.
    assert max(r["ended_at"] for r in runs_a) <= min(r["started_at"] for r in runs_b)


def test_no_wait_refuses_naming_the_measurement(tmp_path, model, plan, env):
    first = start(["experiment", plan, "--out", str(tmp_path / "a"), "--quiet"], env)
    assert holder(os.path.join(env["LOADBENCH_LOCK_DIR"], "measure.lock")) == first.pid
    p = subprocess.run([BIN, "run", "--file", model, "--reps", "1",
                        "--out", str(tmp_path / "c"), "--no-wait"],
                       capture_output=True, text=True, env=env)
    assert p.returncode == 2, p.stderr
    assert "another measurement is running on this machine" in p.stderr, p.stderr
    assert f"pid {first.pid}" in p.stderr and "--no-wait" in p.stderr, p.stderr
    assert not os.path.exists(tmp_path / "c")  # refused: nothing written
    # A command that only reads never waits.
    listed = subprocess.run([BIN, "cache", "status", model],
                            capture_output=True, text=True, env=env, timeout=30)
    assert listed.returncode == 0, listed.stderr
    rc, _, err = finish(first)
    assert rc == 0, err


def test_sigkill_of_the_harness_leaves_nothing_running_and_nothing_locked(tmp_path, model, env):
    out = str(tmp_path / "killed")
    args = ["run", "--file", model, "--strategies", "shm,fread", "--cache", "cold", "--reps", "5",
            "--out", out]
    if ROOT:
        args += ["--memory-limit", "1GiB"]  # a cgroup, which a killed harness leaves behind
    harness = start(args, env)
    worker = None
    deadline = time.monotonic() + 60
    while worker is None and time.monotonic() < deadline and harness.poll() is None:
        found = workers(harness.pid)
        worker = found[0] if found else None
    assert worker is not None, "no worker was seen"
    try:
        os.kill(worker, signal.SIGSTOP)  # mid-load, for as long as the test needs
        os.kill(harness.pid, signal.SIGKILL)
        harness.wait(timeout=30)
        time.sleep(1)
        assert gone(worker), "the worker outlived its harness"
    finally:
        try:
            os.kill(worker, signal.SIGKILL)  # only if it outlived the harness, against the test
        except ProcessLookupError:
            pass
        harness.communicate(timeout=30)
    journals = os.path.join(env["LOADBENCH_LOCK_DIR"], f"leftovers-{os.geteuid()}")
    assert os.listdir(journals), "no journal left"
    # The locks died with the harness: the next command neither waits nor is refused, and it
    # cleans what the killed one left.
    again = subprocess.run([BIN, *args, "--resume", "--no-wait"], capture_output=True, text=True,
                           env=env, timeout=120)
    assert again.returncode == 0, again.stderr
    if ROOT:
        assert f"pid {harness.pid} ended without cleaning up: memory cgroup" in again.stderr
    runs = records(out)
    assert len(runs) == 2 * 5 and set(keys(runs).values()) == {1}
    assert os.listdir(journals) == []


@pytest.mark.skipif(not ROOT, reason="mounting a tmpfs needs root")
def test_a_full_results_disk_keeps_whole_lines_and_resumes(tmp_path, model, env):
    # 20 runs: about 5.5 KB each of record and timeline beside a 19 KB env.json, more than the
    # 72 KiB tmpfs holds.
    plan = str(tmp_path / "long.toml")
    with open(plan, "w") as f:
        f.write(PLAN.format(model=model).replace("reps = 6", "reps = 20"))
    tiny = tmp_path / "tiny"
    tiny.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=72k", "tmpfs", str(tiny)], check=True)
    try:
        out = str(tiny / "r")
        p = subprocess.run([BIN, "experiment", plan, "--out", out, "--quiet"],
                           capture_output=True, text=True, env=env, timeout=120)
        assert p.returncode == 3, p.stderr
        first, resume = p.stderr.strip().splitlines()[-2:]
        assert first.startswith(f"loadbench experiment: {out}: the results could not be written")
        assert "No space left on device" in first, p.stderr
        assert resume.strip() == f"{BIN} experiment {plan} --quiet --resume {out}", p.stderr
        kept = records(out)  # whole lines only
        assert len(kept) < 20
        assert not glob.glob(os.path.join(out, "*.tmp.*"))
        subprocess.run(["mount", "-o", "remount,size=4m", str(tiny)], check=True)
        again = subprocess.run(resume.split(), capture_output=True, text=True, env=env,
                               timeout=120)
        assert again.returncode == 0, again.stderr
        runs = records(out)
        assert len(runs) == 20 and set(keys(runs).values()) == {1}
    finally:
        subprocess.run(["umount", "-l", str(tiny)], check=False)


def test_lock_passes_the_machine_to_what_it_starts(tmp_path, model, env):
    # A shell keeps the lock's descriptor open for the commands it starts: they measure under it.
    p = subprocess.run([BIN, "lock", "--", "sh", "-c", f'"{BIN}" cache drop "{model}"'],
                       capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "waiting" not in p.stderr
    # A child that was not given the descriptor is told so, instead of waiting for its parent.
    child = f"import subprocess, sys; sys.exit(subprocess.run(['{BIN}', 'cache', 'drop', '{model}']).returncode)"
    p = subprocess.run([BIN, "lock", "--", "/usr/bin/python3", "-c", child],
                       capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 2, p.stderr
    assert "without passing the lock on" in p.stderr, p.stderr
    # Its exit code is the command's; what the command left running in its group is killed.
    p = subprocess.run([BIN, "lock", "--", "sh", "-c", "sleep 600 & exit 7"],
                       capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 7
