"""A copying load's seconds attributed with numbers (analysis/stats/touch.py, the report's
*why*): the load's first touches × the probe's µs per fault (per huge page where its memory came
in huge pages), the fill at the probe's memory fill rate, a profile's first-touch seconds beside
them with whether the two agree within its sampling error; summary.json's groups carry the
figures; folders without flags or without the probe's figure keep the old phrases and say why;
and the runs of a group that got huge pages are told apart from those that did not."""

import json
import math

import pandas as pd
import pytest

from analysis.core.ratios import number
from analysis.pages import report
from analysis.stats import touch

GIB = 2**30
FILE = "/data/model.wlf"
PROBE = {"anon_4k_fault": {"us_per_fault": 10.9, "faults": 4096},
         "thp_fault": {"us_per_fault": 88.8, "faults": 32},
         "memory_fill": {"gb_per_s": 9.1}}


def run(i, spec, flags, wall, **fields):
    """One verified cold run of `spec` (file of 2 GiB) with the figures given."""
    return {"run_id": f"r{i:03d}", "strategy": spec.split(":")[0], "strategy_spec": spec,
            "strategy_flags": flags, "params": {}, "file": FILE, "file_bytes": 2 * GIB,
            "cache": "cold", "rep": i % 6, "status": "ok", "error": None, "checksum_ok": True,
            "wall_s": wall, "peak_rss_bytes": 2 * GIB, "major_faults": 0,
            "minor_faults": 530000, "read_bytes": 2 * GIB, "timeline": None, **fields}


def folder_of(tmp_path, records, probe=PROBE, profiles=None):
    """A results folder of `records`, env.json with `probe` as its ceilings, and each profile
    of `profiles` (run id -> folded text) written where its record points."""
    folder = tmp_path / "results"
    (folder / "profiles").mkdir(parents=True)
    for run_id, text in (profiles or {}).items():
        (folder / "profiles" / f"{run_id}.folded").write_text(text)
    (folder / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    env = {"experiment": "touch", "rounds": {"order": "interleaved", "baseline": "fread"}}
    if probe is not None:
        env["probe"] = {"ceilings": probe}
    (folder / "env.json").write_text(json.dumps(env))
    return folder


def copying(flags="eager,allocates", **fields):
    """Six fread runs of 5.8 s median whose loads took 524,636 minor faults."""
    return [run(i, "fread", flags, 5.7 + 0.05 * i, load_minor_faults=524636,
                anon_huge_bytes=0, **fields) for i in range(6)]


WALLS = [0.5, 0.51, 0.52, 0.52, 0.53, 0.54]  # median 0.52


def huge(start=6):
    """Six fread:buffer=thp runs of 0.52 s whose memory came in 1,024 huge pages."""
    return [run(start + i, "fread:buffer=thp", "eager,allocates", WALLS[i],
                params={"buffer": "thp"}, load_minor_faults=1100, anon_huge_bytes=2 * GIB)
            for i in range(6)]


def mapping(start=12):
    return [run(start + i, "mmap", "maps-file", 0.4, load_minor_faults=1300, anon_huge_bytes=0)
            for i in range(6)]


def built(folder):
    report.build(str(folder))
    md = (folder / "report.md").read_text()
    groups = json.loads((folder / "summary.json").read_text())["groups"]
    return md, {g["strategy_spec"]: g for g in groups}


def why_cell(md, spec):
    row = next(x for x in md.split("## Cold start", 1)[1].splitlines()
               if x.startswith(f"| {spec} |"))
    return row.rstrip(" |").rsplit(" | ", 1)[1]


def test_first_touches_priced_by_the_probe(tmp_path):
    md, groups = built(folder_of(tmp_path, copying() + huge() + mapping()))
    # 524,636 × 10.9 µs = 5.7185 s; 2 GiB / 9.1 GB/s = 0.236 s.
    assert why_cell(md, "fread") == ("524,636 first touches × 10.9 µs = 5.7 s of 5.8 s, + "
                                     "filling 2.00 GiB at 9.1 GB/s = 0.24 s")
    # 2 GiB of huge pages: 1,024 × 88.8 µs = 0.0909 s.
    assert why_cell(md, "fread:buffer=thp") == ("1,024 huge-page first touches × 88.8 µs = "
                                                "0.091 s of 0.52 s, + filling 2.00 GiB at 9.1 "
                                                "GB/s = 0.24 s")
    assert why_cell(md, "mmap").startswith("maps the page cache: 1,300 faults")
    fread = groups["fread"]
    assert (fread["first_touches"], fread["first_touch_us"], fread["first_touch_huge"]) == (
        524636, 10.9, False)
    assert fread["first_touch_s"] == pytest.approx(524636 * 10.9e-6)
    assert fread["fill_s"] == pytest.approx(2 * GIB / 9.1e9)
    assert fread["strategy_flags"] == "eager,allocates" and fread["profile_agrees"] is None
    thp = groups["fread:buffer=thp"]
    assert (thp["first_touches"], thp["first_touch_huge"]) == (1024, True)
    assert thp["first_touch_s"] == pytest.approx(1024 * 88.8e-6)
    assert groups["mmap"]["first_touch_s"] is None
    assert touch.NOTE in md


def test_without_load_faults_the_workers_are_used_and_without_fill_none_is_added(tmp_path):
    records = copying()
    for r in records:
        del r["load_minor_faults"]
    probe = {k: v for k, v in PROBE.items() if k != "memory_fill"}
    md, groups = built(folder_of(tmp_path, records, probe=probe))
    assert why_cell(md, "fread") == "530,000 first touches × 10.9 µs = 5.8 s of 5.8 s"
    assert groups["fread"]["fill_s"] is None


def test_without_flags_or_probe_the_old_phrases_and_why_not(tmp_path):
    md, groups = built(folder_of(tmp_path / "a", copying(flags=None)))
    assert why_cell(md, "fread") == "a fresh page per 4 KiB: 524,636 minor faults"
    assert "so which strategies copy the model into memory of their own cannot be told" in md
    assert groups["fread"]["first_touch_s"] is None and touch.NOTE not in md
    md, _ = built(folder_of(tmp_path / "b", copying(), probe=None))
    assert why_cell(md, "fread") == "a fresh page per 4 KiB: 524,636 minor faults"
    assert "The probe priced no first touch of a 4 KiB page" in md


def profiled(samples):
    """copying()'s runs, the first profiled at 1000 Hz: `samples` in page faults and zeroing
    inside the copy, 700 in the copy itself."""
    records = copying()
    records[0]["profile"] = {"folded": "profiles/r000.folded", "hz": 1000}
    chain = "loadbench;main;__memmove_avx_unaligned_erms"
    folded = (f"{chain};asm_exc_page_fault_[k];exc_page_fault_[k] {samples // 2}\n"
              f"{chain};asm_exc_page_fault_[k];clear_page_erms_[k] {samples - samples // 2}\n"
              f"{chain} 700\n")
    return records, {"r000": folded}


@pytest.mark.parametrize("samples, agrees", [(5700, True), (5000, False)])
def test_a_profile_agrees_within_its_sampling_error_or_not(tmp_path, samples, agrees):
    records, profiles = profiled(samples)
    md, groups = built(folder_of(tmp_path, records, profiles=profiles))
    seconds = samples / 1000
    se = math.sqrt(samples) / 1000  # one run: a count's standard error, sqrt(n) / hz
    fread = groups["fread"]
    assert fread["profile_first_touch_s"] == pytest.approx(seconds)
    assert fread["profile_first_touch_se_s"] == pytest.approx(se)
    assert fread["profile_agrees"] is agrees
    assert (abs(524636 * 10.9e-6 - seconds) <= 2 * se) is agrees  # the case is what it says
    verdict = "agrees" if agrees else "does not agree"
    assert why_cell(md, "fread").endswith(
        f"= 0.24 s; profile: {seconds:.1f} ± {number(2 * se)} s in first-touch causes, "
        f"{verdict}")


def test_the_standard_error_of_a_mean_over_runs():
    """Two runs at 1000 Hz with 5 s of first-touch causes on average hold 10,000 samples: the
    mean's standard error is sqrt(10000) / (1000 × 2) = 0.05 s; none at all still one sample's."""
    none = pd.Series({**{c: 0.0 for c in touch.FIRST_TOUCH}, "n": 2})
    five = none.copy()
    five["page zeroing"] = 5.0
    check = touch.profile_check(five, 1000.0, 5.09)
    assert check["profile_first_touch_se_s"] == pytest.approx(0.05)
    assert check["profile_agrees"] is True
    assert touch.profile_check(five, 1000.0, 5.11)["profile_agrees"] is False
    assert touch.profile_check(none, 1000.0, 0.0)["profile_first_touch_se_s"] == pytest.approx(
        1 / 2000)


def split_runs(walls_huge):
    """Six fread:buffer=thp runs, reps 0-5: those of `walls_huge` (rep -> wall) got 2 GiB of huge
    pages, the others none and 3.4 + rep / 10 s."""
    return [run(i, "fread:buffer=thp", "eager,allocates", walls_huge.get(i, 3.4 + i / 10),
                params={"buffer": "thp"}, load_minor_faults=1100,
                anon_huge_bytes=2 * GIB if i in walls_huge else 0) for i in range(6)]


def test_runs_that_got_huge_pages_are_told_apart(tmp_path):
    records = split_runs({0: 0.6, 2: 0.65, 3: 0.7, 5: 0.75})
    records += [run(20 + i, "fread", "eager,allocates", 5.8, load_minor_faults=524636,
                    anon_huge_bytes=0) for i in range(6)]
    md, groups = built(folder_of(tmp_path, records))
    s = groups["fread:buffer=thp"]["huge_page_split"]
    assert s["huge"] == {"n": 4, "median_s": pytest.approx(0.675), "reps": [0, 2, 3, 5],
                         "run_ids": ["r000", "r002", "r003", "r005"]}
    assert (s["not_huge"]["n"], s["not_huge"]["reps"], s["overlap"]) == (2, [1, 4], False)
    assert s["not_huge"]["median_s"] == pytest.approx(3.65)
    assert groups["fread"]["huge_page_split"] is None  # all of one kind: nothing to say
    cold = md.split("## Cold start", 1)[1].split("\n## ", 1)[0]
    assert ("- fread:buffer=thp: 4 of 6 runs got huge pages (median 0.675 s; reps 0, 2, 3, 5), "
            "2 did not (median 3.650 s; reps 1, 4): their times do not overlap, so the split, "
            "not the strategy, is the spread.") in cold
    note = cold.split("Huge pages in some runs", 1)[1].split("\n\n", 2)[1]
    assert len(note.splitlines()) == 1  # fread's runs, all of one kind, are not in it


def test_overlapping_parts_say_so_and_one_kind_says_nothing(tmp_path):
    md, groups = built(folder_of(tmp_path / "a", split_runs({0: 3.8, 1: 3.0, 2: 0.6})))
    s = groups["fread:buffer=thp"]["huge_page_split"]
    assert s["overlap"] is True and (s["huge"]["n"], s["not_huge"]["n"]) == (3, 3)
    assert "reps 3, 4, 5): their times overlap." in md
    md, groups = built(folder_of(tmp_path / "b", split_runs({i: 0.6 for i in range(6)})))
    assert groups["fread:buffer=thp"]["huge_page_split"] is None
    assert "Huge pages in some runs" not in md
