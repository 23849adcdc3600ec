"""`--profile` driven by the binary: every load's timed region folded into
profiles/RUN_ID.folded, perf's own files gone afterwards; and where no profile can be taken (perf
not on PATH, an exec command) the record says why while the run itself stays ok.

Run with /usr/bin/python3 -m pytest harness/run/tests. LOADBENCH_BIN names the binary (default
build/loadbench of this checkout)."""
import json
import os
import shutil
import subprocess

import pytest
from conftest import BIN


def lb(env, *args):
    return subprocess.run([BIN, *args], env=env, capture_output=True, text=True)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    d = tmp_path_factory.mktemp("profile")
    env = dict(os.environ, LOADBENCH_LOCK_DIR=str(d / "locks"))
    env.pop("LOADBENCH_LOCK_FD", None)
    model = str(d / "m.wlf")
    p = lb(env, "gen", "--preset", "llama", "--size", "32MiB", "--out", model, "--quiet")
    assert p.returncode == 0, p.stderr
    return d, env, model


def records(out):
    return [json.loads(line) for line in open(out / "runs.jsonl")]


def test_every_load_gets_its_folded_profile(setup):
    d, env, model = setup
    if shutil.which("perf") is None:
        pytest.skip("perf is not installed (linux-perf)")
    out = d / "on"
    p = lb(env, "run", "--file", model, "--strategies", "fread,mmap_seq", "--cache", "warm",
           "--reps", "1", "--out", str(out), "--profile", "--profile-hz", "2000")
    assert p.returncode == 0, p.stderr
    env_json = json.load(open(out / "env.json"))
    assert env_json["profile"]["hz"] == 2000
    if "unavailable" in env_json["profile"]:
        pytest.skip(env_json["profile"]["unavailable"])
    failed = [r["profile_error"] for r in records(out) if r.get("profile_error")]
    if failed and all(e.startswith(("perf record failed", "perf did not")) for e in failed):
        # perf is installed and allowed, but this machine (a container without
        # perf_event_open, say) does not let it record: the runs went on, as they must.
        assert all(r["status"] == "ok" for r in records(out))
        pytest.skip(failed[0])
    for r in records(out):
        assert r["status"] == "ok"
        prof = r["profile"]
        assert prof is not None, r.get("profile_error")
        assert prof["folded"] == f"profiles/{r['run_id']}.folded"
        lines = open(out / prof["folded"]).read().splitlines()
        counts = [int(line.rsplit(" ", 1)[1]) for line in lines]
        assert sum(counts) == prof["samples"] and len(lines) == prof["stacks"]
        assert all(line.startswith("loadbench") for line in lines)
        # The timed region only: on-CPU time cannot exceed the load's wall time by much (one
        # thread), and the worker's start-up (main, exec, the dynamic loader) is not in it.
        assert prof["on_cpu_s"] <= r["wall_s"] * 1.2 + 0.01
        assert not any("_dl_start" in line or "execve" in line for line in lines)
    # perf's data and logs are folded and gone.
    assert sorted(os.listdir(out / "profiles")) == sorted(
        f"{r['run_id']}.folded" for r in records(out))


def profiled_records(setup, name, strategies):
    """The records of one profiled warm `run` of `strategies` and what it printed, or a skip
    where perf cannot record here (not installed, not permitted, not working in this
    machine)."""
    d, env, model = setup
    if shutil.which("perf") is None:
        pytest.skip("perf is not installed (linux-perf)")
    out = d / name
    p = lb(env, "run", "--file", model, "--strategies", strategies, "--cache", "warm",
           "--reps", "1", "--out", str(out), "--profile", "--profile-hz", "2000", "--verbose")
    env_json = json.load(open(out / "env.json"))
    if "unavailable" in env_json["profile"]:
        pytest.skip(env_json["profile"]["unavailable"])
    failed = [r["profile_error"] for r in records(out) if r.get("profile_error")]
    if failed and all(e.startswith(("perf record failed", "perf did not")) for e in failed):
        pytest.skip(failed[0])
    # A warm run whose file another process dropped from the page cache meanwhile (a cold run
    # elsewhere on the machine) is invalid, its load and profile whole all the same.
    lost = "the page cache lost the file during the run"
    for r in records(out):
        assert r["status"] == "ok" or lost in (r.get("error") or ""), p.stderr
        assert r["profile"], p.stderr
    assert p.returncode in (0, 1), p.stderr
    return records(out), p.stderr


# One thread, several (pread_mt's and pool's readers), and layered, whose per-layer checks
# (consume=random checks each layer's bytes as it goes) and releases are kept out of wall_s.
WINDOW_STRATEGIES = "fread,pread_mt:threads=3,pool:threads=3:chunk=1MiB,layered:consume=random"


@pytest.fixture(scope="module")
def window_run(setup):
    return profiled_records(setup, "window", WINDOW_STRATEGIES)


def test_the_profile_covers_what_wall_s_covers(window_run):
    recs, _ = window_run
    by = {r["strategy"]: r for r in recs}
    assert sorted(by) == ["fread", "layered", "pool", "pread_mt"]
    for r in recs:
        prof = r["profile"]
        # The window (the load's stretches within the time perf was on, as the worker sent
        # them) and wall_s agree to within 0.1 ms for every strategy.
        assert abs(prof["window_s"] - r["wall_s"]) < 1e-4, (r["strategy"], prof["window_s"],
                                                             r["wall_s"])
    # layered kept enough out of wall_s for the test to tell: its per-layer checks alone.
    assert by["layered"]["verify_s"] > 1e-4, by["layered"]


def test_each_threads_waiting_adds_up_and_shares_say_of_what(window_run):
    recs, err = window_run
    for r in recs:
        prof = r["profile"]
        threads = prof["per_thread"]
        assert prof["threads"] == len(threads) >= 1
        assert prof["shares_of"] == ("wall" if len(threads) == 1 else "cpu"), prof
        assert sum(t["on_cpu_s"] for t in threads) == pytest.approx(prof["on_cpu_s"], abs=1e-9)
        assert sum(t["waiting_s"] for t in threads) == pytest.approx(prof["waiting_s"], abs=1e-9)
        for t in threads:
            assert t["in_window_s"] <= prof["window_s"] + 1e-9
            assert t["waiting_s"] == pytest.approx(max(0.0, t["in_window_s"] - t["on_cpu_s"]),
                                                   abs=1e-9)
        if prof["shares_of"] == "wall":  # on CPU and waiting add up to the wall time
            assert prof["on_cpu_s"] + prof["waiting_s"] == pytest.approx(
                max(prof["window_s"], prof["on_cpu_s"]), abs=1e-9)
    for r in (r for r in recs if r["strategy"] in ("pread_mt", "pool")):
        prof = r["profile"]
        # Its readers besides the main thread, which waits for them the whole window: their
        # waiting is each one's own, not the wall time less every thread's samples.
        assert prof["threads"] >= 4 and prof["shares_of"] == "cpu", prof
        main = max(prof["per_thread"], key=lambda t: t["in_window_s"])
        assert main["in_window_s"] == pytest.approx(prof["window_s"], abs=1e-6)
        assert prof["waiting_s"] >= main["waiting_s"]
        assert prof["waiting_s"] > max(0.0, r["wall_s"] - prof["on_cpu_s"]) + 1e-4, prof
    # The console says what the shares are of.
    assert "(shares of CPU time)" in err and "(of the wall time)" in err


def test_without_perf_the_runs_go_on_and_say_why(setup):
    d, env, model = setup
    out = d / "no-perf"
    no_perf = dict(env, PATH="/nonexistent")
    p = lb(no_perf, "run", "--file", model, "--strategies", "mmap", "--cache", "warm",
           "--reps", "1", "--out", str(out), "--profile", "--exec-shell", "c=/bin/cat {file}")
    assert p.returncode == 0, p.stderr
    assert "no profiles: command not found: perf" in p.stderr
    assert "linux-perf" in json.load(open(out / "env.json"))["profile"]["unavailable"]
    by_kind = {r["strategy"]: r for r in records(out)}
    for r in by_kind.values():
        assert r["status"] == "ok" and r["profile"] is None
    assert "install Debian's linux-perf" in by_kind["mmap"]["profile_error"]
    assert by_kind["exec"]["profile_error"].startswith("exec commands are not profiled")


def test_exec_commands_are_not_profiled_and_say_so(setup):
    d, env, model = setup
    if shutil.which("perf") is None:
        pytest.skip("perf is not installed (linux-perf)")
    out = d / "exec"
    p = lb(env, "run", "--file", model, "--strategies", "none", "--cache", "warm", "--reps", "1",
           "--out", str(out), "--profile", "--exec", "c=/bin/cat {file}")
    assert p.returncode == 0, p.stderr
    (r,) = records(out)
    assert r["status"] == "ok" and r["profile"] is None
    assert r["profile_error"].startswith("exec commands are not profiled")


def test_unprofiled_runs_have_no_profile_keys(setup):
    d, env, model = setup
    out = d / "off"
    p = lb(env, "run", "--file", model, "--strategies", "mmap", "--cache", "warm", "--reps", "1",
           "--out", str(out))
    assert p.returncode == 0, p.stderr
    (r,) = records(out)
    assert "profile" not in r and "profile_error" not in r
    assert "profile" not in json.load(open(out / "env.json"))
    assert not (out / "profiles").exists()


@pytest.mark.parametrize("args, says", [
    (["--profile-hz", "100"], "--profile-hz: only with --profile"),
    (["--profile", "--profile-hz", "0"], "--profile-hz"),
])
def test_bad_profile_flags_exit_2(setup, args, says):
    d, env, model = setup
    p = lb(env, "run", "--file", model, "--strategies", "mmap", "--cache", "warm", "--reps", "1",
           "--out", str(d / "bad"), *args)
    assert p.returncode == 2 and says in p.stderr and len(p.stderr.splitlines()) == 1


def test_bad_profile_key_in_an_experiment_exits_2(setup):
    d, env, model = setup
    exp = d / "bad.toml"
    exp.write_text(f'name = "bad"\nprofile = "yes"\n[[file]]\npath = "{model}"\n'
                   '[[strategy]]\nname = "mmap"\n')
    p = lb(env, "experiment", str(exp), "--out", str(d / "bad-exp"))
    assert p.returncode == 2
    assert "profile must be true or false" in p.stderr and len(p.stderr.splitlines()) == 1
