"""Exec commands as the readers of a round: `run --procs N` with an exec strategy runs one command
per reader, all started together, each told its place (LOADBENCH_READER=K/N), the run's token and
its pattern; each record is its own, judged against its own part's checksum, with the bytes it
needed and the round figures of workers. A malformed detail line fails the run naming it, and a
timeout leaves none of the commands running.

Run with /usr/bin/python3 -m pytest harness/run/tests. LOADBENCH_BIN names the binary (default
build/loadbench of this checkout)."""
import json
import os
import re
import subprocess
import time

import pytest
from conftest import BIN, REPO

PY = "/usr/bin/python3"
READERS = 3
CACHE = "cold" if os.geteuid() == 0 else "warm"  # cold needs drop_caches here

# A reader of its part: the model's table by lbpeer's reader, its tp slices along dimension 0
# (one contiguous range of each tensor; loaders/use/part.h) or every tensor whole, hashed in
# table order; its place, token and pattern written where the test reads them, and detail lines.
READER = r'''
import os, sys, time
sys.path.insert(0, os.path.join(sys.argv[1], "loaders", "peers"))
import lbpeer, xxhash
out, path = sys.argv[2], sys.argv[3]
k, n = map(int, os.environ["LOADBENCH_READER"].split("/"))
pattern = os.environ.get("LOADBENCH_PATTERN", "")
with open(os.path.join(out, f"reader-{k}.json"), "w") as f:
    f.write(__import__("json").dumps({k2: os.environ.get(k2) for k2 in (
        "LOADBENCH_READER", "LOADBENCH_FLEET_TOKEN", "LOADBENCH_PATTERN", "LOADBENCH_DEADLINE",
        "LOADBENCH_FD")}))
start = time.perf_counter()
model = lbpeer.read_model(path)
h = xxhash.xxh3_64()
with open(model.files[0], "rb") as f:
    for t in model.tensors:
        offset, size = t.offset, t.size
        if pattern == "tp":
            rows = t.shape[0]
            unit = t.size // rows
            offset += rows * k // n * unit
            size = (rows * (k + 1) // n - rows * k // n) * unit
        f.seek(offset)
        h.update(f.read(size))
digest = format(h.intdigest(), "016x")
if os.environ.get("WRONG_READER") == str(k):
    digest = format(h.intdigest() ^ 1, "016x")
lbpeer.send(f"done {time.perf_counter() - start:.6f}")
lbpeer.send(f"checksum {digest}")
lbpeer.send(f"detail node {k}")
lbpeer.send('detail design "mine"')
lbpeer.send("detail store_bytes 0")
'''


def lb(env, *args, check=True, timeout=300):
    return subprocess.run([BIN, *args], check=check, env=env, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="module")
def place(tmp_path_factory):
    d = tmp_path_factory.mktemp("exec-readers")
    env = dict(os.environ, LOADBENCH_LOCK_DIR=str(d / "locks"))
    env.pop("LOADBENCH_LOCK_FD", None)
    model = str(d / "m.safetensors")
    lb(env, "gen", "--size", "12MiB", "--format", "safetensors", "--out", model, "--quiet")
    (d / "reader.py").write_text(READER)
    table = json.loads(lb(env, "inspect", "--json", model).stdout)
    return d, env, model, table


def run_readers(place, name, pattern="replicated", procs=READERS, command=None, timed="region",
                timeout=0, run_env=None):
    """One `run` of the reader command as `procs` readers; its records by reader, what it printed
    and the folder its readers wrote their environments to."""
    d, env, model, _ = place
    out = d / name
    seen = d / f"{name}-env"
    seen.mkdir()
    if command is None:
        command = f"{PY} {d / 'reader.py'} {REPO} {seen} {{file}}"
    exp = d / f"{name}.toml"
    exp.write_text(f'name = "{name}"\nreps = 1\ncache = "{CACHE}"\nprocs = [{procs}]\n'
                   f'pattern = "{pattern}"\ntimeout_s = {timeout}\n[[file]]\npath = "{model}"\n'
                   f'[[strategy]]\nname = "exec"\nlabel = "mine"\ntimed = "{timed}"\nshell = true\n'
                   f'command = "{command}"\n')
    p = lb(dict(env, **(run_env or {})), "experiment", str(exp), "--out", str(out), "--quiet",
           check=False)
    assert p.returncode in (0, 1), p.stderr
    recs = [json.loads(line) for line in open(out / "runs.jsonl")]
    return {r.get("proc", 0): r for r in recs}, p, seen


def test_each_reader_runs_its_own_command_told_its_place(place):
    _, _, _, table = place
    runs, p, seen = run_readers(place, "replicated")
    assert sorted(runs) == list(range(READERS))
    tokens = set()
    for k, r in runs.items():
        assert r["status"] == "ok", r
        assert r["verify"] == "checksum" and r["checksum_ok"] is True
        assert r["procs"] == READERS and r["pattern"] == "replicated"
        assert r["needed_bytes"] == table["tensor_bytes"]
        assert r["details"] == {"node": k, "design": "mine", "store_bytes": 0}
        assert r["exec"]["timed"] == "region"
        assert r["start_spread_s"] >= 0 and r["load_start_unix_s"] > 0
        env = json.load(open(seen / f"reader-{k}.json"))
        assert env["LOADBENCH_READER"] == f"{k}/{READERS}"
        assert env["LOADBENCH_PATTERN"] == "replicated"
        assert env["LOADBENCH_FD"] == "3" and env["LOADBENCH_DEADLINE"] is None
        assert re.fullmatch(r"[0-9a-f]{32}", env["LOADBENCH_FLEET_TOKEN"])
        tokens.add(env["LOADBENCH_FLEET_TOKEN"])
    assert len(tokens) == 1, "one token for the run's readers"
    # One spread for the run: the latest start less the earliest.
    starts = [r["load_start_unix_s"] for r in runs.values()]
    assert {r["start_spread_s"] for r in runs.values()} == {runs[0]["start_spread_s"]}
    assert runs[0]["start_spread_s"] == pytest.approx(max(starts) - min(starts), abs=2e-6)
    assert runs[0]["start_spread_s"] < 5


def test_a_reader_of_a_part_sends_its_parts_checksum(place):
    _, _, _, table = place
    # The generated model's rows divide among 4 readers, not 3.
    runs, _, _ = run_readers(place, "tp", pattern="tp", procs=4)
    assert sorted(runs) == [0, 1, 2, 3]
    needed = [r["needed_bytes"] for r in runs.values()]
    assert sum(needed) == table["tensor_bytes"] and len(set(needed)) == 1, needed
    for k, r in runs.items():
        assert r["status"] == "ok" and r["checksum_ok"] is True, r
        assert r["pattern"] == "tp"
    # A reader that sends another part's checksum fails; the others do not.
    runs, _, _ = run_readers(place, "tp-wrong", pattern="tp", procs=4,
                             run_env={"WRONG_READER": "1"})
    assert runs[1]["status"] == "failed" and runs[1]["checksum_ok"] is False
    assert runs[1]["error"].startswith("checksum mismatch: the command reports ")
    assert all(runs[k]["status"] == "ok" for k in (0, 2, 3)), runs


def test_the_deadline_is_in_each_readers_environment_with_a_timeout(place):
    runs, _, seen = run_readers(place, "deadline", timeout=120)
    now = time.monotonic()
    for k in runs:
        deadline = float(json.load(open(seen / f"reader-{k}.json"))["LOADBENCH_DEADLINE"])
        assert now < deadline < now + 120


def test_a_malformed_detail_line_fails_the_run_naming_it(place):
    command = ("if [ ${LOADBENCH_READER%/*} = 1 ]; then echo detail bad-key 1 >&3; "
               "else echo detail good 1 >&3; fi")
    runs, _, _ = run_readers(place, "bad-detail", command=command, timed="command")
    assert runs[1]["status"] == "failed"
    assert runs[1]["error"].startswith("LOADBENCH_FD line 'detail bad-key 1': expected 'detail "
                                       "KEY VALUE'")
    assert runs[0]["status"] in ("ok", "invalid") and runs[0]["details"] == {"good": 1}


def test_a_timeout_kills_every_readers_group(place):
    d = place[0]
    pids = d / "timeout-pids"
    pids.mkdir()
    command = (f"sleep 300 & echo $! > {pids}/$(echo $LOADBENCH_READER | tr / -); "
               "sleep 300")
    t0 = time.monotonic()
    runs, _, _ = run_readers(place, "timeout", command=command, timed="command", timeout=4)
    assert time.monotonic() - t0 < 60
    assert sorted(runs) == list(range(READERS))
    for r in runs.values():
        assert r["status"] == "failed" and r["error"].startswith("timed out after 4 s"), r
    started = [int(f.read_text()) for f in pids.iterdir()]
    assert len(started) == READERS, list(pids.iterdir())
    time.sleep(0.2)
    for pid in started:
        assert not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().rsplit(
            ")", 1)[1].split()[0] == "Z", pid


def test_what_a_reader_leaves_is_killed_without_cutting_the_others_short(place):
    """Reader 0 exits at once, leaving a child in its group and a daemon outside it (setsid):
    its group goes at its exit, the daemon once every reader has exited, both counted on it; the
    others run to their own ends."""
    d = place[0]
    pids = d / "left-pids"
    pids.mkdir()
    command = (f"if [ ${{LOADBENCH_READER%/*}} = 0 ]; then sleep 300 & echo $! > {pids}/child; "
               f"setsid sleep 300 & echo $! > {pids}/daemon; else sleep 1; fi")
    runs, _, _ = run_readers(place, "left", command=command, timed="command")
    assert runs[0]["exec"]["left_behind"] == (2 if "cgroup v" in runs[0]["exec"]["measured"]
                                               else 1), runs[0]
    assert runs[0]["wall_s"] < 1 <= runs[1]["wall_s"] and runs[2]["wall_s"] >= 1
    assert runs[1]["exec"]["left_behind"] == runs[2]["exec"]["left_behind"] == 0
    time.sleep(0.2)
    for name in ("child", "daemon"):
        pid = int((pids / name).read_text())
        assert not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().rsplit(
            ")", 1)[1].split()[0] == "Z", name


CLUSTER = """
name = "cluster-nic"
reps = 1
cache = ["cold"]
timeout_s = 120
[cluster]
nodes = [2]
nic = "400mbit"
uplink = "800mbit"
seconds = 1
[server]
kind = "http"
[[file]]
preset = "llama"
size = "4MiB"
format = "safetensors"
[[strategy]]
name = "fleet"
design = "every"
chunk = "1MiB"
[[strategy]]
name = "exec"
label = "curl"
via = "http"
command = ["curl", "-sSf", "-o", "/dev/null", "{file}"]
package = "curl"
"""


def test_a_clusters_nodes_run_a_command_each_and_count_their_nics(tmp_path, env):
    """On a cluster each node's rank runs the run's command (one per node) and every record has
    what its node's NIC carried: at least the model it pulled from the store."""
    from test_cluster_experiment import can_make_clusters, experiment
    if why := can_make_clusters():
        pytest.skip(why)
    p = experiment(tmp_path, CLUSTER, env=env)
    assert p.returncode == 0, p.stderr
    records = [json.loads(line) for line in open(tmp_path / "out" / "runs.jsonl")]
    assert sorted((r.get("label") or r["strategy"], r["proc"]) for r in records) == [
        ("curl", 0), ("curl", 1), ("fleet", 0), ("fleet", 1)]
    model = next(r["tensor_bytes"] for r in records if r["strategy"] == "fleet")
    for r in records:
        assert r["status"] == "ok", r
        assert r["nodes"] == 2 and r["rank"] == r["proc"]
        if r["strategy"] == "exec":
            assert r["needed_bytes"] == model
        # Pulled whole from the store, through its own NIC: the payload and the headers.
        assert r["nic_rx_bytes"] >= model, r
        assert 0 < r["nic_tx_bytes"] < r["nic_rx_bytes"], r
