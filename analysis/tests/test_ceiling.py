"""The ceiling checked (analysis/stats/ceiling.py) on the hand-made fixture in fixtures/ceiling (its
figures worked out in its README.md): a strategy that beats its rounds' ceiling beyond the
paired interval is flagged as a ceiling that is not one, with both figures, in the report's
*Noise* section and in summary.json; one that beats it in its estimate only is named but not
flagged; the section says which read recipe the ceiling used and every recipe's figure where a
read tried them all; ceiling reads from before recipes are named by what they did. And on a
planted folder: a strategy whose median GB/s beat the fastest ceiling read of its rounds marks
its share of device, is named under the table and is a caveat of the verdict; a share above
100% within the ceiling's spread has a mark of its own."""

import json
import os

import pytest
from conftest import build_report_of, write_rounds

from analysis.core import results
from analysis.pages import report
from analysis.sections import verdict
from analysis.stats import ceiling

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


# Ceiling reads of 1.0 to 3.0 GB/s (median 1.5) in 6 rounds of a 4 GB file; each strategy's
# GB/s is the same every round: mmap_prefetch 3.5, above the fastest read (shares 3.5 / each:
# median (2.5 + 2.1875) / 2 = 234%); mmap 2.0, above the median read but not the fastest (shares
# 2.0 / 1.4 and 2.0 / 1.6 in the middle: 134%); odirect 1.2 (80%); fread 0.5 (33%).
DEVICE = [1.0, 1.2, 1.4, 1.6, 1.8, 3.0]
GB_PER_S = {"fread": 0.5, "mmap_prefetch": 3.5, "mmap": 2.0, "odirect": 1.2}


@pytest.fixture(scope="module")
def spread(tmp_path_factory):
    folder = tmp_path_factory.mktemp("spread") / "results"
    write_rounds(str(folder), rounds=6, caches=("cold",), sigma=0, device=DEVICE,
                 recipe="buffered_4m_seq_x4", times={s: 4 / g for s, g in GB_PER_S.items()})
    report.build(str(folder))
    return folder


def test_a_strategy_beyond_the_fastest_ceiling_read_is_told_apart_from_the_spread(spread):
    b = by_spec(ceiling.beaten(results.load(str(spread))))
    assert b["mmap_prefetch"]["beats_fastest"] and not b["mmap"]["beats_fastest"]
    assert b["mmap_prefetch"]["ceiling_fastest_gb_per_s"] == pytest.approx(3.0)
    assert not b["odirect"]["beats_fastest"] and not b["fread"]["beats_fastest"]
    # The paired check stays beside it: every round beaten, so its interval lies below 1.
    assert b["mmap_prefetch"]["flagged"] and not b["mmap"]["flagged"]


def test_the_table_marks_every_share_above_100_and_says_which_ceiling_was_beaten(spread):
    cold = (spread / "report.md").read_text().split("## Cold start", 1)[1].split("\n## ", 1)[0]
    share = {line.split(" | ")[0][2:]: line.split(" | ")[6] for line in cold.splitlines()
             if line.startswith("| ") and not line.startswith("| strategy")}
    assert share == {"mmap_prefetch": "234% ⚠", "mmap": "134% †", "odirect": "80%",
                     "fread": "33%"}
    # Above 100% is never printed as 100%, nor unmarked.
    assert ceiling.share_cell(1.004, ceiling.WITHIN) == "100.4% †"
    assert ceiling.share_cell(0.996, "") == "100%"
    assert ("⚠ mmap_prefetch: its median 3.50 GB/s over the 6 rounds it shares with ceiling "
            "reads beat every ceiling read of those rounds (buffered_4m_seq_x4, the fastest "
            "3.00 GB/s): that ceiling is not the device's limit, and the shares of device "
            "overstate how near the strategies come to it.") in cold
    assert ("† above 100%, within the ceiling's own spread: the median of mmap (2.00 GB/s) is "
            "not above the fastest ceiling read of its rounds (3.00 GB/s): it beat the slower "
            "ceiling reads only.") in cold


CAVEAT = ("caveat: the ceiling (recipe buffered_4m_seq_x4, fastest read 3.00 GB/s) is not the "
          "device's limit: mmap_prefetch's median 3.50 GB/s beat every ceiling read of its "
          "rounds; the shares of device overstate how near the strategies come to it.")


def test_the_verdict_ends_with_the_caveat(spread):
    summary = json.loads((spread / "summary.json").read_text())
    assert summary["verdict"]["cold"]["caveats"] == [CAVEAT]
    assert verdict.lines(summary)[-1] == f"cold: {CAVEAT}"
    assert f"- **cold**: {CAVEAT}" in (spread / "report.md").read_text()
