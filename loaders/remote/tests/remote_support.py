"""Helpers of the remote client's tests: the servers they start (fault_server.py, `loadbench
serve`), each in a process group of its own that is killed however the test ends; loadbench run
with a tag in its environment, so that any process it leaves behind is found; the records it
wrote; and the check that no credential reached anything it printed or wrote."""
import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import uuid

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BIN = os.path.abspath(os.environ.get("LOADBENCH_BIN", os.path.join(REPO, "build", "loadbench")))
HERE = os.path.dirname(os.path.abspath(__file__))
FAULT_SERVER = os.path.join(HERE, "fault_server.py")
CACHE = "cold" if os.geteuid() == 0 else "warm"  # cold needs drop_caches here
TAG = "LOADBENCH_TEST_TAG"
SERVING = re.compile(r"^serving (\S+) at (http://127\.0\.0\.1:(\d+)) \((\w+) ([0-9.]+)\)$")


def base_env(tmp):
    """The test's environment: its own lock folder, no AWS setting or file of the machine's,
    and no instance metadata service asked (botocore's chain runs where no keys are given)."""
    drop = ("LOADBENCH_LOCK_FD", "LOADBENCH_S3_ADDRESSING", "LOADBENCH_SIGV4_DATE",
            "LOADBENCH_HTTP_STALL_S")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AWS_", "LOADBENCH_AWS_")) and k not in drop}
    env["LOADBENCH_LOCK_DIR"] = os.path.join(str(tmp), "locks")
    env["AWS_SHARED_CREDENTIALS_FILE"] = os.path.join(str(tmp), "no-credentials")
    env["AWS_CONFIG_FILE"] = os.path.join(str(tmp), "no-config")
    env["AWS_EC2_METADATA_DISABLED"] = "true"
    return env


def stop_group(p, timeout=10):
    """Kills the process group `p` leads (SIGTERM, then SIGKILL) and reaps `p`."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(p.pid, sig)
        except ProcessLookupError:
            break
        try:
            p.wait(timeout=timeout)
            break
        except subprocess.TimeoutExpired:
            continue
    for f in (p.stdin, p.stdout, p.stderr):
        if f is not None:
            f.close()


@contextlib.contextmanager
def fault_server(path, log=None, other=None):
    """fault_server.py serving `path` (and `other` where its mode swap says): yields its port;
    killed at the end (and gone with this process however it ends: its standard input is a
    pipe from here)."""
    args = [sys.executable, FAULT_SERVER, str(path), "--until-stdin-closes"]
    args += ["--log", str(log)] if log else []
    args += ["--other", str(other)] if other else []
    p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        line = p.stdout.readline().strip()
        if not line.isdigit():
            raise RuntimeError(f"fault_server.py printed {line!r}: {p.stderr.read()}")
        yield int(line)
    finally:
        stop_group(p)


@contextlib.contextmanager
def serve(args, env):
    """`loadbench serve ARGS` in a process group of its own: yields (process, endpoint); stopped
    (SIGTERM, then SIGKILL) at the end."""
    p = subprocess.Popen([BIN, "serve", *args, "--until-stdin-closes"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                         start_new_session=True)
    try:
        line = p.stdout.readline().rstrip("\n")
        m = SERVING.match(line)
        if m is None:
            raise RuntimeError(f"no serving line: {line!r}, stderr: {p.stderr.read()!r}")
        yield p, m.group(2)
    finally:
        stop_group(p)


def free_port():
    """A port of 127.0.0.1 that nothing listens on (bound, then let go)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tagged(tag):
    """Every process whose environment holds TAG=tag: what a command started with it left."""
    want = f"{TAG}={tag}".encode()
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/environ", "rb") as f:
                if want in f.read().split(b"\0"):
                    pids.append(int(d))
        except OSError:
            continue
    return pids


def children():
    """The live children of this test process (the servers it holds are among them)."""
    me = str(os.getpid())
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == me and fields[0] != "Z":
            out.append(int(d))
    return out


class Result:
    def __init__(self, rc, out, err, wall_s):
        self.rc, self.out, self.err, self.wall_s = rc, out, err, wall_s

    def __repr__(self):
        return f"exit {self.rc} after {self.wall_s:.1f} s\nstdout: {self.out}\nstderr: {self.err}"


def start(args, env, tag):
    """BIN ARGS in a process group of its own, TAG=tag in its environment."""
    return popen([BIN, *args], env, tag)


def popen(argv, env, tag):
    """argv started as `start` starts BIN; what finish checks against is noted first."""
    before = set(children())
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=dict(env, **{TAG: tag}), start_new_session=True)
    p.children_before = before
    return p


def finish(p, tag, limit_s, t0):
    """Waits for `p` (killed past `limit_s`); asserts that nothing it started is left: no
    process with its tag, no new child of this test."""
    try:
        out, err = p.communicate(timeout=max(1.0, limit_s - (time.monotonic() - t0)))
    except subprocess.TimeoutExpired:
        stop_group(p)
        raise AssertionError(f"{p.args} ran past {limit_s} s")
    wall = time.monotonic() - t0
    # What the command started ends before it does; a moment for the kernel to reap.
    until = time.monotonic() + 2
    while tagged(tag) and time.monotonic() < until:
        time.sleep(0.05)
    assert tagged(tag) == [], f"processes left by {p.args}: {tagged(tag)}"
    left = set(children()) - p.children_before
    assert not left, f"children of the test left after {p.args}: {sorted(left)}"
    return Result(p.returncode, out, err, wall)


def loadbench(args, env, limit_s=60):
    """Runs BIN ARGS to its end (at most limit_s); asserts it left no process behind."""
    tag = uuid.uuid4().hex
    t0 = time.monotonic()
    return finish(start(args, env, tag), tag, limit_s, t0)


def run_args(file, out, strategies, timeout_s=20):
    return ["run", "--file", file, "--strategies", strategies, "--reps", "1", "--cache", CACHE,
            "--out", str(out), "--timeout", str(timeout_s)]


def records(out):
    """The records of OUT/runs.jsonl, by strategy name."""
    with open(os.path.join(str(out), "runs.jsonl"), encoding="utf-8") as f:
        return {r["strategy"]: r for r in map(json.loads, f)}


def assert_no_secret(secrets, texts=(), folder=None):
    """None of `secrets` in `texts` nor in any file under `folder`."""
    for t in texts:
        for s in secrets:
            assert s not in t, f"{s!r} printed: {t}"
    if folder is None or not os.path.isdir(folder):
        return
    for root, _, files in os.walk(folder):
        for name in files:
            path = os.path.join(root, name)
            with open(path, "rb") as f:
                data = f.read()
            for s in secrets:
                assert s.encode() not in data, f"{s!r} written in {path}"


def one_line(r):
    """The one line on stderr of a command refused before any run."""
    lines = r.err.splitlines()
    assert len(lines) == 1, r
    return lines[0]
