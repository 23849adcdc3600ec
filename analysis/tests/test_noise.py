"""The report on rounds: the cold and warm tables give the paired time ratio to the baseline
(below 1: faster) with its verdict and the fraction of the device's speed, ceiling reads never
appear as a strategy, the section *Noise: rounds, ceiling, drift, outliers* renders in markdown
and HTML with the rounds, the ceiling table, drift warnings, outliers, the stability check and
the adaptive stop, summary.json carries them as strict JSON (old folders: test_report.py and
test_after.py)."""

import json
import os

import pytest
from conftest import write_rounds

from analysis.core import results
from analysis.core.results import records
from analysis.pages import compare, report
from analysis.sections import noise, start
from analysis.stats import aggregates as stats, compare as compare_stats

ADAPTIVE = {"target": 0.1, "min_rounds": 6, "max_rounds": 30, "budget_s": 0, "rounds": 12,
            "elapsed_s": 812.4, "met": False, "stopped": "max rounds",
            "comparisons": [
                {"file": "/data/llama-4GiB.wlf", "cache": "cold", "procs": 1,
                 "memory_limit_bytes": 0, "strategy_spec": "odirect", "baseline": "fread",
                 "n": 12, "ratio": 0.5, "low": 0.48, "high": 0.52, "half_width": 0.04,
                 "met": True},
                {"file": "/data/llama-4GiB.wlf", "cache": "warm", "procs": 1,
                 "memory_limit_bytes": 0, "strategy_spec": "mmap_seq", "baseline": "fread",
                 "n": 12, "ratio": 0.1, "low": 0.07, "high": 0.15, "half_width": 0.5,
                 "met": False}]}


def section(md: str, title: str) -> str:
    assert f"## {title}" in md, title
    return md.split(f"## {title}", 1)[1].split("\n## ", 1)[0]


def rows(md: str, title: str) -> dict[str, list[str]]:
    """The table rows of a section by their first cell."""
    out = {}
    for line in section(md, title).splitlines():
        if line.startswith("| ") and not line.startswith("| strategy |"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            out[cells[0]] = cells
    return out


def strict_json(path):
    def refuse(name):
        raise ValueError(f"{name} in {path}")
    with open(path) as f:
        return json.loads(f.read(), parse_constant=refuse)


@pytest.fixture(scope="module")
def drifting(tmp_path_factory):
    """12 exact rounds (no noise), the device and every time drifting by 2x, with ceilings,
    the stability check and adaptive.json."""
    folder = tmp_path_factory.mktemp("drifting")
    write_rounds(folder, rounds=12, sigma=0.0, drift=2.0, adaptive=ADAPTIVE)
    report.build(str(folder))
    return folder


def test_the_tables_give_paired_time_ratios_and_the_fraction_of_the_device(drifting):
    md = (drifting / "report.md").read_text()
    cold = section(md, "Cold start")
    assert "| strategy | n | median s (95% CI) | GB/s | × fread's time, paired (95% CI) | " \
           "paired test | of device | peak RSS | why |" in cold
    assert "the strategy's time over fread's (below 1: faster than fread" in cold
    assert "*faster* / *slower*: the interval leaves out 1" in cold
    by = rows(md, "Cold start")
    # odirect takes half fread's time in every round: 0.5 exactly; the device reads 4 GB in
    # 2 s then (at 2 GB/s) and fread in 10 s: a fifth of it, odirect two fifths.
    assert by["odirect"][4:7] == ["0.50× (0.50–0.50)", "faster", "40%"]
    assert by["mmap_seq"][4].startswith("0.10× (0.1") and by["mmap_seq"][5] == "faster"
    assert by["fread"][4:7] == ["1 (baseline)", "", "20%"]
    warm = section(md, "Warm start")
    assert "of device" not in warm  # no ceiling read in a warm round
    assert "× fread's time, paired: as above (below 1: faster)." in warm
    assert rows(md, "Warm start")["odirect"][4:6] == ["0.50× (0.50–0.50)", "faster"]


def test_ceiling_reads_never_appear_as_a_strategy(drifting):
    md = (drifting / "report.md").read_text()
    for title in ("Cold start", "Warm start", "Runs left out"):
        assert "ceiling" not in rows(md, title)
    summary = strict_json(drifting / "summary.json")
    assert "ceiling" not in {g["strategy_spec"] for g in summary["groups"]}
    assert "ceiling" not in {p["strategy_spec"] for p in summary["paired"]}
    assert "72 runs" in md and "12 ceiling reads" in md and "Every run was ok." in md


def test_the_noise_section_renders_in_markdown(drifting):
    noise = section((drifting / "report.md").read_text(), "Noise: rounds, ceiling, drift, "
                                                          "outliers")
    assert "24 rounds over 2 conditions (12 per condition)" in noise
    assert "Order within a round: interleaved (seed 7); ceiling reads: on; baseline: fread; " \
           "reps: auto." in noise
    assert "| cold | 12 | 0 | 1.41 | 1.00 | 2.00 |" in noise  # 2 GB/s halving, geometrically
    # 2 / 2^(r / 11) GB/s: rounds 0-3 2.00, 1.88, 1.76, 1.65 (median 1.82), rounds 8-11 1.21,
    # 1.13, 1.07, 1.00 (median 1.10); all 66 pairs discordant: z = 66 / sqrt(12 11 29 / 18).
    assert ("- **Warning: drift** in the ceiling of llama-4GiB.wlf over 12 rounds (Kendall tau "
            "-1.00, p 6e-06): 1.82 GB/s in the first third of the rounds, 1.10 GB/s in the "
            "last.") in noise
    assert "- **Warning: drift** in the round factor of warm over 12 rounds" in noise
    assert "Outliers: none" in noise
    assert ("- before the runs: still busy after 60 s of waiting (at most 60 s); other work 4% "
            "of a CPU, 0.2 tasks runnable besides the check, 0.0 I/Os in flight; busy processes: "
            "unattended-upgr (41%) (window 0.5 s); load average 0.12 / 0.30 / 0.25 on 2 "
            "cores;") in noise
    assert ("- **Warning** (before the runs): The machine was still busy after 60 s of waiting: "
            "other work used 99% of a CPU") in noise
    assert ("- session 1 (2026-12-01T10:00:00Z): settled after 3.5 s of waiting (at most 60 s) "
            "for: other work used 87% of a CPU over 0.5 s; other work 4% of a CPU") in noise
    assert ("Adaptive rounds: target ±10% (the half width of every paired 95% interval), 6 to "
            "30 rounds, budget none: 12 rounds in 812 s; target met: no; stopped: max "
            "rounds. × baseline's time: the strategy's time over the baseline's, paired (below 1: "
            "faster).") in noise
    assert "| rounds | × baseline's time (95% CI) | half width |" in noise
    assert "| odirect | cold | fread | 12 | 0.50× (0.48–0.52) | ±4.0% | yes |" in noise
    assert "| mmap_seq | warm | fread | 12 | 0.10× (0.070–0.15) | ±50.0% | no |" in noise


def test_the_noise_section_and_its_figure_render_in_html(drifting):
    page = (drifting / "report.html").read_text()
    assert "<h2>Noise: rounds, ceiling, drift, outliers</h2>" in page
    assert "<strong>Warning: drift</strong> in the ceiling of llama-4GiB.wlf" in page
    # Numbers right-aligned (class n), in the header of their column too.
    assert '<th class="n">median GB/s</th>' in page and '<td class="n">±4.0%</td>' in page
    assert '<th class="n">of device</th>' in page
    assert (drifting / "figures" / "rounds.png").stat().st_size > 0
    assert "Every round in time order" in page
    assert page.count('src="data:image/png;base64,') == len(
        [p for p in os.listdir(drifting / "figures") if p.endswith(".png")])


def test_summary_json_carries_the_noise_figures(drifting):
    s = strict_json(drifting / "summary.json")
    assert {"paired", "ceiling", "drift", "outliers", "adaptive", "stability"} <= set(s)
    odirect = next(p for p in s["paired"] if (p["strategy_spec"], p["cache"]) ==
                   ("odirect", "cold"))
    assert odirect["n"] == 12 and odirect["significant"] is True
    assert odirect["ratio"] == pytest.approx(0.5) and odirect["of_device"] == pytest.approx(0.4)
    assert not any(k.startswith("speedup") for k in odirect)
    group = next(g for g in s["groups"] if (g["strategy_spec"], g["cache"]) == ("odirect", "cold"))
    assert (group["time_ratio"], group["time_ratio_ci_low"], group["time_ratio_ci_high"]) == \
        pytest.approx((0.5, 0.5, 0.5))
    assert not any(k.startswith("speedup") for g in s["groups"] for k in g)
    assert [d["series"] for d in s["drift"]] == ["ceiling", "round factor"]
    assert all(d["detected"] for d in s["drift"])
    assert s["ceiling"][0]["n"] == 12 and s["outliers"] == []
    assert s["adaptive"]["stopped"] == "max rounds"
    assert s["stability"]["before"]["warnings"] and s["stability"]["sessions"][0]["cores"] == 2


def test_outliers_verdicts_and_too_few_rounds(tmp_path):
    """Rendered without figures (start.table_md, noise.section_md): what the cells say."""
    times = {"fread": 10.0, "fread:label=b": 10.0, "mmap_seq": 1.0}
    write_rounds(tmp_path / "a", rounds=10, sigma=0.02, times=times, caches=("cold",),
                 outliers=[("mmap_seq", "cold", 4, 3.0)])
    r = results.load(str(tmp_path / "a"))
    table = start.table_md(stats.summarize(r), "cold", 1)
    cells = {line.split(" | ")[0]: line.split(" | ") for line in table.splitlines()}
    assert cells["| fread:label=b"][5] == "n.s."  # an A/A pair: the same strategy twice
    assert cells["| mmap_seq"][1] == "10"  # the outlier is one of its runs, as ever
    md = noise.section_md(r)
    assert "flagged here and kept in every statistic of this report" in md
    flagged = [line for line in md.splitlines()
               if line.startswith("| r0") and "| ceiling |" not in line]
    assert len(flagged) == 1 and "| mmap_seq | cold | 4 |" in flagged[0]
    assert "- the ceiling of llama-4GiB.wlf: no drift (10 rounds" in md
    write_rounds(tmp_path / "b", rounds=4, sigma=0.02, caches=("cold",))
    r = results.load(str(tmp_path / "b"))
    summary = stats.summarize(r)
    table = start.table_md(summary, "cold", 1)
    odirect = next(line.split(" | ") for line in table.splitlines()
                   if line.startswith("| odirect "))
    assert odirect[4].endswith(" (–)") and odirect[5] == "too few rounds"
    assert ("- the ceiling of llama-4GiB.wlf: 4 rounds, too few to test (6 needed)."
            in noise.section_md(r))
    row = records(summary[summary["strategy_spec"] == "odirect"])[0]
    # 4 rounds: an estimate, and no interval (null, neither 0 nor infinity).
    assert row["time_ratio"] == pytest.approx(0.5, rel=0.1)
    assert row["time_ratio_ci_low"] is None and row["time_ratio_ci_high"] is None
    assert row["half_width"] is None
    json.dumps(row, allow_nan=False)


def test_compare_ignores_ceiling_reads(tmp_path):
    write_rounds(tmp_path / "a", rounds=6, sigma=0.02, seed=1)
    write_rounds(tmp_path / "b", rounds=6, sigma=0.02, seed=2, ceiling=False)
    c = compare_stats.compare(str(tmp_path / "a"), str(tmp_path / "b"))
    assert len(c["rows"]) == 6 and c["only_in_a"] == [] and c["only_in_b"] == []
    assert "| ceiling |" not in compare.to_markdown(c)
