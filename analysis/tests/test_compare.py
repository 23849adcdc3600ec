"""compare flags a planted 2x difference and leaves a 1.01x one alone, matches runs across
machines by file name, and names how the machines differ."""

import json
import os
import subprocess
import sys

import numpy as np

from analysis import compare

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def write(folder, walls_by_spec, kernel, path_prefix):
    os.makedirs(folder)
    rows = []
    for spec, walls in walls_by_spec.items():
        for i, w in enumerate(walls):
            rows.append({"run_id": f"{spec}-{i}", "strategy": spec.split(":")[0],
                         "strategy_spec": spec, "file": f"{path_prefix}/llama-4GiB.wlf",
                         "file_bytes": 4 << 30, "cache": "cold", "status": "ok", "error": None,
                         "wall_s": float(w), "peak_rss_bytes": 1, "major_faults": 0,
                         "minor_faults": 0, "timeline": None})
    with open(os.path.join(folder, "runs.jsonl"), "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
    with open(os.path.join(folder, "env.json"), "w") as f:
        json.dump({"kernel": {"release": kernel}, "host": {"cores": 2}}, f)


def test_a_2x_difference_is_flagged_and_a_1_01x_one_is_not(tmp_path):
    rng = np.random.default_rng(7)
    base = rng.uniform(10, 12, 8)
    write(tmp_path / "a", {"fread": base, "mmap": base / 5}, "6.1", "/data")
    write(tmp_path / "b", {"fread": base * 2 * rng.uniform(0.98, 1.02, 8),
                           "mmap": base / 5 * 1.01}, "6.18", "/other/data")
    c = compare.compare(str(tmp_path / "a"), str(tmp_path / "b"))
    by = {r["strategy_spec"]: r for r in c["rows"]}
    assert set(by) == {"fread", "mmap"}  # matched by file name across the two paths
    assert by["fread"]["significant"] and 1.9 < by["fread"]["ratio"] < 2.1
    assert by["fread"]["ci_low"] > 1.5 and by["fread"]["p_value"] < 0.01
    assert not by["mmap"]["significant"]
    assert abs(by["mmap"]["ratio"] - 1.01) < 1e-9
    assert c["machine_differences"]["kernel"] == {"a": "6.1", "b": "6.18"}


def test_the_command_writes_both_files_into_out(tmp_path):
    write(tmp_path / "a", {"fread": [1, 2, 3]}, "6.1", "/d")
    write(tmp_path / "b", {"fread": [2, 4, 6], "mmap": [1, 1, 1]}, "6.1", "/d")
    p = subprocess.run([sys.executable, "-m", "analysis.compare", str(tmp_path / "a"),
                        str(tmp_path / "b"), "--out", str(tmp_path / "out")], cwd=REPO,
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "| fread | cold | llama-4GiB.wlf |" in p.stdout
    assert "Only in B: mmap cold" in p.stdout
    data = json.loads((tmp_path / "out" / "compare.json").read_text())
    assert [r["strategy_spec"] for r in data["rows"]] == ["fread"]
    assert (tmp_path / "out" / "compare.md").exists()
    # 3 runs a side: the exact test cannot reach p < 0.05, and the table says so.
    assert data["rows"][0]["min_p_possible"] == 0.1
    assert "too few runs (3 and 3) for p < 0.05" in p.stdout
    bad = subprocess.run([sys.executable, "-m", "analysis.compare", str(tmp_path / "none"),
                          str(tmp_path / "b")], cwd=REPO, capture_output=True, text=True)
    assert bad.returncode == 2 and "runs.jsonl: no such file" in bad.stderr
