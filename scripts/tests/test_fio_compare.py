"""Tests of scripts/fio-compare.sh: the fio twins it writes into the experiment for given
resolved options, the experiment itself (and that experiments/fio-compare.toml is it), the
paired ratios it reads back, its errors, and one real comparison on a small generated file
(a loadbench with the exec strategy and fio needed).

Run with /usr/bin/python3 -m pytest scripts/tests. LOADBENCH_BIN names the loadbench binary
(default build/loadbench of this checkout)."""
import importlib.util
import json
import os
import re
import shutil
import subprocess
import tempfile
import tomllib

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO, "scripts", "fio-compare.sh")
BIN = os.path.abspath(os.environ.get("LOADBENCH_BIN", os.path.join(REPO, "build", "loadbench")))
MIB = 1 << 20

spec = importlib.util.spec_from_file_location("fio_compare",
                                              os.path.join(REPO, "scripts", "fio_compare.py"))
fc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fc)


def has_exec():
    if not os.access(BIN, os.X_OK):
        return False
    text = subprocess.run([BIN, "run", "--help"], capture_output=True, text=True).stdout
    return "--exec" in text


needs_bin = pytest.mark.skipif(not os.access(BIN, os.X_OK),
                               reason=f"no loadbench at {BIN} (build it or set LOADBENCH_BIN)")
needs_exec = pytest.mark.skipif(not has_exec(),
                                reason=f"{BIN}: `run --help` names no --exec: this loadbench "
                                       "has no exec strategy (rebuild it)")
needs_fio = pytest.mark.skipif(shutil.which("fio") is None,
                               reason="fio is not installed (scripts/setup.sh installs it)")


def run(*args, env=None, timeout=60):
    return subprocess.run(["/bin/bash", SCRIPT, *args], capture_output=True, text=True, env=env,
                          timeout=timeout)


def options_of(words):
    """{'ioengine': 'psync', ...} of fio's --key=value arguments; a bare flag maps to True."""
    out = {}
    for word in words:
        key, _, value = word[2:].partition("=")
        out[key] = value or True
    return out


def fio_of(command):
    """The fio options of a twin's /bin/sh command, as written (before the shell runs it)."""
    m = re.search(r"\$\(fio ([^)]*)\)", command)
    assert m, command
    return options_of(m[1].split(" "))


def run_twin(command, nbytes, tmp_path, terse="3;fio-3.33;x;0;0;1;1;1;235;0", status=0):
    """Runs a twin's command with a stub fio that keeps its arguments and prints `terse`:
    (fio's options as the shell gave them, what the command sent on LOADBENCH_FD, its exit
    status)."""
    stub = tmp_path / "fio"
    stub.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$@\" > {tmp_path}/args\n"
                    f"printf '%s\\n' '{terse}'\nexit {status}\n")
    stub.chmod(0o755)
    filled = command.replace("{bytes}", str(nbytes)).replace("{file}", "/data/m.wlf")
    with open(tmp_path / "fd", "w+") as fd:
        env = dict(os.environ, PATH=f"{tmp_path}:{os.environ['PATH']}",
                   LOADBENCH_FD=str(fd.fileno()))
        p = subprocess.run(["/bin/sh", "-c", filled], env=env, pass_fds=(fd.fileno(),))
        fd.seek(0)
        sent = fd.read()
    return options_of((tmp_path / "args").read_text().splitlines()), sent, p.returncode


# The twins, from resolved options.

COMMON = {"filename": "'{file}'", "readonly": True, "rw": "read", "thread": "1",
          "output-format": "terse", "size": "{bytes}"}


@pytest.mark.parametrize("name", ["fread", "pread"])
def test_fread_and_pread_twins_are_psync_at_their_chunk(name):
    command = fc.twin_command(name, {"chunk": "4MiB", "buffer": "thp"})
    assert fio_of(command) == {**COMMON, "name": f"fio-{name}", "ioengine": "psync",
                               "bs": str(4 * MIB), "fadvise_hint": "0"}


def test_odirect_twin_with_one_thread_is_one_direct_job():
    command = fc.twin_command("odirect", {"threads": "1", "chunk": "2MiB"})
    assert fio_of(command) == {**COMMON, "name": "fio-odirect", "ioengine": "psync",
                               "bs": str(2 * MIB), "direct": "1", "fadvise_hint": "0"}


def test_io_uring_twin_follows_qd_chunk_direct_fixed_and_regfile():
    plain = fc.twin_command("io_uring", fc.resolve("io_uring")[1])
    assert fio_of(plain) == {**COMMON, "name": "fio-io_uring", "ioengine": "io_uring",
                             "iodepth": "32", "bs": str(MIB), "fadvise_hint": "0"}
    opts = {"qd": "8", "chunk": "256KiB", "direct": "on", "fixed": "off", "regfile": "on"}
    assert fio_of(fc.twin_command("io_uring", opts)) == {
        **COMMON, "name": "fio-io_uring-direct-regfile", "ioengine": "io_uring",
        "iodepth": "8", "bs": "262144", "direct": "1", "registerfiles": "1", "fadvise_hint": "0"}
    fixed = fio_of(fc.twin_command("io_uring", dict(opts, fixed="on", regfile="off")))
    assert fixed["fixedbufs"] == "1" and "registerfiles" not in fixed


def test_mmap_twins_differ_only_in_the_sequential_hint_and_name():
    plain = fio_of(fc.twin_command("mmap", {}))
    seq = fio_of(fc.twin_command("mmap_seq", {}))
    assert plain["ioengine"] == seq["ioengine"] == "mmap" and plain["bs"] == str(MIB)
    assert (plain.pop("fadvise_hint"), seq.pop("fadvise_hint")) == ("0", "1")
    assert (plain.pop("name"), seq.pop("name")) == ("fio-mmap", "fio-mmap_seq")
    assert plain == seq


def test_a_buffer_variant_has_its_strategys_twin():
    for spec in fc.COMPARED:
        name, opts = fc.resolve(spec)
        bare = {k: v for k, v in opts.items() if k != "buffer"}
        assert fc.twin_command(name, opts) == fc.twin_command(name, bare)
        assert fc.twin_label(name, opts) == fc.twin_label(name, bare)


def test_a_strategy_without_a_twin_is_refused():
    with pytest.raises(ValueError, match="shm: no fio twin"):
        fc.twin_command("shm", {})


def test_a_twin_sends_fios_own_time_as_done_and_fails_when_fio_does(tmp_path):
    command = fc.twin_command("fread", fc.resolve("fread")[1])
    options, sent, status = run_twin(command, 10 * MIB, tmp_path)
    assert options["filename"] == "/data/m.wlf" and options["size"] == str(10 * MIB)
    assert (sent, status) == ("done 0.235\n", 0)
    # Several jobs: the longest one's runtime.
    two = "3;fio-3.33;x;0;0;1;1;1;210;0\n3;fio-3.33;x;0;0;1;1;1;1250;0"
    assert run_twin(command, 10 * MIB, tmp_path, terse=two)[1] == "done 1.250\n"
    _, sent, status = run_twin(command, 10 * MIB, tmp_path, status=1)
    assert (sent, status) == ("", 1)


def test_pread_mt_twin_counts_the_cores_and_slices_the_file(tmp_path):
    command = fc.twin_command("pread_mt", fc.resolve("pread_mt")[1])
    assert "getconf _NPROCESSORS_ONLN" in command
    nbytes = 100 * MIB + 5
    o, sent, _ = run_twin(command, nbytes, tmp_path)
    cores = os.sysconf("SC_NPROCESSORS_ONLN")
    assert o["numjobs"] == str(cores) and o["filename"] == "/data/m.wlf"
    size = int(o["size"])
    assert size == int(o["offset_increment"]) == nbytes // cores // 4096 * 4096
    assert o["ioengine"] == "psync" and o["bs"] == str(min(8 * MIB, size))
    assert o["fadvise_hint"] == "0" and "direct" not in o and sent == "done 0.235\n"


def test_sliced_twins_stay_inside_the_file_and_take_a_smaller_block_under_one_chunk(tmp_path):
    command = fc.twin_command("pread_mt", {"threads": "3", "chunk": "8MiB"})
    o = run_twin(command, 100 * MIB + 5, tmp_path)[0]
    size = int(o["size"])
    assert o["numjobs"] == "3" and size % 4096 == 0 and o["bs"] == str(8 * MIB)
    assert 2 * int(o["offset_increment"]) + size <= 100 * MIB + 5 < 3 * (size + 4096)
    small = run_twin(command, 3 * MIB, tmp_path)[0]
    assert small["size"] == small["bs"] == str(MIB)
    odirect = fc.twin_command("odirect", {"threads": "2", "chunk": "4MiB"})
    o = run_twin(odirect, 64 * MIB + 12345, tmp_path)[0]
    assert o["direct"] == "1" and o["numjobs"] == "2"
    assert o["size"] == o["offset_increment"] == str(32 * MIB) and o["bs"] == str(4 * MIB)


# The experiment.

def test_experiment_holds_every_strategy_and_its_twin_once():
    text = fc.experiment_text(['path = "/data/m.wlf"'])
    assert text.startswith("# Question:")
    e = tomllib.loads(text)
    assert e["file"] == [{"path": "/data/m.wlf"}]
    assert (e["name"], e["reps"], e["cache"], e["ceiling"]) == ("fio-compare", 6, "cold", True)
    assert e["baseline"] in fc.COMPARED
    plain = [s for s in e["strategy"] if s["name"] != "exec"]
    assert [":".join([s["name"]] + [f"{k}={v}" for k, v in sorted(s.items()) if k != "name"])
            for s in plain] == list(fc.COMPARED)
    execs = {s["label"]: s for s in e["strategy"] if s["name"] == "exec"}
    assert len(execs) == len([s for s in e["strategy"] if s["name"] == "exec"])
    for spec in fc.COMPARED:
        name, opts = fc.resolve(spec)
        twin = execs[fc.twin_label(name, opts)]
        assert twin["command"] == fc.twin_command(name, opts) and twin["shell"] is True
        assert twin["package"] == "fio"
    peers = {label for label in execs if not label.startswith("fio-")}
    assert peers == {"numpy-fromfile", "numpy-memmap"}
    assert execs["numpy-fromfile"]["command"] == ["/usr/bin/python3",
                                                  "{peers}/numpy_fromfile.py", "{file}"]


def test_every_twin_has_a_strategy():
    e = tomllib.loads(fc.experiment_text(['path = "/m.wlf"']))
    twins = {s["label"] for s in e["strategy"]
             if s["name"] == "exec" and s["label"].startswith("fio-")}
    assert twins == {fc.twin_label(*fc.resolve(s)) for s in fc.COMPARED}


def test_two_twins_under_one_label_are_refused(monkeypatch):
    monkeypatch.setattr(fc, "COMPARED", ("fread", "fread:chunk=4MiB"))
    with pytest.raises(ValueError, match="fread:chunk=4MiB: another twin under the label"):
        fc.experiment_text(['path = "/m.wlf"'])


def test_the_shipped_experiment_is_what_the_script_writes():
    with open(os.path.join(REPO, "experiments", "fio-compare.toml")) as f:
        shipped = f.read()
    assert shipped == fc.experiment_text(fc.SHIPPED_FILE), \
        "run scripts/fio-compare.sh --experiment > experiments/fio-compare.toml"
    e = tomllib.loads(shipped)
    assert e["file"] == [{"preset": "llama", "size": "2GiB", "format": "wlf"}]


def test_experiment_flag_prints_the_one_that_would_run(tmp_path):
    model = tmp_path / "m.wlf"
    model.write_bytes(b"\0" * 4096)
    r = run(str(model), "--experiment")
    assert r.returncode == 0, r.stderr
    assert tomllib.loads(r.stdout)["file"] == [{"path": str(model)}]
    shipped = run("--experiment")
    assert shipped.returncode == 0 and shipped.stdout == fc.experiment_text(fc.SHIPPED_FILE)


@needs_bin
def test_defaults_and_eager_strategies_are_loadbenchs():
    listed = subprocess.run([BIN, "list", "--json"], capture_output=True, text=True, check=True)
    strategies = {s["name"]: s for s in json.loads(listed.stdout)}
    for name, defaults in fc.DEFAULTS.items():
        options = {o["name"]: o["default"] for o in strategies[name]["options"]}
        for key, value in defaults.items():
            expected = str(os.sysconf("SC_NPROCESSORS_ONLN")) if value is None else value
            assert options[key] == expected, f"{name}: {key}"
        assert (name in fc.EAGER) == ("eager" in strategies[name]["flags"]), name


# Reading the results back.

def record(spec, rep, wall, status="ok", checksum_ok=True, io=None):
    """A run record as runs.jsonl holds it; `io`: a twin's `done`, a strategy's ready_s."""
    strategy = spec.split(":")[0]
    r = {"strategy": strategy, "strategy_spec": spec, "cache": "cold", "rep": rep,
         "status": status, "wall_s": wall, "file": "/m.wlf", "file_bytes": 2 * 10**9}
    if strategy == "exec":
        r.update(checksum_ok=None, verify="none", exec={"done_s": io})
    else:
        r.update(checksum_ok=checksum_ok, ready_s=io)
    return r


def test_ratios_are_paired_by_round_over_the_rounds_both_counted():
    records = []
    for rep in range(8):
        wall = 2.0 + rep / 10
        records.append(record("fread", rep, wall, checksum_ok=rep != 3, io=wall - 1))
        records.append(record("exec:label=fio-fread", rep, wall / 4,
                              status="failed" if rep == 5 else "ok", io=(wall - 1) / 8))
        records.append(record("mmap", rep, 1.0, io=0.001))
        records.append(record("exec:label=fio-mmap", rep, 0.5, io=0.25))
        records.append({"strategy": "ceiling", "strategy_spec": "ceiling", "cache": "cold",
                        "rep": rep, "status": "ok", "gb_per_s": 3.0, "wall_s": 0.7})
    rows = {r["strategy"]: r for r in fc.paired_rows(records)}
    assert set(rows) == set(fc.COMPARED)
    fread = rows["fread"]
    assert fread["twin"] == "fio-fread" and fread["wall"]["n"] == 6  # rounds 3 and 5 left out
    assert (fread["wall"]["ratio"], fread["wall"]["low"], fread["wall"]["high"]) == \
        pytest.approx((4.0, 4.0, 4.0))
    assert fread["io"]["ratio"] == pytest.approx(8.0) and fread["io"]["n"] == 6
    # mmap is not eager: its I/O is its wall_s, set against fio's own time.
    assert rows["mmap"]["io"]["ratio"] == pytest.approx(4.0)
    assert rows["mmap"]["wall"]["ratio"] == pytest.approx(2.0)
    assert rows["pread"]["wall"]["n"] == 0 and rows["pread"]["wall"]["ratio"] is None
    text = fc.table_text(list(rows.values()), records)
    assert ("cold: ceiling (the file read cold by the fastest read recipe) median 3.00 GB/s "
            "over 8") in text
    line = next(x for x in text.splitlines() if x.startswith("cold  fread "))
    assert "fio-fread" in line and "[4.00, 4.00]" in line and "[8.00, 8.00]" in line
    assert "no pair" in next(x for x in text.splitlines() if x.startswith("cold  pread "))


def test_fewer_than_six_rounds_give_no_interval_and_a_twin_without_done_no_io_pair():
    records = [record("pread", k, 2.0, io=1.5) for k in range(3)]
    records += [record("exec:label=fio-pread", k, 1.0) for k in range(3)]
    row = next(r for r in fc.paired_rows(records) if r["strategy"] == "pread")
    assert row["wall"]["n"] == 3 and row["wall"]["ratio"] == pytest.approx(2.0)
    assert row["wall"]["low"] is None and row["io"]["n"] == 0
    text = fc.table_text([row], records)
    assert "too few rounds" in text and "no pair" in text


# Errors: one line on stderr, exit 2.

def test_a_missing_file_is_bad_input():
    r = run("/nonexistent/m.wlf")
    assert r.returncode == 2
    assert r.stderr == "fio-compare: /nonexistent/m.wlf: no such file\n"


def test_a_path_fio_would_split_is_bad_input(tmp_path):
    model = tmp_path / "a:b.wlf"
    model.write_bytes(b"\0" * 4096)
    r = run(str(model))
    assert r.returncode == 2 and "':'" in r.stderr and r.stderr.count("\n") == 1


def test_missing_fio_is_bad_input(tmp_path):
    model = tmp_path / "m.wlf"
    model.write_bytes(b"\0" * 4096)
    r = run(str(model), env=dict(os.environ, PATH=str(tmp_path)))
    assert r.returncode == 2
    assert r.stderr == "fio-compare: fio not found on PATH (scripts/setup.sh installs it)\n"


@needs_fio
def test_a_loadbench_without_exec_is_bad_input(tmp_path):
    model = tmp_path / "m.wlf"
    model.write_bytes(b"\0" * 4096)
    r = run(str(model), "--bin", "/bin/true")
    assert r.returncode == 2
    assert r.stderr == "fio-compare: /bin/true: this loadbench has no exec strategy (rebuild it)\n"


@needs_exec
@needs_fio
def test_a_sharded_model_is_bad_input(tmp_path):
    model = tmp_path / "m.safetensors"
    subprocess.run([BIN, "gen", "--format", "safetensors", "--size", "4MiB", "--shards", "2",
                    "--out", str(model), "--quiet"], check=True)
    r = run(str(model) + ".index.json", "--bin", BIN)
    assert r.returncode == 2
    assert "a sharded model" in r.stderr and r.stderr.count("\n") == 1


# One real comparison.

@needs_exec
@needs_fio
def test_compare_on_a_small_file():
    with tempfile.TemporaryDirectory(dir="/var/tmp") as d:
        model = os.path.join(d, "m.wlf")
        # 12 MiB of tensors (14.2 MiB of file): O_DIRECT twins read whole blocks of 1 MiB, and
        # the last partial one left unread must stay under the 10% a cold command may leave.
        subprocess.run([BIN, "gen", "--preset", "llama", "--size", "12MiB", "--out", model,
                        "--quiet"], check=True)
        out = os.path.join(d, "out")
        r = run(model, "--reps", "1", "--out", out, "--bin", BIN, timeout=600)
        assert r.returncode in (0, 1), r.stderr[-2000:]
        with open(os.path.join(out, "runs.jsonl")) as f:
            records = [json.loads(line) for line in f]
        by_spec = {x["strategy_spec"]: x for x in records}
        for spec in fc.COMPARED:
            assert by_spec[spec]["status"] in ("ok", "unsupported"), by_spec[spec]["error"]
            twin = by_spec["exec:label=" + fc.twin_label(*fc.resolve(spec))]
            assert twin["status"] == "ok", twin.get("exec", {}).get("stderr_tail")
            assert any(model in word for word in twin["command"])
        # Only the peers (numpy, beside this script's twins) or unsupported runs may fail.
        bad = [x["strategy_spec"] for x in records if x["status"] not in ("ok", "unsupported")]
        assert set(bad) <= {"exec:label=numpy-fromfile", "exec:label=numpy-memmap"}
        if bad:
            assert r.returncode == 1
        lines = r.stdout.splitlines()
        for spec in fc.COMPARED:
            row = next(x for x in lines if x.startswith(f"cold  {spec} "))
            if by_spec[spec]["status"] == "ok":
                assert fc.twin_label(*fc.resolve(spec)) in row and "too few rounds" in row
