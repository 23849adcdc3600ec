"""After the load: the report's section on what each group did with the weights once loaded
(the `use` options), on the hand-made fixture in fixtures/after (its medians computed by hand
below); absent for results from before those options; summary.json carries it; records that
lack the new fields are read as null and as the default use; compare takes the new records."""

import json
import math
import os
import shutil

import pytest
from conftest import build_report_of

from analysis.core import results
from analysis.pages import compare, report
from analysis.stats import after, compare as compare_stats

FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "after")
OLD = os.path.join(os.path.dirname(__file__), "fixtures", "small")
LE = "/work/main/data/llama-2GiB-bf16-s0.wlf"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return build_report_of(tmp_path_factory, FIXTURE)


def section(md: str) -> str:
    assert "## After the load" in md
    return md.split("## After the load", 1)[1].split("\n## ", 1)[0]


def row_of(md: str, spec: str) -> list[str]:
    """The cells of the section's row whose strategy cell starts with `spec` and a space."""
    rows = [line for line in section(md).splitlines() if line.startswith(f"| {spec} ")]
    assert len(rows) == 1, f"{spec}: {rows}"
    return [c.strip() for c in rows[0].strip("|").split("|")]


def test_the_section_has_one_row_per_group_with_its_medians(built):
    md = (built / "report.md").read_text()
    # strategy, cache, ready, first use, all layers, transform, consume, peak RSS GB,
    # anon RSS GB, private dirty GB, verify
    # mmap, views: ready 1.1/0.9/1.0 ms, first use 62/58/60 ms, wall 1.17/1.22/1.14 s.
    assert row_of(md, "mmap:consume=forward")[1:] == [
        "cold", "0.001", "0.060", "1.170", "", "0.950", "2.16", "0.00", "0.00", "after"]
    # The framework's copy: 2 GiB of its own anonymous pages, all of them private dirty.
    assert row_of(md, "mmap:consume=forward:bind=copy")[1:] == [
        "cold", "0.001", "5.790", "6.250", "", "0.410", "4.30", "2.15", "2.15", "after"]
    assert row_of(md, "fread:consume=forward")[2:5] == ["12.810", "12.870", "13.430"]
    # Two ok runs (7.95, 8.31 s; transform 6.9, 7.3 s) and a failed one that is not counted;
    # every tensor page of the private mapping copied on write.
    assert row_of(md, "mmap:transform=byteswap:place=inplace")[1:] == [
        "cold", "0.001", "", "8.130", "7.100", "0.915", "2.16", "2.15", "2.15", "transform"]
    assert row_of(md, "mmap:transform=bf16_to_f32")[5:7] == ["9.900", "0.830"]
    assert row_of(md, "layered:consume=forward")[-1] == "per-layer"
    # The old records: what they have (ready 11.82/12.81 s, wall 12.02/13.01 s; the memory
    # of the one that recorded it), nothing where they have nothing.
    assert row_of(md, "fread")[1:] == [
        "cold", "12.315", "", "12.515", "", "", "2.15", "2.15", "2.15", ""]
    assert len([ln for ln in section(md).splitlines() if ln.startswith("| ")]) == 1 + 7
    # Two files: every row names its file.
    assert "[llama-2GiB-bf16-s0-big.wlf]" in row_of(md, "mmap:transform=byteswap:place=inplace")[0]


def test_the_first_use_figure_and_the_existing_sections_are_there(built):
    md = (built / "report.md").read_text()
    assert "## Cold start" in md and "## Runs left out" in md
    assert md.index("## Cold start") < md.index("## After the load") < md.index("## Runs left out")
    assert "(figures/first-use.png)" in md and "Time to first use vs all layers" in md
    assert (built / "figures" / "first-use.png").stat().st_size > 0
    page = (built / "report.html").read_text()
    assert "<h2>After the load</h2>" in page and "mmap:consume=forward:bind=copy" in page
    assert page.count('src="data:image/png;base64,') == len(
        [p for p in os.listdir(built / "figures") if p.endswith(".png")])


def test_old_rounds_pair_but_too_few_for_an_interval(built):
    """Records from before rounds were recorded still ran in rounds (rep the outer loop): three
    reps of each strategy against fread's two give two pairs, too few for a 95% interval."""
    md = (built / "report.md").read_text()
    cold = md.split("## Cold start", 1)[1].split("\n## ", 1)[0]
    row = next(line for line in cold.splitlines() if line.startswith("| mmap:consume=forward "))
    # fread 12.02, 13.01 s; mmap 1.17, 1.22 s: the estimate is the mean of the two log ratios,
    # mmap's time over fread's.
    assert "| 3 (2 paired) |" in row and "| 0.096× (–) | too few rounds |" in row
    # 3 runs: the median, and no interval of it.
    assert "| 1.170 (–) |" in row
    # The other file has no fread: its one strategy is its own baseline, so the header names
    # none.
    assert "× baseline's time, paired (95% CI)" in cold
    assert "| 1 (baseline) |" in next(line for line in cold.splitlines()
                                      if line.startswith("| mmap:transform=byteswap"))
    assert "env.json has no `rounds`" in md and (built / "figures" / "rounds.png").exists()


def test_summary_json_carries_the_section(built):
    summary = json.loads((built / "summary.json").read_text())
    rows = {(g["strategy_spec"], os.path.basename(g["file"])): g for g in summary["after_load"]}
    assert len(rows) == 7
    copy = rows[("mmap:consume=forward:bind=copy", "llama-2GiB-bf16-s0.wlf")]
    assert copy["n"] == 3 and copy["bind_s"] == 5.62 and copy["first_use_s"] == 5.79
    assert copy["private_dirty_bytes"] == 2148655104 and copy["verify_s"] == 0.19
    assert copy["use"]["bind"] == "copy" and copy["use"]["seed"] == 1
    assert copy["non_default_use"] == {"consume": "forward", "bind": "copy"}
    old = rows[("fread", "llama-2GiB-bf16-s0.wlf")]
    assert old["first_use_s"] is None and old["consume_s"] is None and old["verify"] == ""
    assert old["use"] == after.DEFAULT_USE and old["non_default_use"] == {}
    # The groups table is still every group, as before.
    assert len(summary["groups"]) == 7


def test_old_results_have_no_section_and_no_figure(tmp_path):
    folder = tmp_path / "old"
    shutil.copytree(OLD, folder)
    report.build(str(folder))
    md = (folder / "report.md").read_text()
    assert "After the load" not in md and "first-use" not in md
    assert not (folder / "figures" / "first-use.png").exists()
    assert "after_load" not in json.loads((folder / "summary.json").read_text())


def write_runs(folder, records):
    folder.mkdir()
    (folder / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


def record(i, spec, wall, **fields):
    return {"run_id": f"r{i}", "strategy": spec.split(":")[0], "strategy_spec": spec,
            "file": LE, "file_bytes": 2 << 30, "cache": "cold", "status": "ok", "error": None,
            "checksum_ok": True, "wall_s": wall, "peak_rss_bytes": 2 << 30, "major_faults": 0,
            "minor_faults": 1500, "timeline": None, **fields}


def test_the_default_use_written_out_shows_no_section(tmp_path):
    """New records that used the weights the default way are the old report, and say so."""
    folder = tmp_path / "defaults"
    write_runs(folder, [record(i, "mmap", 1.0 + i, use=dict(after.DEFAULT_USE), first_use_s=None,
                               verify="consumer", consume_s=0.9) for i in range(3)])
    assert not after.shown(results.load(str(folder)))
    report.build(str(folder))
    assert "After the load" not in (folder / "report.md").read_text()


def test_missing_fields_are_null_and_a_missing_use_is_the_defaults(tmp_path):
    folder = tmp_path / "partial"
    write_runs(folder, [
        # A non-default use and nothing else new: no first use anywhere, so no figure.
        record(0, "mmap:bind=copy", 3.0, use={"bind": "copy"}),
        record(1, "mmap:bind=copy", 5.0, use={"bind": "copy"}, memory=None, consume_s=None),
        record(2, "mmap:bind=copy", 4.0, use={"bind": "copy", "seed": None},
               memory={"rss_anon_bytes": 2 << 30}, consume_s=0.5),
        # use null, as a record of a run that failed before it resolved its options writes it.
        record(3, "mmap", 2.0, use=None),
        {**record(4, "mmap", None, use=None), "status": "failed", "error": "boom",
         "checksum_ok": None},
    ])
    r = results.load(str(folder))
    assert after.shown(r)
    table = after.summarize(r).set_index("strategy_spec")
    copy = table.loc["mmap:bind=copy"]
    assert copy["n"] == 3 and copy["wall_s"] == 4.0 and copy["consume_s"] == 0.5
    assert copy["rss_anon_bytes"] == 2 << 30 and math.isnan(copy["private_dirty_bytes"])
    assert math.isnan(copy["first_use_s"]) and math.isnan(copy["ready_s"])
    assert copy["use"] == {**after.DEFAULT_USE, "bind": "copy"}
    assert table.loc["mmap", "use"] == after.DEFAULT_USE
    assert after.resolved_use({"bind": "copy", "seed": None}) == {**after.DEFAULT_USE,
                                                                   "bind": "copy"}
    assert table.loc["mmap", "n"] == 1
    report.build(str(folder))
    md = (folder / "report.md").read_text()
    assert row_of(md, "mmap:bind=copy")[1:] == [
        "cold", "", "", "4.000", "", "0.500", "2.15", "2.15", "", ""]
    assert not (folder / "figures" / "first-use.png").exists()


def test_compare_takes_the_new_records(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(FIXTURE, a)
    shutil.copytree(FIXTURE, b)
    lines = [json.loads(ln) for ln in (b / "runs.jsonl").read_text().splitlines()]
    for x in lines:
        if x["strategy_spec"] == "mmap:consume=forward:bind=copy":
            x["wall_s"] *= 2
    (b / "runs.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    c = compare_stats.compare(str(a), str(b))
    by = {(x["strategy_spec"], x["file_name"]): x for x in c["rows"]}
    assert len(by) == 7
    # exp of the median log ratio: a libm may give exp(log 2) as 1.9999999999999998.
    ratio = by[("mmap:consume=forward:bind=copy", "llama-2GiB-bf16-s0.wlf")]["ratio"]
    assert ratio == pytest.approx(2.0, rel=1e-12)
    # The same times on both sides: every log difference is exactly 0 and exp(0) is exactly 1
    # on every libm (C's Annex F), so equality is exact here.
    assert by[("fread", "llama-2GiB-bf16-s0.wlf")]["ratio"] == 1.0
    assert "| mmap:consume=forward:bind=copy | cold |" in compare.to_markdown(c)
    json.dumps(c, default=results.json_default)
    # Old results against new ones: only fread cold in common, on another file (by time per
    # byte); the rest said so.
    mixed = compare_stats.compare(OLD, str(a))
    assert [(x["strategy_spec"], x["match"]) for x in mixed["rows"]] == [("fread", "time per byte")]
    assert len(mixed["only_in_b"]) == 6
