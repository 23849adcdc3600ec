"""Tests of scripts/fio-compare.sh: the fio twins it builds, how it reads fio's output, its
errors, and a real two-strategy comparison on a small generated file (root and fio needed).

Run with /usr/bin/python3 -m pytest scripts/tests. LOADBENCH_BIN names the loadbench binary
(default build/loadbench of this checkout)."""
import csv
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO, "scripts", "fio-compare.sh")
BIN = os.path.abspath(os.environ.get("LOADBENCH_BIN", os.path.join(REPO, "build", "loadbench")))
MIB = 1 << 20

spec = importlib.util.spec_from_file_location("fio_compare",
                                              os.path.join(REPO, "scripts", "fio_compare.py"))
fc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fc)

needs_bin = pytest.mark.skipif(not os.access(BIN, os.X_OK),
                               reason=f"no loadbench at {BIN} (build it or set LOADBENCH_BIN)")
needs_fio = pytest.mark.skipif(shutil.which("fio") is None,
                               reason="fio is not installed (scripts/setup.sh installs it)")
needs_root = pytest.mark.skipif(os.geteuid() != 0,
                                reason="cold runs need root (sync and drop_caches)")


def run(*args, env=None):
    return subprocess.run(["/bin/bash", SCRIPT, *args], capture_output=True, text=True, env=env,
                          timeout=120)


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


# The twins.

def test_pread_mt_twin_is_one_job_per_thread_each_a_slice_inside_the_file():
    size = 100 * MIB + 5
    opts, desc = fc.fio_job("pread_mt", {"threads": 3, "chunk": 8 * MIB, "buffer": "malloc"},
                            size)
    assert opts["ioengine"] == "psync" and opts["bs"] == 8 * MIB and "direct" not in opts
    assert opts["numjobs"] == 3
    assert opts["size"] == opts["offset_increment"]
    assert opts["size"] % 4096 == 0
    assert 2 * opts["offset_increment"] + opts["size"] <= size  # no job past the end
    assert size - 3 * opts["size"] < 3 * 4096  # and together they cover the file
    assert "numjobs=3" in desc and "bs=8MiB" in desc


def test_odirect_twin_slices_align_to_chunk_and_one_thread_reads_the_whole_file():
    size = 64 * MIB + 12345
    opts, _ = fc.fio_job("odirect", {"threads": 2, "chunk": MIB}, size)
    assert opts["direct"] == 1 and opts["numjobs"] == 2
    assert opts["size"] % MIB == 0 and opts["offset_increment"] == opts["size"]
    one, _ = fc.fio_job("odirect", {"threads": 1, "chunk": MIB}, size)
    assert "numjobs" not in one and one["size"] == size and one["direct"] == 1


def test_more_threads_than_slices_gives_fewer_jobs():
    opts, _ = fc.fio_job("pread_mt", {"threads": 8, "chunk": MIB}, 3 * 4096)
    assert opts["numjobs"] == 3 and opts["size"] == 4096
    tiny, _ = fc.fio_job("pread_mt", {"threads": 8, "chunk": MIB}, 100)
    assert "numjobs" not in tiny and tiny["size"] == 100


def test_io_uring_twin_follows_direct_fixed_and_regfile():
    plain, _ = fc.fio_job("io_uring", {"qd": 16, "chunk": 2 * MIB, "direct": "off",
                                       "fixed": "off", "regfile": "off"}, 10 * MIB)
    assert plain["ioengine"] == "io_uring" and plain["iodepth"] == 16 and plain["bs"] == 2 * MIB
    assert not {"direct", "fixedbufs", "registerfiles"} & plain.keys()
    full, desc = fc.fio_job("io_uring", {"qd": 32, "chunk": MIB, "direct": "on", "fixed": "on",
                                         "regfile": "on"}, 10 * MIB)
    assert full["direct"] == 1 and full["fixedbufs"] == 1 and full["registerfiles"] == 1
    assert "direct=1 fixedbufs=1" in desc


def test_mmap_twins_differ_only_in_the_sequential_hint():
    plain, _ = fc.fio_job("mmap", {}, 10 * MIB)
    seq, _ = fc.fio_job("mmap_seq", {}, 10 * MIB)
    assert plain["ioengine"] == seq["ioengine"] == "mmap"
    assert plain["fadvise_hint"] == 0 and seq["fadvise_hint"] == 1
    assert {k: v for k, v in plain.items() if k != "fadvise_hint"} == \
        {k: v for k, v in seq.items() if k != "fadvise_hint"}


def test_jobfile_reads_the_file_and_escapes_colons():
    text = fc.fio_jobfile("pread", "/data/a:b.wlf", {"ioengine": "psync", "bs": MIB})
    assert "filename=/data/a\\:b.wlf\n" in text
    assert "rw=read\n" in text and "bs=1048576\n" in text


# Reading fio's report.

def job(io_bytes, runtime_ms, error=0):
    return {"error": error, "read": {"io_bytes": io_bytes, "runtime": runtime_ms}}


def test_fio_result_is_all_bytes_over_the_longest_runtime():
    assert fc.fio_result({"jobs": [job(100, 50), job(300, 200)]}) == (400, 0.2)


def test_fio_result_refuses_a_job_error_and_a_zero_runtime():
    with pytest.raises(ValueError, match="error 5"):
        fc.fio_result({"jobs": [job(100, 50), job(0, 0, error=5)]})
    with pytest.raises(ValueError, match="0 ms"):
        fc.fio_result({"jobs": [job(100, 0)]})


# The command line.

def test_help_is_the_module_docstring():
    p = run("--help")
    assert p.returncode == 0
    assert p.stdout.startswith(fc.__doc__.splitlines()[0])
    for option in ("--reps", "--out", "--bin", "--strategies"):
        assert option in p.stdout


@pytest.mark.parametrize("make", ["missing", "directory"])
def test_bad_file_is_one_line_and_exit_2(make):
    with tempfile.TemporaryDirectory() as tmp:
        target = os.path.join(tmp, "nothing.wlf") if make == "missing" else tmp
        out = os.path.join(tmp, "out")
        p = run(target, "--out", out)
        assert p.returncode == 2
        assert p.stdout == ""
        assert len(p.stderr.splitlines()) == 1 and target in p.stderr
        assert not os.path.exists(out)


def test_strategy_without_a_twin_is_refused():
    with tempfile.NamedTemporaryFile() as f:
        p = run(f.name, "--strategies", "mmap,shm")
        assert p.returncode == 2
        assert len(p.stderr.splitlines()) == 1 and "'shm' has no fio twin" in p.stderr


def test_missing_fio_is_one_line_and_exit_2():
    with tempfile.NamedTemporaryFile() as f, tempfile.TemporaryDirectory() as empty:
        p = run(f.name, env={"PATH": empty})
        assert p.returncode == 2
        assert len(p.stderr.splitlines()) == 1 and "fio not found" in p.stderr


@needs_bin
@needs_fio
def test_a_file_loadbench_cannot_read_is_one_line_and_exit_2():
    with tempfile.NamedTemporaryFile() as f:
        f.write(b"not a weight file" * 100)
        f.flush()
        p = run(f.name, "--bin", BIN)
        assert p.returncode == 2
        assert len(p.stderr.splitlines()) == 1 and f.name in p.stderr


# Real measurements.

@pytest.fixture(scope="module")
def weights():
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "x.wlf")
        subprocess.run([BIN, "gen", "--preset", "llama", "--size", "64MiB", "--format", "wlf",
                        "--out", path], check=True, capture_output=True)
        yield tmp, path


@needs_bin
@needs_fio
@needs_root
def test_compare_two_strategies(weights):
    tmp, path = weights
    out = os.path.join(tmp, "compare")
    p = run(path, "--reps", "2", "--strategies", "fread,mmap", "--out", out, "--bin", BIN)
    assert p.returncode == 0, p.stderr
    file_bytes = os.path.getsize(path)

    rows = {r["name"]: r for r in read_csv(os.path.join(out, "summary.csv"))}
    assert rows["fread"]["time_used"] == "ready_s" and rows["mmap"]["time_used"] == "wall_s"
    for name in ("fread", "mmap"):
        r = rows[name]
        lb, fio = float(r["loadbench_gbps"]), float(r["fio_gbps"])
        assert lb > 0 and fio > 0
        assert float(r["ratio"]) == pytest.approx(lb / fio, rel=1e-12)
        assert r["loadbench_n"] == r["fio_n"] == "2"
    for name in fc.BASELINES:
        assert float(rows[name]["baseline_gbps"]) > 0 and rows[name]["baseline_n"] == "2"

    # Every figure comes from the raw results saved beside it.
    measured = read_csv(os.path.join(out, "measurements.csv"))
    assert len(measured) == 2 * (2 * 2 + 2)
    for m in measured:
        assert m["status"] == "ok", m
        if m["side"] == "loadbench":
            with open(os.path.join(m["path"], "runs.jsonl")) as f:
                rec = json.loads(f.readline())
            assert float(m["gbps"]) == pytest.approx(file_bytes / rec[m["time_used"]] / 1e9)
        elif m["side"] == "fio":
            with open(m["path"]) as f:
                nbytes, seconds = fc.fio_result(json.load(f))
            assert 0 < file_bytes - nbytes < MIB  # the file less its last partial block
            assert float(m["gbps"]) == pytest.approx(nbytes / seconds / 1e9)
        else:
            with open(m["path"]) as f:
                assert json.load(f)["bytes"] == file_bytes

    # Each loadbench run is followed by its twin, and the order rotates by one per repetition.
    def order(rep):
        return [(m["name"], m["side"]) for m in measured if m["rep"] == rep]
    first = order("0")
    assert first[0] == ("fread", "loadbench") and first[1] == ("fread", "fio")
    assert order("1") == first[2:] + first[:2]

    with open(os.path.join(out, "table.txt")) as f:
        table = f.read()
    assert table == p.stdout
    assert "Targets:" in table and "best loadbench" in table


@needs_bin
@needs_fio
@needs_root
def test_interrupt_keeps_what_finished(weights):
    tmp, path = weights
    out = os.path.join(tmp, "interrupted")
    measurements = os.path.join(out, "measurements.csv")
    proc = subprocess.Popen(["/bin/bash", SCRIPT, path, "--reps", "100", "--strategies", "mmap",
                             "--out", out, "--bin", BIN], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if os.path.exists(measurements) and len(read_csv(measurements)) >= 2:
            break
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGINT)  # as Ctrl-C: the whole foreground group
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    kept = read_csv(measurements)
    assert len(kept) >= 2 and all(m["status"] == "ok" for m in kept)
    assert "interrupted" in stderr
    with open(os.path.join(out, "table.txt")) as f:
        assert f.read() == stdout
    assert len(read_csv(os.path.join(out, "summary.csv"))) == 1 + len(fc.BASELINES)
