"""Tests of the peers in loaders/peers/: each run as the `exec` strategy runs it (a real pipe as
LOADBENCH_FD) on small safetensors files written here, of many dtypes, with a padded and an
unpadded header, sharded behind an index; its lines checked and its checksum compared with one
computed here over the tensors' bytes in offset order. Also: a missing module is `unsupported`
naming the Debian package, a missing file is one line on stderr and a non-zero exit, WLF and
GGUF models are read unverified or refused, and (with the binary) `loadbench run --exec`.

Run with /usr/bin/python3 -m pytest loaders/peers/tests. LOADBENCH_BIN names the binary
(default build/loadbench of this checkout); the tests that need it skip without it.
"""
import importlib.util
import json
import os
import random
import re
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PEERS = os.path.dirname(HERE)
REPO = os.path.dirname(os.path.dirname(PEERS))
BIN = os.path.abspath(os.environ.get("LOADBENCH_BIN", os.path.join(REPO, "build", "loadbench")))
PY = sys.executable

sys.path.insert(0, PEERS)
import lbpeer  # noqa: E402

xxhash = pytest.importorskip("xxhash", reason="python3-xxhash is not installed (make setup)")


def installed(module):
    return importlib.util.find_spec(module) is not None


needs_numpy = pytest.mark.skipif(not installed("numpy"), reason="python3-numpy is not installed")
needs_torch = pytest.mark.skipif(not installed("torch"),
                                 reason="python3-torch is not installed (make peers)")
needs_bin = pytest.mark.skipif(not os.access(BIN, os.X_OK),
                               reason=f"no loadbench at {BIN} (build it or set LOADBENCH_BIN)")

# Each peer, the module it needs beside xxhash, and whether it reads WLF and GGUF as bytes.
PEER_LIST = [
    pytest.param("numpy_fromfile", "numpy", True, marks=needs_numpy, id="numpy_fromfile"),
    pytest.param("numpy_memmap", "numpy", True, marks=needs_numpy, id="numpy_memmap"),
    pytest.param("torch_mmap", "torch", False, marks=needs_torch, id="torch_mmap"),
    pytest.param("torch_read", "torch", False, marks=needs_torch, id="torch_read"),
    pytest.param("safetensors_py", None, False, id="safetensors_py"),
]
PACKAGES = {"numpy": "python3-numpy", "torch": "python3-torch", "xxhash": "python3-xxhash"}


# Writing safetensors files.

# (name, dtype, shape), in data order; every dtype of the format, a scalar, an empty tensor and
# tensors of odd byte counts, so that an unpadded header leaves most of them unaligned.
TENSORS = [
    ("embed", "BF16", [4, 6]), ("half", "F16", [7]), ("norm", "F32", [5]), ("scalar", "F64", []),
    ("mask", "BOOL", [3]), ("ids", "I64", [2, 2]), ("empty", "F32", [0, 3]), ("i8", "I8", [3]),
    ("u8", "U8", [9]), ("i16", "I16", [3]), ("u16", "U16", [3]), ("i32", "I32", [2]),
    ("u32", "U32", [2]), ("u64", "U64", [1]), ("c", "C64", [2]), ("f8", "F8_E4M3", [5]),
    ("f8b", "F8_E5M2", [2]), ("f4", "F4", [4]), ("f6", "F6_E2M3", [4]), ("w", "BF16", [3, 5]),
]


def tensor_bytes(dtype, shape, rng):
    n = 1
    for d in shape:
        n *= d
    size = n * lbpeer.DTYPES[dtype][0] // 8
    if dtype == "BOOL":
        return bytes(rng.randrange(2) for _ in range(size))
    return rng.randbytes(size)


def write_safetensors(path, tensors, pad=True, header_order=None, metadata=None, seed=0):
    """Writes tensors [(name, dtype, shape)] back to back in that order, the header's keys in
    `header_order` (names; default: data order). pad: the header padded to 8 bytes; else made
    odd, so that the data starts at an odd offset. Returns {name: bytes}."""
    rng = random.Random(seed)
    data, offsets, pos = {}, {}, 0
    for name, dtype, shape in tensors:
        data[name] = tensor_bytes(dtype, shape, rng)
        offsets[name] = (dtype, shape, [pos, pos + len(data[name])])
        pos += len(data[name])
    header = {"__metadata__": metadata} if metadata is not None else {}
    for name in header_order or [t[0] for t in tensors]:
        dtype, shape, span = offsets[name]
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": span}
    text = json.dumps(header).encode()
    if pad:
        text += b" " * (-len(text) % 8)
    elif len(text) % 2 == 0:
        text += b" "
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little") + text + b"".join(data.values()))
    return data


def expected(files):
    """xxh3-64 over every tensor's bytes: files in the given order, each file's tensors in the
    order of their data_offsets (read back from the file's own header)."""
    h = xxhash.xxh3_64()
    for path in files:
        with open(path, "rb") as f:
            n = int.from_bytes(f.read(8), "little")
            header = json.loads(f.read(n))
            spans = sorted(v["data_offsets"] for k, v in header.items() if k != "__metadata__")
            for begin, end in spans:
                f.seek(8 + n + begin)
                h.update(f.read(end - begin))
    return format(h.intdigest(), "016x")


# Running a peer as the runner does.

def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if k != "LOADBENCH_FD"}
    env.update(extra)
    return env


def run_peer(peer, model, hide=None):
    """Runs PEER.py MODEL with a pipe as LOADBENCH_FD (`hide`: a module made unimportable).
    Returns (exit status, {key: value} of its lines, stderr)."""
    script = os.path.join(PEERS, peer + ".py")
    r, w = os.pipe()
    if hide:
        code = ("import runpy, sys; sys.modules[sys.argv[1]] = None;"
                " sys.path.insert(0, sys.argv[2]); sys.argv = sys.argv[3:];"
                " runpy.run_path(sys.argv[0], run_name='__main__')")
        argv = [PY, "-c", code, hide, PEERS, script, model]
    else:
        argv = [PY, script, model]
    try:
        p = subprocess.run(argv, env=clean_env(LOADBENCH_FD=str(w)), pass_fds=(w,),
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(w)
    with os.fdopen(r) as f:
        text = f.read()
    return p.returncode, parse(text), p.stderr


def parse(text):
    """The lines as the runner reads them: each key once, values well formed."""
    lines = {}
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        assert key not in lines, f"{key} sent twice: {text!r}"
        if key in ("ready", "done"):
            assert re.fullmatch(r"\d+\.\d+", value), line
        elif key == "checksum":
            assert re.fullmatch(r"[0-9a-f]{16}", value), line
        else:
            assert key == "unsupported" and value, line
        lines[key] = value
    return lines


def check_verified(peer, model, want):
    rc, lines, err = run_peer(peer, model)
    assert rc == 0, err
    assert set(lines) == {"ready", "done", "checksum"}, (lines, err)
    assert 0 <= float(lines["ready"]) <= float(lines["done"])
    assert lines["checksum"] == want
    assert err == ""


# Single files.

@pytest.mark.parametrize("peer,module,reads_bytes", PEER_LIST)
def test_every_dtype_with_a_padded_header_in_any_key_order(tmp_path, peer, module, reads_bytes):
    path = str(tmp_path / "m.safetensors")
    order = [t[0] for t in TENSORS]
    random.Random(1).shuffle(order)
    write_safetensors(path, TENSORS, header_order=order, metadata={"format": "pt"})
    check_verified(peer, path, expected([path]))


@pytest.mark.parametrize("peer,module,reads_bytes", PEER_LIST)
def test_an_unpadded_header_leaves_tensors_unaligned(tmp_path, peer, module, reads_bytes):
    path = str(tmp_path / "u.safetensors")
    write_safetensors(path, TENSORS, pad=False, seed=2)
    with open(path, "rb") as f:
        assert (8 + int.from_bytes(f.read(8), "little")) % 2 == 1
    check_verified(peer, path, expected([path]))


@pytest.mark.parametrize("peer,module,reads_bytes", PEER_LIST)
def test_a_file_without_tensors(tmp_path, peer, module, reads_bytes):
    path = str(tmp_path / "e.safetensors")
    write_safetensors(path, [], metadata={})
    check_verified(peer, path, xxhash.xxh3_64(b"").hexdigest())


def test_the_checksum_covers_bytes_in_data_order_not_header_order(tmp_path):
    path = str(tmp_path / "o.safetensors")
    data = write_safetensors(path, TENSORS[:4], header_order=["norm", "embed", "scalar", "half"])
    want = xxhash.xxh3_64(b"".join(data[t[0]] for t in TENSORS[:4])).hexdigest()
    assert expected([path]) == want
    model = lbpeer.read_model(path)
    assert [t.name for t in model.tensors] == [t[0] for t in TENSORS[:4]]
    check_verified("safetensors_py", path, want)


@needs_torch
def test_torch_mmap_tensors_are_views_of_the_mapping(tmp_path):
    path = str(tmp_path / "u.safetensors")
    write_safetensors(path, TENSORS, pad=False)
    import torch
    import torch_mmap
    model = lbpeer.read_model(path)
    storage = torch.UntypedStorage.from_file(path, False, os.path.getsize(path))
    for t in model.tensors:
        x = torch_mmap.tensor([storage], t)
        assert t.size == 0 or x.data_ptr() == storage.data_ptr() + t.offset, t.name
        assert list(x.shape) == (list(t.shape) if lbpeer.torch_dtype(torch, t) else [t.size])


@needs_numpy
def test_numpy_memmap_views_share_the_mapping(tmp_path):
    path = str(tmp_path / "u.safetensors")
    write_safetensors(path, TENSORS, pad=False)
    import numpy as np
    import numpy_memmap
    model = lbpeer.read_model(path)
    m = np.memmap(path, dtype=np.uint8, mode="r")
    for t in model.tensors:
        v = numpy_memmap.view([m], t)
        assert v.nbytes == t.size and (t.size == 0 or np.shares_memory(v, m)), t.name


# Sharded models.

def write_sharded(folder):
    """Three shards whose names sort differently from the order weight_map lists them, each
    shard's header in an order other than its data. Returns the index's path and the shards in
    table order."""
    os.makedirs(folder)
    shards = {"part-b.safetensors": TENSORS[7:14], "part-a.safetensors": TENSORS[:7],
              "part-c.safetensors": TENSORS[14:]}
    weight_map = {}
    for k, (name, tensors) in enumerate(shards.items()):
        order = [t[0] for t in reversed(tensors)]
        write_safetensors(os.path.join(folder, name), tensors, header_order=order, seed=10 + k)
        weight_map.update({t: name for t in order})
    index = os.path.join(folder, "model.safetensors.index.json")
    with open(index, "w") as f:
        json.dump({"metadata": {"total_size": 0}, "weight_map": weight_map}, f)
    return index, [os.path.join(folder, n) for n in sorted(shards)]


@pytest.mark.parametrize("peer,module,reads_bytes", PEER_LIST)
def test_a_sharded_model_by_its_index_and_by_its_folder(tmp_path, peer, module, reads_bytes):
    index, files = write_sharded(str(tmp_path / "model"))
    want = expected(files)
    check_verified(peer, index, want)
    check_verified(peer, os.path.dirname(index), want)


def test_the_table_order_of_a_sharded_model(tmp_path):
    index, files = write_sharded(str(tmp_path / "model"))
    model = lbpeer.read_model(index)
    assert model.files == files
    assert [t.shard for t in model.tensors] == sorted(t.shard for t in model.tensors)
    names = {os.path.basename(f): [t.name for t in model.tensors if model.files[t.shard] == f]
             for f in files}
    assert names["part-a.safetensors"] == [t[0] for t in TENSORS[:7]]
    assert names["part-b.safetensors"] == [t[0] for t in TENSORS[7:14]]


@needs_bin
def test_a_generated_sharded_model_matches_inspect_and_its_stored_checksum(tmp_path):
    out = str(tmp_path / "g.safetensors")
    subprocess.run([BIN, "gen", "--preset", "llama", "--size", "4MiB", "--format", "safetensors",
                    "--shards", "3", "--out", out, "--quiet"], check=True,
                   env=clean_env(LOADBENCH_LOCK_DIR=str(tmp_path / "locks")))
    index = out + ".index.json"
    j = json.loads(subprocess.run([BIN, "inspect", "--json", index], check=True,
                                  capture_output=True, text=True).stdout)
    model = lbpeer.read_model(index)
    assert [t.name for t in model.tensors] == [t["name"] for t in j["tensors"]]
    assert [t.shard for t in model.tensors] == [t["shard"] for t in j["tensors"]]
    with open(index) as f:
        stored = json.load(f)["metadata"]["loadbench.xxh3_64"]
    check_verified("safetensors_py", index, stored)
    if installed("numpy"):
        check_verified("numpy_memmap", index, stored)


# What a peer cannot do.

@pytest.mark.parametrize("peer,module,reads_bytes", PEER_LIST)
def test_wlf_and_gguf_are_read_unverified_or_refused(tmp_path, peer, module, reads_bytes):
    for name, magic in (("m.wlf", b"GIEW"), ("m.gguf", b"GGUF")):
        path = str(tmp_path / name)
        with open(path, "wb") as f:
            f.write(magic + bytes(8188))
        rc, lines, err = run_peer(peer, path)
        assert rc == 0, err
        if reads_bytes:
            assert set(lines) == {"ready", "done"}, lines
        else:
            assert set(lines) == {"unsupported"}, lines
            assert "safetensors" in lines["unsupported"], lines
            assert name.split(".")[1].upper() in lines["unsupported"], lines


def hidden_modules():
    for p in PEER_LIST:
        peer, module, _ = p.values
        yield pytest.param(peer, "xxhash", id=f"{peer}-without-xxhash")
        if module:
            yield pytest.param(peer, module, id=f"{peer}-without-{module}")


@pytest.mark.parametrize("peer,hide", list(hidden_modules()))
def test_a_missing_module_is_unsupported_naming_the_package(tmp_path, peer, hide):
    path = str(tmp_path / "m.safetensors")
    write_safetensors(path, TENSORS[:3])
    rc, lines, err = run_peer(peer, path, hide=hide)
    assert rc == 0, err
    if set(lines) == {"unsupported"} and PACKAGES[hide] not in lines["unsupported"]:
        pytest.skip(f"{peer} stopped earlier: {lines['unsupported']}")  # its other module
    assert set(lines) == {"unsupported"}, (lines, err)
    assert lines["unsupported"].startswith(f"{PACKAGES[hide]} is not installed (make ")


@pytest.mark.parametrize("peer,module,reads_bytes", PEER_LIST)
def test_a_missing_file_is_one_line_on_stderr(tmp_path, peer, module, reads_bytes):
    path = str(tmp_path / "absent.safetensors")
    rc, lines, err = run_peer(peer, path)
    assert rc != 0
    assert lines == {}
    assert len(err.strip().splitlines()) == 1 and path in err, err


def test_by_hand_without_loadbench_fd_the_lines_go_to_stderr(tmp_path):
    path = str(tmp_path / "m.safetensors")
    write_safetensors(path, TENSORS)
    p = subprocess.run([PY, os.path.join(PEERS, "safetensors_py.py"), path], env=clean_env(),
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    keys = [line.split()[1] for line in p.stderr.splitlines()]
    assert keys == ["ready", "done", "checksum"], p.stderr
    assert p.stderr.splitlines()[2].endswith(expected([path]))


def test_a_wrong_command_line_is_a_usage_error():
    p = subprocess.run([PY, os.path.join(PEERS, "safetensors_py.py")], env=clean_env(),
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and p.stderr.startswith("usage: ")


# End to end: the binary runs a peer as an exec strategy.

def has_exec():
    if not os.access(BIN, os.X_OK):
        return False
    p = subprocess.run([BIN, "run", "--help"], capture_output=True, text=True)
    return "--exec" in p.stdout


@needs_numpy
@pytest.mark.skipif(not has_exec(), reason=f"{BIN} has no `run --exec` (or is missing)")
def test_loadbench_runs_a_peer_as_an_exec_strategy(tmp_path):
    path = str(tmp_path / "m.safetensors")
    write_safetensors(path, TENSORS)
    out = str(tmp_path / "results")
    p = subprocess.run([BIN, "run", "--file", path, "--strategies", "none", "--exec",
                        f"np={PY} {{peers}}/numpy_fromfile.py {{file}}", "--cache", "warm",
                        "--reps", "1", "--out", out],
                       env=clean_env(LOADBENCH_LOCK_DIR=str(tmp_path / "locks")),
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    with open(os.path.join(out, "runs.jsonl")) as f:
        runs = [json.loads(line) for line in f]
    runs = [r for r in runs if r["strategy"] == "exec"]
    assert len(runs) == 1
    r = runs[0]
    assert r["status"] == "ok", r
    assert r["label"] == "np" and r["strategy_spec"] == "exec:label=np"
    assert os.path.realpath(r["command"][1]) == os.path.realpath(
        os.path.join(PEERS, "numpy_fromfile.py"))
    assert os.path.realpath(r["command"][2]) == os.path.realpath(path)
    assert r["verify"] == "checksum" and r["checksum_ok"] is True
    assert 0 < r["exec"]["done_s"] <= r["wall_s"]
    assert r["exec"]["ready_s"] <= r["exec"]["done_s"]
