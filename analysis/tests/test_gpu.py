"""Into GPU memory: the report's section on the CUDA strategies, on the synthetic fixture in
fixtures/gpu (its figures worked out by hand in its README.md): the medians and GB/s, the
fraction of the lower ceiling (the disk there; the host-to-device copy in an edited copy), n/a
with the reason where a ceiling is missing, the unsupported strategy with its reason, the
section and summary.json's "gpu" in a built report, and a report for a folder where no device
strategy could run."""

import json
import math
import os
import shutil

import pytest
from conftest import build_report_of

from analysis.core import results
from analysis.core.results import ResultsError
from analysis.pages import report
from analysis.sections import gpu

FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "gpu")
SMALL = os.path.join(os.path.dirname(__file__), "fixtures", "small")
BOUNCE = "cuda_bounce:buffers=8"
GDS_WHY = "cuFile (GPUDirect Storage) is not installed"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return build_report_of(tmp_path_factory, FIXTURE)


def copy(tmp_path, env=None, keep=None, edit=None):
    """A copy of the fixture: `env(dict)` edits env.json in place, `keep(record)` says which
    records stay, `edit(record)` edits each record in place."""
    folder = tmp_path / "gpu"
    shutil.copytree(FIXTURE, folder)
    if env:
        data = json.loads((folder / "env.json").read_text())
        env(data)
        (folder / "env.json").write_text(json.dumps(data))
    lines = (folder / "runs.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    records = [r for r in records if keep is None or keep(r)]
    for r in records:
        if edit:
            edit(r)
    (folder / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return folder


def rows(folder) -> dict:
    table = gpu.summarize(results.load(str(folder)))
    return {r["strategy_spec"]: r for _, r in table.iterrows()}


def section(md: str) -> str:
    assert f"## {gpu.TITLE}" in md
    return md.split(f"## {gpu.TITLE}", 1)[1].split("\n## ", 1)[0]


def row_of(text: str, spec: str) -> list[str]:
    """The cells of the table row of `spec` in `text` (a section)."""
    found = [line for line in text.splitlines() if line.startswith(f"| {spec} |")]
    assert len(found) == 1, f"{spec}: {found}"
    return [c.strip() for c in found[0].strip("|").split("|")]


def test_shown_only_for_device_strategies():
    assert gpu.shown(results.load(FIXTURE))
    assert not gpu.shown(results.load(SMALL))


def test_medians_and_gb_per_s_of_the_tensor_bytes():
    got = rows(FIXTURE)
    assert set(got) == {"cuda_pageable", BOUNCE, "cuda_register"}  # gds never ran
    expect = {  # median wall_s, GB/s, pinned bytes, peak RSS, context s
        "cuda_pageable": (5.0, 0.8, 0, 4.1e9, 0.25),
        BOUNCE: (2.5, 1.6, 128 << 20, 1.5e8, 0.30),
        "cuda_register": (4.0, 1.0, 256 << 20, 3.0e8, 0.35),
    }
    for spec, (median, gbps, pinned, rss, context) in expect.items():
        r = got[spec]
        assert r["n"] == 3 and r["cache"] == "cold"
        assert r["median_s"] == pytest.approx(median)
        # 4e9 tensor bytes, not the 4,000,262,144 file bytes.
        assert r["gb_per_s"] == pytest.approx(gbps)
        assert r["on_device_s"] == pytest.approx(median - 0.05)
        assert r["device_verify_s"] == pytest.approx(0.05)
        assert r["pinned_bytes"] == pinned and r["peak_rss_bytes"] == pytest.approx(rss)
        assert r["context_s"] == pytest.approx(context)
    order = list(gpu.summarize(results.load(FIXTURE))["strategy_spec"])
    assert order == [BOUNCE, "cuda_register", "cuda_pageable"]  # fastest first


def test_the_fraction_is_of_the_disk_where_the_disk_is_lower():
    got = rows(FIXTURE)
    for spec, fraction in (("cuda_pageable", 0.32), (BOUNCE, 0.64), ("cuda_register", 0.40)):
        r = got[spec]
        assert r["disk_gb_per_s"] == pytest.approx(2.5)  # median of 2.4, 2.5, 2.6
        assert r["h2d_pinned_gb_per_s"] == pytest.approx(20.0)  # the best rep, not the median
        assert r["lower_ceiling"] == "disk" and r["ceiling_reason"] is None
        assert r["of_ceiling"] == pytest.approx(fraction)


def test_the_fraction_is_of_the_copy_where_the_copy_is_lower(tmp_path):
    def slow_copy(env):
        env["probe"]["ceilings"]["h2d_pinned"].update(gb_per_s=2.0, median_gb_per_s=1.9,
                                                      reps_gb_per_s=[1.8, 1.9, 2.0])

    folder = copy(tmp_path, env=slow_copy)
    got = rows(folder)
    for spec, fraction in (("cuda_pageable", 0.4), (BOUNCE, 0.8), ("cuda_register", 0.5)):
        assert got[spec]["lower_ceiling"] == "h2d_pinned"
        assert got[spec]["disk_gb_per_s"] == pytest.approx(2.5)
        assert got[spec]["of_ceiling"] == pytest.approx(fraction)
    md = gpu.section_md(results.load(str(folder)))
    assert row_of(md, BOUNCE)[4] == "80% (h2d)"
    assert "from pinned memory 2.00 GB/s (best of 3, median 1.90)" in md


@pytest.mark.parametrize("probe_entry, reason", [
    ({"gb_per_s": None, "reason": "no CUDA device on this machine"},
     "the probe did not measure h2d_pinned: no CUDA device on this machine"),
    (None, "the probe has no h2d_pinned"),
])
def test_a_missing_copy_ceiling_is_n_a_with_the_reason(tmp_path, probe_entry, reason):
    def drop(env):
        if probe_entry is None:
            del env["probe"]["ceilings"]["h2d_pinned"]
        else:
            env["probe"]["ceilings"]["h2d_pinned"] = probe_entry

    folder = copy(tmp_path, env=drop)
    for r in rows(folder).values():
        assert r["lower_ceiling"] is None and math.isnan(r["of_ceiling"])
        assert math.isnan(r["h2d_pinned_gb_per_s"])
        assert r["disk_gb_per_s"] == pytest.approx(2.5)  # still said, just not a fraction
        assert reason in r["ceiling_reason"]
    md = gpu.section_md(results.load(str(folder)))
    for spec in ("cuda_pageable", BOUNCE, "cuda_register"):
        assert row_of(md, spec)[4] == "n/a"
        assert f"- {spec}: n/a, {reason}" in md
    assert f"from pinned memory: not measured ({reason}" in md


def test_a_cold_condition_without_ceiling_reads_is_n_a(tmp_path):
    folder = copy(tmp_path, keep=lambda r: r["strategy"] != "ceiling")
    for r in rows(folder).values():
        assert r["lower_ceiling"] is None and math.isnan(r["disk_gb_per_s"])
        assert r["ceiling_reason"] == "no ceiling read of this condition in runs.jsonl"
    md = gpu.section_md(results.load(str(folder)))
    assert "- disk: no ceiling read of the file in runs.jsonl." in md


def test_a_warm_load_is_bound_by_the_copy_alone(tmp_path):
    def warm(r):
        r["cache"] = "warm"

    folder = copy(tmp_path, keep=lambda r: r["strategy"] != "ceiling", edit=warm)
    got = rows(folder)
    assert got[BOUNCE]["lower_ceiling"] == "h2d_pinned"
    assert math.isnan(got[BOUNCE]["disk_gb_per_s"])
    assert got[BOUNCE]["of_ceiling"] == pytest.approx(1.6 / 20.0)


def test_the_unsupported_strategy_is_listed_with_its_reason():
    md = gpu.section_md(results.load(FIXTURE))
    lines = [line for line in md.splitlines() if line.startswith("- cuda_gds")]
    assert len(lines) == 1
    assert lines[0].startswith(f"- cuda_gds, cold: unsupported (3 runs): {GDS_WHY}")
    assert "| cuda_gds |" not in md  # not a row of the table


def test_the_device_line_says_what_the_gpu_is_or_why_there_is_none(tmp_path):
    md = gpu.section_md(results.load(FIXTURE))
    assert md.startswith("GPU: Fixture GPU, 80.00 GiB, compute capability 9.0, driver 12.8, "
                         "runtime 12.6 (PCI 0000:1b:00).")
    assert gpu.device_md({"gpu": {"available": False, "reason": "no CUDA driver: x"}}) == \
        "GPU: none: no CUDA driver: x."
    assert "env.json has no `gpu`" in gpu.device_md({})


def test_the_built_report_has_the_section_and_summary_json_has_gpu(built):
    md = (built / "report.md").read_text()
    assert md.index("## Cold start") < md.index(f"## {gpu.TITLE}") < md.index("## Noise")
    assert row_of(section(md), BOUNCE) == [BOUNCE, "3", "2.500 s", "1.60", "64% (disk)", "2.450 s",
                                  "0.050 s", "128 MiB", "143 MiB"]
    assert row_of(section(md), "cuda_pageable")[7:] == ["0 MiB", "3.82 GiB"]
    assert "- disk, cold: 2.50 GB/s, the median of 3 ceiling reads" in section(md)
    assert f"<h2>{gpu.TITLE}</h2>" in (built / "report.html").read_text()
    summary = json.loads((built / "summary.json").read_text())
    by = {g["strategy_spec"]: g for g in summary["gpu"]}
    assert set(by) == {"cuda_pageable", BOUNCE, "cuda_register"}
    assert by["cuda_register"]["of_ceiling"] == pytest.approx(0.4)
    assert by["cuda_register"]["lower_ceiling"] == "disk"
    assert by["cuda_register"]["ceiling_reason"] is None


def test_a_report_without_device_strategies_has_no_section(tmp_path):
    folder = tmp_path / "small"
    shutil.copytree(SMALL, folder)
    report.build(str(folder))
    assert gpu.TITLE not in (folder / "report.md").read_text()
    assert "gpu" not in json.loads((folder / "summary.json").read_text())


def test_a_folder_where_no_device_strategy_ran_still_gets_a_report(tmp_path):
    def no_gpu(env):
        env["gpu"] = {"available": False, "reason": "no CUDA device on this machine"}

    folder = copy(tmp_path, env=no_gpu, keep=lambda r: r["strategy"] == "cuda_gds")
    report.build(str(folder))
    md = (folder / "report.md").read_text()
    gpu_md = section(md)
    assert "GPU: none: no CUDA device on this machine." in gpu_md
    assert "No device strategy has an ok run" in gpu_md
    assert f"- cuda_gds, cold: unsupported (3 runs): {GDS_WHY}" in gpu_md
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["gpu"] == [] and summary["groups"] == []


def test_a_folder_without_ok_runs_nor_device_strategies_is_still_an_error(tmp_path):
    folder = tmp_path / "none"
    shutil.copytree(SMALL, folder)
    lines = (folder / "runs.jsonl").read_text().splitlines()
    kept = [line for line in lines if json.loads(line)["status"] != "ok"]
    (folder / "runs.jsonl").write_text("\n".join(kept) + "\n")
    with pytest.raises(ResultsError, match="no ok runs to report"):
        report.build(str(folder))
