"""The fleet strategy's designs on one machine: three workers of one run are three nodes on
loopback, loading a small model from the experiment's nginx by every design, the stripe phased
and pipelined. Every node ends with the model's checksum; the store sends the model once per
node for `every` and once in all for the others, and what a node did not get from the store it
got from its peers. Under pattern tp each node needs only its slices: every and stripe pull
exactly those (the store sends the model's tensor bytes once in all), bcast's node 0 pulls the
model once and sends each other node exactly its part, and chain relays every byte down the
line while each node keeps its part. A local process that connects to the nodes' ports and
feeds them bytes, as any user's could, takes no node's place: the round is whole, and the
connections it made are counted."""
import json
import shutil
import socket
import struct
import subprocess
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
stripe = ["phased", "pipelined"]
chunk = "256KiB"
port = {port}
"""

STRIPES = 'stripe = ["phased", "pipelined"]\n'


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
    assert len(records) == 4 * 2 * 3
    assert all(r["status"] == "ok" and r["checksum_ok"] for r in records), records
    model = records[0]["tensor_bytes"]
    assert all(r["needed_bytes"] == model for r in records)
    for design in ("every", "bcast", "stripe", "chain"):
        for stripe in ("phased", "pipelined"):
            nodes = [r["details"] for r in records
                     if r["details"]["design"] == design and r["params"]["stripe"] == stripe]
            assert sorted(d["node"] for d in nodes) == [0, 1, 2]
            assert all(d["nodes"] == 3 for d in nodes)
            # The stripe's mode is named where it means something.
            assert all(d.get("stripe") == (stripe if design == "stripe" else None) for d in nodes)
            store = sum(d["store_bytes"] for d in nodes)
            assert store == (3 if design == "every" else 1) * model, (design, store)
            for d in nodes:
                assert d["store_bytes"] + d["peer_rx_bytes"] == model, (design, d)
                assert 0 < d["ready_s"]
            # What the nodes sent each other, they received.
            assert sum(d["peer_tx_bytes"] for d in nodes) == \
                sum(d["peer_rx_bytes"] for d in nodes)
            if design == "stripe":  # each node sends its stripe to both others
                assert all(d["peer_tx_bytes"] == 2 * d["store_bytes"] for d in nodes), nodes
    chain = {d["node"]: d for d in (r["details"] for r in records)
             if d["design"] == "chain"}
    assert chain[0]["peer_tx_bytes"] == model and chain[2]["peer_tx_bytes"] == 0


def write_safetensors(path, tensors):
    """A safetensors file of bf16 tensors (name, shape), one after the other, their bytes a
    pattern that differs from byte to byte. Returns the tensors' bytes."""
    header, at = {}, 0
    for name, shape in tensors:
        n = 2
        for d in shape:
            n *= d
        header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [at, at + n]}
        at += n
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    data = bytes((i * 131 + (i >> 9) * 7 + 3) & 0xFF for i in range(at))
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)
    return at


# Every dimension a multiple of 3: each of 3 nodes has a slice of every tensor along dimension 0
# (tp) and along dimension 1 (tp:1, strided). The vector's and the small matrix's slices are
# smaller than a chunk; the embedding's span several.
TP_TENSORS = [("embed.weight", (1536, 384)), ("blk.0.attn_norm.weight", (384,)),
              ("blk.0.attn_q.weight", (384, 384)), ("blk.0.ffn_down.weight", (384, 1152)),
              ("blk.0.small.weight", (9, 6)), ("output.weight", (1536, 96))]

FLEET_TP = """
name = "fleet-tp"
reps = 1
cache = ["cold"]
procs = [3]
pattern = ["tp", "tp:1"]
timeout_s = 120
[server]
kind = "http"
[[file]]
path = "{model}"
[[strategy]]
name = "fleet"
design = ["every", "bcast", "stripe"]
stripe = ["phased", "pipelined"]
chunk = "256KiB"
port = {port}
"""


@pytest.mark.skipif(shutil.which("nginx") is None and not shutil.which("/usr/sbin/nginx"),
                    reason="nginx is not installed (Debian's nginx-light)")
def test_under_tp_each_node_gets_exactly_its_part(tmp_path, env):
    (tmp_path / "data").mkdir()
    model_path = tmp_path / "data" / "tp.safetensors"  # where the server serves it
    model = write_safetensors(model_path, TP_TENSORS)
    toml = tmp_path / "e.toml"
    toml.write_text(FLEET_TP.format(model=model_path, port=29750))
    p = subprocess.run([BIN, "experiment", str(toml), "--data", str(tmp_path / "data"),
                        "--out", str(tmp_path / "out"), "--quiet"],
                       capture_output=True, text=True, timeout=300, env=env)
    assert p.returncode == 0, p.stderr
    records = [json.loads(line) for line in open(tmp_path / "out" / "runs.jsonl")]
    assert len(records) == 2 * 3 * 2 * 3
    assert all(r["status"] == "ok" and r["checksum_ok"] for r in records), \
        [r.get("error") for r in records]
    for pattern in ("tp", "tp:1"):
        for design in ("every", "bcast", "stripe"):
            for stripe in ("phased", "pipelined"):
                nodes = [r for r in records if r["pattern"] == pattern
                         and r["details"]["design"] == design and r["params"]["stripe"] == stripe]
                assert sorted(r["details"]["node"] for r in nodes) == [0, 1, 2]
                # Each node needs its third of every tensor: the parts add up to the model.
                assert all(r["needed_bytes"] == r["tensor_bytes"] for r in nodes)
                assert all(r["needed_bytes"] == model // 3 for r in nodes), nodes
                d = {r["details"]["node"]: dict(r["details"], needed=r["needed_bytes"])
                     for r in nodes}
                where = (pattern, design, stripe)
                store = sum(x["store_bytes"] for x in d.values())
                # The store sends the model's tensor bytes once in all, every design alike:
                # every and stripe pull each node's slices, bcast's node 0 pulls every tensor.
                assert store == model, (where, store)
                if design == "bcast":
                    assert d[0]["store_bytes"] == model and d[0]["peer_rx_bytes"] == 0, where
                    assert d[0]["peer_tx_bytes"] == d[1]["needed"] + d[2]["needed"], where
                    for k in (1, 2):
                        assert d[k]["store_bytes"] == 0 and d[k]["peer_tx_bytes"] == 0, where
                        assert d[k]["peer_rx_bytes"] == d[k]["needed"], where
                else:  # under tp a node's stripe is its own slices: stripe is every
                    for x in d.values():
                        assert x["store_bytes"] == x["needed"], where
                        assert x["peer_rx_bytes"] == x["peer_tx_bytes"] == 0, where
                        assert x["store_requests"] >= len(TP_TENSORS), where


@pytest.mark.skipif(shutil.which("nginx") is None and not shutil.which("/usr/sbin/nginx"),
                    reason="nginx is not installed (Debian's nginx-light)")
def test_under_tp_a_chain_relays_every_byte_and_each_node_keeps_its_part(tmp_path, env):
    (tmp_path / "data").mkdir()
    model_path = tmp_path / "data" / "tp.safetensors"
    model = write_safetensors(model_path, TP_TENSORS)
    toml = tmp_path / "e.toml"
    toml.write_text(FLEET_TP.format(model=model_path, port=29760).replace(
        '["every", "bcast", "stripe"]', '"chain"').replace('stripe = ["phased", "pipelined"]\n',
                                                           ""))
    p = subprocess.run([BIN, "experiment", str(toml), "--data", str(tmp_path / "data"),
                        "--out", str(tmp_path / "out"), "--quiet"],
                       capture_output=True, text=True, timeout=300, env=env)
    assert p.returncode == 0, p.stderr
    records = [json.loads(line) for line in open(tmp_path / "out" / "runs.jsonl")]
    assert len(records) == 2 * 3
    assert all(r["status"] == "ok" and r["checksum_ok"] for r in records), \
        [r.get("error") for r in records]
    for pattern in ("tp", "tp:1"):
        d = {r["details"]["node"]: dict(r["details"], needed=r["needed_bytes"])
             for r in records if r["pattern"] == pattern}
        assert all(x["needed"] == model // 3 for x in d.values()), d
        # Node 0 pulls the model once; every byte goes down the chain, whatever a node needs.
        assert d[0]["store_bytes"] == model and d[1]["store_bytes"] == d[2]["store_bytes"] == 0
        assert d[1]["peer_rx_bytes"] == d[2]["peer_rx_bytes"] == model, (pattern, d)
        assert d[0]["peer_tx_bytes"] == d[1]["peer_tx_bytes"] == model, (pattern, d)
        assert d[2]["peer_tx_bytes"] == 0, (pattern, d)


def test_a_bad_peer_list_fails_the_run_with_the_reason(tmp_path, env):
    import subprocess
    toml = tmp_path / "e.toml"
    toml.write_text(FLEET.format(port=29650).replace('["every", "bcast", "stripe", "chain"]',
                                                     '"chain"').replace(STRIPES, ""))
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
        '["every", "bcast", "stripe", "chain"]', '"chain"').replace("reps = 1", "reps = 3")
        .replace(STRIPES, ""))
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
