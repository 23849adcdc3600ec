"""The [[storage]] axis end to end, by the binary: a model put on storages the tool makes (a
file system on a loop device with a device class, a tmpfs), measured in rounds of each storage's
own, every record naming its storage and, where there is a device, the device's counters; each
storage removed once its runs are done, and one killed mid-run removed by the next command that
measures. Root only (making a storage needs root); skipped otherwise.

Run with /usr/bin/python3 -m pytest harness/run/tests. LOADBENCH_BIN names the binary (default
build/loadbench of this checkout)."""
import glob
import json
import os
import signal
import subprocess
import time

import pytest
from conftest import BIN


def need_root():
    if os.geteuid() != 0:
        pytest.skip("making a storage needs root")


def leftovers():
    """What a storage of the tool's could leave: its mounts, loop devices, folders, cgroups."""
    mounts = [line.split()[1] for line in open("/proc/mounts")
              if line.split()[1].startswith("/tmp/loadbench-")]
    loops = []
    for f in glob.glob("/sys/block/loop*/loop/backing_file"):
        backing = open(f).read().strip()
        if backing.startswith("/tmp/loadbench-"):
            loops.append((f, backing))
    folders = [f for f in glob.glob("/tmp/loadbench-storage-*") + glob.glob("/tmp/loadbench-mnt-*")]
    groups = glob.glob("/sys/fs/cgroup/blkio/**/loadbench-*", recursive=True)
    return {"mounts": mounts, "loops": loops, "folders": folders, "cgroups": groups}


def nothing_new(before):
    """Nothing of a storage's is left that was not there before (another command's, cleaned by
    the next measuring command, may have gone meanwhile)."""
    after = leftovers()
    for kind, things in after.items():
        assert set(things) <= set(before[kind]), (kind, things, before[kind])


def records_of(out):
    path = out / "runs.jsonl"
    return [json.loads(line) for line in open(path)] if path.exists() else []


def test_each_storage_has_its_rounds_its_label_and_its_device_counters(tmp_path, model, env):
    need_root()
    before = leftovers()
    out = tmp_path / "out"
    p = subprocess.run([BIN, "run", "--file", model, "--strategies", "fread,mmap", "--reps", "2",
                        "--ceiling", "--storage", "ext4:read_bps=400MB", "--storage", "tmpfs",
                        "--out", str(out)], env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    records = records_of(out)
    by = {}
    for r in records:
        by.setdefault(r["storage"], []).append(r)
    assert set(by) == {"ext4:read_bps=400MB", "tmpfs"}
    ext4, tmpfs = by["ext4:read_bps=400MB"], by["tmpfs"]
    # ext4: 2 rounds of cold (fread, mmap, ceiling) and warm (fread, mmap).
    assert len(ext4) == 2 * 5 and all(r["status"] == "ok" for r in ext4)
    assert all(r["file"] == os.path.realpath(model) for r in records)
    for r in ext4:
        if r["cache"] == "cold":
            assert r["device_reads"] > 0 and r["device_read_bytes"] >= 0.9 * r["file_bytes"], r
            assert r["device_request_bytes"] == pytest.approx(
                r["device_read_bytes"] / r["device_reads"])
        if r["strategy"] != "ceiling":
            assert r["checksum_ok"] is True
    # tmpfs: cold runs have no device to be cold against.
    for r in tmpfs:
        if r["cache"] == "cold":
            assert r["status"] == "unsupported" and "tmpfs" in r["error"], r
        else:
            assert r["status"] == "ok" and "device_reads" not in r
    # The console keeps the storages apart: a row and a ceiling line of each.
    assert "fread on ext4:read_bps=400MB" in p.stdout and "fread on tmpfs" in p.stdout, p.stdout
    assert "ceiling on ext4:read_bps=400MB (" in p.stdout, p.stdout
    assert "dev_request" in p.stdout, p.stdout
    env_json = json.load(open(out / "env.json"))
    labels = [s["label"] for s in env_json["storages"]]
    assert labels == ["ext4:read_bps=400MB", "tmpfs"]
    assert env_json["storages"][0]["device_class"]["read_bps"] == 400_000_000
    assert "requests" in env_json["storages"][0]["probe"]
    nothing_new(before)


def test_a_throttled_storage_is_read_at_its_device_class(tmp_path, model, env):
    """16 MiB at 16 MB/s is about 1 s: the device class holds every reader and the ceiling."""
    need_root()
    out = tmp_path / "out"
    p = subprocess.run([BIN, "run", "--file", model, "--strategies", "fread", "--reps", "1",
                        "--cache", "cold", "--ceiling", "--storage", "xfs:read_bps=16MB:probe=off",
                        "--out", str(out)], env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    for r in records_of(out):
        seconds = r["wall_s"]
        rate = r["file_bytes"] / seconds
        # A ceiling only (a slow machine reads slower): 30% over the class allows the
        # throttle's first slice, let through before it counts, on a read of about 1 s.
        assert rate < 16e6 * 1.3, (r["strategy"], rate)


def test_bad_storages_are_refused_before_any_run(tmp_path, model, env):
    for text, says in [("nfs", "nfs"), ("xfs:preset=floppy", "floppy"), ("xfs:read_iops=0", "0"),
                       ("tmpfs:read_bps=1GB", "read_bps"), ("squashfs:compress=brotli", "brotli")]:
        p = subprocess.run([BIN, "run", "--file", model, "--strategies", "fread", "--reps", "1",
                            "--storage", text, "--out", str(tmp_path / text.replace(":", "_"))],
                           env=env, capture_output=True, text=True, timeout=60)
        assert p.returncode == 2, (text, p.stderr)
        assert says in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
        assert not (tmp_path / text.replace(":", "_") / "runs.jsonl").exists()


def test_a_killed_experiment_leaves_its_storage_to_the_next_command(tmp_path, model, env):
    """Killed while its runs read a throttled ext4 storage: the mount, the loop device, the
    blkio cgroup and the backing folder stay (journaled), and the next command that measures
    removes them all and says so."""
    need_root()
    before = leftovers()
    p = subprocess.Popen([BIN, "run", "--file", model, "--strategies", "fread", "--reps", "50",
                          "--cache", "cold", "--storage", "ext4:read_bps=4MB:probe=off",
                          "--out", str(tmp_path / "out")], env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.time() + 120
    for line in p.stderr:
        if "ready" in line and "storage" in line or time.time() > deadline:
            break
    time.sleep(1.5)  # inside a run's read
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    left = leftovers()
    assert left["mounts"] != before["mounts"] and left["loops"] != before["loops"], left
    r = subprocess.run([BIN, "cache", "drop", model], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert "cleaned up" in r.stderr, r.stderr
    nothing_new(before)


def test_a_fuse_storage_mounts_the_experiments_server(tmp_path, env):
    """rclone mounts the experiment's nginx; cold runs read through the mount, verified; with
    rclone's full cache there is no warm state to make, and the runs say so."""
    need_root()
    for program in ("nginx", "rclone"):
        if subprocess.run(["sh", "-c", f"command -v {program} || test -x /usr/sbin/{program}"],
                          capture_output=True).returncode != 0:
            pytest.skip(f"no {program}")
    before = leftovers()
    (tmp_path / "e.toml").write_text("""name = "fuse"
reps = 1
cache = "both"
[server]
kind = "http"
[[file]]
preset = "llama"
size = "8MiB"
[[storage]]
kind = "fuse"
probe = false
[[storage]]
kind = "fuse"
cache = "full"
chunk = "4MiB"
probe = false
[[strategy]]
name = "fread"
""")
    p = subprocess.run([BIN, "experiment", str(tmp_path / "e.toml"), "--data", str(tmp_path / "data"),
                        "--out", str(tmp_path / "out")], env=env, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    got = {(r["storage"], r["cache"]): r for r in records_of(tmp_path / "out")}
    assert set(got) == {("fuse", "cold"), ("fuse", "warm"), ("fuse:cache=full:chunk=4MiB", "cold"),
                        ("fuse:cache=full:chunk=4MiB", "warm")}
    for (storage, cache), r in got.items():
        if storage != "fuse" and cache == "warm":
            assert r["status"] == "unsupported" and "rclone" in r["error"], r
        else:
            assert r["status"] == "ok" and r["checksum_ok"] is True, r
    nothing_new(before)
