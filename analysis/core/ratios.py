"""The one text of a ratio with its 95% interval, `0.61× (0.38–0.65)` (`(–)` without one), as
the harness's console prints it: the estimate rounded to the nearest (`number`), the
interval's ends outward and never to 1 unless they are 1 (`end_text`), as
tests/fixtures/ratio_text.json says case by case; and a table's cells of a paired ratio."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd


def decimals(x: float) -> int:
    """The decimals a ratio of size `x` is printed with: two from 0.1 up to 10 (and for what is
    not above 0, which no ratio of times is), none from 10 up, and below 0.1 two significant
    digits (1 - floor(log10 x), at most 6: 0.058, 0.0012)."""
    if x >= 10:
        return 0
    if x >= 0.1 or not x > 0:
        return 2
    return min(6, 1 - math.floor(math.log10(x)))


def number(x: float) -> str:
    """An estimate, rounded to the nearest at `decimals` of its rounded value (9.996: "10";
    0.0996: "0.10"; 0.09: "0.090", the trailing zero kept)."""
    text = f"{x:.{decimals(x)}f}"
    return f"{x:.{decimals(float(text))}f}"


def _outward(x: float, d: int, up: bool) -> str:
    """`x` at `d` decimals, rounded up (`up`) or down: the nearest, stepped one unit outward
    where it moved `x` inward by more than 1e-9 of a unit."""
    unit = 10.0 ** -d
    text = f"{x:.{d}f}"
    inward = (x - float(text)) if up else (float(text) - x)
    if inward > 1e-9 * unit:
        text = f"{float(text) + (unit if up else -unit):.{d}f}"
    return text


def end_text(x: float, up: bool) -> str:
    """An interval's end, rounded outward from the estimate (the high end `up`, the low end
    down) at `decimals`, chosen again by the rounded value; an end that is not exactly 1 is
    never printed as 1: it gains a decimal (up to 6) until it is not (0.996: "0.996")."""
    d = decimals(x)
    text = _outward(x, d, up)
    if decimals(float(text)) != d:
        d = decimals(float(text))
        text = _outward(x, d, up)
    while float(text) == 1.0 and x != 1.0 and d < 6:
        d += 1
        text = _outward(x, d, up)
    return text


def _finite(x) -> bool:
    return x is not None and not pd.isna(x) and np.isfinite(x)


def ratio_text(ratio: float, low: float | None = None, high: float | None = None) -> str:
    """A ratio with its interval, as every table, the verdict, compare and the harness's
    console print it (tests/fixtures/ratio_text.json holds the cases): `0.61× (0.38–0.65)`, the
    estimate by `number`, the ends by `end_text`; `0.61× (–)` without an interval (None, NaN or
    an unbounded end). Times are always one side's over the other's: below 1, faster."""
    interval = (f"{end_text(low, False)}–{end_text(high, True)}"
                if _finite(low) and _finite(high) else "–")
    return f"{number(ratio)}× ({interval})"


def paired_cell(r) -> str:
    """A row of paired figures (`pairs`, `ratio`, `ratio_low`, `ratio_high`, `bounded`: as
    paired.paired_table gives them) as a table cell: its ratio_text, without an interval where
    none is bounded; empty where nothing was paired."""
    if not r["pairs"]:
        return ""
    if not r["bounded"]:
        return ratio_text(r["ratio"])
    return ratio_text(r["ratio"], r["ratio_low"], r["ratio_high"])


def ratio_cells(r: pd.Series) -> tuple[str, str]:
    """A summary row's paired time ratio to its baseline with its interval (ratio_text, the
    text the verdict and compare print too), and the verdict of the paired test."""
    if r["is_baseline"]:
        return "1 (baseline)", ""
    if pd.isna(r["time_ratio"]):
        return "", ""
    return (ratio_text(r["time_ratio"], r["time_ratio_ci_low"], r["time_ratio_ci_high"]),
            r["verdict"])
