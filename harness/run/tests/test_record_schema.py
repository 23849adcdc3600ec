"""What the C++ writer puts in runs.jsonl holds to the record's JSON Schema that the analysis
ships (analysis/record.schema.json, made from analysis/core/schema.py's fields): a small real
run (a strategy, one under a label, one this machine may not run, a command that fails, cold
with a ceiling read where this user can drop the cache, and warm), every record validated.

Run with /usr/bin/python3 -m pytest harness/run/tests (Debian's interpreter); it skips, with
the reason, without python3-jsonschema. LOADBENCH_BIN names the binary (default
build/loadbench of this checkout)."""
import json
import os
import subprocess

import pytest
from conftest import BIN, REPO

jsonschema = pytest.importorskip(
    "jsonschema", reason="python3-jsonschema is not installed (scripts/setup.sh installs it)")


def test_every_record_the_binary_writes_is_valid_against_the_shipped_schema(tmp_path, model,
                                                                            env):
    with open(os.path.join(REPO, "analysis", "record.schema.json"), encoding="utf-8") as f:
        schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    out = str(tmp_path / "results")
    # Cold runs and ceiling reads need root (the cache dropped); warm ones anyone.
    cache = ["--cache", "both", "--ceiling"] if os.geteuid() == 0 else ["--cache", "warm"]
    run = subprocess.run([BIN, "run", "--file", model, "--strategies",
                          "fread,mmap_seq:label=x,cuda_bounce", "--exec", "broken=/bin/false",
                          "--reps", "2", "--out", out, *cache],
                         capture_output=True, text=True, env=env, timeout=300)
    # 1: some run did not succeed (the failing command), as it should.
    assert run.returncode in (0, 1), run.stderr
    with open(os.path.join(out, "runs.jsonl"), encoding="utf-8") as f:
        records = [json.loads(line) for line in f]
    statuses = {(r["strategy_spec"], r["status"]) for r in records}
    assert ("fread", "ok") in statuses and ("mmap_seq:label=x", "ok") in statuses, statuses
    assert ("exec:label=broken", "failed") in statuses, statuses
    assert any(r["strategy_spec"] == "cuda_bounce" for r in records), statuses
    if os.geteuid() == 0:
        assert any(r["strategy"] == "ceiling" for r in records), statuses
    for r in records:
        errors = [f"{'.'.join(map(str, e.path)) or '(record)'}: {e.message}"
                  for e in validator.iter_errors(r)]
        assert not errors, (r["strategy_spec"], r["status"], errors)
    labelled = [r for r in records if r["strategy_spec"] == "mmap_seq:label=x"]
    assert labelled and all(r.get("label") == "x" for r in labelled)
