"""Carry-over (analysis/stats/carryover.py): on synthetic rounds whose records name their
predecessor (`after`), a run slowed by the ceiling read before it is found, with its ratio and
the pooled ceiling effect; rounds without such an effect show none; several folders pool; the
report has the section only when the records carry `after`."""

import json

import numpy as np
import pytest
from conftest import write_rounds
from scipy.stats import kruskal

from analysis.core import results
from analysis.pages import carryover as carryover_pages, report
from analysis.stats import carryover


def with_after(folder, slow_after_ceiling=1.0):
    """The folder's records each naming the record before it in `after` (the first none, as
    the harness writes them), the runs right after a ceiling read made `slow_after_ceiling`
    times as slow."""
    lines = (folder / "runs.jsonl").read_text().splitlines()
    records = [json.loads(x) for x in lines]
    for before, rec in zip(records, records[1:]):
        rec["after"] = before["strategy_spec"]
        if before["strategy"] == "ceiling" and rec["strategy"] != "ceiling":
            rec["wall_s"] *= slow_after_ceiling
    (folder / "runs.jsonl").write_text("".join(json.dumps(x) + "\n" for x in records))
    return records


@pytest.fixture
def slowed(tmp_path):
    """12 exact rounds (no noise), cold and warm; in each cold round a ceiling read, then the
    three strategies in an order rotated by the round; the run after the ceiling 1.5x slow.
    Exact: without noise or drift every time is its spec's times exp(0) and 1 ** x, both
    exactly 1 on every libm (C's Annex F), so that the medians and ratios the tests below
    compare with == are sums, halves and quotients of whole and half numbers, exact in binary."""
    write_rounds(tmp_path, rounds=12, sigma=0.0)
    with_after(tmp_path, 1.5)
    return results.load(str(tmp_path))


def test_each_predecessor_gets_its_median_and_ratio(slowed):
    frame = carryover.pooled([slowed])
    table = carryover.predecessors(frame)
    fread = table[(table["strategy_spec"] == "fread") & (table["cache"] == "cold")]
    # fread follows the ceiling in rounds 0, 3, 6, 9 and odirect in the others.
    assert list(fread["after"]) == ["ceiling", "odirect"] and list(fread["n"]) == [4, 8]
    assert list(fread["median_s"]) == [15.0, 10.0] and list(fread["ratio"]) == [1.5, 1.0]
    # The warm rounds: each strategy's predecessors, the first after the cold round's last.
    warm = table[(table["strategy_spec"] == "fread") & (table["cache"] == "warm")]
    assert warm["ratio"].tolist() == [1.0] * len(warm) and warm["n"].sum() == 12


def test_a_slow_run_after_the_ceiling_is_found(slowed):
    frame = carryover.pooled([slowed])
    t = carryover.tests(frame).set_index(["strategy_spec", "cache"])
    fread = t.loc[("fread", "cold")]
    want = kruskal([15.0] * 4, [10.0] * 8).pvalue
    assert fread["tested"] == 2 and fread["p"] == pytest.approx(want) and want < 0.05
    assert fread["verdict"] == "depends on what ran before (p < 0.05)"
    assert fread["max_ratio"] == 1.5 and fread["slowest_after"] == "ceiling"
    # Each warm group has one predecessor (the rotation repeats): nothing to test.
    assert t.xs("warm", level="cache")["verdict"].str.startswith("too few runs to test").all()
    effect = carryover.ceiling_effect(frame)
    assert effect == {"after_ceiling_n": 12, "after_ceiling": 1.5, "others_n": 60,
                      "others": 1.0, "ratio": 1.5}


def test_without_a_carry_over_none_is_shown(tmp_path):
    """Equal times: no test can rank them, and nothing is said to depend. With noise of sigma
    0.05 and no effect, over 40 seeded folders the test marks about 5% of the groups, as a test
    at level 0.05 should."""
    write_rounds(tmp_path / "exact", rounds=12, sigma=0.0, caches=("cold",))
    with_after(tmp_path / "exact")
    frame = carryover.pooled([results.load(str(tmp_path / "exact"))])
    t = carryover.tests(frame)
    assert (t["tested"] == 2).all() and t["p"].isna().all() and (t["max_ratio"] == 1.0).all()
    assert set(t["verdict"]) == {"no dependence shown"}
    assert carryover.ceiling_effect(frame)["ratio"] == 1.0
    marked = []
    for seed in range(40):
        folder = tmp_path / f"noisy{seed}"
        write_rounds(folder, rounds=12, sigma=0.05, seed=seed, caches=("cold",))
        with_after(folder)
        t = carryover.tests(carryover.pooled([results.load(str(folder))]))
        marked += list(t["verdict"] == "depends on what ran before (p < 0.05)")
    assert len(marked) == 120 and np.mean(marked) <= 0.1


def test_few_runs_per_predecessor_are_not_tested(tmp_path):
    write_rounds(tmp_path, rounds=4, sigma=0.0, caches=("cold",))
    with_after(tmp_path, 1.5)
    t = carryover.tests(carryover.pooled([results.load(str(tmp_path))]))
    # 4 rounds: fread after the ceiling in rounds 0 and 3 only, after odirect in 1 and 2.
    fread = t.set_index("strategy_spec").loc["fread"]
    assert fread["tested"] == 0 and np.isnan(fread["p"]) and np.isnan(fread["max_ratio"])
    assert fread["verdict"].startswith("too few runs to test")


def test_the_command_pools_folders(tmp_path, capsys):
    for name in ("a", "b"):
        write_rounds(tmp_path / name, rounds=12, sigma=0.0, caches=("cold",))
        with_after(tmp_path / name, 1.5)
    assert carryover_pages.main([str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    out = capsys.readouterr().out
    assert "fread, cold\n" in out
    assert "  after                            n   median s  × median time\n" in out
    assert "  ceiling                          8     15.000          1.500" in out
    assert "  odirect                         16     10.000          1.000" in out
    assert "depends on what ran before (p < 0.05); the slowest after ceiling, 1.500×" in out
    assert ("The ceiling's effect on the run that follows it: 1.500× (runs right after a "
            "ceiling read against runs after another run, each run's time over its group's "
            "median, pooled: median 1.500 over 24 runs against 1.000 over 48).") in out
    write_rounds(tmp_path / "old", rounds=6)
    assert carryover_pages.main([str(tmp_path / "old")]) == 1
    assert carryover_pages.main([str(tmp_path / "none")]) == 2


def test_the_report_has_the_section_only_with_after(slowed, tmp_path):
    report.build(slowed.folder)
    with open(f"{slowed.folder}/report.md") as f:
        md = f.read()
    section = md.split("## Carry-over", 1)[1].split("\n## ", 1)[0]
    assert "| fread | cold | ceiling | 4 | 15.000 | 1.500 |" in section
    assert "- fread, cold: Kruskal–Wallis p " in section
    assert "The ceiling's effect on the run that follows it: 1.500×" in section
    write_rounds(tmp_path / "plain", rounds=6)
    report.build(str(tmp_path / "plain"))
    assert "Carry-over" not in (tmp_path / "plain" / "report.md").read_text()
