"""Unpaired comparisons, for runs that never shared a round (two results folders, two machines):
the Hodges–Lehmann shift of y against x with the exact Mann–Whitney 95% interval
(distribution-free), and, on log times, a ratio of y's over x's with the Mann–Whitney p."""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy.stats import mannwhitneyu



ALPHA = 0.05


@functools.lru_cache(maxsize=None)
def mann_whitney_cdf(m: int, n: int) -> np.ndarray:
    """P(U <= u) for u = 0..mn, U the Mann–Whitney count of pairs (x_i, y_j) with y_j < x_i
    under no difference, by counting: the number of orderings of the m + n runs with U = u is
    the coefficient of q^u of the Gaussian binomial [m + n choose m] = prod over i = 1..m of
    (1 - q^(n+i)) / (1 - q^i). Exact integers: the counts outgrow floats' exactness."""
    counts = np.zeros(m * n + 1, dtype=object)
    counts[0] = 1
    for i in range(1, m + 1):
        # Times (1 - q^(n+i)), then over (1 - q^i) as a power series (a running sum with step
        # i); the terms beyond q^(mn) are dropped, which changes no lower one.
        counts[n + i:] = counts[n + i:] - counts[:m * n + 1 - n - i]
        for start in range(i):
            counts[start::i] = np.cumsum(counts[start::i])
    cdf = np.array([c / math.comb(m + n, m) for c in np.cumsum(counts)], dtype=float)
    cdf.setflags(write=False)
    return cdf


def shift_interval(x, y) -> tuple[float, float, float]:
    """(estimate, low, high) of the shift of y against x: the Hodges–Lehmann estimate, the
    median of the m n differences y_j - x_i, and their [D_(k), D_(mn+1-k)] with the largest k
    such that 1 - 2 P(U <= k - 1) >= 95% (exact: it holds the shift with that probability
    whatever the distribution); NaN, NaN when even k = 1 does not reach it (too few runs)."""
    d = np.sort(np.subtract.outer(np.asarray(y, float), np.asarray(x, float)).ravel())
    cdf = mann_whitney_cdf(len(x), len(y))
    within = np.flatnonzero(cdf <= ALPHA / 2)
    if within.size == 0:
        return float(np.median(d)), math.nan, math.nan
    k = int(within[-1]) + 1
    return float(np.median(d)), float(d[k - 1]), float(d[len(d) - k])


def shift_row(x: np.ndarray, y: np.ndarray) -> dict:
    """y's over x's (B's over A's), exp of the shift of log values, with its interval (None
    where there is none) and the Mann–Whitney p."""
    estimate, low, high = shift_interval(np.log(x), np.log(y))
    bounded = not math.isnan(low)
    p = float(mannwhitneyu(x, y, alternative="two-sided").pvalue)
    # The smallest two-sided p the exact test can give these sample sizes: with 3 runs a side
    # it is 0.1, and no difference can ever be significant.
    min_p = min(1.0, 2 / math.comb(len(x) + len(y), len(x)))
    return {"n_a": len(x), "n_b": len(y),
            "ratio": math.exp(estimate), "ci_low": math.exp(low) if bounded else None,
            "ci_high": math.exp(high) if bounded else None, "p_value": p,
            "min_p_possible": min_p,
            # Both must agree: a small p alone flags a shift too small to matter only when the
            # interval also leaves out 1.
            "significant": bool(p < ALPHA and bounded and (low > 0 or high < 0))}
