"""The ceiling checked (analysis/ceiling.py) on the hand-made fixture in fixtures/ceiling (its
figures worked out in its README.md): a strategy that beats its rounds' ceiling beyond the
paired interval is flagged as a ceiling that is not one, with both figures, in the report's
*Noise* section and in summary.json; one that beats it in its estimate only is named but not
flagged; the section says which read recipe the ceiling used and every recipe's figure where a
read tried them all; ceiling reads from before recipes are named by what they did."""

import json
import os

import pytest
from conftest import build_report_of

from analysis import ceiling, results

FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "ceiling")
GPU = os.path.join(os.path.dirname(__file__), "fixtures", "gpu")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return build_report_of(tmp_path_factory, FIXTURE)


def by_spec(table):
    return {row["strategy_spec"]: row for _, row in table.iterrows()}


def test_only_the_strategy_beyond_its_interval_is_flagged():
    b = by_spec(ceiling.beaten(results.load(FIXTURE)))
    assert set(b) == {"fread", "mmap_prefetch", "odirect"}
    m = b["mmap_prefetch"]
    assert m["flagged"] and m["n"] == 6 and m["ratio_high"] < 1
    assert m["ratio_low"] == pytest.approx(0.66) and m["ratio_high"] == pytest.approx(0.69)
    assert m["strategy_gb_per_s"] == pytest.approx(2 / 1.1068, rel=1e-3)
    assert m["ceiling_gb_per_s"] == pytest.approx(1.225)
    assert m["recipes"] == "direct_1m_qd32"
    # Faster in 5 of 6 rounds: below 1 in its estimate, its interval holds 1.
    o = b["odirect"]
    assert not o["flagged"] and o["ratio"] < 1 < o["ratio_high"]
    assert not b["fread"]["flagged"] and b["fread"]["ratio_low"] > 1


def test_the_report_warns_of_a_ceiling_that_is_not_one_with_both_figures(built):
    md = (built / "report.md").read_text()
    noise = md.split("## Noise", 1)[1].split("\n## ", 1)[0]
    assert ("- **Warning: a ceiling that is not one**: mmap_prefetch (cold) loaded the same "
            "bytes at 1.81 GB/s against the same rounds' ceiling 1.23 GB/s (direct_1m_qd32), "
            "median over 6 rounds: its time is 0.67× (0.65–0.69) the ceiling's (96.9% "
            "interval).") in noise
    assert ("- odirect (cold): faster than the ceiling in its estimate, 1.33 GB/s against the "
            "same rounds' ceiling 1.23 GB/s (direct_1m_qd32), 0.92× (0.89–1.05) its time (its "
            "96.9% interval holds 1).") in noise
    assert "fread (cold)" not in noise
    assert noise.count("Warning: a ceiling that is not one") == 1
    page = (built / "report.html").read_text()
    assert "<strong>Warning: a ceiling that is not one</strong>: mmap_prefetch" in page
    summary = json.loads((built / "summary.json").read_text())
    flagged = {c["strategy_spec"]: c["flagged"] for c in summary["ceiling_beaten"]}
    assert flagged == {"fread": False, "mmap_prefetch": True, "odirect": False}


def test_the_report_names_the_recipe_and_every_recipes_figure(built):
    md = (built / "report.md").read_text()
    assert ("direct_1m_qd32 in 6 of 6 reads; chosen by the command's first ceiling read in 5, "
            "by trying every recipe in 1.") in md
    assert ("Read fixture-0001 (round 0) tried every recipe: direct_1m_qd32 1.20 GB/s; "
            "direct_4m_qd8_x4 1.10 GB/s; buffered_4m_seq_x4 1.05 GB/s; buffered_4m_willneed_x4 "
            "n/a (not cold") in md


def test_ceiling_reads_from_before_recipes_are_named_by_what_they_did():
    r = results.load(GPU)
    assert "O_DIRECT io_uring QD32 (before recipes) in 3 of 3 reads." in ceiling.recipes_md(r)
