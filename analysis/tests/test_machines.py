"""The machines report (analysis/machines.py) pools folders only where the machine and its state
match (one machine tuned and untuned is two, named by the setting; another CPU is another
machine, and a pool's figures are the median of its folders' probes); finds a planted order flip
between two machines and calls it sure with each machine's paired ratio, while a swap of two
near-equal medians is reported but not sure; measures each strategy against its own machine's
limit (the probe's device cold, and warm where O_DIRECT read storage, the same figure the main
report draws; its page cache read warm; a link's ceiling through a server, named beside the
local rows' limit) by the bytes all of a run's readers delivered, marks a share above 1 and
says why, and ranks the fastest 1; the model (analysis/models/load.py) gives hand-computed times for
rows of every kind and says why it gives none; `--predict` prices each row on a machine given
by its figures, an env.json or a folder; a folder without the probe is still reported and
names `make probe`; bad input is one line and exit 2; and the committed reference, tuned
against untuned, flips owned and fread surely, while against itself twice as slow nothing
flips. The cases at the end were once wrong: one file name at two sizes, the GPU's name, a flip
without an interval in machines.json (strict JSON), and a folder that does not say whether it
was tuned."""

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

from analysis.models import load as model, machine_figures as mf
from analysis.pages import machines, report

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SIZE = 2 * 10**9
FILE = "/data/llama-2GiB.wlf"
PROBE = {"device_limit": {"gb_per_s": 2.0}, "warm_read": {"gb_per_s": 10.0},
         "memcpy": {"gb_per_s": 20.0}, "memory_fill": {"gb_per_s": 40.0},
         "anon_4k_fault": {"median_us": 1.0}, "thp_fault": {"median_us": 100.0},
         "file_minor_fault": {"median_us": 5.0}}
FIGURES = {"device_gb_per_s": 2.0, "page_cache_gb_per_s": 10.0, "memcpy_gb_per_s": 20.0,
           "fill_gb_per_s": 40.0, "fault_4k_us": 1.0, "fault_2m_us": 100.0,
           "file_fault_us": 5.0, "h2d_gb_per_s": None}
FLAGS = {"fread": "eager,allocates", "mmap": "maps-file",
         "odirect": "allocates,direct-io,threads,model,local-or-remote"}
FAULTS = {"fread": 488281, "mmap": 1000, "odirect": 488281}
# fread cold on PROBE: 2e9 B at 2 GB/s + 488,281 faults × 1 µs + its pass at 20 GB/s.
FREAD_COLD_S = 1.0 + 0.488281 + 0.1


def env(host="box", cpu="Synthetic CPU", tuned=True, reporting="off", probe=PROBE, **over):
    """A loadbench env.json of a machine whose probe measured `probe`."""
    e = {"loadbench": {"version": "0.1.0", "commit": "abc"}, "experiment": "synthetic",
         "host": {"hostname": host, "cpu_model": cpu, "cores": 4, "memory_bytes": 16 << 30},
         "kernel": {"release": "6.1.0"}, "virtualization": {"hypervisor_flag": False},
         "storage": {"device": "nvme0n1", "driver": "nvme", "model": "X", "size_bytes": 10**12,
                     "read_ahead_kb": 128, "scheduler": "none"},
         "filesystem": {"type": "ext4"}, "gpu": {"available": False},
         "thp": {"enabled": "madvise", "defrag": "madvise"},
         "system": {"tuned": tuned, "page_reporting": reporting, "damon_pageout": "off"},
         "rounds": {"order": "interleaved", "baseline": "fread", "ceiling": False}, **over}
    if probe is not None:
        e["probe"] = {"kind": "full", "ceilings": probe, "same_device": True}
    return e


def record(i, spec, cache, rep, position, wall, file, size):
    name = spec.split(":")[0]
    faults = FAULTS.get(name, 488281)
    return {"run_id": f"r{i:04d}", "strategy": name, "strategy_spec": spec,
            "strategy_flags": FLAGS.get(name, "eager,allocates"), "params": {},
            "use": {"consume": "checksum"}, "file": file, "format": "wlf", "file_bytes": size,
            "cache": cache, "rep": rep, "position": position, "status": "ok", "error": None,
            "checksum_ok": True, "wall_s": wall, "minor_faults": faults + 500,
            "load_minor_faults": faults, "anon_huge_bytes": 0,
            "read_bytes": size if cache == "cold" else 0, "tensor_bytes": size}


def folder(path, e, times, rounds=8, caches=("cold",), sigma=0.0, seed=0, file=FILE, size=SIZE):
    """A results folder of `rounds` rounds per cache state, every strategy of `times` (spec ->
    seconds, or a list of one per round) once per round in a rotated order, each time times
    log-normal noise of `sigma`; env.json `e`."""
    rng = np.random.default_rng(seed)
    specs, records = list(times), []
    for rep in range(rounds):
        for cache in caches:
            for k in range(len(specs)):
                spec = specs[(k + rep) % len(specs)]
                t = times[spec][rep] if isinstance(times[spec], list) else times[spec]
                wall = t * float(np.exp(rng.normal(0, sigma)))
                records.append(record(len(records), spec, cache, rep, k, wall, file, size))
    return write_folder(path, e, records)


def write_folder(path, e, records):
    """A results folder of `records` and env.json `e`."""
    os.makedirs(path)
    with open(os.path.join(path, "runs.jsonl"), "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in records)
    with open(os.path.join(path, "env.json"), "w") as f:
        json.dump(e, f)
    return str(path)


def row_of(m, spec, cache="cold"):
    t = m.table
    return t[(t["strategy_spec"] == spec) & (t["cache"] == cache)].iloc[0]


def cli(capsys, *argv):
    code = machines.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


# --- machines ---------------------------------------------------------------------------------

def test_folders_of_one_machine_and_state_pool_into_one_with_median_figures(tmp_path):
    faster = {**PROBE, "device_limit": {"gb_per_s": 4.0}}
    a = folder(tmp_path / "a", env(), {"fread": 1.0})
    b = folder(tmp_path / "b", env(probe=faster), {"fread": 1.0}, file="/mnt/llama-2GiB.wlf")
    [m] = machines.open_machines([a, b])
    assert m.label == "box" and [r.folder for r in m.runs] == [a, b]
    assert m.figures.figures["device_gb_per_s"] == 3.0  # the median of 2 and 4
    assert row_of(m, "fread")["runs"] == 16  # one workload: matched by file name and size


def test_the_same_hardware_tuned_and_untuned_is_two_machines_named_by_the_setting(tmp_path):
    a = folder(tmp_path / "a", env(tuned=True, reporting="off"), {"fread": 1.0})
    b = folder(tmp_path / "b", env(tuned=False, reporting="on"), {"fread": 1.0})
    assert [m.label for m in machines.open_machines([a, b])] == ["box (tuned)", "box (untuned)"]


def test_another_cpu_is_another_machine(tmp_path):
    a = folder(tmp_path / "a", env(cpu="EPYC"), {"fread": 1.0})
    b = folder(tmp_path / "b", env(cpu="Xeon"), {"fread": 1.0})
    ms = machines.open_machines([a, b])
    assert len(ms) == 2 and len({m.label for m in ms}) == 2
    assert [len(m.runs) for m in ms] == [1, 1]


# --- flips ------------------------------------------------------------------------------------

def test_a_planted_flip_is_sure_with_each_machines_paired_ratio(tmp_path):
    a = folder(tmp_path / "a", env("a", "EPYC"), {"fread": 1.0, "mmap": 2.0}, sigma=0.02)
    b = folder(tmp_path / "b", env("b", "Xeon"), {"fread": 2.0, "mmap": 1.0}, sigma=0.02,
               seed=1, file="/mnt/models/llama-2GiB.wlf")
    f = machines.flips(machines.open_machines([a, b]))
    assert len(f) == 1
    r = f.iloc[0]
    assert (r["machine_a"], r["machine_b"], r["first"], r["second"]) == (
        "a", "b", ("fread", ""), ("mmap", ""))
    assert r["sure"] and r["a"]["below"] and r["b"]["above"]
    assert r["a"]["pairs"] == r["b"]["pairs"] == 8
    assert r["a"]["ratio"] == pytest.approx(0.5, rel=0.05)
    assert r["b"]["ratio"] == pytest.approx(2.0, rel=0.05)
    assert r["a"]["low"] < r["a"]["ratio"] < r["a"]["high"] < 1 < r["b"]["low"]


def test_near_equal_strategies_whose_medians_swap_are_a_flip_but_not_sure(tmp_path):
    # On A, x's median 1.00 < y's 1.005; on B, y's 1.005 < x's 1.01: a swap, yet within each
    # machine the rounds go both ways, so neither interval leaves out 1. On C, x (1.2) is surely
    # slower: A against C flips, sure on C's side only, so not sure.
    y = [0.95, 1.05, 0.96, 1.06, 0.97, 1.04, 0.98, 1.03]
    a = folder(tmp_path / "a", env("a", "EPYC"), {"x": 1.00, "y": y}, sigma=0.001)
    b = folder(tmp_path / "b", env("b", "Xeon"), {"x": 1.01, "y": y}, sigma=0.001, seed=1)
    c = folder(tmp_path / "c", env("c", "ARM"), {"x": 1.2, "y": y}, sigma=0.001, seed=2)
    ms = machines.open_machines([a, b, c])
    assert row_of(ms[0], "x")["rank"] == 1 and row_of(ms[1], "y")["rank"] == 1
    f = machines.flips(ms).set_index(["machine_a", "machine_b"])
    assert sorted(f.index) == [("a", "b"), ("a", "c")] and not f["sure"].any()
    ab, ac = f.loc[("a", "b")], f.loc[("a", "c")]
    assert ab["first"] == ac["first"] == ("x", "")
    assert not ab["a"]["below"] and not ab["b"]["above"]
    assert ab["a"]["low"] < 1 < ab["a"]["high"] and ab["b"]["low"] < 1 < ab["b"]["high"]
    assert ac["b"]["above"] and not ac["a"]["below"]


def test_the_same_order_on_both_machines_is_no_flip(tmp_path):
    a = folder(tmp_path / "a", env("a", "EPYC"), {"fread": 1.0, "mmap": 2.0}, sigma=0.02)
    b = folder(tmp_path / "b", env("b", "Xeon"), {"fread": 3.0, "mmap": 4.0}, sigma=0.02)
    assert machines.flips(machines.open_machines([a, b])).empty


# --- share of the limit -----------------------------------------------------------------------

def test_share_is_bytes_over_median_over_the_machines_limit_and_rank_1_the_fastest(tmp_path):
    a = folder(tmp_path / "a", env(), {"mmap": 2.5, "fread": 1.25}, caches=("cold", "warm"))
    [m] = machines.open_machines([a])
    cold, warm, mmap = row_of(m, "fread"), row_of(m, "fread", "warm"), row_of(m, "mmap")
    assert (cold["limit"], cold["limit_gb_per_s"]) == ("device", 2.0)
    assert cold["median_s"] == 1.25 and cold["share"] == pytest.approx(0.8)  # 2e9/1.25/1e9/2
    assert (warm["limit"], warm["limit_gb_per_s"]) == ("page cache read", 10.0)
    assert warm["share"] == pytest.approx(0.16)
    assert mmap["share"] == pytest.approx(0.4)
    assert (cold["rank"], mmap["rank"]) == (1, 2)


def readers_records(pattern, round_s, rounds=6):
    """Rounds of 4 warm fread readers released together, each with its part by `pattern`
    (tp: a quarter of the model; replicated: all of it), the slowest ending `round_s` after
    the start."""
    part = SIZE // 4 if pattern == "tp" else SIZE
    out = []
    for rep in range(rounds):
        for k in range(4):
            r = record(len(out), "fread", "warm", rep, 0, round_s * (0.85 + 0.05 * k), FILE,
                       SIZE)
            r.update(procs=4, proc=k, pattern=pattern, tensor_bytes=part,
                     load_start_unix_s=1000.0 + 100 * rep)
            out.append(r)
    return out


def test_a_run_of_several_readers_is_measured_by_the_bytes_all_its_readers_delivered(tmp_path):
    # The issue's run: 4 warm tp readers deliver the model at 6.53 GB/s against a page cache
    # read of 11.78 GB/s: 0.554 of it, where one reader's quarter gave 0.138. 4 replicated
    # readers deliver it 4 times, as a fleet's nodes do.
    e = env(probe={**PROBE, "warm_read": {"gb_per_s": 11.78}})
    tp = machines.open_machines([write_folder(tmp_path / "tp", e, readers_records(
        "tp", SIZE / 6.53e9))])[0].table.iloc[0]
    assert tp["share"] == pytest.approx(6.53 / 11.78, rel=1e-9)
    assert tp["run_bytes"] == SIZE and tp["bytes"] == SIZE / 4  # the model's: one reader's
    replicated = machines.open_machines([write_folder(tmp_path / "rep", e, readers_records(
        "replicated", 4 * SIZE / 6.53e9))])[0].table.iloc[0]
    assert replicated["share"] == pytest.approx(6.53 / 11.78, rel=1e-9)
    assert replicated["run_bytes"] == 4 * SIZE


def test_the_device_is_one_number_in_the_machines_report_and_the_main_report(tmp_path):
    # A probe whose buffered and O_DIRECT reads differ from its fastest recipe, device_limit.
    probe = {**PROBE, "cold_buffered_read": {"gb_per_s": 3.0},
             "cold_direct_read": {"gb_per_s": 1.0}}
    a = folder(tmp_path / "a", env(probe=probe), {"fread": 1.25, "mmap": 2.5})
    [m] = machines.open_machines([a])
    assert row_of(m, "fread")["limit_gb_per_s"] == 2.0
    report.build(a)
    md = open(os.path.join(a, "report.md")).read()
    caption = next(x for x in md.splitlines() if x.startswith("*Cold throughput"))
    assert "the probe's device 2.00 GB/s" in caption and "buffered" not in caption, caption


def test_a_share_above_1_is_marked_and_says_why(tmp_path):
    # Warm, mmap maps the cached file at 20 GB/s, twice the page cache read it copies nothing
    # of; cold, fread's 2.5 GB/s passes the probe's device figure of 2.
    a = folder(tmp_path / "a", env(), {"mmap": 0.1, "fread": 0.8}, caches=("cold", "warm"))
    machines.build([a], str(tmp_path / "out"))
    md = (tmp_path / "out" / "machines.md").read_text()
    rows = [x for x in md.splitlines() if x.startswith(("| mmap | 0.100", "| fread | 0.800"))]
    assert "| mmap | 0.100 | 2.00 ⚠ | 1 |" in rows and "| fread | 0.800 | 1.25 ⚠ | 2 |" in rows, \
        rows
    assert ("⚠ box: mmap (20 GB/s) passed the page cache read (10 GB/s): they map the cached "
            "file and copy nothing") in md
    assert ("⚠ box: mmap (20 GB/s), fread (2.5 GB/s) passed the device (2 GB/s): that figure is "
            "not this machine's limit for them") in md
    assert "| fread | 0.800 | 0.25 | 2 |" in md  # warm fread, 0.25 of the page cache's


def test_a_warm_odirect_row_that_read_storage_is_measured_against_the_device(tmp_path):
    a = folder(tmp_path / "a", env(), {"fread": 1.0, "odirect": 1.6, "io_uring": 1.0},
               caches=("warm",))
    lines = open(os.path.join(a, "runs.jsonl")).read().splitlines()
    records = [json.loads(x) for x in lines]
    for r in records:  # odirect read the file from storage though it was cached
        r["read_bytes"] = SIZE if r["strategy"] == "odirect" else 0
        if r["strategy"] == "io_uring":  # may use O_DIRECT; here it read the page cache
            r["strategy_flags"] = "eager,allocates,direct-io"
    write_folder(tmp_path / "b", env(), records)
    [m] = machines.open_machines([str(tmp_path / "b")])
    odirect, io_uring = row_of(m, "odirect", "warm"), row_of(m, "io_uring", "warm")
    assert (odirect["limit"], odirect["share"]) == ("device", pytest.approx(2e9 / 1.6 / 2e9))
    assert io_uring["limit"] == "page cache read"
    assert model.stages(odirect)[0][0] == "device"  # as the model prices it
    machines.build([str(tmp_path / "b")], str(tmp_path / "out"))
    said = next(x for x in (tmp_path / "out" / "machines.md").read_text().splitlines()
                if "Limits:" in x)
    assert "Limits: box: page cache read 10 GB/s, but device 2 GB/s for odirect." in said, said


def test_the_limits_line_names_each_rows_own_limit_where_local_and_remote_rows_mix(tmp_path):
    # A [link] experiment: fread reads the local file, http_get the same bytes through the
    # server over the 1gbit link, in the same rounds; the link's ceiling 0.1175 GB/s.
    records = []
    for rep in range(6):
        records.append({"run_id": f"c{rep}", "strategy": "link_ceiling",
                        "strategy_spec": "link_ceiling", "file": FILE, "cache": "cold",
                        "rep": rep, "position": 0, "link": "1gbit", "status": "ok",
                        "gb_per_s": 0.1175, "wall_s": 3.0})
        for k, (spec, wall) in enumerate((("fread", 1.0), ("http_get", 20.0))):
            records.append({**record(len(records), spec, "cold", rep, k + 1, wall, FILE, SIZE),
                            "link": "1gbit"})
    [m] = machines.open_machines([write_folder(tmp_path / "a", env(), records)])
    assert row_of(m, "http_get")["share"] == pytest.approx(0.1 / 0.1175, rel=1e-9)
    machines.build([str(tmp_path / "a")], str(tmp_path / "out"))
    said = next(x for x in (tmp_path / "out" / "machines.md").read_text().splitlines()
                if "Limits:" in x)
    assert "Limits: box: device 2 GB/s, but link 1gbit 0.117 GB/s for http_get." in said, said


# --- the model --------------------------------------------------------------------------------

def row(**fields):
    """A cold eager copy of 2e9 bytes with 488,281 first touches, one reader."""
    return {"strategy_flags": "eager,allocates", "cache": "cold", "bytes": SIZE,
            "minor_faults": 488281, "anon_huge_bytes": 0, "read_bytes": SIZE,
            "consume": "checksum", "procs": 1, "remote": False, "link": "", **fields}


def predict(r, figures=FIGURES, thp="madvise"):
    return model.predict(r, figures, {}, thp)


def test_the_figures_are_read_from_the_probe():
    f = mf.from_env(env(), "box")
    assert f.figures == FIGURES and f.thp == "madvise" and f.lacks == ""
    elsewhere = env()
    elsewhere["probe"]["same_device"] = False
    other = mf.from_env(elsewhere, "box")
    assert other.figures["device_gb_per_s"] is None and "another device" in other.lacks


def test_model_an_eager_copy_cold_streams_from_the_device_then_its_consumer_passes():
    p = predict(row())
    assert [s for s, _ in model.stages(row())] == ["device", "memory fill"]
    assert (p["slowest"], p["slowest_gb_per_s"]) == ("device", 2.0)
    assert p["stream_s"] == pytest.approx(1.0) and p["touch_s"] == pytest.approx(0.488281)
    assert p["consume_s"] == pytest.approx(0.1)
    assert p["predicted_s"] == pytest.approx(FREAD_COLD_S) and p["missing"] == p["why"] == ""


def test_model_a_warm_mapping_streams_at_the_consumer_and_prices_file_faults():
    r = row(strategy_flags="maps-file", cache="warm", minor_faults=1000, read_bytes=0)
    assert model.stages(r) == [("consumer", "memcpy_gb_per_s")]
    assert model.touches(r, "madvise") == [("file mapping", 1000, "file_fault_us")]
    p = predict(r)
    assert p["slowest"] == "consumer" and p["consume_s"] == 0.0
    assert p["predicted_s"] == pytest.approx(2e9 / 20e9 + 1000 * 5e-6)


def test_model_huge_pages_are_priced_per_2_mib_or_as_4_kib_pages_under_thp_never():
    r = row(anon_huge_bytes=SIZE)
    assert model.touches(r, "madvise") == [("2 MiB", SIZE / (2 << 20), "fault_2m_us")]
    assert model.touches(r, "never") == [("4 KiB", SIZE / 4096, "fault_4k_us")]
    assert predict(r)["touch_s"] == pytest.approx(SIZE / (2 << 20) * 100e-6)
    assert predict(r, thp="never")["touch_s"] == pytest.approx(SIZE / 4096 * 1e-6)
    # A strategy told to take huge pages (owned's buffer=thp) reports itself unsupported there.
    p = predict(row(anon_huge_bytes=SIZE, buffer="thp"), thp="never")
    assert math.isnan(p["predicted_s"]) and "unsupported" in p["why"]
    assert predict(row(anon_huge_bytes=SIZE, buffer="thp"))["predicted_s"] > 0


def test_model_gives_no_time_without_flags_or_a_figure_and_says_why():
    p = predict(row(strategy_flags=None))
    assert math.isnan(p["predicted_s"]) and "no flags" in p["why"]
    p = predict(row(), {**FIGURES, "device_gb_per_s": None})
    assert math.isnan(p["predicted_s"]) and p["missing"] == "device_gb_per_s"
    assert math.isnan(predict(row(procs=4))["predicted_s"])


def test_model_an_eager_warm_mapping_has_no_stage_only_touches_and_the_pass():
    r = row(strategy_flags="eager,maps-file", cache="warm", minor_faults=1000, read_bytes=0)
    assert model.stages(r) == []
    p = predict(r)
    assert p["slowest"] == "" and p["stream_s"] == 0.0
    assert p["predicted_s"] == pytest.approx(1000 * 5e-6 + 2e9 / 20e9)


def test_model_a_warm_odirect_copy_that_read_storage_streams_from_the_device():
    flags = "eager,allocates,direct-io"
    assert model.stages(row(strategy_flags=flags, cache="warm"))[0][0] == "device"
    cached = row(strategy_flags=flags, cache="warm", read_bytes=SIZE / 4)
    assert model.stages(cached)[0][0] == "page cache"
    assert predict(cached)["stream_s"] == pytest.approx(2e9 / 10e9)


def test_the_table_predicts_from_the_runs_counts(tmp_path):
    [m] = machines.open_machines([folder(tmp_path / "a", env(), {"fread": 1.5})])
    r = row_of(m, "fread")
    assert (r["bytes"], r["minor_faults"], r["consume"]) == (SIZE, 488281, "checksum")
    assert r["predicted_s"] == pytest.approx(FREAD_COLD_S)
    assert r["error"] == pytest.approx(FREAD_COLD_S / 1.5) and r["family"] == "copies"
    fam = machines.families([m]).set_index("family").loc["copies"]
    assert fam["rows"] == 1 and fam["median"] == pytest.approx(FREAD_COLD_S / 1.5)


# --- the command ------------------------------------------------------------------------------

def test_no_shared_workload_shows_each_machine_alone(tmp_path):
    a = folder(tmp_path / "a", env("a", "EPYC"), {"fread": 1.0})
    b = folder(tmp_path / "b", env("b", "Xeon"), {"fread": 1.0}, file="/data/other.wlf")
    p = subprocess.run([sys.executable, "-m", "analysis.machines", a, b, "--out",
                        str(tmp_path / "out")], cwd=REPO, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "no workload is shared by two machines: each is shown alone" in p.stdout
    md = (tmp_path / "out" / "machines.md").read_text()
    assert "No workload" in md and "each machine is shown alone" in md
    assert "Order flips" not in md


def test_a_folder_without_the_probe_is_reported_and_names_make_probe(tmp_path, capsys):
    a = folder(tmp_path / "a", env(probe=None), {"fread": 1.0, "mmap": 2.0})
    code, out, _ = cli(capsys, a, "--out", tmp_path / "out")
    assert code == 0 and "no probe figures" in out
    data = json.loads((tmp_path / "out" / "machines.json").read_text())
    rows = data["machines"][0]["rows"]
    assert rows and all(r["share"] is None and r["predicted_s"] is None for r in rows)
    md = (tmp_path / "out" / "machines.md").read_text()
    assert "`make probe`" in md and "No row has a prediction" in md


def case_env_not_json(tmp_path):
    a = folder(tmp_path / "a", env(), {"fread": 1.0})
    with open(os.path.join(a, "env.json"), "w") as f:
        f.write("{not json")
    return [a], os.path.join(a, "env.json")


def case_env_foreign(tmp_path):
    a = folder(tmp_path / "a", {"name": "something else", "version": 3}, {"fread": 1.0})
    return [a], os.path.join(a, "env.json")


def case_no_folder(tmp_path):
    return [tmp_path / "nowhere"], str(tmp_path / "nowhere")


def predicting(tmp_path, text):
    a = folder(tmp_path / "a", env(), {"fread": 1.0})
    (tmp_path / "m.json").write_text(text)
    return [a, "--predict", tmp_path / "m.json"], str(tmp_path / "m.json")


CASES = {
    "env not JSON": case_env_not_json,
    "env of another tool": case_env_foreign,
    "no such folder": case_no_folder,
    "predict unknown key": lambda t: predicting(t, '{"name": "n", "disk_gb_per_s": 3}'),
    "predict negative": lambda t: predicting(t, '{"name": "n", "device_gb_per_s": -1}'),
    "predict string": lambda t: predicting(t, '{"name": "n", "memcpy_gb_per_s": "fast"}'),
    "predict not JSON": lambda t: predicting(t, "device 2 GB/s"),
}


@pytest.mark.parametrize("case", CASES)
def test_bad_input_is_one_line_naming_the_file_and_exit_2(tmp_path, capsys, case):
    argv, named = CASES[case](tmp_path)
    code, out, err = cli(capsys, *argv, "--out", tmp_path / "out")
    assert code == 2 and "Traceback" not in err
    assert len(err.splitlines()) == 1 and err.startswith("analysis.machines: ")
    assert named in err


# --- --predict --------------------------------------------------------------------------------

def test_predict_with_a_figures_json_prices_each_row_there(tmp_path, capsys):
    a = folder(tmp_path / "a", env(), {"fread": 1.5, "mmap": 2.0})
    target = {"name": "nvme-box", "thp": "madvise", "device_gb_per_s": 4.0,
              "memcpy_gb_per_s": 20.0, "fill_gb_per_s": 40.0, "fault_4k_us": 0.5,
              "file_fault_us": 2.0}
    (tmp_path / "m.json").write_text(json.dumps(target))
    code, out, _ = cli(capsys, a, "--out", tmp_path / "out", "--predict", tmp_path / "m.json")
    assert code == 0 and "predicted for nvme-box: 2 of 2 rows" in out
    md = (tmp_path / "out" / "machines.md").read_text()
    assert "## Predicted for nvme-box" in md
    rows = json.loads((tmp_path / "out" / "machines.json").read_text())["predict"]["rows"]
    by = {r["strategy_spec"]: r for r in rows}
    # 2e9 B at 4 GB/s + 488,281 × 0.5 µs + the pass at 20 GB/s.
    assert by["fread"]["predicted_s"] == pytest.approx(0.5 + 0.2441405 + 0.1)
    assert by["mmap"]["predicted_s"] == pytest.approx(0.5 + 1000 * 2e-6)  # device, then faults
    assert by["fread"]["counts_from"] == "box" and by["fread"]["measured_s"] == 1.5


@pytest.mark.parametrize("given", ["env.json", "folder"])
def test_predict_with_another_folders_env_json_or_the_folder(tmp_path, given):
    a = folder(tmp_path / "a", env(), {"fread": 1.5})
    b = folder(tmp_path / "b", env("other", probe={**PROBE, "device_limit": {"gb_per_s": 4.0}}),
               {"fread": 1.0})
    built = machines.build([a], str(tmp_path / "out"),
                           os.path.join(b, "env.json") if given == "env.json" else b)
    assert built["target"].name == "other (b)"
    p = built["predicted"].iloc[0]
    assert p["predicted_s"] == pytest.approx(0.5 + 0.488281 + 0.1)
    assert "## Predicted for other (b)" in (tmp_path / "out" / "machines.md").read_text()


# --- the pages --------------------------------------------------------------------------------

def test_build_writes_every_page_and_figure(tmp_path):
    a = folder(tmp_path / "a", env("a", "EPYC"), {"fread": 1.0, "mmap": 2.0}, sigma=0.02)
    b = folder(tmp_path / "b", env("b", "Xeon"), {"fread": 2.0, "mmap": 1.0}, sigma=0.02)
    out = tmp_path / "out"
    built = machines.build([a, b], str(out))
    assert built["written"] == 2
    assert (out / "machines.html").read_text().startswith("<!DOCTYPE html>")
    data = json.loads((out / "machines.json").read_text())
    assert {"machines", "flips", "families"} <= set(data)
    assert [m["label"] for m in data["machines"]] == ["a", "b"] and len(data["flips"]) == 1
    assert (out / "figures" / "machines-share-1.png").stat().st_size > 0
    assert (out / "figures" / "machines-model.png").stat().st_size > 0
    md = (out / "machines.md").read_text()
    assert "**Order flips between a and b** (1 of 1 sure)" in md
    # The page holds all of machines.md: every table and both figures, embedded.
    page = (out / "machines.html").read_text()
    assert page.count("<table") == md.count("\n|---") >= 5
    assert page.count("<figure><img") == 2 and "<strong>Order flips between a and b</strong>" in page


def reference_copy(folder, name, tuned, scale=1.0):
    """The committed reference folder `name` copied to `folder` as a run `tuned` or not, every
    time of its records times `scale`."""
    source = os.path.join(REPO, "results", "reference", name)
    with open(os.path.join(source, "runs.jsonl")) as f:
        records = [json.loads(line) for line in f]
    for r in records:
        r["wall_s"] = r["wall_s"] * scale if r.get("wall_s") else r.get("wall_s")
    with open(os.path.join(source, "env.json")) as f:
        e = json.load(f)
    e["system"]["tuned"] = tuned
    return write_folder(folder, e, records)


def test_the_reference_tuned_and_untuned_flips_where_owned_pays_for_reported_memory(tmp_path):
    # The committed pair: warm, owned took 0.23x fread's time tuned and 2.66x untuned (the
    # README's figures), a sure flip.
    built = machines.build([reference_copy(tmp_path / "tuned", "quick", True),
                            reference_copy(tmp_path / "untuned", "quick-untuned", False)],
                           str(tmp_path / "out"))
    assert [m.label for m in built["machines"]] == ["vm (tuned)", "vm (untuned)"]
    f = built["flips"]
    owned = f[(f["cache"] == "warm") & (f["first"] == ("owned", ""))
              & (f["second"] == ("fread", ""))]
    assert len(owned) == 1 and owned.iloc[0]["sure"], f[["cache", "first", "second", "sure"]]
    assert owned.iloc[0]["a"]["ratio"] == pytest.approx(0.23, abs=0.005)
    assert owned.iloc[0]["b"]["ratio"] == pytest.approx(2.66, abs=0.005)
    assert not built["families"].empty


def test_the_reference_against_itself_twice_as_slow_has_no_flip(tmp_path):
    # Every time doubled on the "untuned" machine: each pair's order and paired ratio are the
    # same on both, so nothing flips though every median differs.
    built = machines.build([reference_copy(tmp_path / "tuned", "quick", True),
                            reference_copy(tmp_path / "untuned", "quick", False, scale=2.0)],
                           str(tmp_path / "out"))
    tuned, untuned = built["machines"]
    # A run's time is its end less its start, at 1.8e9 s since the epoch: rounded to 2.4e-7 s.
    assert (untuned.table["median_s"].to_numpy()
            == pytest.approx(2 * tuned.table["median_s"].to_numpy(), rel=0, abs=1e-6))
    assert built["flips"].empty


# --- cases that were once wrong ----------------------------------------------------------------

def test_one_file_name_of_two_sizes_on_one_machine_is_two_rows_per_strategy(tmp_path):
    a = folder(tmp_path / "a", env(), {"fread": 1.0})
    b = folder(tmp_path / "b", env(), {"fread": 1.5}, size=3 * 10**9)
    [m] = machines.open_machines([a, b])
    assert sorted(zip(m.table["file_bytes"], m.table["bytes"])) == [(SIZE,) * 2, (3e9,) * 2]


def test_the_fingerprint_names_the_gpu(tmp_path):
    e = env(gpu={"available": True, "device": {"name": "Fixture GPU"}})
    [m] = machines.open_machines([folder(tmp_path / "a", e, {"fread": 1.0})])
    assert m.facts["GPU"] == "Fixture GPU"


def test_machines_json_is_strict_json_with_too_few_rounds_for_an_interval(tmp_path):
    a = folder(tmp_path / "a", env("a", "EPYC"), {"fread": 1.0, "mmap": 2.0}, rounds=4)
    b = folder(tmp_path / "b", env("b", "Xeon"), {"fread": 2.0, "mmap": 1.0}, rounds=4)
    machines.build([a, b], str(tmp_path / "out"))
    text = (tmp_path / "out" / "machines.json").read_text()
    json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} in machines.json"))


def test_a_folder_that_does_not_say_whether_it_was_tuned_is_not_called_untuned(tmp_path):
    unknown = env()
    del unknown["system"]["tuned"]
    a = folder(tmp_path / "a", env(), {"fread": 1.0})
    b = folder(tmp_path / "b", unknown, {"fread": 1.0})
    assert "untuned" not in machines.open_machines([a, b])[1].label


def test_a_strategy_unsupported_on_one_machine_shows_its_status_there(tmp_path):
    a = folder(tmp_path / "a", env("a", "EPYC"), {"fread": 1.0, "owned": 0.5})
    b = folder(tmp_path / "b", env("b", "Xeon"), {"fread": 1.0, "owned": 0.5})
    lines = (tmp_path / "b" / "runs.jsonl").read_text().splitlines()
    marked = [json.dumps({**r, "status": "unsupported", "checksum_ok": None,
                          "error": "buffer=thp: transparent huge pages are disabled"})
              if r["strategy"] == "owned" else json.dumps(r) for r in map(json.loads, lines)]
    (tmp_path / "b" / "runs.jsonl").write_text("\n".join(marked) + "\n")
    built = machines.build([a, b], str(tmp_path / "out"))
    assert list(built["machines"][1].left_out.values()) == ["unsupported"]
    line = next(x for x in (tmp_path / "out" / "machines.md").read_text().splitlines()
                if x.startswith("| owned |"))
    assert line.split(" | ")[4] == "unsupported", line


def test_a_long_list_of_flips_shows_twelve_and_counts_the_rest_with_the_sure_ones(tmp_path):
    specs = [f"fread:block={2 ** k}KiB" for k in range(14)]
    a = folder(tmp_path / "a", env("a", "EPYC"), {s: 1.0 + i for i, s in enumerate(specs)})
    b = folder(tmp_path / "b", env("b", "Xeon"), {s: 14.0 - i for i, s in enumerate(specs)})
    built = machines.build([a, b], str(tmp_path / "out"))
    assert len(built["flips"]) == 91 and built["flips"]["sure"].all()  # every pair reversed
    md = (tmp_path / "out" / "machines.md").read_text()
    assert "(91 of 91 sure)" in md and "… and 79 more (79 sure)" in md


def test_a_probe_made_in_another_state_than_the_runs_is_named(tmp_path):
    untuned = env()
    untuned["probe"]["facts"] = {"tuned": False, "page_reporting": "on"}
    same = env("b", "Xeon")
    same["probe"]["facts"] = {"tuned": True, "page_reporting": "off"}
    built = machines.build([folder(tmp_path / "a", untuned, {"fread": 1.0}),
                            folder(tmp_path / "b", same, {"fread": 1.0})], str(tmp_path / "out"))
    a, b = built["machines"]
    assert a.facts["probe's state"] == "untuned (free page reporting on)"
    assert b.facts["probe's state"] == "tuned (free page reporting off)"
    assert "free page reporting on, its runs with it off" in a.figures.caveat
    assert b.figures.caveat == "" and mf.caveat(env()) == ""  # not recorded: nothing said
    assert a.figures.caveat in (tmp_path / "out" / "machines.md").read_text()


def test_model_a_remote_row_streams_at_its_links_ceiling_and_lacks_it_without_one():
    r = row(remote=True, link="10gbit")
    assert model.stages(r)[0] == ("network", "link:10gbit")
    p = model.predict(r, FIGURES, {"10gbit": 1.0}, "madvise")
    assert p["slowest"] == "network" and p["stream_s"] == pytest.approx(2.0)  # 2e9 B at 1 GB/s
    assert model.predict(r, FIGURES, {}, "madvise")["missing"] == "link:10gbit"
