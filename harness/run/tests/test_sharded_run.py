"""A sharded model measured end to end by the binary: generated as 3 shards, inspected, its
cache dropped and warmed shard by shard, and loaded cold and warm by strategies that run shard
by shard and by those that take the whole model, each run verified against the model's
checksum, which is the unsharded file's.

Run with /usr/bin/python3 -m pytest harness/run/tests. LOADBENCH_BIN names the binary (default
build/loadbench of this checkout)."""
import json
import os
import subprocess

import pytest
from conftest import BIN


STRATEGIES = ["fread", "mmap_seq", "odirect", "pool:threads=4:chunk=1MiB", "direct_ring", "layered",
              "shm", "mmap:share=shared:fadvise=sequential:populate=on"]


def lb(env, *args, check=True):
    return subprocess.run([BIN, *args], check=check, env=env, capture_output=True, text=True)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    d = tmp_path_factory.mktemp("sharded")
    env = dict(os.environ, LOADBENCH_LOCK_DIR=str(d / "locks"))
    env.pop("LOADBENCH_LOCK_FD", None)
    one = str(d / "one.safetensors")
    many = str(d / "many.safetensors")
    lb(env, "gen", "--preset", "llama", "--size", "24MiB", "--format", "safetensors", "--out",
       one, "--quiet")
    lb(env, "gen", "--preset", "llama", "--size", "24MiB", "--format", "safetensors", "--out",
       many, "--shards", "3", "--quiet")
    return d, env, one, many + ".index.json"


def test_inspect_shows_every_shard_and_each_tensors_file(setup):
    _, env, one, model = setup
    j = json.loads(lb(env, "inspect", "--json", model).stdout)
    single = json.loads(lb(env, "inspect", "--json", one).stdout)
    assert j["layout"] == "index" and len(j["shards"]) == 3
    assert [os.path.basename(s["file"]) for s in j["shards"]] == [
        f"many-0000{k}-of-00003.safetensors" for k in (1, 2, 3)]
    assert sum(s["tensor_count"] for s in j["shards"]) == len(j["tensors"]) == len(single["tensors"])
    assert sum(s["tensor_bytes"] for s in j["shards"]) == j["tensor_bytes"] == single["tensor_bytes"]
    assert [t["name"] for t in j["tensors"]] == [t["name"] for t in single["tensors"]]
    assert sorted({t["shard"] for t in j["tensors"]}) == [0, 1, 2]
    assert single["layout"] == "file" and len(single["shards"]) == 1


def test_cache_drop_and_warm_cover_every_shard(setup):
    _, env, _, model = setup
    if os.geteuid() != 0:
        pytest.skip("cold needs root here (drop_caches)")
    drop = json.loads(lb(env, "cache", "drop", "--json", model).stdout)
    assert drop["state_reached"] and drop["worst_shard_resident"] <= 0.01
    warm = json.loads(lb(env, "cache", "warm", "--json", model).stdout)
    assert warm["state_reached"] and warm["worst_shard_resident"] >= 0.99
    assert warm["total_pages"] >= 24 * 256


def test_every_strategy_loads_the_sharded_model_cold_and_warm(setup):
    d, env, one, model = setup
    if os.geteuid() != 0:
        pytest.skip("cold needs root here (drop_caches)")
    out = str(d / "results")
    r = lb(env, "run", "--file", model, "--strategies", ",".join(STRATEGIES), "--cache", "both",
           "--reps", "1", "--out", out, check=False)
    assert r.returncode in (0, 1), r.stderr
    with open(os.path.join(out, "runs.jsonl")) as f:
        runs = [json.loads(line) for line in f]
    assert len(runs) == 2 * len(STRATEGIES)
    reference = json.loads(lb(env, "inspect", "--json", one).stdout)["header"]
    for run in runs:
        if run["status"] == "unsupported":
            continue  # io_uring or O_DIRECT refused here: the record says why
        assert run["status"] == "ok", (run["strategy_spec"], run["cache"], run.get("error"))
        assert run["checksum_ok"] is True
        assert run["shards"] == 3
        if run["cache"] == "cold":
            assert run["worst_shard_resident"] <= 0.01
        else:
            assert run["worst_shard_resident"] >= 0.99
    ok = {(r["strategy_spec"], r["cache"]) for r in runs if r["status"] == "ok"}
    assert ("fread", "cold") in ok and ("pool:threads=4:chunk=1MiB", "warm") in ok
    with open(os.path.join(out, "env.json")) as f:
        env_json = json.load(f)
    assert env_json["file"]["layout"] == "index" and len(env_json["file"]["shards"]) == 3
    assert env_json["file"]["checksum"] == reference.get("checksum", env_json["file"]["checksum"])
