"""`loadbench advise` without the binary: the ranking of analysis/models/advise.py on a fixture
probe (tests/fixtures/storage/env.json: made-up figures, device 3 GB/s, page cache 10, memcpy
20, memory fill 40, first touches 1 µs (4 KiB) and 100 µs (2 MiB), a file mapping fault 2 µs)
and the strategies of `loadbench list --json` as this build printed them
(tests/fixtures/advise/list.json); predicted against measured on a results folder written
here; the command's bad input, and a --no-measure run against a stand-in binary that answers
`inspect` and `list`. The end-to-end run of the real binary is
harness/run/tests/test_advise.py."""

import json
import math
import os
import subprocess
import sys

import pytest

from analysis.core.results import load
from analysis.models import advise
from analysis.models.advise_measured import compare

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
PROBE = os.path.join(HERE, "fixtures", "storage", "env.json")
LIST = os.path.join(HERE, "fixtures", "advise", "list.json")
GIB = 1 << 30


def strategies():
    with open(LIST, encoding="utf-8") as f:
        return json.load(f)


def facts(size=GIB, device=None):
    return advise.FileFacts("/data/m.wlf", "wlf", size, size - 8192, 100, size // 8, device)


def probe_env():
    with open(PROBE, encoding="utf-8") as f:
        return json.load(f)


def ranking(size=GIB, envs=None, caches=advise.CACHES):
    m = advise.machine(envs or {PROBE: probe_env()}, None)
    t = advise.predict(advise.candidates(strategies(), m.figures.thp), facts(size), m, caches)
    return t, m


def at(t, spec, cache):
    return t[(t["spec"] == spec) & (t["cache"] == cache)].iloc[0]


def test_every_local_strategy_is_ranked_and_none_that_needs_a_server_or_a_gpu():
    t, _ = ranking()
    names = set(t["strategy"])
    local = {s["name"] for s in strategies() if advise.local(s)}
    assert names == local
    assert {"fread", "owned", "mmap", "mmap_seq", "odirect", "io_uring"} <= names
    assert not names & {"http_get", "http_ranges", "http_stream", "fleet", "cuda_bounce"}
    # The options the model tells apart, each a spec of its own.
    assert {"owned:buffer=malloc", "fread:buffer=thp", "io_uring:direct=on",
            "owned:direct=on"} <= set(t["spec"])
    # No read sizes where the device's reads per second are not known.
    assert not t["spec"].str.contains("chunk=").any()


def test_the_predictions_are_the_load_models_sums():
    t, _ = ranking()
    size = float(GIB)
    pages = size / 4096
    # fread, cold: the device (3 GB/s) is its slowest stage, a first touch per 4 KiB page at
    # 1 µs, and its consumer's pass after the load (eager) at memcpy's 20 GB/s.
    fread = at(t, "fread", "cold")
    assert fread["slowest"] == "device"
    assert fread["predicted_s"] == pytest.approx(size / 3e9 + pages * 1e-6 + size / 20e9)
    # owned (THP buffer, not eager): the device, then 2 MiB first touches at 100 µs.
    owned = at(t, "owned", "cold")
    assert owned["predicted_s"] == pytest.approx(size / 3e9 + size / (2 << 20) * 100e-6)
    # Warm, it copies out of the page cache (10 GB/s): direct=auto reads the cached file.
    assert at(t, "owned", "warm")["slowest"] == "page cache"
    assert at(t, "owned", "warm")["predicted_s"] == pytest.approx(size / 10e9 + 512 * 100e-6)
    # odirect reads the device warm as cold.
    assert at(t, "odirect", "warm")["slowest"] == "device"
    # A mapping, warm: the consumer reads at memcpy's rate; a fault per page (the fixture's
    # probe says nothing of pages per fault) at 2 µs.
    assert at(t, "mmap", "warm")["predicted_s"] == pytest.approx(size / 20e9 + pages * 2e-6)
    # THP off for owned: 4 KiB first touches.
    assert at(t, "owned:buffer=malloc", "cold")["touch_s"] == pytest.approx(pages * 1e-6)


def test_the_ranking_is_fastest_first_with_ties_sharing_a_rank():
    t, _ = ranking()
    for cache in advise.CACHES:
        rows = t[(t["cache"] == cache) & t["predicted_s"].notna()]
        assert list(rows["predicted_s"]) == sorted(rows["predicted_s"])
        assert rows["rank"].iloc[0] == 1
        # mmap and mmap_seq: the model does not tell their advice apart.
        assert at(t, "mmap", cache)["rank"] == at(t, "mmap_seq", cache)["rank"]
    assert at(t, "fread", "cold")["rank"] < at(t, "mmap", "cold")["rank"]


def test_the_picks_are_the_fastest_distinct_strategies_without_the_baseline():
    t, _ = ranking()
    picks = advise.pick(t, 3)
    assert len(picks) == 3
    assert len({p.split(":")[0] for p in picks}) == 3
    assert advise.BASELINE not in picks
    # By the mean of their logs over both states, the first is no slower than any other.
    score = {s: sum(math.log(at(t, s, c)["predicted_s"] /
                             t[t["cache"] == c]["predicted_s"].min()) for c in advise.CACHES)
             for s in set(t["spec"]) if t[t["spec"] == s]["predicted_s"].notna().all()}
    assert score[picks[0]] <= min(score.values()) + 2 * math.log1p(advise.TIE)
    assert advise.pick(t[t["cache"] == "warm"], 1) != []


def test_memory_follows_the_strategys_kind():
    t, _ = ranking()
    size = float(GIB)
    assert at(t, "odirect", "cold")["cache_bytes"] == 0  # O_DIRECT: nothing cached
    assert at(t, "odirect", "warm")["cache_bytes"] == size  # cached before the load
    assert at(t, "fread", "cold")["peak_bytes"] == size - 8192 + size  # a copy and the cache
    assert at(t, "mmap", "cold")["peak_bytes"] == size  # the mapping's pages are the cache's
    assert at(t, "layered", "cold")["rss_bytes"] == GIB // 8  # its largest layer


def test_a_probe_of_another_device_predicts_no_cold_load():
    env = dict(probe_env(), probe={**probe_env()["probe"], "scratch": {"device": "8:0"}})
    m = advise.machine({"p": env}, "254:0")
    assert m.figures.figures["device_gb_per_s"] is None and "8:0" in m.figures.lacks
    t = advise.predict(advise.candidates(strategies(), m.figures.thp), facts(), m)
    assert t[t["cache"] == "cold"]["predicted_s"].isna().all()
    assert "device_gb_per_s" in at(t, "fread", "cold")["missing"]
    assert at(t, "mmap", "warm")["predicted_s"] > 0


def test_a_device_bound_by_its_requests_ranks_read_sizes_and_names_the_read_ahead():
    storage = {"probe": {"kind": "storage", "iops": 300,
                         "ceilings": {"device_limit": {"gb_per_s": 3.0}}}}
    envs = {PROBE: probe_env(), "s": storage}
    m = advise.machine(envs, None)
    assert m.figures.figures["device_iops"] == 300
    t = advise.predict(advise.candidates(strategies(), m.figures.thp), facts(), m)
    req = advise.requests(t, m)
    # 300 reads/s of the 128 KiB read-ahead window: 0.039 GB/s, far below 3 GB/s.
    assert "mmap" in req["bound"] and "fread" in req["bound"]
    assert at(t, "mmap", "cold")["slowest_gb_per_s"] == pytest.approx(300 * 128 * 1024 / 1e9)
    assert req["window_kb"] == 16384 and "no read-ahead can" in req["text"]
    wider = advise.candidates(strategies(), m.figures.thp, bound=True)
    specs = {c.spec for c in wider}
    assert {"io_uring:chunk=16MiB", "odirect:chunk=4MiB", "direct_ring:window=1MiB"} <= specs
    assert not any(s.startswith(("fread:chunk", "mmap:")) for s in specs)


def write_results(folder, walls):
    """A results folder of paired rounds: `walls` spec -> wall seconds per round, warm."""
    folder.mkdir()
    (folder / "env.json").write_text(json.dumps({"rounds": {"baseline": "fread"}}))
    lines = []
    for rep in range(len(walls["fread"])):
        for pos, (spec, times) in enumerate(walls.items()):
            lines.append({"run_id": f"{spec}-{rep}", "strategy": spec.split(":")[0],
                          "strategy_spec": spec, "file": "/data/m.wlf", "file_bytes": GIB,
                          "cache": "warm", "rep": rep, "position": pos, "status": "ok",
                          "checksum_ok": True, "wall_s": times[rep],
                          "peak_rss_bytes": GIB + 17e6, "start_rss_bytes": 17e6,
                          "resident_after": 1.0})
    (folder / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    return str(folder)


def test_predicted_against_measured_pairs_with_fread(tmp_path):
    t, _ = ranking(caches=("warm",))
    walls = {"mmap": [0.10, 0.11, 0.10, 0.12, 0.10, 0.11],
             "fread": [0.50, 0.52, 0.49, 0.55, 0.51, 0.50]}
    m = compare(load(write_results(tmp_path / "r", walls)), t, ["mmap", "fread"])
    mmap = m[m["spec"] == "mmap"].iloc[0]
    assert mmap["measured_s"] == pytest.approx(0.105)
    assert mmap["pairs"] == 6 and mmap["bounded"] and mmap["verdict"] == "faster"
    assert mmap["ratio_high"] < 1
    assert mmap["error"] == pytest.approx(at(t, "mmap", "warm")["predicted_s"] / 0.105)
    assert mmap["measured_rss_bytes"] == GIB and mmap["measured_cache_bytes"] == GIB
    assert m[m["spec"] == "fread"].iloc[0]["is_baseline"]


def command(*args, bin_=None, env_extra=None):
    env = dict(os.environ, PYTHONPATH=REPO, **(env_extra or {}))
    if bin_ is not None:
        env["LOADBENCH_BIN"] = bin_
    return subprocess.run([sys.executable, "-m", "analysis.advise", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)


FAKE = r'''#!/usr/bin/python3
import json, os, sys
cmd, args = sys.argv[1], sys.argv[2:]
if cmd == "inspect":
    path = args[-1]
    if not path.endswith(".wlf"):
        print(f"loadbench inspect: {path}: unknown format (first bytes 23 20 6c)", file=sys.stderr)
        sys.exit(2)
    size = os.path.getsize(path)
    tensors = [{"name": f"blk.{i}.w", "size": size // 4 - 4096} for i in range(4)]
    print(json.dumps({"format": "wlf", "file_bytes": size, "tensor_bytes": size - 16384,
                      "tensors": tensors}))
elif cmd == "list":
    print(open(os.environ["FAKE_LIST"]).read())
else:
    print(f"loadbench {cmd}: not in this stand-in", file=sys.stderr)
    sys.exit(2)
'''


@pytest.fixture
def fake(tmp_path):
    path = tmp_path / "loadbench"
    path.write_text(FAKE)
    path.chmod(0o755)
    model = tmp_path / "m.wlf"
    with open(model, "wb") as f:
        f.truncate(GIB)  # sparse: nothing written
    return str(path), str(model)


def one_line(p):
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert p.stderr.startswith("loadbench advise: ")
    return p.stderr


def test_a_missing_file_is_one_line_exit_2(tmp_path):
    assert "no such file" in one_line(command(str(tmp_path / "none.wlf")))


@pytest.mark.parametrize("top", ["0", "x", "-1"])
def test_a_bad_top_is_one_line_exit_2(fake, top):
    assert "--top" in one_line(command(fake[1], "--top", top, bin_=fake[0]))


def test_not_a_model_is_inspects_line_and_exit_code_and_writes_nothing(fake, tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("# not a model\n")
    out = tmp_path / "out"
    err = one_line(command(str(text), "--out", str(out), bin_=fake[0],
                           env_extra={"FAKE_LIST": LIST}))
    assert "notes.txt: unknown format" in err
    assert not out.exists()


def test_without_a_binary_it_names_loadbench_bin(fake):
    assert "LOADBENCH_BIN" in one_line(command(fake[1], bin_="/nonexistent/loadbench"))


def test_help_shows_two_examples():
    p = command("--help")
    assert p.returncode == 0
    assert p.stdout.count("  loadbench advise ") == 2 and "--no-measure" in p.stdout


def test_no_measure_prints_the_ranking_and_writes_advise_json(fake, tmp_path):
    out = tmp_path / "out"
    p = command(fake[1], "--probe", PROBE, "--no-measure", "--out", str(out), bin_=fake[0],
                env_extra={"FAKE_LIST": LIST})
    assert p.returncode == 0, p.stderr
    assert "predicted, cold" in p.stdout and "predicted, warm" in p.stdout
    assert "measuring" not in p.stdout
    data = json.loads((out / "advise.json").read_text())
    assert data["measured"] is None and len(data["picks"]) == 3
    assert data["measured_specs"] == data["picks"] + ["fread"]
    assert {r["cache"] for r in data["ranking"]} == {"cold", "warm"}
    assert (out / "advise.md").read_text().startswith("# Advice: m.wlf")
    j = command(fake[1], "--probe", PROBE, "--no-measure", "--json", "--cache", "warm",
                "--out", str(tmp_path / "j"), bin_=fake[0], env_extra={"FAKE_LIST": LIST})
    assert {r["cache"] for r in json.loads(j.stdout)["ranking"]} == {"warm"}
