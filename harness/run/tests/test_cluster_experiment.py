"""An experiment's [cluster] end to end: nodes as network namespaces on a bridge, each NIC shaped
both ways, one MPI rank per node started by mpirun through `loadbench netns-exec`, the server
in the store's namespace, a small model loaded by every fleet design on one, two and three
nodes (three: the broadcast's owners forward to each other); every record carries `nodes`,
`nic`, `uplink` and its `session`, env.json the cluster with each link's iperf3 figures, each
session its own; the machine lock is held from before the cluster is made until the last rank
is done; and nothing is left once the command ends, nor after it is killed (the next command
removes it, the nodes' folders too, and says so). netns-exec enters only the namespaces of a
cluster a loadbench command above it made. Bad input stops the command before anything is made,
in one line with exit 2. Skips, with the reason, where a cluster cannot be made here (not root,
no iproute2, iperf3, nginx or OpenMPI)."""
import fcntl
import json
import os
import shutil
import signal
import subprocess
import threading
import time

import pytest

from conftest import BIN, next_measuring_command

CLUSTER = """
name = "cluster-small"
reps = 1
cache = ["cold"]
timeout_s = 120
[cluster]
nodes = [1, 2, 3]
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
        (CLUSTER.format(size="16MiB").replace("nodes = [1, 2, 3]", "nodes = [0]"), "nodes"),
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
    big = CLUSTER.format(size="1.5xRAM").replace("nodes = [1, 2, 3]", "nodes = [8]")
    p = experiment(tmp_path, big, env=env)
    assert p.returncode == 2 and "available" in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert not (tmp_path / "data").exists() or not os.listdir(tmp_path / "data")
    # No mpirun on PATH.
    no_mpi = dict(env, PATH="/usr/sbin:/sbin")
    p = experiment(tmp_path, CLUSTER.format(size="16MiB"), env=no_mpi)
    assert p.returncode == 2 and "openmpi-bin" in p.stderr, p.stderr
    assert not ours()


def node_folders():
    """The folders of loadbench's in /tmp: the nodes' (/tmp/loadbench-PIDcN-nK-XXXXXX), the
    servers' (/tmp/loadbench-nginx-XXXXXX)."""
    return {n for n in os.listdir("/tmp") if n.startswith("loadbench-")
            and os.path.isdir(os.path.join("/tmp", n))}


def watch_lock(lock_dir, process, before, free):
    """Until `process` ends: each moment the machine lock was free (no holder) while its cluster
    was up (namespaces of loadbench's other than `before`), appended to `free`."""
    path = os.path.join(lock_dir, "measure.lock")
    while process.poll() is None:
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            fd = None
        held = False  # no lock file: nobody holds it
        if fd is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.flock(fd, fcntl.LOCK_UN)
            except BlockingIOError:
                held = True
            finally:
                os.close(fd)
        if not held and ours() - before:
            free.append(sorted(ours() - before))
        time.sleep(0.01)


def check_designs(records, nodes):
    """Every design on `nodes` nodes: the store's bytes and each node's add up."""
    model = records[0]["tensor_bytes"]
    for design in ("every", "bcast", "stripe", "chain"):
        mine = [r for r in records if r["nodes"] == nodes and r["details"]["design"] == design]
        assert sorted(r["details"]["node"] for r in mine) == list(range(nodes))
        from_store = sum(r["details"]["store_bytes"] for r in mine)
        # The store sends the model once per node for `every`, once in all for the others.
        assert from_store == (nodes if design == "every" else 1) * model, (design, from_store)
        # What a node did not get from the store it got from the others.
        for r in mine:
            d = r["details"]
            assert d["store_bytes"] + d["peer_rx_bytes"] == model, (design, d)
            assert d["peer_rejected"] == 0, d
    return {r["details"]["node"]: r["details"] for r in records
            if r["nodes"] == nodes and r["details"]["design"] == "bcast"}


@pytest.mark.skipif(bool(can_make_clusters()), reason=can_make_clusters() or "")
def test_every_design_on_one_two_and_three_nodes_and_nothing_left(tmp_path, env):
    folders, before = node_folders(), ours()
    p = experiment(tmp_path, CLUSTER.format(size="16MiB"), env=env, wait=False)
    free = []
    watcher = threading.Thread(target=watch_lock,
                               args=(env["LOADBENCH_LOCK_DIR"], p, before, free))
    watcher.start()
    _, stderr = p.communicate(timeout=300)
    watcher.join()
    assert p.returncode == 0, stderr
    assert not free, f"the machine lock was free while the cluster was up: {free[:3]}"
    assert not ours() and not mpi_left()
    assert node_folders() == folders, "the nodes' folders go with the cluster"
    records = [json.loads(line) for line in open(tmp_path / "out" / "runs.jsonl")]
    assert len(records) == 4 * (1 + 2 + 3)
    assert all(r["status"] == "ok" and r["checksum_ok"] for r in records)
    assert {r["nodes"] for r in records} == {1, 2, 3}
    assert {(r["nic"], r["uplink"], r["session"]) for r in records} == {("200mbit", "400mbit", 0)}
    check_designs(records, 2)
    bcast = check_designs(records, 3)
    model = records[0]["tensor_bytes"]
    # Three nodes: node 0 sends each chunk to its owner, node 1 or 2, which forwards it to the
    # other; each owner both sends and receives, and what they send adds up to the model once.
    assert bcast[0]["peer_tx_bytes"] == model and bcast[0]["peer_rx_bytes"] == 0
    for k in (1, 2):
        assert 0 < bcast[k]["peer_tx_bytes"] < model and bcast[k]["peer_rx_bytes"] == model
    assert bcast[1]["peer_tx_bytes"] + bcast[2]["peer_tx_bytes"] == model
    env_json = json.load(open(tmp_path / "out" / "env.json"))
    cluster = env_json["cluster"]
    assert cluster["nodes"] == 3 and cluster["nic"] == "200mbit"
    assert [link["name"] for link in cluster["links"]] == ["store", "n0", "n1", "n2"]
    for link in cluster["links"]:
        # Each link's own iperf3 figure, both ways, under the rate it is shaped to.
        for way in ("down_bits_per_s", "up_bits_per_s"):
            assert 0.5 * link["bits_per_s"] < link["iperf3"][way] <= 1.05 * link["bits_per_s"]
        assert "htb" in link["tc"]["up"] and "htb" in link["tc"]["down"]
    assert [s["cluster"] for s in env_json["sessions"]] == [cluster]
    assert env_json["mpi"]["ranks"] == 3


ONE_NODE = CLUSTER.replace("nodes = [1, 2, 3]", "nodes = [1]").replace(
    'design = ["every", "bcast", "stripe", "chain"]', 'design = "every"')


@pytest.mark.skipif(bool(can_make_clusters()), reason=can_make_clusters() or "")
def test_each_session_records_its_own_cluster_and_rates_are_never_pooled(tmp_path, env):
    """A resumed cluster experiment measures its cluster again: each session keeps its own, each
    record names its session; another NIC rate is another run, never the old one's rep."""
    p = experiment(tmp_path, ONE_NODE.format(size="4MiB"), env=env)
    assert p.returncode == 0, p.stderr
    out = tmp_path / "out"
    more = [BIN, "experiment", str(tmp_path / "e.toml"), "--data", str(tmp_path / "data"),
            "--out", str(out), "--quiet", "--reps", "2", "--resume"]
    asan = dict(env, ASAN_OPTIONS="detect_leaks=0")
    q = subprocess.run(more, capture_output=True, text=True, timeout=300, env=asan)
    assert q.returncode == 0, q.stderr
    (tmp_path / "e.toml").write_text(
        ONE_NODE.format(size="4MiB").replace('nic = "200mbit"', 'nic = "100mbit"'))
    q = subprocess.run(more, capture_output=True, text=True, timeout=300, env=asan)
    assert q.returncode == 0, q.stderr
    records = [json.loads(line) for line in open(out / "runs.jsonl")]
    assert sorted((r["nic"], r["rep"], r["session"]) for r in records) == [
        ("100mbit", 0, 2), ("100mbit", 1, 2), ("200mbit", 0, 0), ("200mbit", 1, 1)]
    env_json = json.load(open(out / "env.json"))
    sessions = env_json["sessions"]
    assert len(sessions) == 3 and all("cluster" in s for s in sessions)
    assert [s["cluster"]["nic"] for s in sessions] == ["200mbit", "200mbit", "100mbit"]
    # Each session measured its own links.
    assert sessions[0]["cluster"]["links"] != sessions[1]["cluster"]["links"]
    assert env_json["cluster"] == sessions[2]["cluster"]


@pytest.mark.skipif(bool(can_make_clusters()), reason=can_make_clusters() or "")
def test_netns_exec_enters_only_the_namespaces_of_a_cluster_above_it(tmp_path, env):
    """mpirun's remote shell as root: a namespace named like a node's but not made by a loadbench
    command above it is refused, and a folder another user made at the old fixed TMPDIR is
    never used."""
    name = f"loadbench-t{os.getpid()}c0-n0"
    trap = f"/tmp/{name}"
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        os.mkdir(trap, 0o777)
        os.chown(trap, 65534, 65534)
        p = subprocess.run([BIN, "netns-exec", name, "echo", "$TMPDIR"], capture_output=True,
                           text=True, timeout=30, env=env)
    finally:
        subprocess.run(["ip", "netns", "del", name], check=False)
        shutil.rmtree(trap, ignore_errors=True)
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert p.stdout == ""
    assert (f"{name}: not a node of a cluster that a loadbench command above this one made"
            in p.stderr), p.stderr


@pytest.mark.skipif(bool(can_make_clusters()), reason=can_make_clusters() or "")
def test_a_killed_cluster_is_removed_by_the_next_command(tmp_path, env):
    before, folders = ours(), node_folders()
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
    assert node_folders() == folders, "the killed cluster's node folders are removed"
    deadline = time.time() + 30
    while mpi_left() and time.time() < deadline:
        time.sleep(0.5)
    assert not mpi_left()
