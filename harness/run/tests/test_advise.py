"""`loadbench advise` (python3 -m analysis.advise) end to end with the binary: the probes of the
model's own folder (64 MiB scratch files), the ranking, two warm rounds of the three fastest
predicted and fread, and predicted against measured, printed and in advise.json. The ranking's
arithmetic and the bad input are analysis/tests/test_advise.py's, without a binary.

Run with /usr/bin/python3 -m pytest harness/run/tests. LOADBENCH_BIN names the binary."""
import json
import os
import subprocess

from conftest import BIN, REPO


def test_advise_predicts_then_measures_the_fastest_and_fread(tmp_path, env):
    model = tmp_path / "m.wlf"
    subprocess.run([BIN, "gen", "--preset", "llama", "--size", "64MiB", "--out", str(model),
                    "--quiet"], check=True, env=env)
    out = tmp_path / "advise"
    p = subprocess.run(["/usr/bin/python3", "-m", "analysis.advise", str(model), "--reps", "2",
                        "--cache", "warm", "--probe-size", "64MiB", "--out", str(out)],
                       cwd=REPO, env=dict(env, LOADBENCH_BIN=BIN, PYTHONPATH=REPO),
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    data = json.loads((out / "advise.json").read_text())
    # Both probes of the model's folder, into the out folder, and the machine's figures.
    assert len(data["probes"]) == 2 and all(os.path.isfile(x) for x in data["probes"])
    assert data["figures"]["device_gb_per_s"] > 0 and data["figures"]["device_iops"] > 0
    # The ranking: warm only, every strategy `list` says runs here for a local file.
    listed = json.loads(subprocess.run([BIN, "list", "--json"], check=True, capture_output=True,
                                       text=True).stdout)
    assert {r["cache"] for r in data["ranking"]} == {"warm"}
    assert {"fread", "owned", "mmap"} <= {r["strategy"] for r in data["ranking"]}
    assert {r["strategy"] for r in data["ranking"]} <= {s["name"] for s in listed}
    # Measured: the three picks and fread, two runs each, each beside its prediction.
    assert data["measured_specs"] == data["picks"] + ["fread"] and len(data["picks"]) == 3
    rows = {r["spec"]: r for r in data["measured"]}
    assert set(rows) == set(data["measured_specs"])
    for spec, r in rows.items():
        assert r["status"] == "ok" and r["runs"] == 2, r
        assert r["predicted_s"] > 0 and r["measured_s"] > 0
        assert r["error"] == r["predicted_s"] / r["measured_s"]
        assert r["measured_rss_bytes"] > 0
    assert rows["fread"]["is_baseline"]
    # Printed: the ranking, then a line per measured spec under the comparison's header.
    text = p.stdout
    assert "predicted, warm" in text and "predicted against measured" in text
    table = text.split("predicted against measured", 1)[1].splitlines()
    for spec in data["measured_specs"]:
        line = next(x for x in table if x.split()[:2] == ["warm", spec])
        for figure in ("predicted_s", "measured_s"):
            assert f"{rows[spec][figure]:.3f}" in line, (figure, line)
    assert "warm: fastest measured " in text
    assert (out / "runs.jsonl").is_file() and (out / "advise.md").is_file()
