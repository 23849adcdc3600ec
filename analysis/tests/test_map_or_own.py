"""The verdict's second question (analysis/sections/verdict.py `map_or_own`): per condition the
fastest way to map the model (strategy_flags hold `maps-file`) and the fastest way to own a copy
(`allocates`; GPU strategies in neither), each by the verdict's own rule, and the owning one's
paired time over the mapping one's; one brief line per condition at most; a condition with one
kind only leaves the other half out of the brief and says so in the report; a folder without
flags says it cannot tell."""

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from conftest import write_rounds

from analysis.core import ratios
from analysis.pages import report
from analysis.sections import verdict

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FLAGS = {"fread": "eager,allocates", "owned": "eager,allocates,direct-io,threads,model",
         "odirect": "eager,allocates,direct-io,threads", "mmap_prefetch": "eager,maps-file",
         "mmap": "maps-file", "mmap_seq": "maps-file", "cuda_register": "maps-file,device"}


def flag(folder, flags=FLAGS):
    """Gives the folder's records their strategy's flags, as the harness now writes them."""
    path = folder / "runs.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines()]
    for r in records:
        if r["strategy"] in flags:
            r["strategy_flags"] = flags[r["strategy"]]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return records


def built(folder, **rounds):
    write_rounds(str(folder), caches=("cold",), ceiling=False, **rounds)
    records = flag(folder)
    report.build(str(folder))
    summary = json.loads((folder / "summary.json").read_text())
    return records, summary["verdict"]["cold"], (folder / "report.md").read_text()


def item(md, name):
    return next(x for x in md.splitlines() if x.startswith(f"- **{name}**: "))


def walsh_interval(own, mapped):
    """By hand: the Hodges–Lehmann estimate of own's time over mapped's per round, and at 6
    rounds the exact interval, the least and the greatest Walsh average (k = 1)."""
    d = np.log(np.array(own) / np.array(mapped))
    walsh = [(d[i] + d[j]) / 2 for i in range(len(d)) for j in range(i, len(d))]
    return math.exp(np.median(walsh)), math.exp(min(walsh)), math.exp(max(walsh))


def test_the_fastest_to_map_and_to_own_and_owning_over_mapping(tmp_path):
    times = {"fread": 10.0, "mmap_prefetch": 3.0, "owned": 3.3, "mmap": 5.0,
             "cuda_register": 0.5}
    records, cold, md = built(tmp_path, rounds=6, times=times)
    # The GPU strategy is the fastest of all, and in neither half.
    assert cold["fastest"] == "cuda_register" and cold["flags_recorded"] is True
    to_map, to_own = cold["to_map"], cold["to_own"]
    assert (to_map["fastest"], to_own["fastest"]) == ("mmap_prefetch", "owned")
    assert to_map["runner_up"]["strategy"] == "mmap" and to_own["runner_up"]["strategy"] == "fread"
    # Each against the baseline, as the whole verdict's comparison gives it.
    assert to_map["baseline"] == "fread" and to_map["ratio"] == pytest.approx(0.3, rel=0.05)
    assert to_own["ratio"] == pytest.approx(0.33, rel=0.05) and to_own["sure"]
    by = {s: [r["wall_s"] for r in records if r["strategy"] == s] for s in times}
    assert to_map["median_s"] == pytest.approx(np.median(by["mmap_prefetch"]))
    c = cold["own_vs_map"]
    assert (c["own"], c["map"], c["rounds"], c["sure"]) == ("owned", "mmap_prefetch", 6, True)
    ratio, lo, hi = walsh_interval(by["owned"], by["mmap_prefetch"])
    assert (c["ratio"], c["lo"], c["hi"]) == pytest.approx((ratio, lo, hi))
    assert 1 < c["lo"] < c["ratio"] < c["hi"] < 1.2
    interval = f"{ratios.ratio_text(ratio, lo, hi)} the time of mmap_prefetch"
    line = (f"cold: to map: mmap_prefetch {np.median(by['mmap_prefetch']):.3f} s; to own: owned "
            f"{np.median(by['owned']):.3f} s, {interval} (96.9% interval, 6 rounds), a sure "
            "difference")
    assert verdict.lines({"verdict": {"cold": cold}})[1] == line
    text = item(md, "cold, to map or to own")
    assert text.startswith("- **cold, to map or to own**: To map the file (flag `maps-file`): "
                           "mmap_prefetch is fastest (median ")
    assert "To own a copy (flag `allocates`; GPU strategies aside): owned is fastest" in text
    assert text.endswith(f"Owning against mapping: owned took {interval}, the fastest to map "
                         "(96.9% interval, 6 rounds), a sure difference.")
    assert "cuda_register" not in text


def test_the_brief_gains_one_line_per_condition(tmp_path):
    write_rounds(str(tmp_path), rounds=6, times={"fread": 10.0, "mmap_prefetch": 3.0,
                                                 "owned": 3.3})
    flag(tmp_path)
    p = subprocess.run([sys.executable, "-m", "analysis.report", "--brief", str(tmp_path)],
                       cwd=REPO, capture_output=True, text=True, check=True)
    out = p.stdout.splitlines()
    assert [x.split(", ")[0] for x in out[1:5]] == [
        "cold: mmap_prefetch 3.017 s", "cold", "warm: mmap_prefetch 0.300 s", "warm"]
    assert out[1] == ("cold: mmap_prefetch 3.017 s, 0.30× (0.29–0.31) fread, sure; 0.92× "
                      "(0.89–0.94) owned, sure")
    assert out[2] == ("cold, map or own: to map mmap_prefetch 3.017 s; to own owned 3.255 s, "
                      "1.09× (1.06–1.12) mmap_prefetch, sure")
    assert len(out) == 5  # the report's path, then two lines per condition


def test_a_condition_with_one_kind_leaves_the_other_half_out(tmp_path):
    _, cold, md = built(tmp_path, rounds=6, times={"fread": 10.0, "odirect": 5.0})
    assert cold["to_map"] is None and cold["own_vs_map"] is None
    assert cold["to_own"]["fastest"] == "odirect"
    line = verdict.lines({"verdict": {"cold": cold}})[1]
    assert line == f"cold: to own: odirect {cold['to_own']['median_s']:.3f} s"
    text = item(md, "cold, to map or to own")
    assert text.startswith("- **cold, to map or to own**: No strategy of this condition maps "
                           "the file (flag `maps-file`). To own a copy")
    assert "Owning against mapping" not in text


def test_mappers_only(tmp_path):
    _, cold, md = built(tmp_path / "maps", rounds=6, times={"mmap": 1.0, "mmap_seq": 2.0})
    assert cold["to_own"] is None and cold["to_map"]["fastest"] == "mmap"
    assert verdict.lines({"verdict": {"cold": cold}})[1].startswith("cold: to map: mmap 1.0")
    assert item(md, "cold, to map or to own").endswith(
        "No strategy of this condition copies it into memory of its own (flag `allocates`).")


def test_a_half_whose_medians_and_rounds_disagree_names_no_fastest(tmp_path):
    """As test_report's: mmap fails in the 6 fast rounds of a drift to 3x, so mmap_seq has the
    lower median although mmap is surely faster in the rounds both ran in; both map."""
    _, cold, md = built(tmp_path, rounds=12, drift=3.0, sigma=0.01,
                        times={"fread": 10.0, "mmap_seq": 1.0, "mmap": 0.95},
                        failed=[("mmap", "cold", rep) for rep in range(6)])
    assert cold["to_map"]["medians_and_rounds_disagree"] is True
    assert cold["to_own"]["fastest"] == "fread" and cold["own_vs_map"] is None
    assert verdict.lines({"verdict": {"cold": cold}})[1] == (
        "cold: to map: mmap_seq or mmap (the medians and the rounds disagree); to own: fread "
        f"{cold['to_own']['median_s']:.3f} s")
    text = item(md, "cold, to map or to own")
    assert "To map the file (flag `maps-file`): the medians and the paired rounds disagree" in text
    assert "fread, the baseline, is fastest" in text
    assert text.endswith("No paired ratio of owning to mapping: to map names no fastest.")


def test_a_folder_without_flags_cannot_tell(tmp_path):
    write_rounds(str(tmp_path), rounds=6, caches=("cold",))
    report.build(str(tmp_path))
    cold = json.loads((tmp_path / "summary.json").read_text())["verdict"]["cold"]
    assert (cold["flags_recorded"], cold["to_map"], cold["to_own"]) == (False, None, None)
    assert set(cold["unflagged"]) == {"fread", "mmap_seq", "odirect"}
    assert len(verdict.lines({"verdict": {"cold": cold}})) == 2  # the verdict and its caveat
    assert item((tmp_path / "report.md").read_text(), "cold, to map or to own") == (
        "- **cold, to map or to own**: cannot tell which strategies map the file and which copy "
        "it: none of them recorded its flags (`strategy_flags`; folders from before flags have "
        "none).")


def test_a_strategy_without_flags_beside_flagged_ones_is_named(tmp_path):
    write_rounds(str(tmp_path), rounds=6, caches=("cold",), ceiling=False,
                 times={"fread": 10.0, "mmap": 2.0, "pread": 9.0})
    flag(tmp_path)  # pread: none
    report.build(str(tmp_path))
    cold = json.loads((tmp_path / "summary.json").read_text())["verdict"]["cold"]
    assert cold["unflagged"] == ["pread"] and cold["to_own"]["fastest"] == "fread"
    assert item((tmp_path / "report.md").read_text(), "cold, to map or to own").endswith(
        "In neither, no flags recorded: pread.")
