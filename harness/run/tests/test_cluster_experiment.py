"""An experiment's [cluster] end to end: nodes as network namespaces on a bridge, each NIC shaped
both ways, one MPI rank per node started by mpirun through `loadbench netns-exec`, the server
in the store's namespace, a small model loaded by every fleet design on one and on two nodes;
every record carries `nodes`, env.json the cluster with each link's iperf3 figures, and nothing
is left once the command ends, nor after it is killed (the next command removes it and says
so). Bad input stops the command before anything is made, in one line with exit 2. Skips, with
the reason, where a cluster cannot be made here (not root, no iproute2, iperf3, nginx or
OpenMPI)."""
import json
import os
import shutil
import signal
import subprocess
import time

import pytest

from conftest import BIN, next_measuring_command

CLUSTER = """
name = "cluster-small"
reps = 1
cache = ["cold"]
timeout_s = 120
[cluster]
nodes = [1, 2]
nic = "200mbit"
uplink = "400mbit"
seconds = 1
[server]
kind = "http"
[[file]]
preset = "llama"
size = "{size}"
format = "safetensors"
[[strategy]]
name = "fleet"
design = ["every", "bcast", "stripe", "chain"]
chunk = "1MiB"
"""


def can_make_clusters():
    if os.geteuid() != 0:
        return "a cluster needs root (network namespaces, tc)"
    for program, package in (("ip", "iproute2"), ("tc", "iproute2"), ("iperf3", "iperf3"),
                             ("nginx", "nginx-light"), ("mpirun", "openmpi-bin")):
        if shutil.which(program) is None and not os.access(f"/usr/sbin/{program}", os.X_OK):
            return f"{program} is not installed (Debian's {package})"
    return ""


def experiment(tmp_path, text, env=None, wait=True):
    # OpenMPI's own allocations outlive MPI_Finalize: LeakSanitizer would fail every rank.
    env = dict(env if env is not None else os.environ, ASAN_OPTIONS="detect_leaks=0")
    toml = tmp_path / "e.toml"
    toml.write_text(text)
    cmd = [BIN, "experiment", str(toml), "--data", str(tmp_path / "data"),
           "--out", str(tmp_path / "out"), "--quiet"]
    if not wait:
        return subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, env=env,
                                start_new_session=True)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)


def ours():
    """The namespaces and devices loadbench's clusters have now."""
    names = os.listdir("/run/netns") if os.path.isdir("/run/netns") else []
    devs = os.listdir("/sys/class/net")
    return ({n for n in names if n.startswith("loadbench-")} |
            {d for d in devs if d.startswith("lbh")})


def mpi_left():
    """mpirun and orted processes of a cluster still running."""
    out = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if "netns-exec" in line or
            ("orted" in line and "loadbench-" in line)]


def test_bad_cluster_input_stops_before_anything_is_made(tmp_path, env):
    cases = [
        (CLUSTER.format(size="16MiB").replace('nic = "200mbit"', 'nic = "fast"'), "not a rate"),
        (CLUSTER.format(size="16MiB").replace('nic = "200mbit"', 'nic = "unshaped"'),
         "not unshaped"),
        (CLUSTER.format(size="16MiB").replace("nodes = [1, 2]", "nodes = [0]"), "nodes"),
        (CLUSTER.format(size="16MiB").replace('[server]\nkind = "http"\n', ""), "[server]"),
        (CLUSTER.format(size="16MiB").replace("[cluster]", "procs = [2]\n[cluster]"),
         "leave procs out"),
    ]
    for text, why in cases:
        p = experiment(tmp_path, text, env=env)
        assert p.returncode == 2, p.stderr
        assert why in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
    if can_make_clusters():
        return
    # More nodes than the memory holds: refused from the plan, before anything is generated.
    big = CLUSTER.format(size="1.5xRAM").replace("nodes = [1, 2]", "nodes = [8]")
    p = experiment(tmp_path, big, env=env)
    assert p.returncode == 2 and "available" in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert not (tmp_path / "data").exists() or not os.listdir(tmp_path / "data")
    # No mpirun on PATH.
    no_mpi = dict(env, PATH="/usr/sbin:/sbin")
    p = experiment(tmp_path, CLUSTER.format(size="16MiB"), env=no_mpi)
    assert p.returncode == 2 and "openmpi-bin" in p.stderr, p.stderr
    assert not ours()


@pytest.mark.skipif(bool(can_make_clusters()), reason=can_make_clusters() or "")
def test_every_design_on_one_and_two_nodes_and_nothing_left(tmp_path, env):
    p = experiment(tmp_path, CLUSTER.format(size="16MiB"), env=env)
    assert p.returncode == 0, p.stderr
    assert not ours() and not mpi_left()
    records = [json.loads(line) for line in open(tmp_path / "out" / "runs.jsonl")]
    assert len(records) == 4 * (1 + 2)
    assert all(r["status"] == "ok" and r["checksum_ok"] for r in records)
    assert {r["nodes"] for r in records} == {1, 2}
    model = records[0]["tensor_bytes"]
    for design in ("every", "bcast", "stripe", "chain"):
        two = [r for r in records if r["nodes"] == 2 and r["details"]["design"] == design]
        assert sorted(r["details"]["node"] for r in two) == [0, 1]
        from_store = sum(r["details"]["store_bytes"] for r in two)
        # The store sends the model once per node for `every`, once in all for the others.
        assert from_store == (2 if design == "every" else 1) * model, (design, from_store)
        # What a node did not get from the store it got from the other.
        for r in two:
            d = r["details"]
            assert d["store_bytes"] + d["peer_rx_bytes"] == model, (design, d)
    env_json = json.load(open(tmp_path / "out" / "env.json"))
    cluster = env_json["cluster"]
    assert cluster["nodes"] == 2 and cluster["nic"] == "200mbit"
    assert [link["name"] for link in cluster["links"]] == ["store", "n0", "n1"]
    for link in cluster["links"]:
        # Each link's own iperf3 figure, both ways, under the rate it is shaped to.
        for way in ("down_bits_per_s", "up_bits_per_s"):
            assert 0.5 * link["bits_per_s"] < link["iperf3"][way] <= 1.05 * link["bits_per_s"]
        assert "htb" in link["tc"]["up"] and "htb" in link["tc"]["down"]
    assert env_json["mpi"]["ranks"] == 2


@pytest.mark.skipif(bool(can_make_clusters()), reason=can_make_clusters() or "")
def test_a_killed_cluster_is_removed_by_the_next_command(tmp_path, env):
    before = ours()
    slow = CLUSTER.format(size="64MiB").replace('nic = "200mbit"', 'nic = "20mbit"')
    p = experiment(tmp_path, slow, env=env, wait=False)
    deadline = time.time() + 120
    while time.time() < deadline and not (tmp_path / "out" / "env.json").exists():
        time.sleep(0.2)
    assert (tmp_path / "out" / "env.json").exists()
    assert ours() - before
    os.killpg(p.pid, signal.SIGKILL)  # the command, not mpirun's group: that is for it to end
    p.wait(timeout=30)
    q = next_measuring_command(tmp_path, env)
    assert q.returncode == 0, q.stderr
    assert "network namespace loadbench-" in q.stderr, q.stderr
    assert ours() == before
    deadline = time.time() + 30
    while mpi_left() and time.time() < deadline:
        time.sleep(0.5)
    assert not mpi_left()
