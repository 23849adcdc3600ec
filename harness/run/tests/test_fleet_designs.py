"""The fleet strategy's designs on one machine: three workers of one run are three nodes on
loopback, loading a small model from the experiment's nginx by every design. Every node ends
with the model's checksum; the store sends the model once per node for `every` and once in all
for the others, and what a node did not get from the store it got from its peers. A local
process that connects to the nodes' ports and feeds them bytes, as any user's could, takes no
node's place: the round is whole, and the connections it made are counted."""
import json
import shutil
import socket
import struct
import threading
import time

import pytest

from conftest import BIN

FLEET = """
name = "fleet-loopback"
reps = 1
cache = ["cold"]
procs = [3]
timeout_s = 120
[server]
kind = "http"
[[file]]
preset = "llama"
size = "8MiB"
format = "safetensors"
[[strategy]]
name = "fleet"
design = ["every", "bcast", "stripe", "chain"]
chunk = "256KiB"
port = {port}
"""


@pytest.mark.skipif(shutil.which("nginx") is None and not shutil.which("/usr/sbin/nginx"),
                    reason="nginx is not installed (Debian's nginx-light)")
def test_every_design_delivers_the_model_to_every_node(tmp_path, env):
    import subprocess
    toml = tmp_path / "e.toml"
    toml.write_text(FLEET.format(port=29600))
    p = subprocess.run([BIN, "experiment", str(toml), "--data", str(tmp_path / "data"),
                        "--out", str(tmp_path / "out"), "--quiet"],
                       capture_output=True, text=True, timeout=300, env=env)
    assert p.returncode == 0, p.stderr
    records = [json.loads(line) for line in open(tmp_path / "out" / "runs.jsonl")]
    assert len(records) == 4 * 3
    assert all(r["status"] == "ok" and r["checksum_ok"] for r in records), records
    model = records[0]["tensor_bytes"]
    for design in ("every", "bcast", "stripe", "chain"):
        nodes = [r["details"] for r in records if r["details"]["design"] == design]
        assert sorted(d["node"] for d in nodes) == [0, 1, 2]
        assert all(d["nodes"] == 3 for d in nodes)
        store = sum(d["store_bytes"] for d in nodes)
        assert store == (3 if design == "every" else 1) * model, (design, store)
        for d in nodes:
            assert d["store_bytes"] + d["peer_rx_bytes"] == model, (design, d)
            assert 0 < d["ready_s"]
        # What the nodes sent each other, they received.
        assert sum(d["peer_tx_bytes"] for d in nodes) == sum(d["peer_rx_bytes"] for d in nodes)
    chain = {d["node"]: d for d in (r["details"] for r in records)
             if d["design"] == "chain"}
    assert chain[0]["peer_tx_bytes"] == model and chain[2]["peer_tx_bytes"] == 0


def test_a_bad_peer_list_fails_the_run_with_the_reason(tmp_path, env):
    import subprocess
    toml = tmp_path / "e.toml"
    toml.write_text(FLEET.format(port=29650).replace('["every", "bcast", "stripe", "chain"]',
                                                     '"chain"'))
    bad = dict(env, LOADBENCH_FLEET_PEERS="127.0.0.1")
    p = subprocess.run([BIN, "experiment", str(toml), "--data", str(tmp_path / "data"),
                        "--out", str(tmp_path / "out"), "--quiet"],
                       capture_output=True, text=True, timeout=300, env=bad)
    if shutil.which("nginx") is None and not shutil.which("/usr/sbin/nginx"):
        pytest.skip("nginx is not installed (Debian's nginx-light)")
    assert p.returncode == 1, p.stderr
    records = [json.loads(line) for line in open(tmp_path / "out" / "runs.jsonl")]
    assert all(r["status"] == "failed" for r in records)
    assert "LOADBENCH_FLEET_PEERS names 1 addresses for 3 readers" in records[0]["error"]


def intrude(port, stop, made):
    """The audit's loop: connect to each node's port and send a header for offset 0 and 8 bytes,
    again and again, until `stop` is set; `made` counts the connections it got."""
    while not stop.is_set():
        for k in range(3):
            try:
                with socket.create_connection(("127.0.0.1", port + k), timeout=0.2) as s:
                    made.append(k)
                    s.sendall(struct.pack("<QQ", 0, 8) + b"intruder")
            except OSError:
                pass
        time.sleep(0.002)


@pytest.mark.skipif(shutil.which("nginx") is None and not shutil.which("/usr/sbin/nginx"),
                    reason="nginx is not installed (Debian's nginx-light)")
def test_a_local_process_feeding_the_nodes_takes_no_place(tmp_path, env):
    import subprocess
    toml = tmp_path / "e.toml"
    toml.write_text(FLEET.format(port=29700).replace(
        '["every", "bcast", "stripe", "chain"]', '"chain"').replace("reps = 1", "reps = 3"))
    stop, made = threading.Event(), []
    loop = threading.Thread(target=intrude, args=(29700, stop, made))
    loop.start()
    try:
        p = subprocess.run([BIN, "experiment", str(toml), "--data", str(tmp_path / "data"),
                            "--out", str(tmp_path / "out"), "--quiet"],
                           capture_output=True, text=True, timeout=300, env=env)
    finally:
        stop.set()
        loop.join()
    assert p.returncode == 0, p.stderr
    records = [json.loads(line) for line in open(tmp_path / "out" / "runs.jsonl")]
    assert len(records) == 3 * 3
    assert all(r["status"] == "ok" and r["checksum_ok"] for r in records), \
        [r.get("error") for r in records]
    model = records[0]["tensor_bytes"]
    for r in records:
        d = r["details"]
        assert d["store_bytes"] + d["peer_rx_bytes"] == model, d
    assert made, "the loop never got a connection: it tested nothing"
    assert sum(r["details"]["peer_rejected"] for r in records) > 0
