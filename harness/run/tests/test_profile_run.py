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

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BIN = os.path.abspath(os.environ.get("LOADBENCH_BIN", os.path.join(REPO, "build", "loadbench")))

pytestmark = pytest.mark.skipif(not os.access(BIN, os.X_OK),
                                reason=f"no loadbench at {BIN} (build it or set LOADBENCH_BIN)")


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
