"""Tests of torch_fleet.py, the engine's fleet designs (PyTorch's torch.distributed on gloo),
against a real nginx (`loadbench serve --kind http`) on loopback: N nodes started by hand as the
harness starts a command's readers (LOADBENCH_READER, LOADBENCH_FLEET_TOKEN, LOADBENCH_DEADLINE,
LOADBENCH_PATTERN), each its lines on stderr.

- both designs give every node the model's checksum (safetensors and WLF, 1 to 3 nodes), and
  under tp each node its part's, the one `loadbench run --pattern tp` checks its readers against;
- the figures add up: node 0 alone pulls under bcast, the stripes are the model under stripe;
- a node that never joins is named by the others, with the rendezvous's address, by the
  deadline, and nothing of the run is left; a process without the run's token takes no node's
  place; a node killed mid-load fails the others at once;
- torch hidden is `unsupported python3-torch`, a bad command line exits 2, a missing object or a
  split that does not divide is one line and exit 1;
- `loadbench experiment` runs fleet:design=torch_bcast and torch_stripe as commands, two
  readers each, verified under replicated and tp.

Skips without python3-torch (make peers), python3-xxhash, nginx or the binary. Run with
/usr/bin/python3 -m pytest loaders/peers/tests/test_torch_fleet.py; LOADBENCH_BIN names the
binary (default build/loadbench of this checkout).
"""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PEERS = os.path.dirname(HERE)
REPO = os.path.dirname(os.path.dirname(PEERS))
BIN = os.path.abspath(os.environ.get("LOADBENCH_BIN", os.path.join(REPO, "build", "loadbench")))
PY = sys.executable
PEER = os.path.join(PEERS, "torch_fleet.py")
TIMEOUT = 120
DETAILS = {"design", "node", "nodes", "ready_s", "connect_s", "store_bytes", "store_requests",
           "peer_rx_bytes", "peer_tx_bytes", "table_bytes", "table_requests"}

sys.path.insert(0, PEERS)
import lbpeer  # noqa: E402

pytest.importorskip("xxhash", reason="python3-xxhash is not installed (make setup)")
pytest.importorskip("torch", reason="python3-torch is not installed (make peers)")
if not os.access(BIN, os.X_OK):
    pytest.skip(f"no loadbench at {BIN} (build it or set LOADBENCH_BIN)", allow_module_level=True)
# A measuring command waits at most 5 s for a busy machine to settle (harness/run/tests).
os.environ.setdefault("LOADBENCH_SETTLE_WAIT", "5")

_ports = iter(range(29700 + os.getpid() % 200 * 20, 65000))


def port():
    """A rendezvous port of each test's own (a closed run's may linger in TIME_WAIT)."""
    return next(_ports)


def token(k=0):
    return f"{os.getpid() % 65536:04x}{k:04x}" + "5" * 24


def start_server(root, env, *extra):
    p = subprocess.Popen([BIN, "serve", "--kind", "http", "--root", str(root), *extra,
                          "--until-stdin-closes"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env)
    line = p.stdout.readline()
    if not line.startswith("serving "):
        p.kill()
        pytest.skip(f"loadbench serve --kind http: {line!r} {p.stderr.read()}")
    return p, line.split(" at ")[1].split()[0]


def stop_server(p):
    p.send_signal(signal.SIGTERM)
    try:
        p.wait(timeout=20)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """nginx serving generated models: (base URL, folder, {name: checksum})."""
    base = tmp_path_factory.mktemp("fleet")
    data = base / "data"
    data.mkdir()
    env = dict(os.environ, LOADBENCH_LOCK_DIR=str(base / "locks"))
    models = {}
    for name, fmt in (("m.safetensors", "safetensors"), ("m.wlf", "wlf")):
        subprocess.run([BIN, "gen", "--preset", "llama", "--size", "8MiB", "--format", fmt,
                        "--out", str(data / name), "--quiet"], check=True, env=env,
                       timeout=TIMEOUT)
        inspect = json.loads(subprocess.run([BIN, "inspect", "--json", str(data / name)],
                                            check=True, capture_output=True, text=True,
                                            timeout=TIMEOUT).stdout)
        models[name] = inspect.get("header", {}).get("checksum") or inspect.get("checksum")
    p, url = start_server(data, env)
    try:
        yield url, data, models
    finally:
        stop_server(p)


def node_env(k, n, tok, deadline_s, pattern="replicated"):
    env = {key: v for key, v in os.environ.items() if not key.startswith("LOADBENCH_")}
    env.update(LOADBENCH_READER=f"{k}/{n}", LOADBENCH_FLEET_TOKEN=tok,
               LOADBENCH_DEADLINE=f"{time.monotonic() + deadline_s:.3f}",
               LOADBENCH_PATTERN=pattern)
    return env


def start_nodes(n, model, design, nodes=None, pattern="replicated", deadline_s=60,
                tok=None, args=()):
    """Starts nodes `nodes` (default all) of an n-node run: {k: Popen}."""
    rdv, tok = port(), tok or token()
    return {k: subprocess.Popen([PY, PEER, "--design", design, "--port", str(rdv), *args, model],
                                env=node_env(k, n, tok, deadline_s, pattern),
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
            for k in (range(n) if nodes is None else nodes)}


def finish(procs, timeout=TIMEOUT):
    """Each node's (exit status, {key: value} of its lines, stderr)."""
    out = {}
    for k, p in procs.items():
        try:
            _, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            _, err = p.communicate()
            pytest.fail(f"node {k} still ran after {timeout} s: {err}")
        lines = {}
        for line in err.splitlines():
            words = line.split(None, 2)
            if len(words) == 3 and words[0] == "torch_fleet.py:" and words[1] != "detail":
                lines[words[1]] = words[2]
            elif len(words) == 3 and words[1] == "detail":
                key, value = words[2].split(" ", 1)
                lines[key] = json.loads(value)
        out[k] = (p.returncode, lines, err)
    return out


def run_nodes(n, model, design, **kw):
    return finish(start_nodes(n, model, design, **kw))


def check_verified(results, want):
    for k, (rc, lines, err) in results.items():
        assert rc == 0, err
        assert lines["checksum"] == (want[k] if isinstance(want, dict) else want), err
        assert 0 <= float(lines["ready"]) <= float(lines["done"]), err
        assert DETAILS <= set(lines), err
        assert lines["node"] == k and lines["nodes"] == len(results)


def span(store, name):
    """The model's tensor span: the bytes a whole copy moves."""
    tensors = lbpeer.read_model(str(store[1] / name)).tensors
    tensors = tensors if tensors is not None else lbpeer.table_from_reader(
        _file_reader(store[1] / name), os.path.getsize(store[1] / name), name)
    return max(t.offset + t.size for t in tensors) - min(t.offset for t in tensors)


def _file_reader(path):
    data = path.read_bytes()
    return lambda offset, length: data[offset:offset + length]


# Every node gets the model.

@pytest.mark.parametrize("design,n,name", [("bcast", 3, "m.safetensors"),
                                           ("stripe", 3, "m.safetensors"),
                                           ("bcast", 2, "m.wlf"), ("stripe", 1, "m.wlf")])
def test_every_node_gets_the_models_checksum(store, design, n, name):
    url, _, models = store
    results = run_nodes(n, f"{url}/{name}", design, args=("--chunk", "1MiB"))
    check_verified(results, models[name])
    m = span(store, name)
    pulled = [lines["store_bytes"] for _, lines, _ in results.values()]
    assert sum(pulled) == m
    if design == "bcast":
        assert pulled[0] == m  # node 0 alone pulls
        assert all(lines["peer_rx_bytes"] == m for k, (_, lines, _) in results.items() if k)
        # gloo's broadcast is a binomial tree: node 0 sends ceil(log2 N) copies
        assert results[0][1]["peer_tx_bytes"] == (n - 1).bit_length() * m
    elif n > 1:
        rounds = -(-m // (1 << 20) // n)
        for _, lines, _ in results.values():  # the ring: N - 1 padded chunks a round each way
            assert lines["peer_rx_bytes"] == lines["peer_tx_bytes"] == rounds * (n - 1) << 20


@pytest.fixture(scope="module")
def part_checksums(store, tmp_path_factory):
    """parts(pattern, N): [part checksum of reader k] as `loadbench run --pattern` checks its
    readers' parts."""
    known = {}

    def parts(pattern, n):
        if (pattern, n) not in known:
            res = tmp_path_factory.mktemp("parts")
            r = subprocess.run([BIN, "run", "--file", str(store[1] / "m.safetensors"), "--procs",
                                str(n), "--pattern", pattern, "--strategies", "fread", "--reps",
                                "1", "--cache", "warm", "--no-report", "--out", str(res)],
                               capture_output=True, text=True, timeout=300,
                               env=dict(os.environ, LOADBENCH_LOCK_DIR=str(res / "locks")))
            assert r.returncode == 0, r.stderr
            records = [json.loads(line) for line in open(res / "runs.jsonl")]
            assert all(x["checksum_ok"] for x in records)
            known[pattern, n] = {x["proc"]: x["checksum"] for x in records}
        return known[pattern, n]
    return parts


@pytest.mark.parametrize("design,n,pattern", [
    ("bcast", 2, "tp"), ("stripe", 2, "tp"), ("bcast", 4, "tp"), ("stripe", 4, "tp"),
    ("bcast", 2, "tp:1"), ("stripe", 2, "tp:1")])
def test_under_tp_each_node_gets_its_parts_checksum(store, part_checksums, design, n, pattern):
    url, data, _ = store
    results = run_nodes(n, f"{url}/m.safetensors", design, pattern=pattern)
    check_verified(results, part_checksums(pattern, n))
    m = span(store, "m.safetensors")
    part = m // n  # every tensor's cut dimension divides: each part is 1/N of the bytes
    for k, (_, lines, _) in results.items():
        if design == "stripe":  # its own slices and nothing else
            assert lines["store_bytes"] == part
            assert lines["peer_rx_bytes"] == lines["peer_tx_bytes"] == 0
        else:  # node 0 pulls the model and scatters each node its slices
            assert lines["store_bytes"] == (m if k == 0 else 0)
            assert lines["peer_rx_bytes"] == (0 if k == 0 else part)
            assert lines["peer_tx_bytes"] == ((n - 1) * part if k == 0 else 0)


def test_a_file_is_read_as_well(store):
    _, data, models = store
    results = run_nodes(2, str(data / "m.safetensors"), "stripe")
    check_verified(results, models["m.safetensors"])


# Rendezvous that cannot complete end by the deadline, naming what did not come.

def left_behind(tok):
    """Processes whose environment holds the run's token."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if tok.encode() in f.read():
                    found.append(int(pid))
        except OSError:
            pass
    return found


def check_failed(results, says, within_s=None):
    for k, (rc, lines, err) in results.items():
        assert rc == 1, err
        assert len(err.strip().splitlines()) == 1, err
        assert all(s.format(k=k) in err for s in says), err
        assert "checksum" not in lines


def test_a_node_that_never_joins_is_named_by_the_others_by_the_deadline(store):
    url, _, _ = store
    tok = token(1)
    start = time.monotonic()
    procs = start_nodes(3, f"{url}/m.safetensors", "bcast", nodes=[0, 1], deadline_s=6, tok=tok)
    results = finish(procs)
    # By the 6 s deadline, not torch's own 30 min; 5 s more allow a slow machine's start-up.
    assert time.monotonic() - start < 6 + 5
    rdv = procs[0].args[procs[0].args.index("--port") + 1]
    check_failed(results, ["node {k}: node 2 (127.0.0.1) did not join the rendezvous at "
                           f"127.0.0.1:{rdv} by the deadline"])
    assert left_behind(tok) == []


def test_without_node_0_the_others_name_its_address(store):
    url, _, _ = store
    start = time.monotonic()
    procs = start_nodes(3, f"{url}/m.safetensors", "stripe", nodes=[1, 2], deadline_s=5)
    results = finish(procs)
    assert time.monotonic() - start < 5 + 5  # by the deadline, as above
    rdv = procs[1].args[procs[1].args.index("--port") + 1]
    check_failed(results, ["node {k}: no rendezvous at 127.0.0.1:" + rdv + " (node 0's)"])


def test_a_process_without_the_runs_token_takes_no_place(store):
    url, _, _ = store
    model = f"{url}/m.safetensors"
    procs = start_nodes(3, model, "bcast", nodes=[0, 1], deadline_s=6, tok=token(2))
    rdv = procs[0].args[procs[0].args.index("--port") + 1]
    stray = subprocess.Popen([PY, PEER, "--design", "bcast", "--port", rdv, model],
                             env=node_env(2, 3, token(3), 6), stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    results = finish(procs)
    check_failed(results, ["node 2 (127.0.0.1) did not join"])
    rc, _, err = finish({2: stray})[2]
    assert rc == 1 and "did not join" in err, err


def sockets(pid):
    n = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            n += os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:")
        except OSError:
            pass
    return n


def test_a_node_killed_mid_load_fails_the_others_at_once(store, tmp_path):
    # A slow store (256 KiB/s a connection) keeps the load going for half a minute.
    slow, url = start_server(store[1], dict(os.environ, LOADBENCH_LOCK_DIR=str(tmp_path)),
                             "--limit-rate", "256KiB")
    try:
        procs = start_nodes(3, f"{url}/m.safetensors", "bcast", deadline_s=60,
                            args=("--concurrency", "1", "--chunk", "64KiB"))
        # In the group: its store connection, gloo's listener and a pair to each other node.
        until = time.monotonic() + 30
        while sockets(procs[2].pid) < 4 and time.monotonic() < until:
            time.sleep(0.1)
        time.sleep(0.5)
        procs[2].kill()
        killed = time.monotonic()
        results = finish({k: p for k, p in procs.items() if k != 2})
        assert time.monotonic() - killed < 15
        check_failed(results, ["node {k}: "])
    finally:
        stop_server(slow)


# What the peer cannot do.

def test_torch_hidden_is_unsupported_naming_the_package(store):
    url, _, _ = store
    code = ("import runpy, sys; sys.modules['torch'] = None; sys.path.insert(0, sys.argv[1]);"
            " sys.argv = sys.argv[2:]; runpy.run_path(sys.argv[0], run_name='__main__')")
    p = subprocess.run([PY, "-c", code, PEERS, PEER, "--design", "bcast",
                        f"{url}/m.safetensors"], capture_output=True, text=True, timeout=TIMEOUT,
                       env=node_env(0, 1, token(), 30))
    assert p.returncode == 0, p.stderr
    assert p.stderr.strip() == ("torch_fleet.py: unsupported python3-torch is not installed "
                                "(make peers)")


@pytest.mark.parametrize("argv", [[], ["--design", "scatter"], ["--design", "bcast", "--chunk",
                                                                "0"],
                                  ["--design", "bcast", "--port", "70000"],
                                  ["--design", "stripe", "--concurrency", "0"]])
def test_a_bad_command_line_exits_2(store, argv):
    p = subprocess.run([PY, PEER, *argv, f"{store[0]}/m.safetensors"], capture_output=True,
                       text=True, timeout=TIMEOUT, env=node_env(0, 1, token(), 30))
    assert p.returncode == 2, p.stderr
    assert "usage:" in p.stderr


@pytest.mark.parametrize("name,n,pattern,says", [
    ("missing.safetensors", 1, "replicated", "missing.safetensors: no such object (HTTP 404)"),
    ("m.safetensors", 3, "tp", "tp cannot split tensor"),
])
def test_what_it_cannot_load_is_one_line_and_exit_1(store, name, n, pattern, says):
    results = run_nodes(n, f"{store[0]}/{name}", "bcast", pattern=pattern, deadline_s=20)
    check_failed(results, [says])


def test_a_pattern_it_does_not_honour_is_unsupported(store):
    results = run_nodes(2, f"{store[0]}/m.safetensors", "bcast", pattern="pp", deadline_s=20)
    for rc, lines, err in results.values():
        assert rc == 0, err
        assert lines["unsupported"] == ("torch_fleet: pattern 'pp': this peer honours "
                                        "replicated and tp[:DIM]")


# The experiment's spelling, run.

def test_an_experiment_runs_the_engines_designs_as_commands(store, tmp_path):
    _, data, _ = store
    path = tmp_path / "engines.toml"
    path.write_text(f"""# Question: the engine's designs, verified as commands
name = "engines"
reps = 1
cache = "warm"
procs = [2]
pattern = ["replicated", "tp"]
timeout_s = 120
[server]
kind = "http"
[[file]]
path = "{data / 'm.safetensors'}"
[[strategy]]
name = "fleet"
design = ["torch_bcast", "torch_stripe"]
chunk = "1MiB"
""")
    out = tmp_path / "out"
    r = subprocess.run([BIN, "experiment", str(path), "--out", str(out), "--no-report",
                        "--data", str(data)], capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, LOADBENCH_LOCK_DIR=str(tmp_path / "locks")))
    assert r.returncode == 0, r.stderr[-3000:]
    records = [json.loads(line) for line in open(out / "runs.jsonl")]
    assert len(records) == 2 * 2 * 2  # designs x patterns x readers
    for x in records:
        assert x["status"] == "ok", x.get("error")
        assert x["checksum_ok"] is True
        assert x["label"] == x["details"]["design"]
        assert x["details"]["nodes"] == 2 and x["details"]["node"] == x["proc"]


def test_run_reads_the_spelling_on_the_file_itself(store, tmp_path):
    """`run --strategies fleet:design=torch_stripe` without a server: the command reads the
    file; two readers under tp, each verified against its part."""
    out = tmp_path / "out"
    r = subprocess.run([BIN, "run", "--file", str(store[1] / "m.safetensors"), "--strategies",
                        "fleet:design=torch_stripe:chunk=1MiB", "--procs", "2", "--pattern", "tp",
                        "--reps", "1", "--cache", "warm", "--no-report", "--out", str(out)],
                       capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, LOADBENCH_LOCK_DIR=str(tmp_path / "locks")))
    assert r.returncode == 0, r.stderr[-3000:]
    records = [json.loads(line) for line in open(out / "runs.jsonl")]
    assert sorted(x["proc"] for x in records) == [0, 1]
    for x in records:
        assert x["status"] == "ok" and x["checksum_ok"] is True, x.get("error")
        assert x["label"] == "torch_stripe" and x["details"]["store_requests"] > 0
