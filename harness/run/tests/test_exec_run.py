"""The exec strategy driven by the binary: commands that load, fail, die, hang, leave children
behind or hold memory in a grandchild, each run measured and judged as a worker would be, and
nothing of any of them alive afterwards.

Run with /usr/bin/python3 -m pytest harness/run/tests. LOADBENCH_BIN names the binary (default
build/loadbench of this checkout)."""
import json
import os
import signal
import subprocess
import time

import pytest
from conftest import BIN

PY = "/usr/bin/python3"


def lb(env, *args, check=True):
    return subprocess.run([BIN, *args], check=check, env=env, capture_output=True, text=True)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    d = tmp_path_factory.mktemp("exec")
    env = dict(os.environ, LOADBENCH_LOCK_DIR=str(d / "locks"))
    env.pop("LOADBENCH_LOCK_FD", None)
    model = str(d / "m.safetensors")
    lb(env, "gen", "--preset", "llama", "--size", "8MiB", "--format", "safetensors", "--out",
       model, "--quiet")
    header = json.loads(lb(env, "inspect", "--json", model).stdout)["header"]
    return d, env, model, header["metadata"]["loadbench.xxh3_64"]


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:  # a zombie is not alive
        return f.read().rsplit(")", 1)[1].split()[0] != "Z"


def run_execs(setup, name, execs, *extra, cache="warm", model=None):
    """One `run` of the given --exec LABEL=COMMAND texts (on the setup's model, or `model`); its
    records by label, its folder and what it printed on stderr."""
    d, env, setup_model, _ = setup
    out = d / name
    args = ["run", "--file", model or setup_model, "--strategies", "none", "--cache", cache,
            "--reps", "1", "--out", str(out), *extra]
    for text in execs:
        args += ["--exec-shell" if text.startswith("sh:") else "--exec", text.removeprefix("sh:")]
    p = lb(env, *args, check=False)
    assert p.returncode in (0, 1), p.stderr
    runs = [json.loads(line) for line in open(out / "runs.jsonl")]
    return {r["label"]: r for r in runs}, out, p.stderr


def test_a_command_that_reports_is_verified_and_its_own_times_recorded(setup):
    d, _, model, checksum = setup
    say = d / "say.sh"
    say.write_text(f"cat \"$1\" >/dev/null\nprintf 'ready 0.001\\ndone 0.002\\nchecksum {checksum}\\n'"
                   " >&$LOADBENCH_FD\n")
    # The plain command outlasts a moment, so that its timeline has a sample: it is sampled
    # beside the watch, and a command gone within microseconds may have none.
    plain_sh = d / "plain.sh"
    plain_sh.write_text("cat \"$1\" >/dev/null\nsleep 0.05\n")
    runs, out, _ = run_execs(setup, "reports",
                             [f"good=sh {say} {{file}}", f"plain=sh {plain_sh} {{file}}"])
    good, plain = runs["good"], runs["plain"]
    assert good["status"] == "ok" and good["verify"] == "checksum" and good["checksum_ok"] is True
    assert good["checksum"] == checksum
    # Timed whole (the default): its own ready has another origin than wall_s, so only in exec.
    assert good["exec"]["timed"] == "command" and good["exec"]["command_s"] == good["wall_s"]
    assert good["ready_s"] is None and good["exec"]["ready_s"] == 0.001
    assert good["exec"]["done_s"] == 0.002
    assert good["exec"]["startup_s"] == pytest.approx(good["wall_s"] - 0.002)
    assert "warnings" not in good
    assert good["command"] == ["sh", str(say), model]
    assert good["strategy"] == "exec" and good["strategy_spec"] == "exec:label=good"
    assert good["process_s"] >= good["wall_s"] > 0
    assert good["exec"]["exit_status"] == 0 and good["exec"]["left_behind"] == 0
    assert "cgroup" in good["exec"]["measured"] or "no whole-tree" in good["exec"]["measured"]
    # No checksum line: an ok run, but unverified.
    assert plain["status"] == "ok" and plain["verify"] == "none" and plain["checksum_ok"] is None
    assert (out / plain["timeline"]).exists()


def test_bad_protocol_lines_and_a_wrong_checksum_fail_the_run(setup):
    runs, _, _ = run_execs(setup, "protocol", [
        "sh:wrong=echo checksum 0123456789abcdef >&$LOADBENCH_FD",
        "sh:garbled=echo hello there >&$LOADBENCH_FD",
        "sh:late=echo done 3600 >&$LOADBENCH_FD",
        "sh:cannot=echo unsupported python3-torch is not installed >&$LOADBENCH_FD; exit 1"])
    assert runs["wrong"]["status"] == "failed"
    assert runs["wrong"]["error"].startswith("checksum mismatch: the command reports 0123456789abcdef")
    assert runs["wrong"]["checksum_ok"] is False
    assert runs["garbled"]["status"] == "failed"
    assert "LOADBENCH_FD line 'hello there'" in runs["garbled"]["error"]
    assert runs["late"]["status"] == "failed" and "more than its whole run" in runs["late"]["error"]
    assert runs["cannot"]["status"] == "unsupported"
    assert runs["cannot"]["error"] == "the command says: python3-torch is not installed"


def test_not_found_non_zero_and_signals_are_told_apart(setup):
    runs, _, _ = run_execs(setup, "bad", [
        "missing=no-such-program-here {file}",
        "missing_path=/nonexistent/loader {file}",
        "sh:exits=echo first >&2; echo 'cannot open the model' >&2; exit 3",
        "sh:segv=kill -SEGV $$"])
    assert runs["missing"]["status"] == "unsupported"
    assert runs["missing"]["error"] == "command not found: no-such-program-here (not on PATH)"
    assert runs["missing_path"]["status"] == "unsupported"
    assert runs["exits"]["status"] == "failed"
    assert runs["exits"]["error"] == "command exited with status 3: cannot open the model"
    assert runs["exits"]["exec"]["exit_status"] == 3
    assert runs["exits"]["exec"]["stderr_tail"] == "first\ncannot open the model"
    assert runs["segv"]["status"] == "failed"
    assert runs["segv"]["error"].startswith("command killed by signal 11")


def test_an_experiment_names_the_package_of_a_missing_program(setup):
    d, env, model, _ = setup
    exp = d / "missing.toml"
    exp.write_text(f'name = "missing"\nreps = 1\ncache = "warm"\n[[file]]\npath = "{model}"\n'
                   '[[strategy]]\nname = "exec"\nlabel = "vendor"\n'
                   'command = ["vendor-loader-xyz", "{file}"]\npackage = "vendor-tools"\n')
    out = d / "missing-out"
    p = lb(env, "experiment", str(exp), "--out", str(out), "--quiet", check=False)
    assert p.returncode == 0, p.stderr
    r = json.loads(open(out / "runs.jsonl").readline())
    assert r["status"] == "unsupported"
    assert r["error"] == ("command not found: vendor-loader-xyz (not on PATH); install Debian's "
                          "vendor-tools")


def test_nothing_a_command_starts_outlives_its_run(setup):
    d = setup[0]
    pids = d / "pids"
    runs, _, stderr = run_execs(setup, "background", [
        f"sh:bg=sleep 300 & echo $! >> {pids}; setsid sleep 300 & echo $! >> {pids}; exit 0"])
    r = runs["bg"]
    assert r["status"] == "ok", r
    started = [int(x) for x in pids.read_text().split()]
    assert len(started) == 2
    assert not any(alive(p) for p in started)
    # The setsid one left the process group: only a cgroup finds it.
    cgroup = "cgroup" in r["exec"]["measured"] and "no whole-tree" not in r["exec"]["measured"]
    left = 2 if cgroup else 1
    assert r["exec"]["left_behind"] == left
    # A warning on the row, and on its console line, printed without --verbose.
    warning = (f"left {left} process{'es' if left > 1 else ''} running at its exit, killed by "
               "the runner")
    assert len(r["warnings"]) == 1 and r["warnings"][0].startswith(warning), r["warnings"]
    line = [x for x in stderr.splitlines() if "exec:label=bg" in x]
    assert len(line) == 1 and ": ok " in line[0] and "; warning: " + warning in line[0], stderr


def test_a_timeout_kills_the_whole_group(setup):
    d = setup[0]
    pids = d / "timeout-pids"
    t0 = time.monotonic()
    runs, _, _ = run_execs(setup, "timeout", [f"sh:hang=sleep 300 & echo $! > {pids}; sleep 300"],
                        "--timeout", "1")
    assert time.monotonic() - t0 < 60
    r = runs["hang"]
    assert r["status"] == "failed" and r["error"].startswith("timed out after 1 s")
    assert not alive(int(pids.read_text()))


def test_a_grandchilds_memory_is_in_the_cgroup_peak(setup):
    hold = "b = bytearray(160 << 20); b[::4096] = bytes([1]) * len(b[::4096])"
    # Two shells, each waiting: the Python process is the command's grandchild.
    runs, _, _ = run_execs(setup, "grandchild",
                           [f"sh:grand=sh -c '{PY} -c \"{hold}\"; true'; true"])
    r = runs["grand"]
    assert r["status"] == "ok", r
    if "no whole-tree" in r["exec"]["measured"]:
        pytest.skip("no memory cgroup here: " + r["exec"]["measured"])
    assert r["memory"]["cgroup_peak_bytes"] >= 160 << 20
    # wait4 sees the grandchild too, once reaped: the largest single process.
    assert r["peak_rss_bytes"] >= 160 << 20


def test_the_oom_killer_is_named_under_a_memory_limit(setup):
    if os.geteuid() != 0:
        pytest.skip("memory limits need root here")
    runs, _, _ = run_execs(setup, "oom", [f"oom={PY} -c \"b = b'x' * (512 << 20)\""],
                        "--memory-limit", "64MiB")
    r = runs["oom"]
    assert r["status"] == "failed"
    assert r.get("oom_killed") is True, r
    assert r["error"] == "killed by the OOM killer (SIGKILL) at the memory limit of 64.00 MiB"


def test_cold_exec_runs_start_cold_and_read_the_file(setup):
    if os.geteuid() != 0:
        pytest.skip("cold needs root here (drop_caches)")
    runs, _, _ = run_execs(setup, "cold", ["dd=dd if={file} of=/dev/null bs=1M status=none"],
                           cache="cold")
    r = runs["dd"]
    assert r["status"] == "ok" and r["resident_before"] <= 0.01
    assert r["read_bytes"] >= r["file_bytes"] * 0.9  # dd's own reads, seen after it exited


def test_a_cold_command_that_sends_the_stored_checksum_unread_is_invalid(setup):
    if os.geteuid() != 0:
        pytest.skip("cold needs root here (drop_caches)")
    d, env = setup[0], setup[1]
    # A model large enough that the shell's own reads from storage cannot pass for it.
    model = str(d / "big.safetensors")
    lb(env, "gen", "--preset", "llama", "--size", "32MiB", "--format", "safetensors", "--out",
       model, "--quiet")
    stored = json.loads(lb(env, "inspect", "--json", model).stdout)["header"]["metadata"][
        "loadbench.xxh3_64"]
    liar = d / "liar.sh"
    liar.write_text(f"echo checksum {stored} > /dev/fd/$LOADBENCH_FD\n")
    honest = d / "honest.sh"
    honest.write_text(f"cat \"$1\" > /dev/null\necho checksum {stored} > /dev/fd/$LOADBENCH_FD\n")
    runs, _, stderr = run_execs(setup, "liar",
                                [f"liar=sh {liar}", f"honest=sh {honest} {{file}}"],
                                cache="cold", model=model)
    r = runs["liar"]
    assert r["checksum_ok"] is True  # its word alone would have passed
    assert r["status"] == "invalid", r
    assert r["error"].startswith("read ") and " of 32.29 MiB from storage (" in r["error"]
    assert "%) on a cold run: it cannot have loaded the model" in r["error"]
    assert r["read_bytes"] < 0.9 * r["file_bytes"]
    assert "exec:label=liar rep 0: invalid read " in stderr
    assert runs["honest"]["status"] == "ok", runs["honest"]
    assert runs["honest"]["read_bytes"] >= 0.9 * runs["honest"]["file_bytes"]


def test_a_command_that_exits_at_once_is_timed_under_the_sample_interval(setup):
    runs, _, _ = run_execs(setup, "quick", ["true=true"], "--sample-ms", "30000")
    r = runs["true"]
    assert r["status"] == "ok", r
    # Seen when it exits, not at the next sample: under the sample interval, 30 s, which leaves
    # `true`'s own few milliseconds room for any machine's load.
    assert r["wall_s"] < 30, r["wall_s"]


def test_a_region_timed_command_ranks_its_own_done(setup):
    d, env, model, checksum = setup
    exp = d / "region.toml"
    say = ("cat \"$1\" >/dev/null; printf 'ready 0.001\\ndone 0.002\\nchecksum " + checksum
           + "\\n' >&$LOADBENCH_FD; sleep 0.05")
    (d / "region.sh").write_text(say + "\n")
    exp.write_text(f'name = "region"\nreps = 1\ncache = "warm"\n[[file]]\npath = "{model}"\n'
                   '[[strategy]]\nname = "exec"\nlabel = "own"\ntimed = "region"\n'
                   f'command = ["sh", "{d / "region.sh"}", "{{file}}"]\n'
                   '[[strategy]]\nname = "exec"\nlabel = "nodone"\ntimed = "region"\n'
                   'command = ["cat", "{file}"]\n')
    out = d / "region-out"
    p = lb(env, "experiment", str(exp), "--out", str(out), "--quiet", check=False)
    assert p.returncode in (0, 1), p.stderr
    runs = {r["label"]: r for r in map(json.loads, open(out / "runs.jsonl"))}
    own = runs["own"]
    assert own["status"] == "ok", own
    assert own["exec"]["timed"] == "region"
    assert own["wall_s"] == 0.002 and own["ready_s"] == 0.001
    assert own["exec"]["command_s"] >= 0.05  # the whole command, beside it
    assert own["exec"]["startup_s"] == pytest.approx(own["exec"]["command_s"] - 0.002)
    assert runs["nodone"]["status"] == "failed"
    assert "sent no 'done SECONDS' line" in runs["nodone"]["error"]


def test_an_interrupted_run_leaves_no_command_behind(setup):
    d, env, model, _ = setup
    pids = d / "int-pids"
    out = d / "interrupted"
    p = subprocess.Popen([BIN, "run", "--file", model, "--strategies", "none", "--cache", "warm",
                          "--reps", "1", "--out", str(out), "--exec-shell",
                          f"hang=sleep 300 & echo $! > {pids}; sleep 300"],
                         env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not (pids.exists() and pids.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.05)
    p.send_signal(signal.SIGINT)
    p.wait(timeout=30)
    assert p.returncode == 130, p.stderr.read()
    time.sleep(0.2)
    assert not alive(int(pids.read_text()))


@pytest.mark.parametrize("text,message", [
    ("=cat {file}", "--exec '=cat {file}': expected LABEL=COMMAND"),
    ("x=", "--exec 'x=': no command after '='"),
    ("x=cat 'unclosed", "--exec 'x=cat 'unclosed': an unclosed ' quote"),
    ("bad label=cat", "label 'bad label'"),
])
def test_bad_exec_flags_exit_2_with_one_line(setup, text, message):
    d, env, model, _ = setup
    p = lb(env, "run", "--file", model, "--exec", text, "--out", str(d / "never"), check=False)
    assert p.returncode == 2
    assert message in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr


def test_the_same_label_twice_is_refused(setup):
    d, env, model, _ = setup
    p = lb(env, "run", "--file", model, "--exec", "a=cat {file}", "--exec", "a=dd if={file}",
           "--out", str(d / "never2"), check=False)
    assert p.returncode == 2 and "label 'a' is used twice" in p.stderr
