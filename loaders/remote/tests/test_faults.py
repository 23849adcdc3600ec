"""Remote loads that go wrong, and one that goes right, through `loadbench run`: every fault ends
in a `failed` record (or, met while the model's header is read, in one line on stderr and a
non-zero exit) whose error names the object and the reason, within the run's timeout, with no
process left behind and no credential printed or written anywhere in the results folder.

The faults of fault_server.py (a body shorter than its Content-Length, a connection closed
mid-range, Range ignored, an object replaced during the load, a stalled server, a redirect
loop, 403) are met through s3:// names, signed with marker credentials; the others against real
servers from `loadbench serve`: nginx killed mid-load, a missing object, an index with a missing
shard, one naming another host or `..`, an endpoint nobody answers at, a host that does not
resolve; and a load from s3rver that is ok by both strategies.

Run with /usr/bin/python3 -m pytest loaders/remote/tests. LOADBENCH_BIN names the binary
(default build/loadbench of this checkout); a test whose server is not installed skips."""
import json
import os
import re
import shutil
import signal
import subprocess
import time
import uuid

import pytest

import remote_support as rs

KEY_ID = "AKIAMARKERKEYID70Q3"
SECRET = "marker-secret-Zq81vW"
STRATEGIES = "http_get,http_ranges:chunk=1MiB:concurrency=4"
RANGES = "http_ranges:chunk=1MiB:concurrency=4"
NGINX = pytest.mark.skipif(shutil.which("nginx") is None, reason="nginx is not installed")


@pytest.fixture(scope="module")
def place(tmp_path_factory):
    """A folder with a 3.5 MiB WLF (more than the 1 MiB the header reads, so that the faults
    that spare those reads trip in the load), and another of the same size and shapes whose
    bytes and checksum differ (what `swap` serves)."""
    d = tmp_path_factory.mktemp("remote")
    env = rs.base_env(d)
    for name, seed in (("m.wlf", "1"), ("other.wlf", "2")):
        r = rs.loadbench(["gen", "--size", "3MiB", "--seed", seed, "--out", str(d / name),
                          "--quiet"], env)
        assert r.rc == 0, r
    assert os.path.getsize(d / "m.wlf") == os.path.getsize(d / "other.wlf")
    return d


@pytest.fixture(scope="module")
def faults(place):
    with rs.fault_server(place / "m.wlf", other=place / "other.wlf") as port:
        yield port


@pytest.fixture
def env(place, tmp_path):
    e = rs.base_env(tmp_path)
    e.update(AWS_ACCESS_KEY_ID=KEY_ID, AWS_SECRET_ACCESS_KEY=SECRET)
    return e


def no_secret(r, out=None):
    rs.assert_no_secret([KEY_ID, SECRET], [r.out, r.err], out)


# fault -> (http_get's status, http_ranges' status, what each failed run's error says)
RUN_FAULTS = {
    "short": ("failed", "failed", "the server closed the connection after"),
    "close": ("failed", "failed", "the server closed the connection after"),
    # A whole GET is what a server that ignores Range answers right.
    "norange": ("ok", "failed", "answered a ranged GET with 200 and the whole object: the server "
                                "ignores Range requests"),
    "etag": ("failed", "failed", "object changed during the load (ETag"),
    "stall": ("failed", "failed", "the server stalled"),
    "unavailable": ("failed", "failed", "HTTP 503 after 4 tries"),
    # A whole GET asks for no range: only the ranges' answers carry one.
    "wrongrange": ("ok", "failed", "the server sent bytes "),
    "nocontentrange": ("ok", "failed", "the server sent a 206 without Content-Range for bytes "),
}


@pytest.mark.parametrize("fault", RUN_FAULTS)
def test_a_fault_in_the_load_is_a_failed_run_naming_the_object(faults, env, tmp_path, fault):
    want_get, want_ranges, says = RUN_FAULTS[fault]
    env["AWS_ENDPOINT_URL"] = f"http://127.0.0.1:{faults}"
    timeout_s = 20
    if fault == "stall":
        env["LOADBENCH_HTTP_STALL_S"] = "2"  # 30 s by default
    name = f"s3://{fault}/m.wlf"
    out = tmp_path / "out"
    r = rs.loadbench(rs.run_args(name, out, STRATEGIES, timeout_s), env, limit_s=2 * timeout_s + 20)
    recs = rs.records(out)
    assert r.rc == 1, r
    for strategy, want in (("http_get", want_get), ("http_ranges", want_ranges)):
        rec = recs[strategy]
        assert rec["status"] == want, (strategy, rec.get("error"))
        if want == "ok":
            assert rec["checksum_ok"] is True
            continue
        err = rec["error"]
        print(f"{fault} {strategy}: {err}")
        assert "\n" not in err
        assert err.startswith(f"{name}: {says}"), (strategy, err)
        assert (rec["wall_s"] or 0) < timeout_s, (strategy, rec["wall_s"])
    if fault == "stall":  # ended by the stall timer, not by the run's timeout
        assert "the last 2 seconds" in recs["http_ranges"]["error"]
    if fault == "wrongrange":  # the bytes 4 KiB before those asked for
        m = re.search(r"sent bytes (\d+)-(\d+) for (\d+)-(\d+)$", recs["http_ranges"]["error"])
        assert m, recs["http_ranges"]["error"]
        x, y, a, b = map(int, m.groups())
        assert (x, y) == (a - 4096, b - 4096), m.group(0)
    no_secret(r, out)


@pytest.mark.parametrize("fault, why", [("ok", None), ("noetag", "the HEAD sent no ETag"),
                                        ("getnoetag", "a GET sent no ETag")])
def test_an_answer_without_an_etag_loads_unchecked_and_says_so(faults, env, tmp_path, fault, why):
    """No ETag is no change: the load goes on, recorded and said to be unchecked."""
    env["AWS_ENDPOINT_URL"] = f"http://127.0.0.1:{faults}"
    name = f"s3://{fault}/m.wlf"
    out = tmp_path / "out"
    r = rs.loadbench(rs.run_args(name, out, STRATEGIES), env)
    assert r.rc == 0, r
    recs = rs.records(out)
    for strategy in ("http_get", "http_ranges"):
        rec = recs[strategy]
        assert rec["status"] == "ok" and rec["checksum_ok"] is True, (strategy, rec.get("error"))
        details = rec["details"]
        assert details["etag_checked"] is (why is None), (strategy, details)
        assert details.get("etag_unchecked") == why, (strategy, details)
        warning = f"{name}: not checked for a change during the load ({why})"
        assert rec.get("warnings", []) == ([] if why is None else [warning]), rec
    warned = [ln for ln in r.err.splitlines() if "not checked for a change" in ln]
    print("\n".join(warned))
    assert len(warned) == (0 if why is None else 2), r
    no_secret(r, out)


def test_a_503_once_is_retried_and_counted(faults, env, tmp_path):
    """S3's 503 SlowDown to the first try of every request (the runner's HEAD and header reads
    included), with Retry-After: 1."""
    env["AWS_ENDPOINT_URL"] = f"http://127.0.0.1:{faults}"
    out = tmp_path / "out"
    r = rs.loadbench(rs.run_args("s3://slowdown/m.wlf", out, STRATEGIES), env)
    assert r.rc == 0, r
    recs = rs.records(out)
    for strategy in ("http_get", "http_ranges"):
        rec = recs[strategy]
        assert rec["status"] == "ok" and rec["checksum_ok"] is True, (strategy, rec.get("error"))
        print(f"{strategy}: {rec['details']['retries']} retries, {rec['wall_s']:.2f} s")
        assert rec["details"]["retries"] >= 1, (strategy, rec["details"])
        assert rec["wall_s"] >= 1.0, (strategy, rec["wall_s"])  # Retry-After: 1 waited for
    get, ranges = recs["http_get"]["details"], recs["http_ranges"]["details"]
    assert (get["retries"], get["requests"]) == (1, 3), get  # a HEAD, its one GET twice
    assert ranges["requests"] == 1 + 2 * ranges["retries"], ranges  # a HEAD, each range twice
    no_secret(r, out)


def test_the_first_byte_is_the_first_gets(faults, env, tmp_path):
    """`late` answers each GET of the load after 1 s, a HEAD at once."""
    env["AWS_ENDPOINT_URL"] = f"http://127.0.0.1:{faults}"
    out = tmp_path / "out"
    r = rs.loadbench(rs.run_args("s3://late/m.wlf", out, STRATEGIES), env)
    assert r.rc == 0, r
    for strategy, rec in rs.records(out).items():
        assert rec["status"] == "ok", (strategy, rec.get("error"))
        print(f"{strategy}: first byte after {rec['details']['first_byte_s']} s")
        assert rec["details"]["first_byte_s"] >= 1.0, (strategy, rec["details"])


def test_another_model_than_the_runner_read_fails_the_run(faults, env, tmp_path):
    """`swap` serves another WLF, whole and consistent in itself, once the runner has read the
    header: the readers get another model than the one the runner read the checksum of."""
    env["AWS_ENDPOINT_URL"] = f"http://127.0.0.1:{faults}"
    name = "s3://swap/m.wlf"
    out = tmp_path / "out"
    r = rs.loadbench(rs.run_args(name, out, STRATEGIES), env)
    assert r.rc == 1, r
    with open(out / "env.json") as f:
        want = json.load(f)["file"]["checksum"]
    for strategy, rec in rs.records(out).items():
        print(f"{strategy}: {rec.get('error')}")
        assert rec["status"] == "failed", (strategy, rec)
        assert rec["error"].startswith(f"{name}: the model stores checksum "), rec["error"]
        assert rec["error"].endswith(f", {want} when the runner read it: it changed in between")
    no_secret(r, out)


@pytest.mark.parametrize("fault, says", [
    ("loop", "s3://loop/m.wlf: redirected (HTTP 302 to '/loop/m.wlf'); redirects are not followed"),
    ("forbidden", "s3://forbidden/m.wlf: HTTP 403 Forbidden: the credentials were refused"),
])
def test_a_fault_met_reading_the_header_is_one_line_before_any_run(faults, env, tmp_path, fault,
                                                                  says):
    env["AWS_ENDPOINT_URL"] = f"http://127.0.0.1:{faults}"
    out = tmp_path / "out"
    r = rs.loadbench(rs.run_args(f"s3://{fault}/m.wlf", out, STRATEGIES), env, limit_s=30)
    assert r.rc == 2, r
    print(f"{fault}: {r.err}")
    assert rs.one_line(r).startswith(f"loadbench run: {says}"), r
    assert not (out / "runs.jsonl").exists()
    no_secret(r, out)


@pytest.mark.skipif(shutil.which("s3rver") is None, reason="s3rver is not installed")
def test_an_s3_object_loads_by_both_strategies_signed(place, env, tmp_path):
    root = tmp_path / "s3"
    (root / "models" / "dir").mkdir(parents=True)
    # s3rver's own layout: the object KEY of bucket B is B/KEY._S3rver_object (docs/cli.md).
    shutil.copyfile(place / "m.wlf", root / "models" / "dir" / "m.wlf._S3rver_object")
    env["AWS_ACCESS_KEY_ID"] = "S3RVER"  # s3rver's key; any secret signs (mismatches allowed)
    with rs.serve(["--kind", "s3", "--root", str(root)], rs.base_env(tmp_path / "srv")) as (_, ep):
        env["AWS_ENDPOINT_URL"] = ep
        out = tmp_path / "out"
        r = rs.loadbench(rs.run_args("s3://models/dir/m.wlf", out, STRATEGIES), env)
    assert r.rc == 0, r
    recs = rs.records(out)
    size = os.path.getsize(place / "m.wlf")
    for strategy in ("http_get", "http_ranges"):
        rec = recs[strategy]
        assert rec["status"] == "ok" and rec["checksum_ok"] is True, rec.get("error")
        assert rec["details"]["bytes_received"] <= size
        assert rec["details"]["etag"]
    assert recs["http_ranges"]["details"]["requests"] >= 4  # a HEAD and 1 MiB ranges
    rs.assert_no_secret([SECRET], [r.out, r.err], out)


def worker_started(tag):
    for pid in rs.tagged(tag):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"worker" in f.read().split(b"\0")[1:2]:
                    return True
        except OSError:
            continue
    return False


def group_of_child(pid):
    """The process group of the first child of `pid` (the server that `serve` runs)."""
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        kids = f.read().split()
    assert kids, f"serve {pid} has no child"
    return os.getpgid(int(kids[0]))


@NGINX
def test_nginx_killed_mid_load_is_a_failed_run_naming_the_object(place, env, tmp_path):
    www = tmp_path / "www"
    www.mkdir()
    senv = rs.base_env(tmp_path / "srv")
    r = rs.loadbench(["gen", "--size", "16MiB", "--out", str(www / "big.wlf"), "--quiet"], senv)
    assert r.rc == 0, r
    out = tmp_path / "out"
    with rs.serve(["--kind", "http", "--root", str(www), "--limit-rate", "2MiB"], senv) as (p, ep):
        name = f"{ep}/big.wlf"
        tag = uuid.uuid4().hex
        t0 = time.monotonic()
        run = rs.start(rs.run_args(name, out, "http_get", 30), env, tag)
        try:
            until = time.monotonic() + 20
            while not worker_started(tag) and time.monotonic() < until:
                time.sleep(0.05)
            # The worker reads the header (two 1 MiB ranges at 2 MiB/s), then the 16 MiB, for 8 s:
            # 2.5 s after it starts is about 1.5 s into the load.
            time.sleep(2.5)
            os.killpg(group_of_child(p.pid), signal.SIGKILL)
            r = rs.finish(run, tag, 60, t0)
        finally:
            if run.poll() is None:
                rs.stop_group(run)
        assert p.wait(timeout=10) == 1  # serve: its server ended by itself
    assert r.rc == 1, r
    rec = rs.records(out)["http_get"]
    print(f"nginx killed: {rec['error']}")
    assert rec["status"] == "failed"
    assert rec["error"].startswith(f"{name}: "), rec["error"]
    assert any(w in rec["error"] for w in ("closed the connection", "nothing answers")), rec
    assert r.wall_s < 30
    no_secret(r, out)


def write_index(path, weight_map):
    path.write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))


@pytest.fixture(scope="module")
def www(place):
    """nginx serving: a WLF; a safetensors model in two shards and its index, the second shard
    missing; indexes naming a shard on another host and one above their folder (plainly, and
    percent-encoded)."""
    d = place / "www"
    (d / "sharded").mkdir(parents=True)
    env = rs.base_env(place / "srv")
    r = rs.loadbench(["gen", "--format", "safetensors", "--size", "2MiB", "--shards", "2", "--out",
                      str(d / "sharded" / "model.safetensors"), "--quiet"], env)
    assert r.rc == 0, r
    index = d / "sharded" / "model.safetensors.index.json"
    weight_map = json.loads(index.read_text())["weight_map"]
    shards = sorted(set(weight_map.values()))
    assert len(shards) == 2, shards
    (d / "sharded" / shards[1]).unlink()
    first = sorted(t for t, s in weight_map.items() if s == shards[0])
    (d / "elsewhere").mkdir()
    write_index(d / "elsewhere" / "model.safetensors.index.json",
                {first[0]: "http://other.example/x.safetensors"})
    write_index(d / "elsewhere" / "up.safetensors.index.json", {first[0]: "../x.safetensors"})
    write_index(d / "elsewhere" / "encoded.safetensors.index.json",
                {first[0]: "%2e%2E/x.safetensors"})
    with rs.serve(["--kind", "http", "--root", str(d)], env) as (_, ep):
        yield ep, shards


@NGINX
@pytest.mark.parametrize("path, says", [
    ("absent.wlf", "{ep}/absent.wlf: missing (HTTP 404)"),
    ("sharded/model.safetensors.index.json", "{ep}/sharded/{shard}: missing (HTTP 404)"),
    ("elsewhere/model.safetensors.index.json",
     "{ep}/elsewhere/model.safetensors.index.json: names 'http://other.example/x.safetensors', "
     "outside its own prefix (a URL: another host)"),
    ("elsewhere/up.safetensors.index.json",
     "{ep}/elsewhere/up.safetensors.index.json: names '../x.safetensors', outside its own prefix"),
    ("elsewhere/encoded.safetensors.index.json",
     "{ep}/elsewhere/encoded.safetensors.index.json: names '%2e%2E/x.safetensors', outside its "
     "own prefix (a '..', '.' or empty component)"),
])
def test_a_model_that_cannot_be_read_is_exit_2_naming_it(www, env, tmp_path, path, says):
    ep, shards = www
    out = tmp_path / "out"
    r = rs.loadbench(rs.run_args(f"{ep}/{path}", out, STRATEGIES), env, limit_s=30)
    assert r.rc == 2, r
    print(f"{path}: {r.err}")
    assert says.format(ep=ep, shard=shards[1]) in rs.one_line(r), r
    assert not (out / "runs.jsonl").exists()
    no_secret(r, out)


@pytest.mark.parametrize("name", ["http://{host}/a/../m.wlf", "http://{host}/ok/./m.wlf",
                                  "http://{host}/ok/%2e%2E/m.wlf", "s3://ok/a/../../other/x.wlf"])
def test_a_dot_segment_in_a_name_is_exit_2_before_any_request(place, env, tmp_path, name):
    """libcurl would resolve the segment and fetch another object than the one named."""
    log = tmp_path / "requests.jsonl"
    with rs.fault_server(place / "m.wlf", log) as port:
        name = name.format(host=f"127.0.0.1:{port}")
        env["AWS_ENDPOINT_URL"] = f"http://127.0.0.1:{port}"
        out = tmp_path / "out"
        r = rs.loadbench(rs.run_args(name, out, STRATEGIES), env, limit_s=30)
    assert r.rc == 2, r
    print(f"{name}: {r.err}")
    assert rs.one_line(r) == f"loadbench run: {name}: a '.' or '..' segment in its path " \
                             "(it would be resolved away, and another object fetched)", r
    assert not log.exists(), log.read_text()
    assert not (out / "runs.jsonl").exists()
    no_secret(r, out)


def test_an_endpoint_nobody_answers_at_is_one_line(env, tmp_path):
    port = rs.free_port()
    env["AWS_ENDPOINT_URL"] = f"http://127.0.0.1:{port}"
    out = tmp_path / "out"
    r = rs.loadbench(rs.run_args("s3://models/m.wlf", out, STRATEGIES), env, limit_s=30)
    assert r.rc != 0, r
    print(f"refused (exit {r.rc}): {r.err}")
    line = rs.one_line(r)
    assert f"s3://models/m.wlf: nothing answers at http://127.0.0.1:{port}" in line, r
    no_secret(r, out)


def test_a_host_that_does_not_resolve_is_one_line(env, tmp_path):
    """Run in a network namespace of its own (no interface up), so that no query leaves."""
    probe = subprocess.run(["unshare", "-n", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"unshare -n is not permitted here: {probe.stderr.strip()}")
    name = "http://no-such-host.invalid/m.wlf"
    out = tmp_path / "out"
    tag = uuid.uuid4().hex
    t0 = time.monotonic()
    p = rs.popen(["unshare", "-n", rs.BIN, *rs.run_args(name, out, STRATEGIES)], env, tag)
    r = rs.finish(p, tag, 30, t0)
    assert r.rc != 0, r
    print(f"unresolved (exit {r.rc}): {r.err}")
    assert f"{name}: the host does not resolve" in rs.one_line(r), r
    no_secret(r, out)


def test_credentials_inside_a_url_are_refused_unprinted(env, tmp_path):
    out = tmp_path / "out"
    r = rs.loadbench(rs.run_args(f"http://user:{SECRET}@127.0.0.1:1/m.wlf", out, STRATEGIES), env,
                     limit_s=30)
    assert r.rc == 2, r
    print(f"credentials in URL: {r.err}")
    assert "credentials inside a URL are refused" in rs.one_line(r), r
    no_secret(r, out)
