"""Many readers of one model through MPI, on this machine: `mpirun -np 3 loadbench experiment`
with its ranks as the readers. Every rank's records reach rank 0's runs.jsonl, one rank per host
makes the cache state, each read pattern's bytes add up, a slow rank holds the others at the
start barrier, the round figures follow the slowest reader, an exec strategy runs its command on
every rank, a reader killed mid-load leaves the others' records and a round without duration, an
interrupted job resumes, and a plan a pattern cannot split stops every rank with exit 2.

Run with /usr/bin/python3 -m pytest harness/launch/tests. LOADBENCH_BIN names the binary (default
build/loadbench of this checkout); skipped where mpirun is not installed."""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BIN = os.path.abspath(os.environ.get("LOADBENCH_BIN", os.path.join(REPO, "build", "loadbench")))
MPIRUN = shutil.which("mpirun")

pytestmark = [
    pytest.mark.skipif(not os.access(BIN, os.X_OK),
                       reason=f"no loadbench at {BIN} (build it or set LOADBENCH_BIN)"),
    pytest.mark.skipif(MPIRUN is None, reason="no mpirun (openmpi-bin; scripts/setup.sh)"),
]

CACHE = "cold" if os.geteuid() == 0 else "warm"  # cold needs drop_caches here


@pytest.fixture(scope="module")
def place(tmp_path_factory):
    d = tmp_path_factory.mktemp("ranks")
    # OpenMPI's own allocations outlive MPI_Finalize: LeakSanitizer would fail every rank.
    env = dict(os.environ, LOADBENCH_LOCK_DIR=str(d / "locks"), ASAN_OPTIONS="detect_leaks=0",
               OMPI_MCA_rmaps_base_oversubscribe="1")
    env.pop("LOADBENCH_LOCK_FD", None)
    model = str(d / "m.wlf")
    subprocess.run([BIN, "gen", "--size", "64MiB", "--out", model, "--quiet"], check=True, env=env)
    sharded = str(d / "s.safetensors")
    subprocess.run([BIN, "gen", "--size", "24MiB", "--format", "safetensors", "--shards", "3",
                    "--out", sharded, "--quiet"], check=True, env=env)
    return d, env, model, sharded + ".index.json"


def experiment(d, name, model, body, reps=1):
    path = d / f"{name}.toml"
    path.write_text(f'name = "{name}"\nreps = {reps}\ncache = ["{CACHE}"]\n{body}\n'
                    f'[[file]]\npath = "{model}"\n[[strategy]]\nname = "fread"\n')
    return str(path)


def mpirun(env, ranks, *args, extra=(), timeout=240):
    cmd = [MPIRUN, "--allow-run-as-root", "-np", str(ranks), *extra, BIN, *args]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)


def records(out):
    with open(os.path.join(out, "runs.jsonl")) as f:
        return [json.loads(line) for line in f]


def by_run(recs):
    runs = {}
    for r in recs:
        runs.setdefault((r["strategy_spec"], r.get("pattern"), r["rep"], r["cache"]), []).append(r)
    return runs


def model_bytes(env, model):
    j = json.loads(subprocess.run([BIN, "inspect", "--json", model], env=env, check=True,
                                  capture_output=True, text=True).stdout)
    return j["tensor_bytes"]


def test_every_rank_loads_its_part_and_the_bytes_add_up(place):
    d, env, model, _ = place
    x = experiment(d, "patterns", model, 'pattern = ["replicated", "tp", "tp:1", "pp"]')
    out = str(d / "patterns")
    p = mpirun(env, 3, "experiment", x, "--out", out)
    assert p.returncode == 0, p.stderr
    total = model_bytes(env, model)
    runs = by_run(records(out))
    assert sorted(k[1] for k in runs) == ["pp", "replicated", "tp", "tp:1"]
    for (spec, pattern, _, _), readers in runs.items():
        assert sorted(r["rank"] for r in readers) == [0, 1, 2], readers
        for r in readers:
            assert r["status"] == "ok" and r["checksum_ok"], r
            assert r["ranks"] == 3 and r["procs"] == 3 and r["proc"] == r["rank"]
            assert r["host"] == socket.gethostname() and r["cache_by_rank"] == 0
        delivered = sum(r["tensor_bytes"] for r in readers)
        assert delivered == (3 * total if pattern == "replicated" else total), pattern
    env_json = json.load(open(os.path.join(out, "env.json")))
    assert env_json["mpi"]["ranks"] == 3 and env_json["mpi"]["hosts"] == 1
    # The round figures the run ends with: the slowest reader's time.
    assert ("many readers: a round lasts from its first reader's start to its last reader's "
            "end") in p.stdout


def test_a_slow_rank_holds_the_others_at_the_start_barrier(place):
    """Rank 2's worker starts a second late (the test hook LOADBENCH_TEST_SLOW_START,
    docs/testing.md): every rank's worker waits for it at the start barrier, so the readers'
    clocks start together and each record's start_spread_s says so."""
    d, env, model, _ = place
    x = experiment(d, "slow", model, "", reps=2)
    out = str(d / "slow")
    p = mpirun(dict(env, LOADBENCH_TEST_SLOW_START="2:1"), 3, "experiment", x, "--out", out)
    assert p.returncode == 0, p.stderr
    runs = by_run(records(out))
    assert len(runs) == 2
    for key, readers in runs.items():
        assert sorted(r["rank"] for r in readers) == [0, 1, 2], key
        assert all(r["status"] == "ok" for r in readers), readers
        starts = [r["load_start_unix_s"] for r in readers]
        spread = max(starts) - min(starts)
        assert {r["start_spread_s"] for r in readers} == {readers[0]["start_spread_s"]}, key
        assert readers[0]["start_spread_s"] == pytest.approx(spread, abs=2e-6), key
        assert spread < 0.1, f"{key}: ranks started {spread:.3f} s apart (rank 2 1 s late)"


def test_a_sharded_models_files_are_divided(place):
    d, env, _, sharded = place
    x = experiment(d, "files", sharded, 'pattern = "files"')
    out = str(d / "files")
    p = mpirun(env, 3, "experiment", x, "--out", out)
    assert p.returncode == 0, p.stderr
    readers = records(out)
    assert len(readers) == 3 and all(r["status"] == "ok" for r in readers)
    assert sum(r["tensor_bytes"] for r in readers) == model_bytes(env, sharded)


def test_an_exec_strategy_runs_its_command_on_every_rank(place):
    """One command per rank, started after the start barrier, each told its place and the run's
    token, each record its rank's, judged against its own part."""
    d, env, model, _ = place
    seen = d / "exec-seen"
    seen.mkdir()
    command = ("cat {file} > /dev/null; echo $LOADBENCH_READER $LOADBENCH_FLEET_TOKEN "
               f"$LOADBENCH_PATTERN > {seen}/$OMPI_COMM_WORLD_RANK; echo detail node "
               "${LOADBENCH_READER%/*} >&3")
    path = d / "exec.toml"
    path.write_text(f'name = "exec"\nreps = 1\ncache = ["{CACHE}"]\npattern = "tp"\n'
                    f'[[file]]\npath = "{model}"\n[[strategy]]\nname = "exec"\nlabel = "cat"\n'
                    f'shell = true\ncommand = "{command}"\n')
    out = str(d / "exec")
    p = mpirun(env, 3, "experiment", str(path), "--out", out)
    assert p.returncode == 0, p.stderr
    recs = {r["rank"]: r for r in records(out)}
    assert sorted(recs) == [0, 1, 2]
    total = model_bytes(env, model)
    tokens = set()
    for k, r in recs.items():
        assert r["status"] == "ok", r
        assert r["proc"] == k and r["label"] == "cat" and r["details"] == {"node": k}
        assert r["needed_bytes"] == total // 3
        assert "no memory cgroup" in r["exec"]["measured"]
        place_k, token, pattern = (seen / str(k)).read_text().split()
        assert place_k == f"{k}/3" and pattern == "tp" and re.fullmatch(r"[0-9a-f]{32}", token)
        tokens.add(token)
    assert len(tokens) == 1
    assert recs[0]["start_spread_s"] < 1


def test_one_cache_preparation_per_host(place):
    """A hostfile naming this machine twice is one host; a rank told it is elsewhere
    (LOADBENCH_HOST) makes its own host's cache state."""
    d, env, model, _ = place
    hostfile = d / "hosts"
    hostfile.write_text(f"localhost\n{socket.gethostname()}\nlocalhost\n")
    x = experiment(d, "hosts", model, "")
    out = str(d / "one-host")
    p = mpirun(env, 3, "experiment", x, "--out", out, extra=["--hostfile", str(hostfile)])
    assert p.returncode == 0, p.stderr
    assert {r["cache_by_rank"] for r in records(out)} == {0}
    out = str(d / "two-hosts")
    cmd = [MPIRUN, "--allow-run-as-root", "-np", "2", BIN, "experiment", x, "--out", out, ":",
           "-np", "1", "-x", "LOADBENCH_HOST=elsewhere", BIN, "experiment", x, "--out", out]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, p.stderr
    recs = records(out)
    assert {(r["rank"], r["cache_by_rank"], r["host"] == "elsewhere") for r in recs} == {
        (0, 0, False), (1, 0, False), (2, 2, True)}
    assert all(r["status"] == "ok" for r in recs), recs
    assert json.load(open(os.path.join(out, "env.json")))["mpi"]["hosts"] == 2


def workers_of_rank(rank):
    """The pids of `loadbench worker` processes started by MPI rank `rank` (they inherit its
    environment)."""
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            if len(argv) < 2 or argv[1] != b"worker":
                continue
            with open(f"/proc/{pid}/environ", "rb") as f:
                if f"OMPI_COMM_WORLD_RANK={rank}".encode() in f.read().split(b"\0"):
                    pids.append(int(pid))
        except OSError:
            continue
    return pids


def test_a_failed_reader_leaves_the_others_and_a_round_without_duration(place):
    d, env, _, _ = place
    big = str(d / "big.wlf")
    subprocess.run([BIN, "gen", "--size", "384MiB", "--out", big, "--quiet"], check=True, env=env)
    x = experiment(d, "fail", big, "")
    out = str(d / "fail")
    job = subprocess.Popen([MPIRUN, "--allow-run-as-root", "-np", "3", BIN, "experiment", x,
                            "--out", out], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    killed = False
    deadline = time.monotonic() + 120
    while not killed and job.poll() is None and time.monotonic() < deadline:
        for pid in workers_of_rank(2):
            os.kill(pid, signal.SIGKILL)
            killed = True
        time.sleep(0.005)
    stdout, stderr = job.communicate(timeout=240)
    assert killed, "rank 2's worker was never seen"
    assert job.returncode == 1, stderr  # a run failed; the job itself ended normally
    recs = {r["rank"]: r for r in records(out)}
    assert sorted(recs) == [0, 1, 2]
    assert recs[0]["status"] == recs[1]["status"] == "ok"
    assert recs[2]["status"] == "failed" and "signal 9" in recs[2]["error"]
    assert re.search(r"no duration: reader 2 \(host [^,]+, rank 2\): failed", stdout), stdout


def test_an_interrupted_job_resumes(place):
    d, env, model, _ = place
    # Enough rounds (a run of this model under ASan takes about half a second) that the
    # interrupt, sent once two records are written, lands before the last one.
    x = experiment(d, "resume", model, "", reps=12)
    out = str(d / "resume")
    job = subprocess.Popen([MPIRUN, "--allow-run-as-root", "-np", "2", BIN, "experiment", x,
                            "--out", out], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, start_new_session=True)
    runs = os.path.join(out, "runs.jsonl")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and job.poll() is None:
        if os.path.exists(runs) and sum(1 for _ in open(runs)) >= 2:
            break
        time.sleep(0.05)
    os.killpg(job.pid, signal.SIGINT)
    job.communicate(timeout=120)
    before = len(records(out))
    assert 2 <= before < 24 and job.returncode != 0
    p = mpirun(env, 2, "experiment", x, "--out", out, "--resume")
    assert p.returncode == 0, p.stderr
    recs = records(out)
    keys = [(r["rep"], r["rank"]) for r in recs]
    assert len(recs) == 24 and len(set(keys)) == 24, keys
    assert "already recorded" in p.stderr


def test_a_pattern_that_cannot_split_stops_every_rank(place):
    d, env, model, _ = place
    x = experiment(d, "nosplit", model, 'pattern = "files"')
    p = mpirun(env, 2, "experiment", x, "--out", str(d / "nosplit"))
    assert p.returncode == 2, p.stderr
    lines = [ln for ln in p.stderr.splitlines() if "cannot split" in ln]
    assert len(lines) == 1 and "has 1 file" in lines[0], p.stderr
    assert not os.path.exists(os.path.join(d, "nosplit", "runs.jsonl"))


def test_ranks_read_one_model_from_one_store(place, tmp_path):
    """A herd of ranks against one S3 endpoint: the experiment's s3rver is started by rank 0
    after the launcher started every rank, so the others get its endpoint and keys with each run;
    every rank's reader is a client of the same store and verifies its part."""
    if shutil.which("s3rver") is None:
        pytest.skip("s3rver is not installed (npm s3rver; scripts/setup.sh)")
    _, env, _, _ = place
    text = (f'name = "herd"\nreps = 1\ncache = ["{CACHE}"]\npattern = ["replicated", "tp"]\n'
            '[server]\nkind = "s3"\n[[file]]\npreset = "llama"\nsize = "8MiB"\n'
            'format = "safetensors"\n[[strategy]]\nname = "http_ranges"\nconcurrency = 2\n')
    x = tmp_path / "herd.toml"
    x.write_text(text)
    out = str(tmp_path / "out")
    scrubbed = {k: v for k, v in env.items() if not k.startswith("AWS_")}
    p = mpirun(scrubbed, 2, "experiment", str(x), "--out", out, "--data", str(tmp_path / "data"))
    assert p.returncode == 0, p.stderr
    runs = by_run(records(out))
    assert sorted(k[1] for k in runs) == ["replicated", "tp"]
    for key, readers in runs.items():
        assert sorted(r["rank"] for r in readers) == [0, 1], key
        for r in readers:
            assert r["status"] == "ok" and r["checksum_ok"], r
            assert r["read_as"].startswith("s3://loadbench/") and r["details"]["requests"] > 0
            assert r["server_cpu_s"] == readers[0]["server_cpu_s"]


def test_a_forged_cluster_variable_stops_every_rank(place):
    """LOADBENCH_CLUSTER is honoured only under the cluster run that set it: a rank started by
    anyone else with one, however well formed, stops, naming the variable; so does a command
    that is no rank at all."""
    d, env, model, _ = place
    x = experiment(d, "forged", model, "")
    forged = {"nodes": 1, "nic": "1gbit", "uplink": "1gbit", "links": [],
              "store": {"netns": "loadbench-forged-store", "address": "169.254.9.1"},
              "node_list": [{"node": 0, "netns": "loadbench-forged-n0",
                             "address": "169.254.9.10"}]}
    bad = dict(env, LOADBENCH_CLUSTER=json.dumps(forged))
    p = mpirun(bad, 1, "experiment", x, "--out", str(d / "forged"))
    assert p.returncode == 2, p.stderr
    assert ("LOADBENCH_CLUSTER: names namespace loadbench-forged-store, which no running "
            "loadbench command made") in p.stderr, p.stderr
    assert not (d / "forged" / "runs.jsonl").exists()
    alone = subprocess.run([BIN, "experiment", x, "--out", str(d / "alone")], env=bad,
                           capture_output=True, text=True, timeout=120)
    assert alone.returncode == 2, alone.stderr
    assert alone.stderr.strip().endswith("LOADBENCH_CLUSTER: set, but this command is not a rank "
                                         "that loadbench started on a cluster it made; unset it")
    malformed = dict(env, LOADBENCH_CLUSTER='{"store": {"netns": "../../etc"}}')
    p = mpirun(malformed, 1, "experiment", x, "--out", str(d / "malformed"))
    assert p.returncode == 2 and "LOADBENCH_CLUSTER: `nodes` is not a count" in p.stderr, p.stderr
