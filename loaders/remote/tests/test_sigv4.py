"""The SigV4 signature loadbench sends, against botocore's own signer: `loadbench inspect
s3://BUCKET/KEY` reads a WLF from fault_server.py (a HEAD and ranged GETs), which records every
request; each request's Authorization must be the one botocore's S3SigV4Auth computes for the
same method, URL, signed headers, credentials, region and time. The time is fixed with
LOADBENCH_SIGV4_DATE, which libcurl signs with (the credential scope's date shows it did).

Cases: a plain key at a host-name endpoint; a key with spaces and a non-ASCII character (S3's
percent-encoding, '/' kept); an endpoint given as IP:port; a session token and a region;
virtual-hosted addressing (BUCKET.localhost, which libcurl resolves itself, with no DNS).

libcurl signs the headers it is given and those it adds (host, x-amz-date), not the Range it
writes itself: S3 requires only host and the x-amz-* headers to be signed, so botocore is given
exactly the headers the request says it signed, and the Range is checked to have been sent."""
import datetime
import json
import re
from unittest import mock

import pytest

import remote_support as rs

botocore = pytest.importorskip("botocore", reason="python3-botocore is not installed")
import botocore.auth  # noqa: E402
import botocore.awsrequest  # noqa: E402
import botocore.config  # noqa: E402
import botocore.credentials  # noqa: E402

KEY_ID = "AKIDEXAMPLE"
SECRET = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
DATE = "20150830T123600Z"
FIXED = datetime.datetime(2015, 8, 30, 12, 36, 0)
EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


class FixedDatetime(datetime.datetime):
    @classmethod
    def utcnow(cls):
        return FIXED

    @classmethod
    def now(cls, tz=None):
        return FIXED.replace(tzinfo=tz) if tz else FIXED


def botocore_authorization(method, url, headers, token, region, payload_hash):
    """The Authorization botocore's S3 signer gives this request at FIXED."""
    creds = botocore.credentials.Credentials(KEY_ID, SECRET, token)
    req = botocore.awsrequest.AWSRequest(method=method, url=url, headers=headers)
    # The payload hash as the request declared it: the SHA-256 of no body, or UNSIGNED-PAYLOAD.
    req.context["client_config"] = botocore.config.Config(
        s3={"payload_signing_enabled": payload_hash != "UNSIGNED-PAYLOAD"})
    with mock.patch.object(botocore.auth.datetime, "datetime", FixedDatetime):
        botocore.auth.S3SigV4Auth(creds, "s3", region).add_auth(req)
    return req.headers["Authorization"]


@pytest.fixture(scope="module")
def recorder(tmp_path_factory):
    d = tmp_path_factory.mktemp("sigv4")
    r = rs.loadbench(["gen", "--size", "256KiB", "--out", str(d / "m.wlf"), "--quiet"],
                     rs.base_env(d))
    assert r.rc == 0, r
    log = d / "requests.jsonl"
    with rs.fault_server(d / "m.wlf", log) as port:
        yield port, log, d


CASES = {
    "plain key": dict(host="localhost", key="models/m.wlf", path="/ok/models/m.wlf"),
    "spaces and non-ASCII": dict(host="127.0.0.1", key="dir/my model é.wlf",
                                 path="/ok/dir/my%20model%20%C3%A9.wlf"),
    "IP:port endpoint": dict(host="127.0.0.1", key="m.wlf", path="/ok/m.wlf"),
    "session token": dict(host="127.0.0.1", key="m.wlf", path="/ok/m.wlf",
                          token="FwoGZXIvYXdzEXAMPLE//token+with/slashes=", region="eu-west-1"),
    "virtual-hosted": dict(host="localhost", key="m.wlf", path="/m.wlf", virtual=True),
}


@pytest.mark.parametrize("case", CASES)
def test_the_signature_is_botocores(recorder, tmp_path, case):
    c = CASES[case]
    port, log, _ = recorder
    log.write_text("")
    env = rs.base_env(tmp_path)
    env.update(AWS_ENDPOINT_URL=f"http://{c['host']}:{port}", AWS_ACCESS_KEY_ID=KEY_ID,
               AWS_SECRET_ACCESS_KEY=SECRET, LOADBENCH_SIGV4_DATE=DATE)
    if "token" in c:
        env["AWS_SESSION_TOKEN"] = c["token"]
    if "region" in c:
        env["AWS_REGION"] = c["region"]
    if c.get("virtual"):
        env["LOADBENCH_S3_ADDRESSING"] = "virtual"
    region = c.get("region", "us-east-1")
    r = rs.loadbench(["inspect", f"s3://ok/{c['key']}"], env, limit_s=30)
    if c.get("virtual") and "does not resolve" in r.err:
        pytest.skip(f"this libcurl does not resolve ok.localhost itself: {r.err.strip()}")
    assert r.rc == 0, r
    rs.assert_no_secret([SECRET] + ([c["token"]] if "token" in c else []), [r.out, r.err])
    with open(log, encoding="utf-8") as f:
        requests = [json.loads(line) for line in f]
    assert [q["method"] for q in requests][:2] == ["HEAD", "GET"], requests
    for q in requests:
        assert q["path"] == c["path"]
        sent = [(k.lower(), v) for k, v in q["headers"]]
        h = dict(sent)
        host = f"ok.localhost:{port}" if c.get("virtual") else f"{c['host']}:{port}"
        assert h["host"] == host
        # libcurl takes the time from the x-amz-date given, and sends it twice (its own copy
        # and ours), the same value.
        assert [v for k, v in sent if k == "x-amz-date"] in ([DATE], [DATE, DATE]), sent
        assert h.get("x-amz-content-sha256") == EMPTY_SHA256, sent
        assert h.get("x-amz-security-token") == c.get("token"), sent
        assert (q["method"] == "GET") == ("range" in h), sent
        auth = h["authorization"]
        assert auth.startswith(f"AWS4-HMAC-SHA256 Credential={KEY_ID}/20150830/{region}/s3/"
                               "aws4_request, "), auth
        signed = re.search(r"SignedHeaders=([^,]+)", auth).group(1).split(";")
        assert {"host", "x-amz-content-sha256", "x-amz-date"} <= set(signed), auth
        assert ("x-amz-security-token" in signed) == ("token" in c), auth
        # botocore adds x-amz-date, x-amz-content-sha256 and the token itself.
        given = {k: h[k] for k in signed
                 if k not in ("x-amz-date", "x-amz-content-sha256", "x-amz-security-token")}
        want = botocore_authorization(q["method"], f"http://{h['host']}{q['path']}", given,
                                      c.get("token"), region, h["x-amz-content-sha256"])
        print(f"{case} {q['method']} {h.get('range', '')}: {auth == want}")
        assert auth == want, f"{q['method']} {h.get('range')}\nloadbench {auth}\nbotocore  {want}"
