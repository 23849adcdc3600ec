"""Storages: one model on several storages the tool made (records with `storage`). On the
synthetic fixture storage/ (three storages, 6 rounds cold and warm, its figures chosen in its
make_storage.py so that each can be worked out by hand): the storage is part of a condition
(never pooled, rounds per storage, its label in the condition's name), the report's Storages
section (times, shares of each storage's own ceiling, ranks, the flip between the two xfs
storages, the device counters beside the requests the model predicts, the heat map), `make
machines` with each storage as a variant of its machine (named by its label, its device the
storage's own probe's), the request-aware model (the reads per second bind where the requests
are small), a storage without a probe of its own left unpredicted, and no section for a folder
without storages."""

import json
import math
import os
import shutil
import sys

import pytest
from conftest import build_report_of, row_cells, section_of, written_by

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")
FIXTURE = os.path.join(FIXTURES, "storage")
SMALL = os.path.join(FIXTURES, "small")
sys.path.insert(0, FIXTURE)
import make_storage as make  # noqa: E402

from analysis.core import labels, results  # noqa: E402
from analysis.models import load as model, machines  # noqa: E402
from analysis.pages import machines as machines_page  # noqa: E402
from analysis.sections import storage as section  # noqa: E402
from analysis.stats import aggregates, paired, storage  # noqa: E402

XFS, SLOW, TMPFS = make.XFS, make.SLOW, make.TMPFS
# 1,500 reads per second of 128 KiB: the throttled storage's rate for small requests.
SLOW_BY_REQUESTS = 1500 * 131072 / 1e9


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return build_report_of(tmp_path_factory, FIXTURE)


@pytest.fixture(scope="module")
def md(built):
    return section_of((built / "report.md").read_text(encoding="utf-8"), section.TITLE)


@pytest.fixture(scope="module")
def summary(built):
    return json.loads((built / "summary.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def variants():
    return {m.label: m for m in machines.open_machines([FIXTURE])}


def rows_of(summary, cache):
    return {(r["strategy_spec"], r["storage"]): r for r in summary["storage"]
            if r["cache"] == cache}


def median_time(store, spec):
    return make.TIMES[store][spec] * make.MEDIAN_SPEED


def test_the_fixture_is_what_its_generator_writes():
    assert written_by(FIXTURE, make.records())


# --- the condition ---------------------------------------------------------------------------

def test_a_storage_is_part_of_the_condition_and_its_name():
    assert labels.condition({"cache": "cold", "storage": "xfs:preset=gp3"}, 1) == \
        "cold, xfs:preset=gp3"
    # A run on the data folder as it is (no `storage`, "" once loaded) reads as before.
    assert labels.condition({"cache": "cold", "storage": ""}, 1) == "cold"
    assert labels.condition({"cache": "cold"}, 1) == "cold"
    r = results.load(SMALL)
    assert set(r.runs["storage"]) == {""} and "storage" in results.CONDITION


def test_storages_are_never_pooled_and_pair_within_their_rounds():
    r = results.load(FIXTURE)
    table = aggregates.summarize(r)
    cold = table[table["cache"] == "cold"]
    assert sorted(cold["storage"].unique()) == sorted([XFS, SLOW, TMPFS])
    assert set(cold["n"]) == {6}  # each storage's 6 rounds, not 12 or 18
    pairs = paired.paired_table(r)
    mmap = pairs[(pairs["strategy_spec"] == "mmap") & (pairs["cache"] == "cold")]
    by = dict(zip(mmap["storage"], mmap["ratio"]))
    # Within each storage's rounds every ratio is its TIMES' exactly (SPEED cancels).
    assert by[XFS] == pytest.approx(0.6 / 1.0)
    assert by[SLOW] == pytest.approx(5.3 / 5.5)
    assert by[TMPFS] == pytest.approx(0.3 / 0.5)
    assert set(mmap["n"]) == {6}


# --- the section ---------------------------------------------------------------------------------

def test_shown_only_with_storages(tmp_path):
    assert storage.shown(results.load(FIXTURE))
    assert not storage.shown(results.load(SMALL))
    folder = build_report_of_small(tmp_path)
    text = (folder / "report.md").read_text(encoding="utf-8")
    assert f"## {section.TITLE}" not in text
    assert "storage" not in json.loads((folder / "summary.json").read_text())


def build_report_of_small(tmp_path):
    from analysis.pages import report
    folder = tmp_path / "small"
    shutil.copytree(SMALL, folder)
    report.build(str(folder))
    return folder


def test_times_shares_and_ranks(summary, md):
    cold = rows_of(summary, "cold")
    for store in make.STORAGES:
        for spec, t in make.TIMES[store].items():
            if t is None:
                assert (spec, store) not in cold  # odirect on tmpfs: unsupported
                continue
            row = cold[(spec, store)]
            assert row["median_s"] == pytest.approx(t * 1.025)
            assert row["ceiling_gb_per_s"] == pytest.approx(make.CEILING[store])
            # GB/s: 10^9 bytes over the median time; over the storage's own ceiling.
            assert row["share"] == pytest.approx(1 / (t * 1.025) / make.CEILING[store])
    ranks = {k: r["rank"] for k, r in cold.items()}
    assert ranks == {("mmap", XFS): 1, ("odirect", XFS): 2, ("fread", XFS): 3,
                     ("odirect", SLOW): 1, ("mmap", SLOW): 2, ("fread", SLOW): 3,
                     ("mmap", TMPFS): 1, ("fread", TMPFS): 2}
    # mmap: 0.615 s on xfs, 1 / 0.615 / 2.0 = 81%, first; 5.433 s throttled, 1 / 5.4325 /
    # 0.4 = 46%, second; 0.307 s on tmpfs, 1 / 0.3075 / 8 = 41%, first.
    assert row_cells(md, "mmap", "### cold") == [
        "mmap", "0.615", "81%", "1", "5.433", "46%", "2", "0.307", "41%", "1"]
    assert row_cells(md, "odirect", "### cold")[4:] == ["2.665", "94%", "1", "", "", ""]


def test_warm_shares_only_where_the_bytes_come_from_the_storage(summary):
    warm = rows_of(summary, "warm")
    # fread and mmap warm read the page cache: no share of the storage's ceiling.
    assert warm[("fread", SLOW)]["share"] is None and warm[("mmap", XFS)]["share"] is None
    # odirect reads the device all the same: 1 / (2.6 × 1.025) / 0.4.
    assert warm[("odirect", SLOW)]["share"] == pytest.approx(1 / 2.665 / 0.4)


def test_the_flip_between_the_two_xfs_storages(summary, md):
    flips = summary["storage_flips"]
    assert len(flips) == 1
    f = flips[0]
    assert (f["storage_a"], f["storage_b"]) == (XFS, SLOW) and f["cache"] == "cold"
    assert tuple(f["first"]) == ("mmap", "") and tuple(f["second"]) == ("odirect", "")
    assert f["a"]["ratio"] == pytest.approx(0.6 / 0.8) and f["a"]["below"]
    assert f["b"]["ratio"] == pytest.approx(5.3 / 2.6) and f["b"]["above"]
    assert f["sure"] and f["a"]["pairs"] == f["b"]["pairs"] == 6
    assert f"Order flips between {XFS} and {SLOW}** (1 of 1 sure)" in md
    assert "paired within each storage's rounds" in md
    warm = md.split("### warm", 1)[1]
    assert "No pair of strategies changes order between the storages." in warm


def test_device_counters_beside_the_predicted_requests(summary, md):
    cold = rows_of(summary, "cold")
    for store in (XFS, SLOW):
        assert cold[("mmap", store)]["device_request_bytes"] == 131072
        assert cold[("mmap", store)]["predicted_request_bytes"] == 131072
        assert cold[("odirect", store)]["predicted_request_bytes"] == 1048576
    # reads: 10^9 // 128 KiB = 7,629; per second, the median of 7,629 / (0.6 × SPEED[r]).
    speeds = sorted(1 / s for s in make.SPEED)
    assert cold[("mmap", XFS)]["device_reads_per_s"] == pytest.approx(
        7629 / 0.6 * (speeds[2] + speeds[3]) / 2)
    assert cold[("mmap", TMPFS)]["device_request_bytes"] is None  # no block device
    counters = md.split("### cold", 1)[1].split("### warm", 1)[0]
    assert row_cells(counters, "mmap", "request KiB, predicted / measured")[1:5] == [
        "128 / 128", "12412", "128 / 128", "1405"]


def test_the_storages_and_the_one_without_a_probe(md, summary):
    assert f"- *{SLOW}*: xfs on loop3; device class 400 MB/s, 1500 IOPS" in md
    assert "its probe: device 0.4 GB/s, 1500 reads/s" in md
    assert f"- *{TMPFS}*: tmpfs, no block device" in md and "no probe of its own" in md
    ceilings = {c["storage"]: c for c in summary["storage_ceilings"]}
    assert {k: c["ceiling_gb_per_s"] for k, c in ceilings.items()} == pytest.approx(
        make.CEILING)
    assert {c["ceiling_reads"] for c in ceilings.values()} == {6}


def test_the_heat_map_follows_its_table(built, md):
    assert (built / "figures" / "storage-share-1.png").is_file()
    cold = md.split("### cold", 1)[1]
    assert cold.index("| mmap |") < cold.index("figures/storage-share-1.png") < \
        cold.index("Order flips")


# --- make machines: storages as variants ----------------------------------------------------

def test_each_storage_is_a_variant_named_by_its_label(variants):
    assert list(variants) == [XFS, SLOW, TMPFS]
    for label, m in variants.items():
        assert m.storage == label
        assert set(storage.labels(m.runs[0])) == {label}  # its runs, that storage's only
    # The device is the storage's own probe's, the rest the machine's.
    assert variants[SLOW].figures.figures["device_gb_per_s"] == 0.4
    assert variants[SLOW].figures.figures["device_iops"] == 1500
    assert variants[XFS].figures.figures["device_gb_per_s"] == 2.0
    assert variants[XFS].figures.figures["memcpy_gb_per_s"] == 20.0
    assert variants[SLOW].facts["device class"] == "400 MB/s, 1500 IOPS"


def test_two_machines_name_their_variants_machine_slash_label(tmp_path):
    other = tmp_path / "other"
    shutil.copytree(FIXTURE, other)
    env = json.loads((other / "env.json").read_text())
    env["host"]["hostname"] = "box2"
    env["host"]["cpu_model"] = "Another CPU"
    (other / "env.json").write_text(json.dumps(env))
    names = [m.label for m in machines.open_machines([FIXTURE, str(other)])]
    assert names == [f"box / {XFS}", f"box / {SLOW}", f"box / {TMPFS}",
                     f"box2 / {XFS}", f"box2 / {SLOW}", f"box2 / {TMPFS}"]


def test_runs_on_the_data_folder_are_the_variant_here(tmp_path):
    folder = tmp_path / "here"
    shutil.copytree(FIXTURE, folder)
    records = [{k: v for k, v in r.items() if not (k == "storage" and v == XFS)}
               for r in make.records()]
    (folder / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    found = {m.label: m for m in machines.open_machines([str(folder)])}
    assert list(found) == ["here", SLOW, TMPFS]
    assert found["here"].figures.figures["device_gb_per_s"] == 3.0  # the machine's probe
    assert found["here"].figures.figures.get("device_iops") is None


def test_a_folder_without_storages_is_one_machine_as_before():
    (m,) = machines.open_machines([SMALL])
    assert m.storage is None and "storage made" not in m.facts


def test_the_model_picks_the_requests_bound_where_it_binds(variants):
    def row(label, spec, cache="cold"):
        t = variants[label].table
        return t[(t["strategy_spec"] == spec) & (t["cache"] == cache)].iloc[0]

    mmap = row(SLOW, "mmap")
    assert mmap["device_bound"] == "requests" and mmap["slowest"] == "device"
    assert mmap["slowest_gb_per_s"] == pytest.approx(SLOW_BY_REQUESTS)
    # 10^9 bytes at 1,500 × 128 KiB per second, and 1,000 mapping faults at 2 µs.
    assert mmap["predicted_s"] == pytest.approx(1 / SLOW_BY_REQUESTS + 1000 * 2e-6)
    odirect = row(SLOW, "odirect")  # 1,500 × 1 MiB = 1.57 GB/s: the 0.4 GB/s binds
    assert odirect["device_bound"] == "bytes" and odirect["slowest_gb_per_s"] == 0.4
    assert odirect["request_bytes"] == 1048576
    fast = row(XFS, "mmap")  # 50,000 × 128 KiB = 6.6 GB/s: the 2 GB/s binds
    assert fast["device_bound"] == "bytes" and fast["slowest_gb_per_s"] == 2.0
    assert row(SLOW, "fread", "warm")["device_bound"] == ""  # from the page cache


def test_a_storage_without_a_probe_is_not_predicted(variants, tmp_path):
    tmpfs = variants[TMPFS]
    assert "no probe of its own" in tmpfs.figures.lacks
    cold = tmpfs.table[tmpfs.table["cache"] == "cold"]
    assert cold["predicted_s"].isna().all() and set(cold["missing"]) == {"device_gb_per_s"}
    built = machines_page.build([FIXTURE], str(tmp_path / "out"))
    text = (tmp_path / "out" / "machines.md").read_text(encoding="utf-8")
    assert f"- {TMPFS}: the storage {TMPFS}: no probe of its own" in text
    assert "request KiB, predicted / measured" in text
    assert "device 0.197 GB/s (requests: 1500/s × 128 KiB)" in text
    out = json.loads((tmp_path / "out" / "machines.json").read_text())
    assert [m["storage"] for m in out["machines"]] == [XFS, SLOW, TMPFS]
    assert len(built["flips"]) == 1


# --- the request size, known before the run -----------------------------------------------

LOOP = {"read_ahead_kb": 128, "max_sectors_kb": 1280}


@pytest.mark.parametrize("spec,flags,params,expected", [
    ("fread", "eager,allocates", {"chunk": 1 << 20}, 128 << 10),        # read-ahead window
    ("mmap", "maps-file", {}, 128 << 10),
    ("odirect", "eager,allocates,direct-io", {"chunk": 1 << 20}, 1 << 20),
    ("odirect", "eager,allocates,direct-io", {"chunk": 4 << 20}, 1280 << 10),  # capped
    ("io_uring", "eager,allocates,direct-io", {"chunk": 1 << 20, "direct": "off"}, 1 << 20),
    ("pool", "eager,allocates,direct-io", {"chunk": 2 << 20, "direct": "off"}, 128 << 10),
    ("direct_ring", "eager,allocates,direct-io", {"window": 16 << 20}, 1280 << 10),
])
def test_request_bytes_from_params_and_the_loop_device(spec, flags, params, expected):
    row = {"strategy_spec": spec, "strategy_flags": flags, "params": params}
    assert model.request_bytes(row, LOOP) == expected


@pytest.mark.parametrize("buffer,expected", [("malloc", 512 << 10), (None, 512 << 10),
                                             ("thp", 1280 << 10), ("hugetlb", 1280 << 10)])
def test_an_o_direct_read_into_4k_pages_is_split_at_the_devices_segments(buffer, expected):
    """A loop device's 128 segments split an O_DIRECT read into 4 KiB pages at 512 KiB (measured
    on this machine: 510 to 557 KiB requests), one into huge pages only at max_sectors_kb."""
    params = {"chunk": 4 << 20} | ({"buffer": buffer} if buffer else {})
    row = {"strategy_spec": "owned", "strategy_flags": "eager,allocates,direct-io",
           "params": params}
    assert model.request_bytes(row, LOOP | {"max_segments": 128}) == expected
    assert model.request_bytes(row, LOOP) == 1280 << 10  # segments not known: as before


def test_without_a_reads_per_second_figure_the_model_is_unchanged():
    row = {"strategy_spec": "mmap", "strategy_flags": "maps-file", "params": {},
           "cache": "cold", "bytes": 1e9, "minor_faults": 1000, "procs": 1}
    figures = {"device_gb_per_s": 0.4, "memcpy_gb_per_s": 20.0, "file_fault_us": 2.0}
    before = model.predict(row, figures, {}, "madvise")
    with_loop = model.predict(row, {**figures, **LOOP}, {}, "madvise")
    assert before["predicted_s"] == with_loop["predicted_s"] == pytest.approx(2.5 + 0.002)
    assert before["device_bound"] == with_loop["device_bound"] == ""
    bound = model.predict(row, {**figures, **LOOP, "device_iops": 1500}, {}, "madvise")
    assert bound["predicted_s"] == pytest.approx(1 / SLOW_BY_REQUESTS + 0.002)
    assert math.isnan(before["request_bytes"]) and with_loop["request_bytes"] == 131072


def test_predict_for_a_storage_from_its_own_probe_command(tmp_path):
    """`loadbench probe --storage` writes an env.json whose probe is the storage's (kind
    "storage") beside `storages`: --predict reads its device and requests from it."""
    entry = {k: v for k, v in make.made(SLOW).items() if k != "probe"}
    env = {"loadbench": {"version": "0.1.0"}, "host": {"hostname": "box"},
           "probe": {"kind": "storage", **make.probe(0.4, 1500)}, "storages": [entry]}
    (tmp_path / "env.json").write_text(json.dumps(env))
    from analysis.models import machine_figures as mf
    target = mf.read(str(tmp_path / "env.json"))
    assert target.figures["device_gb_per_s"] == 0.4 and target.figures["device_iops"] == 1500
    assert target.figures["read_ahead_kb"] == 128 and target.name.endswith(SLOW)
    row = {"strategy_spec": "mmap", "strategy_flags": "maps-file", "params": {},
           "cache": "cold", "bytes": 1e9, "minor_faults": 0, "procs": 1}
    p = model.predict(row, {**target.figures, "memcpy_gb_per_s": 20.0}, {}, "madvise")
    assert p["device_bound"] == "requests"
    assert p["predicted_s"] == pytest.approx(1 / SLOW_BY_REQUESTS)
