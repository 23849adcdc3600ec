"""An experiment's [link] end to end: nginx in a network namespace of its own behind a veth pair
shaped with TBF, a small model read through it at two rates by one reader and by two at once,
the link's own limit (iperf3) and the server's measured in every round, every remote run's
bytes on the wire recorded; nothing left in the namespaces or devices once the command ends,
and what a killed command left removed by the next one, which says so. Bad [link] input stops
the command before any run with one line and exit 2. Skips, with the reason, where the link
cannot be made here (not root, no iproute2, iperf3 or nginx)."""
import json
import os
import shutil
import signal
import subprocess
import time

import pytest

from conftest import BIN, next_measuring_command

LINK = """
name = "link-small"
reps = 1
cache = ["cold"]
procs = [1, 2]
timeout_s = 120
[server]
kind = "http"
[link]
rate = ["{rate}", "unshaped"]
seconds = 1
[[file]]
preset = "llama"
size = "16MiB"
format = "safetensors"
[[strategy]]
name = "fread"
[[strategy]]
name = "http_ranges"
chunk = "1MiB"
concurrency = 4
"""


def can_make_links():
    if os.geteuid() != 0:
        return "a link needs root (network namespaces, tc)"
    for program, package in (("ip", "iproute2"), ("tc", "iproute2"), ("iperf3", "iperf3"),
                             ("nginx", "nginx-light")):
        if shutil.which(program) is None and not os.access(f"/usr/sbin/{program}", os.X_OK):
            return f"{program} is not installed (Debian's {package})"
    return ""


def experiment(tmp_path, text, env=None, wait=True):
    toml = tmp_path / "e.toml"
    toml.write_text(text)
    cmd = [BIN, "experiment", str(toml), "--data", str(tmp_path / "data"),
           "--out", str(tmp_path / "out"), "--quiet"]
    if not wait:
        return subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, env=env)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)


def ours():
    """The namespaces and devices of loadbench's links there are now."""
    names = os.listdir("/run/netns") if os.path.isdir("/run/netns") else []
    devs = os.listdir("/sys/class/net")
    return ({n for n in names if n.startswith("loadbench-")} |
            {d for d in devs if d.startswith(("lbc", "lbi"))})


def test_bad_link_input_stops_before_any_run(tmp_path):
    for link, why in (('rate = "fast"', "not a rate"),
                      ('rate = "100kbit"', "1mbit to 1tbit"),
                      ('rate = "1gbit"\ndelay = "soon"', "not a delay")):
        p = experiment(tmp_path, LINK.replace('rate = ["{rate}", "unshaped"]', link))
        assert p.returncode == 2, p.stderr
        assert why in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
        assert not (tmp_path / "out" / "runs.jsonl").exists()
    no_server = LINK.replace('[server]\nkind = "http"\n', "").format(rate="1gbit")
    p = experiment(tmp_path, no_server)
    assert p.returncode == 2 and "needs [server]" in p.stderr, p.stderr


def test_a_shaped_link_is_measured_beside_every_round(tmp_path):
    if why := can_make_links():
        pytest.skip(why)
    before = ours()
    p = experiment(tmp_path, LINK.format(rate="200mbit"))
    records = [json.loads(line) for line in (tmp_path / "out" / "runs.jsonl").read_text().splitlines()]
    assert p.returncode == 0, (p.stderr, [(r["strategy_spec"], r.get("error")) for r in records])
    env = json.loads((tmp_path / "out" / "env.json").read_text())
    link = env["link"]
    assert link["rates"] == ["200mbit", "unshaped"] and link["client"]["mtu"] > 0
    assert env["server"]["endpoint"].startswith(f"http://{link['server']['address']}:")
    assert link["server"]["address"].startswith("169.254.") and link["rtt_ms"]["median"] > 0
    assert "tbf" in link["tc"]["200mbit"]["client_egress"]
    assert "tbf" in link["tc"]["200mbit"]["client_ingress_ifb"]
    by = {}
    for r in records:
        assert r["status"] == "ok", r
        by.setdefault((r["strategy"], r["link"], r.get("procs", 1)), []).append(r)
    # Two rates x (1 reader, 2 readers), each with both ceilings.
    assert len(by[("link_ceiling", "200mbit", 1)]) == 1 and len(by[("server_ceiling", "200mbit", 2)]) == 1
    shaped = by[("link_ceiling", "200mbit", 1)][0]
    assert shaped["params"]["streams"] == 4 and shaped["params"]["bits_per_s"] == 200_000_000
    assert 0.2 / 8 * 0.9 < shaped["gb_per_s"] < 0.2 / 8 * 1.01, shaped
    assert by[("link_ceiling", "unshaped", 1)][0]["gb_per_s"] > shaped["gb_per_s"] * 2
    # The server's own limit is measured with the shaping lifted.
    assert by[("server_ceiling", "200mbit", 1)][0]["gb_per_s"] > shaped["gb_per_s"] * 2
    one = by[("http_ranges", "200mbit", 1)][0]
    assert one["link_rx_bytes"] >= one["file_bytes"] and one["details"]["requests"] > 0
    # At 200 mbit/s the link is the limit: the load takes about what the link takes.
    assert one["file_bytes"] / one["wall_s"] / 1e9 < shaped["gb_per_s"] * 1.1
    herd = by[("http_ranges", "200mbit", 2)]
    assert len(herd) == 2 and herd[0]["link_rx_bytes"] == herd[1]["link_rx_bytes"]
    assert herd[0]["link_rx_bytes"] >= 2 * one["file_bytes"]
    assert by[("fread", "200mbit", 1)][0]["link_rx_bytes"] < one["file_bytes"] / 100
    assert ours() == before


def test_what_a_killed_command_left_is_removed_by_the_next(tmp_path):
    if why := can_make_links():
        pytest.skip(why)
    env = dict(os.environ, LOADBENCH_LOCK_DIR=str(tmp_path / "locks"))
    env.pop("LOADBENCH_LOCK_FD", None)
    before = ours()
    p = experiment(tmp_path, LINK.format(rate="100mbit").replace("reps = 1", "reps = 5"), env=env,
                   wait=False)
    line = ""
    deadline = time.monotonic() + 60
    while "link" not in line and time.monotonic() < deadline:
        line = p.stderr.readline()
    assert " link " in line, line
    time.sleep(1)
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=30)
    left = ours() - before
    assert any(n.startswith("loadbench-") for n in left), left
    q = next_measuring_command(tmp_path, env)
    assert q.returncode == 0, q.stderr
    assert "network namespace loadbench-" in q.stderr, q.stderr
    assert ours() == before
