"""The advise page's sections (analysis/pages/advise.py; the prediction is
analysis/models/advise.py's, the measured side analysis/models/advise_measured.py's): the file
and the machine's figures, the ranking per cache state, predicted against measured, and the
answer. Each table is built once as rows of cells (`ranking_table`, `measured_table`) and
written as Markdown for advise.md (`md_table`) or as aligned text for the console
(`text_table`)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from analysis.core.ratios import number, ratio_text
from analysis.core.results import ALLOCATES, MAPS_FILE, has_flag
from analysis.core.units import size_text
from analysis.models.advise import BASELINE
from analysis.sections.base import Section
from analysis.stats import paired

Table = tuple[list[str], list[list[str]]]


def _s(x, fmt=".3f") -> str:
    return "—" if x is None or pd.isna(x) else f"{x:{fmt}}"


def _size(x) -> str:
    return "—" if x is None or pd.isna(x) else size_text(x)


def md_table(table: Table) -> str:
    head, rows = table
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows]
    return "\n".join(lines)


def text_table(table: Table) -> str:
    """Aligned columns: the first two left, the rest right but the last (words)."""
    head, rows = table
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    left = {0, 1, len(head) - 1}
    return "\n".join("  ".join(c.ljust(w) if i in left else c.rjust(w)
                               for i, (c, w) in enumerate(zip(r, widths))).rstrip()
                     for r in [head, *rows])


def figures_text(machine) -> str:
    """The model's inputs in one line, each with its unit; `?` where the probe has none."""
    f = machine.figures.figures

    def v(key, unit, fmt=".3g"):
        return "?" if f.get(key) is None else f"{f[key]:{fmt}} {unit}"
    iops = f", {f['device_iops']:.0f} reads/s" if f.get("device_iops") else ""
    pages = f" (a fault maps {machine.pages_per_fault:.3g} pages)" \
        if machine.pages_per_fault else ""
    return (f"device {v('device_gb_per_s', 'GB/s')}{iops}; page cache read "
            f"{v('page_cache_gb_per_s', 'GB/s')}; memcpy {v('memcpy_gb_per_s', 'GB/s')}; memory "
            f"fill {v('fill_gb_per_s', 'GB/s')}; first touch {v('fault_4k_us', 'µs')} (4 KiB), "
            f"{v('fault_2m_us', 'µs')} (2 MiB); file mapping fault {v('file_fault_us', 'µs')}"
            f"{pages}; THP {machine.figures.thp or '?'}")


def _slowest(r) -> str:
    if not r["slowest"]:  # an eager mapping of a cached file: the consumer's pass alone
        return "none (the consumer's pass)" if r["consume_s"] > 0 else "—"
    text = f"{r['slowest']} {r['slowest_gb_per_s']:.3g} GB/s"
    if r["device_bound"] == "requests":
        text += f" (requests of {size_text(r['request_bytes'])})"
    return text


def ranking_table(t: pd.DataFrame, cache: str) -> Table:
    """The ranking of one cache state: rank, spec, predicted s, its time over the baseline's
    predicted, the slowest stage, first-touch seconds, memory, and what the option does (or
    why there is no prediction)."""
    rows = t[t["cache"] == cache]
    base = rows.loc[rows["spec"] == BASELINE, "predicted_s"]
    base = base.iloc[0] if len(base) else math.nan
    out = []
    for _, r in rows.iterrows():
        known = not pd.isna(r["predicted_s"])
        note = r["why"] or (f"lacks {r['missing']}" if r["missing"] else r["option_why"])
        out.append([f"{r['rank']:.0f}" if known else "—", r["spec"], _s(r["predicted_s"]),
                    f"{number(r['predicted_s'] / base)}×" if known and base == base else "—",
                    _slowest(r), _s(r["touch_s"]), _size(r["rss_bytes"]),
                    _size(r["cache_bytes"]), _size(r["peak_bytes"]), note])
    return (["rank", "strategy", "predicted s", f"× {BASELINE}", "slowest stage",
             "first touches s", "RSS", "page cache", "peak memory", "option / note"], out)


def _measured_cell(r) -> str:
    if r["status"] != "ok":
        return r["status"]
    lo, hi = r["measured_low"], r["measured_high"]
    return f"{r['measured_s']:.3f}" + (f" ({lo:.3f}–{hi:.3f})" if lo == lo else "")


def _paired_cell(r) -> str:
    if r["is_baseline"]:
        return "1 (baseline)"
    if not r["pairs"]:
        return "—"
    return ratio_text(r["ratio"], r["ratio_low"], r["ratio_high"]) if r["bounded"] else \
        ratio_text(r["ratio"])


def measured_table(m: pd.DataFrame) -> Table:
    """Predicted against measured, per cache state and measured spec."""
    rows = [[r["cache"], r["spec"], _s(r["predicted_s"]), _measured_cell(r),
             f"{number(r['predicted_ratio'])}×" if r["predicted_ratio"] == r["predicted_ratio"]
             else "—", _paired_cell(r), _s(r["error"], ".2f"),
             f"{_size(r['predicted_rss_bytes'])} / {_size(r['measured_rss_bytes'])}",
             f"{_size(r['predicted_cache_bytes'])} / {_size(r['measured_cache_bytes'])}"]
            for _, r in m.iterrows()]
    return (["cache", "strategy", "predicted s", "measured s (95% CI)",
             f"× {BASELINE} predicted", f"× {m['baseline'].iloc[0] if len(m) else BASELINE} "
             "measured, paired (95% CI)", "predicted ÷ measured", "RSS predicted / measured",
             "page cache predicted / measured"], rows)


def answer(report: dict) -> list[str]:
    """Per cache state, the fastest: measured (by median, with its paired ratio to the
    baseline and the test's word), else predicted; and its peak memory as predicted."""
    lines, m, t = [], report.get("measured"), report["ranking"]
    for cache in dict.fromkeys(t["cache"]):
        guess = t[(t["cache"] == cache) & t["predicted_s"].notna()]
        top = guess.iloc[0] if len(guess) else None
        said = (f"predicted fastest {top['spec']} ({top['predicted_s']:.3f} s, peak memory "
                f"{_size(top['peak_bytes'])})" if top is not None else "no prediction")
        got = m[(m["cache"] == cache) & (m["status"] == "ok")] if m is not None and len(m) \
            else pd.DataFrame()
        if len(got):
            best = got.sort_values("measured_s").iloc[0]
            test = "" if best["is_baseline"] else \
                f", {_paired_cell(best)} {best['baseline']}'s time" + \
                (f", {best['verdict']}" if best["verdict"] else "")
            said = (f"fastest measured {best['spec']}: {best['measured_s']:.3f} s{test}, "
                    f"{best['runs']} runs; {said}")
        lines.append(f"{cache}: {said}{_own(guess, top)}")
    return lines


def _own(guess: pd.DataFrame, top) -> str:
    """Where the fastest predicted maps the file: the fastest predicted way to own a copy."""
    if top is None or not has_flag(top["flags"], MAPS_FILE):
        return ""
    own = guess[guess["flags"].map(lambda f: has_flag(f, ALLOCATES))]
    if own.empty:
        return ""
    o = own.iloc[0]
    return (f"; to own a copy, predicted fastest {o['spec']} ({o['predicted_s']:.3f} s, peak "
            f"memory {_size(o['peak_bytes'])})")


# --- the page's sections -----------------------------------------------------------------------

@dataclass
class Context:
    """What the advise page's sections share: the report (pages/advise.py's `advise`)."""
    report: dict


class Answer(Section):
    title = "Answer"

    def markdown(self) -> str:
        return "\n".join(f"- {line}" for line in answer(self.ctx.report))


class Facts(Section):
    title = "The machine and the file"

    def markdown(self) -> str:
        r = self.ctx.report
        lacks = r["machine"].figures.lacks
        return "\n".join([f"- file: {r['file_line']}", f"- probe: {r['probe_line']}",
                          f"- figures: {figures_text(r['machine'])}",
                          f"- requests: {r['requests']['text']}"]
                         + ([f"- missing: {lacks}"] if lacks else []))


class Ranking(Section):
    def __init__(self, ctx, cache: str):
        super().__init__(ctx)
        self.cache = cache
        self.title = f"Predicted, {cache}"

    def shown(self) -> bool:
        return bool((self.ctx.report["ranking"]["cache"] == self.cache).any())

    def markdown(self) -> str:
        return ("Fastest first, by the load model of `make machines` from the probe's figures "
                "(no measured time enters it); a rank shared is a tie within 1%.\n\n"
                + md_table(ranking_table(self.ctx.report["ranking"], self.cache)))


class Measured(Section):
    title = "Predicted against measured"

    def shown(self) -> bool:
        return self.ctx.report.get("measured") is not None

    def markdown(self) -> str:
        m = self.ctx.report["measured"]
        note = paired.levels_note(m["pairs"]) if len(m) else ""
        return "\n\n".join(p for p in [
            f"{self.ctx.report['run_line']}", md_table(measured_table(m)),
            "*predicted ÷ measured* below 1: the load took longer than predicted. RSS measured: "
            "the median of each run's peak RSS less its RSS at the start (the worker's own); "
            "page cache measured: the file's share resident after the load times its size. "
            + note] if p)
