"""`loadbench serve` driven as the remote client's tests use it: the line it prints once the
server answers, a file fetched by range from that endpoint, nothing left listening or journaled
after SIGTERM or the end of stdin (exit 0), and bad input refused in one line with exit 2.

Run with /usr/bin/python3 -m pytest harness/net/tests. LOADBENCH_BIN names the binary
(default build/loadbench of this checkout); a test whose server program is not installed
skips."""
import os
import re
import shutil
import signal
import socket
import subprocess
import urllib.request

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BIN = os.path.abspath(os.environ.get("LOADBENCH_BIN", os.path.join(REPO, "build", "loadbench")))
pytestmark = pytest.mark.skipif(not os.access(BIN, os.X_OK),
                                reason=f"no loadbench at {BIN} (build it or set LOADBENCH_BIN)")
LINE = re.compile(r"^serving (\S+) at (http://127\.0\.0\.1:(\d+)) \((\w+) ([0-9.]+)\)$")


@pytest.fixture
def env(tmp_path):
    e = dict(os.environ)
    e["LOADBENCH_LOCK_DIR"] = str(tmp_path / "locks")
    return e


def serve(args, env, **kw):
    """Starts `loadbench serve ARGS`; returns the process and the match of its first line."""
    p = subprocess.Popen([BIN, "serve", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=env, **kw)
    line = p.stdout.readline().rstrip("\n")
    m = LINE.match(line)
    if m is None:
        p.kill()
        _, err = p.communicate(timeout=10)
        pytest.fail(f"no serving line: {line!r}, stderr: {err!r}")
    return p, m


def fetch(url, first, last):
    req = urllib.request.Request(url, headers={"Range": f"bytes={first}-{last}"})
    with urllib.request.urlopen(req, timeout=5) as r:
        return r.status, r.read()


def refused(port):
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


def leftover_journals(env):
    d = os.path.join(env["LOADBENCH_LOCK_DIR"], f"leftovers-{os.geteuid()}")
    return os.listdir(d) if os.path.isdir(d) else []


@pytest.mark.skipif(shutil.which("nginx") is None, reason="nginx is not installed")
def test_http_serves_by_range_and_sigterm_leaves_nothing(tmp_path, env):
    content = os.urandom(200_000)
    (tmp_path / "www").mkdir()
    (tmp_path / "www" / "model.bin").write_bytes(content)
    p, m = serve(["--kind", "http", "--root", str(tmp_path / "www"), "--limit-rate", "100MiB"],
                 env)
    assert m.group(1) == str(tmp_path / "www") and m.group(4) == "nginx"
    assert fetch(m.group(2) + "/model.bin", 100, 4195) == (206, content[100:4196])
    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=10) == 0, p.stderr.read()
    assert refused(int(m.group(3)))
    assert leftover_journals(env) == []


@pytest.mark.skipif(shutil.which("s3rver") is None, reason="s3rver is not installed")
def test_s3_bucket_serves_and_the_end_of_stdin_stops_it(tmp_path, env):
    content = os.urandom(50_000)
    p, m = serve(["--kind", "s3", "--root", str(tmp_path), "--bucket", "models",
                  "--until-stdin-closes"], env, stdin=subprocess.PIPE)
    assert m.group(4) == "s3rver"
    (tmp_path / "models" / "w.bin._S3rver_object").write_bytes(content)
    assert fetch(m.group(2) + "/models/w.bin", 0, 999) == (206, content[:1000])
    p.stdin.close()
    assert p.wait(timeout=10) == 0, p.stderr.read()
    assert refused(int(m.group(3)))
    assert leftover_journals(env) == []


@pytest.mark.parametrize("args, says", [
    (["--kind", "http", "--root", "{tmp}/absent"], "{tmp}/absent: No such file or directory"),
    (["--kind", "http", "--root", "{tmp}/file"], "{tmp}/file: not a folder"),
    (["--kind", "ftp", "--root", "{tmp}"], "server kind ftp: not http, s3 or s3fs"),
    (["--kind", "http", "--root", "{tmp}", "--limit-rate", "fast"], "--limit-rate: 'fast'"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, env, args, says):
    (tmp_path / "file").write_text("x")
    r = subprocess.run([BIN, "serve", *[a.format(tmp=tmp_path) for a in args]],
                       capture_output=True, text=True, env=env, timeout=10)
    assert r.returncode == 2
    assert r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and says.format(tmp=tmp_path) in lines[0], r.stderr
