"""The report's *The published reference table*: the `reference-table` experiment's cold
starts beside the published figures it reproduces."""

from __future__ import annotations

import pandas as pd
from analysis.sections.base import Section

# The published cold-start table `reference-table` reproduces: seconds and peak RSS (GB) for a
# 14 GB file, on another machine.
PUBLISHED = {"fread": (26.0, 18.0), "mmap": (10.0, 14.0), "mmap_seq": (8.0, 14.0)}


def reference_md(table: pd.DataFrame) -> str:
    cold = table[(table["cache"] == "cold") & table["strategy_spec"].isin(PUBLISHED)]
    if set(cold["strategy_spec"]) != set(PUBLISHED):
        return ""
    by = cold.set_index("strategy_spec")
    lines = ["| strategy | here: s | here: × fread's time | published: s | published: × "
             "fread's time | here: peak RSS GB | published: GB | here: × fread's RSS | "
             "published: × fread's RSS |", "|---|---|---|---|---|---|---|---|---|"]
    f_here, f_rss = by.loc["fread", "median_s"], by.loc["fread", "peak_rss_bytes"]
    for spec, (sec, gb) in PUBLISHED.items():
        r = by.loc[spec]
        lines.append(f"| {spec} | {r['median_s']:.2f} | {r['median_s'] / f_here:.3f} | {sec:.0f} | "
                     f"{sec / PUBLISHED['fread'][0]:.2f} | {r['peak_rss_bytes'] / 1e9:.2f} | "
                     f"{gb:.0f} | {r['peak_rss_bytes'] / f_rss:.2f} | "
                     f"{gb / PUBLISHED['fread'][1]:.2f} |")
    here_order = list(cold.sort_values("median_s")["strategy_spec"])
    pub_order = sorted(PUBLISHED, key=lambda s: PUBLISHED[s][0])
    verdict = ("The order of the three holds here" if here_order == pub_order else
               "The order differs here: " + " < ".join(here_order))
    return ("The published cold-start table (about 26 s / 10 s / 8 s and 18 / 14 / 14 GB peak "
            "RSS for a 14 GB file, on another machine) beside this run, as ratios to fread's "
            "median time and peak RSS (below 1: faster, or less memory):\n\n"
            + "\n".join(lines) + f"\n\n{verdict}.")


class Reference(Section):
    title = "The published reference table"

    def shown(self) -> bool:
        c = self.ctx
        self.md = reference_md(c.table) if len(c.table) and \
            c.results.env.get("experiment") == "reference-table" else ""
        return bool(self.md)

    def markdown(self) -> str:
        return self.md
