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


# pool's twins over a sharded model.

SHARDS = [("/m/a-00001-of-00003.safetensors", 100 * MIB + 4096 + 17),
          ("/m/a-00002-of-00003.safetensors", 64 * MIB),
          ("/m/a-00003-of-00003.safetensors", 10 * MIB + 5)]


def pool_params(**kw):
    return dict({"threads": 16, "chunk": 2 * MIB, "direct": "off", "order": "file",
                 "split": "chunks", "buffer": "malloc"}, **kw)


def test_pool_files_twin_is_one_job_per_shard_file_reading_all_of_it():
    common, sections, total, desc = fc.pool_job(pool_params(), SHARDS, "files")
    assert common == {"rw": "read", "thread": 1, "ioengine": "psync", "bs": 2 * MIB,
                      "fadvise_hint": 0}
    assert [o["filename"] for _, o in sections] == [p for p, _ in SHARDS]
    assert [o["size"] for _, o in sections] == [n for _, n in SHARDS]
    assert all("numjobs" not in o and "offset_increment" not in o for _, o in sections)
    assert total == 3 and "one job per file (3 jobs on 3 files)" in desc
    direct, *_ = fc.pool_job(pool_params(direct="on"), SHARDS, "files")
    assert direct["direct"] == 1


@pytest.mark.parametrize("threads, direct, per_file", [(16, "off", 5), (4, "off", 2),
                                                       (16, "on", 5)])
def test_pool_slices_twin_reads_each_shard_in_k_contiguous_slices(threads, direct, per_file):
    params = pool_params(threads=threads, direct=direct)
    common, sections, total, desc = fc.pool_job(params, SHARDS, "slices")
    assert ("direct" in common) == (direct == "on")
    align = 2 * MIB if direct == "on" else 4096
    assert [o["filename"] for _, o in sections] == [p for p, _ in SHARDS]
    for (_, o), (_, size) in zip(sections, SHARDS):
        assert o["numjobs"] == per_file  # K = max(2, threads // shards)
        assert o["offset_increment"] == o["size"] and o["size"] % align == 0
        assert (per_file - 1) * o["offset_increment"] + o["size"] <= size  # inside the file
        assert size - per_file * o["size"] < per_file * align  # and together cover it
    assert total == 3 * per_file
    assert f"{per_file} jobs per file, each a slice ({total} jobs on 3 files)" in desc


def test_pool_slices_twin_gives_a_small_shard_fewer_jobs_none_under_one_block():
    shards = [("/m/big", 64 * MIB), ("/m/two-chunks", 2 * 2 * MIB - 1),
              ("/m/small", 3 * 4096 + 1), ("/m/tiny", 4095)]
    _, sections, total, desc = fc.pool_job(pool_params(threads=4), shards, "slices")
    by_file = {o["filename"]: o for _, o in sections}
    assert by_file["/m/big"]["numjobs"] == 2 and "bs" not in by_file["/m/big"]
    # Two slices of 2 chunks less a byte would each be under a chunk: one job reads it all.
    assert "numjobs" not in by_file["/m/two-chunks"]
    assert by_file["/m/two-chunks"]["size"] == 2 * 2 * MIB - 1
    # A shard under one chunk: one job, bs its size rounded down to 4 KiB (fio refuses a job
    # smaller than bs); one under 4 KiB: no job.
    assert by_file["/m/small"] == {"filename": "/m/small", "bs": 3 * 4096, "size": 3 * 4096 + 1}
    assert "/m/tiny" not in by_file
    assert total == 4 and "(4 jobs on 3 files)" in desc


def test_pool_jobfile_has_a_global_section_and_one_section_per_shard():
    common, sections, _, _ = fc.pool_job(pool_params(threads=6), SHARDS, "slices")
    text = fc.sections_jobfile(common, sections)
    assert text.startswith("[global]\nrw=read\nthread=1\nioengine=psync\nbs=2097152\n")
    assert text.count("\n[shard") == 3 and text.count("numjobs=2\n") == 3
    assert "filename=/m/a-00002-of-00003.safetensors\n" in text
    labels = [t for t, *_ in fc.twins("pool:threads=6", pool_params(threads=6), SHARDS)]
    assert labels == list(fc.POOL_TWINS) == ["files", "slices"]


def test_single_file_twins_read_the_one_shard_of_a_model():
    [(twin, text, numjobs, _)] = fc.twins("pread", {"chunk": MIB}, [("/m/only.safetensors", MIB)])
    assert twin == "" and numjobs == 1 and "filename=/m/only.safetensors\n" in text


def test_model_of_reads_the_shards_and_falls_back_to_one_file():
    inspected = {"file_bytes": 300, "layout": "index",
                 "shards": [{"file": "/m/a-1.safetensors", "file_bytes": 100},
                            {"file": "a-2.safetensors", "file_bytes": 200}]}
    model = fc.model_of(inspected, "/m/a.safetensors.index.json")
    assert model == {"layout": "index", "bytes": 300,
                     "shards": [("/m/a-1.safetensors", 100), ("/m/a-2.safetensors", 200)]}
    old = fc.model_of({"file_bytes": 123}, "/m/x.wlf")
    assert old == {"layout": "file", "shards": [("/m/x.wlf", 123)], "bytes": 123}


def test_only_pool_runs_on_a_model_of_several_shards():
    assert fc.skip_reason("pool:direct=on", SHARDS) is None
    assert "3 shards" in fc.skip_reason("pread", SHARDS)
    assert fc.skip_reason("pread", SHARDS[:1]) is None


# The targets.

def pair(name, lb, fio, twin=""):
    return {"kind": "pair", "name": name, "twin": twin,
            "status": "ok" if lb and fio else "no data", "loadbench_gbps": lb, "fio_gbps": fio}


def test_pool_target_is_against_the_best_fio_job_over_the_shards():
    rows = [pair("pool", 9.0, 8.0, "files"), pair("pool", 9.0, 10.0, "slices"),
            pair("pool:direct=on", 8.9, 9.5, "files"), pair("pool:direct=on", 8.9, 9.9, "slices")]
    targets = fc.target_lines(rows)
    assert targets == [
        "PASS  pool: 9.00 GB/s = 0.900 of the best fio job over the same shard files "
        "(pool's slices twin) 10.00 GB/s (target >= 0.9)",
        "MISS  pool:direct=on: 8.90 GB/s = 0.890 of the best fio job over the same shard files "
        "(pool's slices twin) 10.00 GB/s (target >= 0.9)",
        "PASS  best loadbench (pool): 9.00 GB/s = 0.900 of the best fio job "
        "(pool's slices twin) 10.00 GB/s (target >= 0.9)"]


def test_targets_without_figures_and_beside_single_file_twins():
    targets = fc.target_lines([pair("pool", None, None, "files"),
                               pair("pool", None, 5.0, "slices"), pair("odirect", 4.0, 6.0)])
    assert targets[0] == ("MISS  odirect: 4.00 GB/s = 0.667 of its fio twin 6.00 GB/s "
                          "(target >= 0.9)")
    assert targets[1] == "n/a   pool: no figure to compare (no data)"
    assert targets[2].startswith("MISS  best loadbench (odirect)")
    assert "(odirect's twin) 6.00 GB/s" in targets[2]


# A whole comparison on a 3-shard model, with a fake loadbench and a fake fio.

FAKE_LOADBENCH = r"""#!/usr/bin/python3
import json, os, sys
a = sys.argv[1:]
def log(line):
    with open(os.environ["FAKE_LOG"], "a") as f:
        f.write(line + "\n")
if a[0] == "lock":
    cmd = a[a.index("--") + 1:]
    os.environ["LOADBENCH_LOCK_FD"] = "fake"
    os.execv(cmd[0], cmd)
elif a == ["cache", "--help"]:
    print("drop")
elif a[:2] == ["cache", "drop"]:
    log("drop " + a[2])
elif a == ["list", "--json"]:
    print(json.dumps([{"name": n, "supported": True, "unsupported_reason": "",
                       "flags": "eager,allocates"} for n in ("pool", "pread")]))
elif a[0] == "inspect":
    print(os.environ["FAKE_INSPECT"])
elif a[0] == "run":
    spec, out = a[a.index("--strategies") + 1], a[a.index("--out") + 1]
    log("run " + spec)
    params = {"threads": 16, "chunk": 4096, "direct": "off", "order": "file",
              "split": "chunks", "buffer": "malloc"}
    for kv in spec.split(":")[1:]:
        k, v = kv.split("=")
        params[k] = int(v) if k == "threads" else v
    os.makedirs(out)
    with open(os.path.join(out, "runs.jsonl"), "w") as f:
        f.write(json.dumps({"status": "ok", "error": None, "ready_s": 0.01, "wall_s": 0.02,
                            "params": params}) + "\n")
"""

# Each job reads its size in 10 ms more than the one before.
FAKE_FIO = r"""#!/usr/bin/python3
import json, os, sys
if sys.argv[1:] == ["--version"]:
    print("fio-3.33")
    sys.exit(0)
jobfile = sys.argv[-1]
out = [a for a in sys.argv if a.startswith("--output=")][0].split("=", 1)[1]
with open(os.environ["FAKE_LOG"], "a") as f:
    f.write("fio " + os.path.basename(jobfile) + "\n")
sections, cur = [], None
for line in open(jobfile).read().splitlines():
    if line.startswith("["):
        cur = {}
        sections.append((line[1:-1], cur))
    elif "=" in line:
        k, v = line.split("=", 1)
        cur[k] = v
jobs = []
for name, opts in sections:
    if name == "global":
        continue
    for _ in range(int(opts.get("numjobs", 1))):
        jobs.append({"error": 0, "read": {"io_bytes": int(opts["size"]),
                                          "runtime": 10 * (len(jobs) + 1)}})
with open(out, "w") as f:
    json.dump({"jobs": jobs}, f)
"""


@pytest.fixture
def fake_model(tmp_path):
    """(index path, shards, env) of a 3-shard model and a PATH whose fio is the fake."""
    model = tmp_path / "m"
    model.mkdir()
    sizes = (40 * 1024 + 7, 32 * 1024, 20 * 1024 + 3)
    shards = []
    for k, size in enumerate(sizes, 1):
        path = model / f"a-{k:05d}-of-00003.safetensors"
        path.write_bytes(bytes([k]) * size)
        shards.append((str(path), size))
    index = model / "a.safetensors.index.json"
    index.write_text(json.dumps({"weight_map": {f"t{k}": os.path.basename(p)
                                                for k, (p, _) in enumerate(shards)}}))
    fake = tmp_path / "bin"
    fake.mkdir()
    for name, text in (("loadbench", FAKE_LOADBENCH), ("fio", FAKE_FIO)):
        (fake / name).write_text(text)
        (fake / name).chmod(0o755)
    inspected = {"file": str(index), "file_bytes": 1234, "layout": "index",
                 "shards": [{"file": p, "file_bytes": n, "tensor_count": 1, "tensor_bytes": n}
                            for p, n in shards]}
    env = dict(os.environ, PATH=f"{fake}:/usr/bin:/bin", FAKE_LOG=str(tmp_path / "log"),
               FAKE_INSPECT=json.dumps(inspected))
    env.pop("LOADBENCH_LOCK_FD", None)
    return str(index), shards, env, str(fake / "loadbench")


def test_pool_on_a_sharded_model_runs_both_twins_interleaved(fake_model, tmp_path):
    index, shards, env, fake_bin = fake_model
    out = str(tmp_path / "out")
    p = run(index, "--reps", "2", "--strategies", "pool", "--out", out, "--bin", fake_bin,
            env=env)
    assert p.returncode == 0, p.stderr
    model_bytes = sum(n for _, n in shards)

    measured = read_csv(os.path.join(out, "measurements.csv"))
    assert all(m["status"] == "ok" for m in measured)
    # One unit per strategy and baseline, rotating; pool's twins alternate their order.
    assert [(m["side"], m["name"], m["twin"]) for m in measured] == [
        ("loadbench", "pool", ""), ("fio", "pool", "files"), ("fio", "pool", "slices"),
        ("numpy", "numpy.fromfile", ""), ("numpy", "numpy.memmap", ""),
        ("numpy", "numpy.fromfile", ""), ("numpy", "numpy.memmap", ""),
        ("loadbench", "pool", ""), ("fio", "pool", "slices"), ("fio", "pool", "files")]
    files = [m for m in measured if m["twin"] == "files"]
    slices = [m for m in measured if m["twin"] == "slices"]
    for m in measured:
        if m not in slices:
            assert int(m["bytes"]) == model_bytes
    assert {m["numjobs"] for m in files} == {"3"}
    # K = max(2, 16 // 3) = 5 jobs a shard, each a slice rounded down to 4 KiB (8 KiB in the
    # first shard, 4 KiB in the others); the fake's longest job takes 150 ms.
    assert {m["numjobs"] for m in slices} == {"15"}
    assert {int(m["bytes"]) for m in slices} == {5 * 8192 + 10 * 4096}
    assert float(slices[0]["gbps"]) == pytest.approx((5 * 8192 + 10 * 4096) / 0.15 / 1e9)
    assert float(files[0]["gbps"]) == pytest.approx(model_bytes / 0.03 / 1e9)

    with open(os.path.join(out, "fio", "pool-files-rep0.fio")) as f:
        text = f.read()
    assert [line[9:] for line in text.splitlines() if line.startswith("filename=")] == \
        [p for p, _ in shards]
    with open(os.path.join(out, "fio", "pool-slices-rep1.fio")) as f:
        assert f.read().count("numjobs=5\n") == 3

    # Every fio and baseline measurement starts from `cache drop` of the index.
    with open(env["FAKE_LOG"]) as f:
        log = f.read().splitlines()
    assert log[:4] == ["run pool", "drop " + index, "fio pool-files-rep0.fio", "drop " + index]
    assert log.count("drop " + index) == 8

    summary = read_csv(os.path.join(out, "summary.csv"))
    assert [(r["name"], r["twin"]) for r in summary[:2]] == [("pool", "files"), ("pool", "slices")]
    assert "one job per file (3 jobs on 3 files)" in summary[0]["fio_job"]
    assert "5 jobs per file, each a slice (15 jobs on 3 files)" in summary[1]["fio_job"]
    assert "index, 3 shards" in p.stdout
    assert "pool: " in p.stdout and "of the best fio job over the same shard files " \
        "(pool's files twin)" in p.stdout
    with open(os.path.join(out, "info.json")) as f:
        info = json.load(f)
    assert info["shards"] == [{"file": p, "file_bytes": n} for p, n in shards]


def test_other_strategies_are_skipped_on_a_sharded_model(fake_model, tmp_path):
    index, shards, env, fake_bin = fake_model
    out = str(tmp_path / "out")
    p = run(index, "--reps", "1", "--strategies", "pool:threads=4,pread", "--out", out,
            "--bin", fake_bin, env=env)
    assert p.returncode == 1, p.stderr
    assert "pread: skipped: a model of 3 shards" in p.stderr
    assert "pread" in p.stdout and "skipped: a model of 3 shards" in p.stdout
    measured = read_csv(os.path.join(out, "measurements.csv"))
    assert {m["name"] for m in measured if m["side"] != "numpy"} == {"pool:threads=4"}
    slices = [m for m in measured if m["twin"] == "slices"]
    assert slices[0]["numjobs"] == "6"  # K = max(2, 4 // 3) = 2 a shard


def test_default_strategies_on_a_sharded_model_are_pools(fake_model, tmp_path):
    index, _, env, fake_bin = fake_model
    out = str(tmp_path / "out")
    p = run(os.path.dirname(index), "--reps", "1", "--out", out, "--bin", fake_bin, env=env)
    assert p.returncode == 0, p.stderr
    with open(os.path.join(out, "info.json")) as f:
        assert ",".join(json.load(f)["strategies"]) == fc.DEFAULT_MODEL_STRATEGIES


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


@needs_bin
@needs_fio
@needs_root
def test_pool_on_a_real_sharded_model(tmp_path):
    if "--shards" not in subprocess.run([BIN, "gen", "--help"], capture_output=True,
                                        text=True).stdout:
        pytest.skip(f"{BIN} writes no sharded models (rebuild it)")
    index = str(tmp_path / "m.safetensors.index.json")
    subprocess.run([BIN, "gen", "--preset", "llama", "--size", "24MiB", "--format", "safetensors",
                    "--shards", "3", "--out", str(tmp_path / "m.safetensors"), "--quiet"],
                   check=True, capture_output=True)
    out = str(tmp_path / "out")
    p = run(index, "--reps", "1", "--strategies", "pool", "--out", out, "--bin", BIN)
    assert p.returncode == 0, p.stderr
    measured = read_csv(os.path.join(out, "measurements.csv"))
    assert [(m["side"], m["twin"], m["status"]) for m in measured if m["side"] != "numpy"] == [
        ("loadbench", "", "ok"), ("fio", "files", "ok"), ("fio", "slices", "ok")]
    with open(os.path.join(out, "info.json")) as f:
        shards = json.load(f)["shards"]
    assert len(shards) == 3
    with open(os.path.join(out, "fio", "pool-files-rep0.fio")) as f:
        assert f.read().count("filename=") == 3
    assert "of the best fio job over the same shard files" in p.stdout
