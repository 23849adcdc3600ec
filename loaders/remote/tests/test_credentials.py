"""Credentials as the AWS SDKs find them, end to end: no keys in the environment or in any file
(HOME an empty folder), a container credential endpoint served on loopback as ECS serves one
(AWS_CONTAINER_CREDENTIALS_FULL_URI, AWS_CONTAINER_AUTHORIZATION_TOKEN), and `loadbench run` of
an s3:// model through botocore's chain:

- every request, the runner's and every worker's, is signed with the endpoint's key id and
  carries its session token, signed (fault_server.py's log of the headers);
- the endpoint is asked once per run, by the runner, with the authorization token, however many
  workers load;
- the records name the source (`details.credentials`: "botocore: container-role") and nothing
  printed or written holds the secret, the token or the authorization token;
- s3rver, which takes only its own key id, loads the model with the endpoint's credentials and
  refuses another key id;
- an endpoint that does not answer, or answers what is not credentials, is one line naming
  container-role, exit 2, before any run; with no credentials anywhere a 403 says the request
  went unsigned and where botocore looked.

Run with /usr/bin/python3 -m pytest loaders/remote/tests. botocore (python3-botocore) must be
importable by /usr/bin/python3, else the tests skip."""
import contextlib
import datetime
import http.server
import json
import os
import re
import shutil
import subprocess
import threading

import pytest

import remote_support as rs

KEY_ID = "ASIAENDPOINTKEY7Q2X"
SECRET = "endpoint-secret-Hq72nB"
TOKEN = "endpoint-session-token-Zk93+/Lm=="
AUTH = "container-auth-token-Wp41"
RANGES = "http_ranges:chunk=1MiB:concurrency=4"


def have_botocore():
    return subprocess.run(["/usr/bin/python3", "-c", "import botocore.session"],
                          capture_output=True).returncode == 0


pytestmark = pytest.mark.skipif(not have_botocore(),
                                reason="/usr/bin/python3 cannot import botocore")


class Endpoint(http.server.ThreadingHTTPServer):
    """A container credential endpoint: answers every GET with (status, body), noting the path
    and Authorization header of each."""

    def __init__(self, status, body):
        super().__init__(("127.0.0.1", 0), EndpointHandler)
        self.status, self.body, self.calls = status, body, []


class EndpointHandler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        self.server.calls.append((self.path, self.headers.get("Authorization")))
        body = self.server.body.encode()
        self.send_response(self.server.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def ecs_answer(key_id=KEY_ID):
    """What ECS answers: the role's temporary credentials, valid for 6 hours."""
    expiry = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=6)
    return json.dumps({"AccessKeyId": key_id, "SecretAccessKey": SECRET, "Token": TOKEN,
                       "Expiration": expiry.strftime("%Y-%m-%dT%H:%M:%SZ"),
                       "RoleArn": "arn:aws:iam::123456789012:role/loadbench"})


@contextlib.contextmanager
def endpoint(status=200, body=None):
    server = Endpoint(status, ecs_answer() if body is None else body)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def container_env(tmp, uri):
    """No keys anywhere (HOME an empty folder), the container endpoint at `uri`."""
    env = rs.base_env(tmp)
    home = tmp / "home"
    home.mkdir(exist_ok=True)
    env.update(HOME=str(home), AWS_CONTAINER_CREDENTIALS_FULL_URI=uri,
               AWS_CONTAINER_AUTHORIZATION_TOKEN=AUTH)
    return env


def uri_of(server):
    return f"http://127.0.0.1:{server.server_address[1]}/creds"


def no_secret(r, out):
    rs.assert_no_secret([SECRET, TOKEN, AUTH], [r.out, r.err], out)


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """A 3 MiB WLF: more than the 1 MiB a header read takes."""
    d = tmp_path_factory.mktemp("creds")
    r = rs.loadbench(["gen", "--size", "3MiB", "--out", str(d / "m.wlf"), "--quiet"],
                     rs.base_env(d))
    assert r.rc == 0, r
    return d / "m.wlf"


def logged(log):
    with open(log, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def test_every_request_is_signed_with_the_endpoints_keys_asked_once(model, tmp_path):
    log = tmp_path / "requests.jsonl"  # the headers, token among them: outside the results
    out = tmp_path / "out"
    with endpoint() as creds, rs.fault_server(model, log=log) as port:
        env = container_env(tmp_path, uri_of(creds))
        env["AWS_ENDPOINT_URL"] = f"http://127.0.0.1:{port}"
        args = rs.run_args("s3://ok/m.wlf", out, f"http_get,{RANGES}") + ["--procs", "2"]
        r = rs.loadbench(args, env, limit_s=90)
        calls = list(creds.calls)
    assert r.rc == 0, r
    print(f"endpoint calls: {calls}")
    assert calls == [("/creds", AUTH)], calls  # once, by the runner, for 4 workers
    with open(out / "runs.jsonl", encoding="utf-8") as f:
        recs = [json.loads(line) for line in f]
    assert len(recs) == 4, recs  # 2 strategies x 2 procs
    for rec in recs:
        assert rec["status"] == "ok" and rec["checksum_ok"] is True, rec.get("error")
        assert rec["details"]["credentials"] == "botocore: container-role", rec["details"]
    requests = logged(log)
    assert len([q for q in requests if q["method"] == "HEAD"]) >= 5  # the runner's, each worker's
    for q in requests:
        h = {k.lower(): v for k, v in q["headers"]}
        auth = h.get("authorization", "")
        assert auth.startswith(f"AWS4-HMAC-SHA256 Credential={KEY_ID}/"), (q["method"], auth)
        assert "x-amz-security-token" in re.search(r"SignedHeaders=([^,]+)", auth).group(1)
        assert h.get("x-amz-security-token") == TOKEN, q["method"]
    no_secret(r, out)


@pytest.mark.skipif(shutil.which("s3rver") is None, reason="s3rver is not installed")
def test_s3rver_loads_with_the_endpoints_keys_and_refuses_another_key_id(model, tmp_path):
    root = tmp_path / "s3"
    (root / "models").mkdir(parents=True)
    # s3rver's own layout: the object KEY of bucket B is B/KEY._S3rver_object (docs/cli.md).
    shutil.copyfile(model, root / "models" / "m.wlf._S3rver_object")
    with rs.serve(["--kind", "s3", "--root", str(root)], rs.base_env(tmp_path / "srv")) as (_, ep):
        # s3rver takes its own key id only (and any secret with it): the endpoint's is it.
        with endpoint(body=ecs_answer("S3RVER")) as creds:
            env = container_env(tmp_path, uri_of(creds))
            env["AWS_ENDPOINT_URL"] = ep
            out = tmp_path / "out"
            r = rs.loadbench(rs.run_args("s3://models/m.wlf", out, f"http_get,{RANGES}"), env)
            calls = list(creds.calls)
        assert r.rc == 0, r
        assert calls == [("/creds", AUTH)], calls
        for strategy, rec in rs.records(out).items():
            assert rec["status"] == "ok" and rec["checksum_ok"] is True, (strategy, rec)
            assert rec["details"]["credentials"] == "botocore: container-role"
        no_secret(r, out)
        with endpoint(body=ecs_answer("NOTS3RVERKEY")) as creds:
            env = container_env(tmp_path, uri_of(creds))
            env["AWS_ENDPOINT_URL"] = ep
            refused_out = tmp_path / "refused"
            refused = rs.loadbench(rs.run_args("s3://models/m.wlf", refused_out, "http_get"), env)
    print(f"another key id: {refused.err}")
    assert refused.rc == 2, refused
    assert rs.one_line(refused).startswith(
        "loadbench run: s3://models/m.wlf: HTTP 403 Forbidden: the credentials were refused"), refused
    no_secret(refused, refused_out)


@pytest.mark.parametrize("answer, says", [
    (None, "Could not connect to the endpoint URL"),
    ((200, "this is not JSON"), "JSON"),
    ((401, '{"message": "not authorized"}'), "401"),
    ((200, '{"AccessKeyId": "ID"}'), "SecretAccessKey"),
])
def test_an_endpoint_that_gives_no_credentials_is_one_line_before_any_run(model, tmp_path, answer,
                                                                          says):
    out = tmp_path / "out"
    with contextlib.ExitStack() as stack:
        if answer is None:
            uri = f"http://127.0.0.1:{rs.free_port()}/creds"  # nothing listens there
        else:
            uri = uri_of(stack.enter_context(endpoint(*answer)))
        env = container_env(tmp_path, uri)
        env["AWS_ENDPOINT_URL"] = f"http://127.0.0.1:{rs.free_port()}"
        r = rs.loadbench(rs.run_args("s3://b/m.wlf", out, "http_get"), env, limit_s=60)
    print(f"{answer}: {r.err}")
    assert r.rc == 2, r
    line = rs.one_line(r)
    assert line.startswith("loadbench run: no AWS credentials: botocore's container-role failed: "
                           ), line
    assert says in line, line
    assert not (out / "runs.jsonl").exists()
    no_secret(r, out)


def test_with_no_credentials_anywhere_requests_go_unsigned_and_a_403_says_where_it_looked(
        model, tmp_path):
    env = rs.base_env(tmp_path)
    (tmp_path / "home").mkdir()
    env["HOME"] = str(tmp_path / "home")
    out = tmp_path / "out"
    with rs.fault_server(model) as port:
        env["AWS_ENDPOINT_URL"] = f"http://127.0.0.1:{port}"
        r = rs.loadbench(rs.run_args("s3://ok/m.wlf", out, "http_get"), env)
        forbidden = rs.loadbench(rs.run_args("s3://forbidden/m.wlf", tmp_path / "refused",
                                             "http_get"), env)
    assert r.rc == 0, r
    source = rs.records(out)["http_get"]["details"]["credentials"]
    assert source.startswith("none (botocore looked in: env, "), source
    assert "container-role, iam-role)" in source, source
    print(f"403 unsigned: {forbidden.err}")
    assert forbidden.rc == 2, forbidden
    line = rs.one_line(forbidden)
    assert line.startswith("loadbench run: s3://forbidden/m.wlf: HTTP 403 Forbidden: "), line
    assert line.endswith(f"; sent unsigned: {source}"), line
