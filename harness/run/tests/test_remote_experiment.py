"""An experiment's [server] end to end: a small model served by nginx and by s3rver on loopback,
read by the remote strategies, by a command given the server's name, and (s3) by local
strategies over an s3fs mount of the bucket; every run verified, recorded under the file's own
path with what it read, the server's CPU and files checked, and nothing of the servers or the
mount left once the command ends. Skips, with the reason, where nginx, s3rver, s3fs or FUSE is
missing."""
import json
import os
import shutil
import signal
import subprocess

import pytest

from conftest import BIN

SMALL = """
name = "remote-small"
reps = 1
cache = ["cold", "warm"]
timeout_s = 120
[server]
kind = "{kind}"
[[file]]
preset = "llama"
size = "4MiB"
format = "safetensors"
"""


def need(program, why):
    if shutil.which(program) is None:
        pytest.skip(f"{program} is not installed ({why})")


TAG = "LOADBENCH_TEST_TAG"


def run_experiment(tmp_path, text, out="out", relative=False):
    """The experiment `text` run in tmp_path; relative: its file, data and results folders
    named relative to tmp_path, where the command runs. The command's environment holds
    TAG=tmp_path, so that what it leaves running is found (no_leftovers)."""
    toml = tmp_path / "e.toml"
    toml.write_text(text)
    args = ["e.toml", "--data", "data", "--out", out] if relative else [
        str(toml), "--data", str(tmp_path / "data"), "--out", str(tmp_path / out)]
    out = tmp_path / out
    p = subprocess.run([BIN, "experiment", *args, "--quiet"], capture_output=True, text=True,
                       timeout=300, cwd=tmp_path, env=dict(os.environ, **{TAG: str(tmp_path)}))
    records = []
    if (out / "runs.jsonl").exists():
        records = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
    env = json.loads((out / "env.json").read_text()) if (out / "env.json").exists() else {}
    return p, records, env


def no_leftovers(tmp_path, *commands):
    """Nothing of the test's own commands is left: no process of theirs (their servers and
    s3fs inherit TAG=tmp_path), no mount one of them said it made. Other tests may run beside
    this one, with servers and mounts of their own."""
    want = f"{TAG}={tmp_path}".encode()
    left = []
    for d in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{d}/environ", "rb") as f:
                if want in f.read().split(b"\0"):
                    left.append(open(f"/proc/{d}/cmdline", "rb").read().replace(b"\0", b" "))
        except OSError:
            continue
    assert not left, left
    mounts = open("/proc/mounts").read()
    for p in commands:
        for line in p.stderr.splitlines():
            if " mounted at " in line:
                assert line.split(" mounted at ")[1].split()[0] not in mounts, line


def test_http_server_serves_the_remote_strategies_and_a_command(tmp_path):
    need("nginx", "Debian's nginx-light")
    need("curl", "Debian's curl")
    text = SMALL.format(kind="http") + """
[[strategy]]
name = "fread"
[[strategy]]
name = "http_ranges"
chunk = "1MiB"
concurrency = 2
[[strategy]]
name = "owned"
via = "http"
chunk = "1MiB"
concurrency = 2
[[strategy]]
name = "exec"
label = "curl"
via = "http"
command = ["curl", "-sSf", "-o", "/dev/null", "{file}"]
"""
    p, records, env = run_experiment(tmp_path, text)
    assert p.returncode == 0, (p.stderr, [(r["strategy_spec"], r["cache"], r.get("error"))
                                          for r in records])
    assert env["server"]["program"] == "nginx" and env["server"]["endpoint"].startswith(
        "http://127.0.0.1:")
    files = {r["file"] for r in records}
    assert len(files) == 1 and files.pop().endswith(".safetensors")  # one identity: they pair
    for r in records:
        assert r["status"] == "ok", r
        assert r["server_cpu_s"] >= 0
        if r["strategy"] == "fread":
            assert "read_as" not in r
            continue
        assert r["read_as"].startswith(env["server"]["endpoint"] + "/")
        assert r["server_resident_before"] == (1.0 if r["cache"] == "warm" else 0.0) or (
            r["cache"] == "cold" and r["server_resident_before"] <= 0.01)
        if r["strategy"] in ("http_ranges", "owned"):
            assert r["checksum_ok"] is True
            d = r["details"]
            assert d["requests"] >= 5 and d["bytes_received"] == d["bytes_requested"]
        if r["strategy"] == "owned":  # ranged GETs into huge pages populated ahead of them
            assert r["strategy_flags"].split(",")[-1] == "local-or-remote"
            assert d["handout"] == "arrival" and d["populate_method"] == "madvise", d
            assert r["anon_huge_bytes"] is not None
    no_leftovers(tmp_path, p)


def test_owned_fetches_every_shard_of_a_model_over_http(tmp_path):
    """owned, given a sharded model through the server, fetches every shard's ranges into one
    destination: one HEAD per shard, and the model's checksum."""
    need("nginx", "Debian's nginx-light")
    text = SMALL.format(kind="http").replace('format = "safetensors"', """format = "safetensors"
shards = 3""") + """
[[strategy]]
name = "owned"
via = "http"
chunk = "256KiB"
"""
    p, records, _ = run_experiment(tmp_path, text)
    assert p.returncode == 0, (p.stderr, [(r["strategy_spec"], r.get("error")) for r in records])
    assert len(records) == 2
    for r in records:
        assert r["status"] == "ok" and r["checksum_ok"] is True, r
        assert r["shards"] == 3 and r["read_as"].endswith(".index.json"), r
        d = r["details"]
        assert d["bytes_received"] == d["bytes_requested"] and d["requests"] >= 3 + 4, d
    no_leftovers(tmp_path, p)


def test_s3_server_and_an_s3fs_mount(tmp_path):
    need("s3rver", "npm install -g s3rver@3.7.1")
    need("s3fs", "Debian's s3fs")
    if not os.path.exists("/dev/fuse"):
        pytest.skip("/dev/fuse is missing: no FUSE mount can be made here")
    if os.geteuid() != 0:
        pytest.skip("an s3fs mount as made here needs root")
    text = SMALL.format(kind="s3") + """
[[strategy]]
name = "http_get"
[[strategy]]
name = "fread"
via = "s3fs"
[[strategy]]
name = "mmap"
via = "s3fs"
"""
    p, records, env = run_experiment(tmp_path, text)
    if p.returncode != 0 and not records and "s3fs" in p.stderr and "mounted at" not in p.stderr:
        # A machine (a container) that has s3fs and /dev/fuse but may not mount.
        pytest.skip(f"no s3fs mount could be made here: {p.stderr.strip().splitlines()[-1]}")
    assert p.returncode == 0, p.stderr
    assert "put s3://loadbench/" in p.stderr
    assert env["server"]["bucket"] == "loadbench" and env["server"]["mount"]["program"] == "s3fs"
    assert len(records) == 6
    for r in records:
        assert r["status"] == "ok" and r["checksum_ok"] is True, r
        assert "server_resident_before" in r, r
    mounted = [r for r in records if ":via=s3fs" in r["strategy_spec"]]
    assert len(mounted) == 4 and all("/loadbench-s3fs-mount-" in r["read_as"] for r in mounted)
    no_leftovers(tmp_path, p)
    # A second command finds the object in the bucket by size and checksum: no second put.
    p2, records2, _ = run_experiment(tmp_path, text, out="again")
    assert p2.returncode == 0, p2.stderr
    assert "already in the bucket: s3://loadbench/" in p2.stderr and "put s3://" not in p2.stderr
    assert len(records2) == 6
    no_leftovers(tmp_path, p2)


def test_a_data_folder_given_relative_is_served(tmp_path):
    """`--data data` (the default) from the folder the command runs in: the model generated
    there this very command is named relative, and is still put into the bucket and served."""
    need("s3rver", "npm install -g s3rver@3.7.1")
    text = SMALL.format(kind="s3").replace('cache = ["cold", "warm"]', 'cache = ["warm"]')
    p, records, _ = run_experiment(tmp_path, text + '[[strategy]]\nname = "http_get"\n',
                                   relative=True)
    assert p.returncode == 0, p.stderr
    assert len(records) == 1 and records[0]["status"] == "ok", records
    assert records[0]["read_as"].startswith("s3://loadbench/"), records[0]
    no_leftovers(tmp_path, p)


def test_a_server_without_a_data_folder_makes_it_and_says_what_it_is_for(tmp_path):
    """The server serves the data folder: one that does not exist yet is made (not "No such file
    or directory"), and a model outside it is refused, saying that only files in it are served."""
    need("nginx", "Debian's nginx-light")
    model = tmp_path / "m.wlf"
    subprocess.run([BIN, "gen", "--size", "4MiB", "--out", str(model), "--quiet"], check=True)
    text = SMALL.format(kind="http").replace('preset = "llama"\nsize = "4MiB"\n'
                                             'format = "safetensors"', f'path = "{model}"')
    p, records, _ = run_experiment(tmp_path, text + '[[strategy]]\nname = "http_get"\n')
    assert p.returncode == 2 and not records, p.stderr
    assert "No such file or directory" not in p.stderr
    assert f"only files in the data folder {tmp_path / 'data'} can be served" in p.stderr
    assert (tmp_path / "data").is_dir()
    no_leftovers(tmp_path, p)


def test_a_killed_experiment_leaves_its_mount_to_the_next_command(tmp_path):
    """A command killed while the bucket is mounted leaves the mount dead (its s3fs dies with
    it): it is journaled, and the next command that measures detaches it and says so. The
    password file s3fs was given is gone as soon as the mount is up."""
    need("s3rver", "npm install -g s3rver@3.7.1")
    need("s3fs", "Debian's s3fs")
    if not os.path.exists("/dev/fuse") or os.geteuid() != 0:
        pytest.skip("an s3fs mount as made here needs root and /dev/fuse")
    text = SMALL.format(kind="s3").replace("reps = 1", "reps = 1000") + \
        '[[strategy]]\nname = "fread"\nvia = "s3fs"\n'
    (tmp_path / "e.toml").write_text(text)
    env = dict(os.environ, LOADBENCH_LOCK_DIR=str(tmp_path / "locks"))
    p = subprocess.Popen([BIN, "experiment", str(tmp_path / "e.toml"), "--data",
                          str(tmp_path / "data"), "--out", str(tmp_path / "out")], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    mount = None
    for line in p.stderr:
        if " mounted at " in line:
            mount = line.split(" mounted at ")[1].split()[0]
            break
    if mount is None:
        p.kill()
        pytest.skip(f"no s3fs mount could be made here (exit {p.wait()})")
    try:
        assert not [f for f in os.listdir("/tmp") if f.startswith("loadbench-s3fs-")
                    and f != os.path.basename(mount)
                    and os.path.exists(f"/tmp/{f}/passwd")]
    finally:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
    assert mount in open("/proc/mounts").read()  # dead, not unmounted
    model = next((tmp_path / "data").glob("*.safetensors"))
    r = subprocess.run([BIN, "cache", "drop", str(model)], env=env,
                       capture_output=True, text=True, timeout=60)
    assert f"mount {mount}" in r.stderr, r.stderr
    assert mount not in open("/proc/mounts").read() and not os.path.exists(mount)
