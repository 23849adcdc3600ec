"""The machine's state, shown, set and restored (`loadbench system show|tune|reset`, the
experiment key `[system] tune = true`): show lists every setting as the kernel has it; tune then
reset leaves every setting as it was; an experiment that asks for the tuned state runs tuned
and gives the machine back at its end, after Ctrl-C too, and after a SIGKILL the next command
that measures does, saying so; not root, tune names the setting, exits 2 and changes nothing.

Run with /usr/bin/python3 -m pytest harness/run/tests. LOADBENCH_BIN names the binary (default
build/loadbench of this checkout). Every test has a lock folder and a state folder of its own
(LOADBENCH_LOCK_DIR, LOADBENCH_STATE_DIR). The tests that change settings need root and a
writable free page reporting (this VM has one; elsewhere they skip, saying why), and write
every setting they may change back when they end, failed or not."""
import glob
import json
import os
import pathlib
import shutil
import signal
import stat
import subprocess
import tempfile
import time

import pytest
from conftest import BIN

ORDER = "/sys/module/page_reporting/parameters/page_reporting_order"
GOVERNORS = "/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor"
KDAMONDS = "/sys/kernel/mm/damon/admin/kdamonds"
DAMON_RECLAIM = "/sys/module/damon_reclaim/parameters/enabled"


def cannot_tune_here():
    if os.geteuid() != 0:
        return "not root: tuning needs root"
    if not os.access(ORDER, os.W_OK):
        return f"{ORDER} is not writable here (no free page reporting to hold off)"
    return ""


def read(path):
    with open(path) as f:
        return f.read().strip()


def tunables():
    """Every setting tune may write, as it reads now."""
    paths = [ORDER, *glob.glob(GOVERNORS), *glob.glob(KDAMONDS + "/[0-9]*/state"), DAMON_RECLAIM]
    return {p: read(p) for p in paths if os.path.exists(p)}


def damon_names():
    """The lines show gives DAMON: one per kdamond, or one saying there is none."""
    numbers = sorted(int(n) for n in os.listdir(KDAMONDS) if n.isdigit()) \
        if os.path.isdir(KDAMONDS) else []
    names = [f"damon.kdamond{n}" for n in numbers] or ["damon"]
    return names + (["damon_reclaim.enabled"] if os.path.exists(DAMON_RECLAIM) else [])


@pytest.fixture
def env(env, tmp_path):
    """conftest's, with a state folder of the test's own."""
    return dict(env, LOADBENCH_STATE_DIR=str(tmp_path / "state"))


def write(path, value):
    with open(path, "w") as f:
        f.write(value + "\n")


@pytest.fixture
def machine():
    """The real tunable settings, free page reporting untuned first (`make test` runs the suite
    tuned, and these tests need a setting that tune changes), all written back as they were
    found however the test ends."""
    why = cannot_tune_here()
    if why:
        pytest.skip(why)
    found = tunables()
    if read(ORDER) == str(largest_order() + 1):
        write(ORDER, str(min(9, largest_order())))  # the kernel's default, pageblock_order
    yield tunables()
    for path, value in found.items():
        if read(path) != value:
            write(path, value)


def lb(env, *args, timeout=120, **kw):
    return subprocess.run([BIN, *args], capture_output=True, text=True, env=env,
                          timeout=timeout, **kw)


def largest_order():
    with open("/proc/buddyinfo") as f:
        first = f.readline().split()
    return len(first) - 4 - 1  # "Node 0, zone NAME" then one count per order from 0


def settings(env, data="."):
    """show --json's settings, but the counters that change by themselves (read-only files,
    and the huge pages that can be had now)."""
    r = lb(env, "system", "show", "--json", "--data", data)
    assert r.returncode == 0, r.stderr
    out = {}
    for name, s in json.loads(r.stdout)["settings"].items():
        path = s["path"]
        counter = (name.startswith("page_reporting.") and os.path.exists(path)
                   and not os.stat(path).st_mode & stat.S_IWUSR
                   or s.get("note", "").startswith("read only"))
        if not counter:
            out[name] = s["value"]
    return out


def test_show_lists_every_setting_with_the_value_the_kernel_has(env, tmp_path):
    r = lb(env, "system", "show", "--data", str(tmp_path))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    shown = {line.split()[0]: line.split()[1] for line in lines
             if not line.startswith(("state:", "saved:"))}
    want = ["thp.enabled", "thp.defrag", "thp.khugepaged_defrag", "thp.free_2mib_blocks_mib",
            "hugetlb.total", "hugetlb.free", "vm.swappiness",
            "vm.dirty_ratio", "vm.dirty_background_ratio", "vm.dirty_bytes",
            "vm.dirty_background_bytes", "vm.dirty_expire_centisecs",
            "vm.dirty_writeback_centisecs", "block.device", "block.read_ahead_kb",
            "block.scheduler", "cpu.governor", "balloon.driver"]
    params = "/sys/module/page_reporting/parameters"
    want += ([f"page_reporting.{p}" for p in os.listdir(params)] if os.path.isdir(params)
             else ["page_reporting"])
    if any(read(d + "/device") == "0x0005" for d in glob.glob("/sys/bus/virtio/devices/*")):
        want.append("balloon.features")
    want += damon_names()
    assert sorted(shown) == sorted(want)
    for k in ["swappiness", "dirty_ratio", "dirty_bytes", "dirty_writeback_centisecs"]:
        assert shown[f"vm.{k}"] == read(f"/proc/sys/vm/{k}")
    enabled = read("/sys/kernel/mm/transparent_hugepage/enabled")
    assert shown["thp.enabled"] == enabled[enabled.index("[") + 1:enabled.index("]")]
    if os.path.exists(ORDER):
        assert shown["page_reporting.page_reporting_order"] == read(ORDER)
    with open("/proc/meminfo") as f:
        meminfo = dict(line.split(":", 1) for line in f)
    if "HugePages_Total" in meminfo:
        assert shown["hugetlb.total"] == meminfo["HugePages_Total"].split()[0]
    for state in glob.glob(KDAMONDS + "/[0-9]*/state"):
        assert shown[f"damon.kdamond{os.path.basename(os.path.dirname(state))}"] == read(state)
    dev = os.stat(tmp_path).st_dev
    block = os.path.realpath(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}")
    if os.path.exists(block):
        block = os.path.dirname(block) if os.path.exists(block + "/partition") else block
        assert shown["block.device"] == os.path.basename(block)
        assert shown["block.read_ahead_kb"] == read(block + "/queue/read_ahead_kb")
    assert lines[-2].startswith("state: ") and lines[-1].startswith("saved: none")


def test_tune_then_reset_leaves_every_setting_as_it_was(env, machine):
    before = settings(env)
    t = lb(env, "system", "tune")
    assert t.returncode == 0, t.stderr
    state = json.loads(lb(env, "system", "show", "--json").stdout)
    assert state["tuned"] and state["tune"]["by"] == "system tune", state
    assert state["page_reporting"] == "off"
    assert state["damon_pageout"] in ("off", "absent"), state
    assert read(ORDER) == str(largest_order() + 1)
    assert os.path.exists(os.path.join(env["LOADBENCH_STATE_DIR"], "system-state.json"))
    # A second tune keeps what was there first.
    assert lb(env, "system", "tune").returncode == 0
    r = lb(env, "system", "reset")
    assert r.returncode == 0, r.stderr
    assert f"restored {ORDER}: {largest_order() + 1} -> {machine[ORDER]}" in r.stdout
    assert settings(env) == before
    assert not os.listdir(env["LOADBENCH_STATE_DIR"])


def test_a_reset_without_a_saved_state_says_so(env):
    r = lb(env, "system", "reset")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("nothing to restore: no saved state at "
                               f"{env['LOADBENCH_STATE_DIR']}/system-state.json")


def test_not_root_tune_names_the_setting_exits_1_and_changes_nothing(env, machine):
    if read(ORDER) == str(largest_order() + 1):
        pytest.skip("free page reporting is held off already: tune would set nothing")
    before = tunables()
    shared = tempfile.mkdtemp(prefix="loadbench-nobody-")  # pytest's folders are root's alone
    try:
        os.chmod(shared, 0o777)
        env = dict(env, LOADBENCH_LOCK_DIR=shared + "/locks", LOADBENCH_STATE_DIR=shared + "/state")
        r = lb(env, "system", "tune", user=65534, group=65534)
        assert not os.path.exists(env["LOADBENCH_STATE_DIR"])
    finally:
        shutil.rmtree(shared)
    # The machine refused; the command was right: an environment error (1), not bad input (2).
    assert r.returncode == 1, r.stderr
    assert r.stderr.count("\n") == 1
    assert f"cannot set {ORDER} to {largest_order() + 1}: Permission denied (it needs root)" \
        in r.stderr
    assert "nothing was changed" in r.stderr
    assert tunables() == before


EXPERIMENT = """name = "tuned"
reps = {reps}
cache = "warm"
[[file]]
path = "{model}"
[[strategy]]
name = "fread"
[system]
tune = true
"""


def experiment(tmp_path, model, reps):
    path = tmp_path / "tuned.toml"
    path.write_text(EXPERIMENT.format(model=model, reps=reps))
    return str(path)


def test_an_experiment_asking_for_the_tuned_state_runs_tuned_and_restores_it(
        env, machine, tmp_path, model):
    out = str(tmp_path / "out")
    r = lb(env, "experiment", experiment(tmp_path, model, 1), "--out", out, "--quiet")
    assert r.returncode == 0, r.stderr
    system = json.loads(open(os.path.join(out, "env.json")).read())["system"]
    assert system["tuned"] and system["not_tuned_because"] == []
    assert system["tune"]["by"] == "experiment" and system["tune"]["page_reporting"] == "off"
    assert system["settings"]["page_reporting.page_reporting_order"]["value"] == \
        str(largest_order() + 1)  # as the runs ran
    sessions = json.loads(open(os.path.join(out, "env.json")).read())["sessions"]
    assert [s["system_tuned"] for s in sessions] == [True]
    assert f"restored {ORDER}: {largest_order() + 1} -> {machine[ORDER]}" in r.stderr
    assert tunables() == machine


def test_run_tune_on_runs_tuned_and_restores_it(env, machine, tmp_path, model):
    out = str(tmp_path / "run")
    r = lb(env, "run", "--file", model, "--strategies", "fread", "--cache", "warm", "--reps", "1",
           "--tune", "on", "--out", out)
    assert r.returncode == 0, r.stderr
    system = json.loads(open(os.path.join(out, "env.json")).read())["system"]
    assert system["tuned"] and system["tune"]["by"] == "run --tune", system
    assert system["settings"]["page_reporting.page_reporting_order"]["value"] == \
        str(largest_order() + 1)  # as the runs ran
    assert f"restored {ORDER}: {largest_order() + 1} -> {machine[ORDER]}" in r.stderr
    assert tunables() == machine
    bad = lb(env, "run", "--file", model, "--tune", "yes", "--out", str(tmp_path / "bad"))
    assert bad.returncode == 2 and "--tune" in bad.stderr, bad.stderr


def test_experiment_tune_overrides_the_files_key_both_ways(env, machine, tmp_path, model):
    """`experiment --tune off` runs a file asking for the tuned state as found; `--tune on` tunes
    a file without the key: one experiment, two states of the machine."""
    path = experiment(tmp_path, model, 1)
    off = lb(env, "experiment", path, "--out", str(tmp_path / "off"), "--quiet", "--tune", "off")
    assert off.returncode == 0, off.stderr
    system = json.loads((tmp_path / "off" / "env.json").read_text())["system"]
    assert system["tune"] is None and "restored" not in off.stderr
    plain = tmp_path / "plain.toml"
    plain.write_text(pathlib.Path(path).read_text().replace("[system]\ntune = true\n", ""))
    on = lb(env, "experiment", str(plain), "--out", str(tmp_path / "on"), "--quiet", "--tune", "on")
    assert on.returncode == 0, on.stderr
    system = json.loads((tmp_path / "on" / "env.json").read_text())["system"]
    assert system["tuned"] and system["tune"]["by"] == "experiment", system
    assert tunables() == machine
    bad = lb(env, "experiment", path, "--tune", "yes", "--out", str(tmp_path / "bad"))
    assert bad.returncode == 2 and "--tune" in bad.stderr, bad.stderr


def test_tune_auto_tunes_as_root_and_goes_on_untuned_where_it_cannot(env, machine, tmp_path,
                                                                     model):
    if read(ORDER) == str(largest_order() + 1):
        pytest.skip("free page reporting is held off already: tune would set nothing")
    x = tmp_path / "auto.toml"
    x.write_text(EXPERIMENT.format(model=model, reps=1).replace("tune = true", 'tune = "auto"'))
    r = lb(env, "experiment", str(x), "--out", str(tmp_path / "root"), "--quiet")
    assert r.returncode == 0, r.stderr
    assert f"restored {ORDER}: {largest_order() + 1} -> {machine[ORDER]}" in r.stderr
    shared = tempfile.mkdtemp(prefix="loadbench-nobody-")  # pytest's folders are root's alone
    try:
        os.chmod(shared, 0o777)
        shutil.copy(model, shared + "/m.wlf")
        os.chown(shared + "/m.wlf", 65534, 65534)  # residency is checked on a file one owns
        (x2 := pathlib.Path(shared) / "auto.toml").write_text(
            x.read_text().replace(model, shared + "/m.wlf"))
        os.chmod(x2, 0o644)
        env = dict(env, LOADBENCH_LOCK_DIR=shared + "/locks", LOADBENCH_STATE_DIR=shared + "/state")
        r = lb(env, "experiment", str(x2), "--out", shared + "/out", "--quiet", user=65534,
               group=65534)
        assert r.returncode == 0, r.stderr
        system = json.loads(open(shared + "/out/env.json").read())["system"]
    finally:
        shutil.rmtree(shared)
    assert r.returncode == 0, r.stderr
    assert f"not tuned (cannot set {ORDER} to {largest_order() + 1}: Permission denied" in r.stderr
    assert not system["tuned"] and system["tune"] is None
    assert tunables() == machine


def test_an_untuned_run_records_why_it_was_not_tuned(env, tmp_path, model):
    out = str(tmp_path / "plain")
    r = lb(env, "run", "--file", model, "--strategies", "fread", "--cache", "warm", "--reps", "1",
           "--out", out)
    assert r.returncode == 0, r.stderr
    system = json.loads(open(os.path.join(out, "env.json")).read())["system"]
    assert system["tune"] is None
    assert system["tuned"] == (system["not_tuned_because"] == [])
    if system["page_reporting"] == "on":
        assert not system["tuned"]
        assert any("free page reporting is on" in w for w in system["not_tuned_because"])


def start_tuned(env, tmp_path, model):
    """A long tuned experiment, once its env.json is written (the machine tuned)."""
    out = str(tmp_path / "long")
    p = subprocess.Popen([BIN, "experiment", experiment(tmp_path, model, 1000), "--out", out,
                          "--quiet"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=env, start_new_session=True)
    deadline = time.monotonic() + 60
    while not os.path.exists(os.path.join(out, "runs.jsonl")) and time.monotonic() < deadline:
        assert p.poll() is None, p.communicate()
        time.sleep(0.05)
    assert read(ORDER) == str(largest_order() + 1), "not tuned while running"
    return p


def test_an_interrupted_experiment_restores_the_machine(env, machine, tmp_path, model):
    p = start_tuned(env, tmp_path, model)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    assert f"restored {ORDER}" in err
    assert tunables() == machine


def test_after_a_kill_the_next_command_that_measures_restores_and_says_so(
        env, machine, tmp_path, model):
    p = start_tuned(env, tmp_path, model)
    p.kill()
    p.communicate(timeout=60)
    assert read(ORDER) != machine[ORDER]  # left tuned: nothing ran to restore it
    r = lb(env, "system", "reset")
    assert r.returncode == 0, r.stderr
    assert (f"pid {p.pid} ended without cleaning up: setting {ORDER} restored to "
            f"{machine[ORDER]}") in r.stderr
    assert tunables() == machine


def test_tune_with_a_command_holds_while_it_runs_and_restores_after(env, machine):
    r = lb(env, "system", "tune", "--", "sh", "-c", f"cat {ORDER}; exit 3")
    assert r.returncode == 3, r.stderr  # the command's
    assert r.stdout.strip() == str(largest_order() + 1)  # tuned while it ran
    assert f"set {ORDER}: {machine[ORDER]} -> {largest_order() + 1} while sh runs" in r.stderr
    assert f"restored {ORDER}: {largest_order() + 1} -> {machine[ORDER]}" in r.stderr
    assert tunables() == machine
    assert not os.path.exists(os.path.join(env["LOADBENCH_STATE_DIR"], "system-state.json"))
    missing = lb(env, "system", "tune", "--", "no-such-command-here")
    assert missing.returncode == 127 and "command not found: no-such-command-here" in \
        missing.stderr, missing.stderr
    assert "set " not in missing.stderr and tunables() == machine


def test_a_tune_killed_with_its_command_is_restored_by_the_next_command(env, machine):
    p = subprocess.Popen([BIN, "system", "tune", "--", "sleep", "60"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    deadline = time.monotonic() + 30
    while read(ORDER) != str(largest_order() + 1) and time.monotonic() < deadline:
        assert p.poll() is None, p.communicate()
        time.sleep(0.05)
    p.kill()
    p.communicate(timeout=30)
    assert read(ORDER) == str(largest_order() + 1)  # left tuned: nothing ran to restore it
    r = lb(env, "system", "reset")
    assert r.returncode == 0, r.stderr
    assert (f"pid {p.pid} ended without cleaning up: setting {ORDER} restored to "
            f"{machine[ORDER]}") in r.stderr
    assert tunables() == machine
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert "sleep 60" not in ps.splitlines()  # the command died with it
