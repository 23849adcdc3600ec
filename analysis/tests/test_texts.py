"""The texts every report, the verdict, compare and the harness's console print alike: a ratio
with its interval (ratio_text) against the hand-written fixture
fixtures/ratio_text.json, which the harness's RatioText matches too; the exact level of a
signed-rank interval of n rounds (paired.coverage_text)."""

import json
import math
import os

import pytest

from analysis.core.ratios import number, ratio_text
from analysis.stats import paired

FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "ratio_text.json")
with open(FIXTURE, encoding="utf-8") as f:
    TEXTS = json.load(f)


def end(value):
    """A fixture's interval end: a number, null (none) or "inf" (unbounded)."""
    return math.inf if value == "inf" else value


@pytest.mark.parametrize("x, text", TEXTS["numbers"])
def test_an_estimate_is_rounded_to_the_nearest_by_the_regime_of_its_rounded_value(x, text):
    assert number(x) == text


@pytest.mark.parametrize("ratio, low, high, text", TEXTS["ratios"])
def test_an_interval_is_rounded_outward_and_never_to_1_unless_it_is_1(ratio, low, high, text):
    assert ratio_text(ratio, end(low), end(high)) == text


# The exact coverage 1 - 2 P(T+ <= k - 1) of the signed-rank interval, by hand: at 6 pairs
# [min, max] of the Walsh averages, 1 - 2/64; at 7, k = 3: 1 - 2 * 3/128; at 12, k = 14:
# 1 - 2 * 87/4096; at 30 it rounds to 95.0%, printed as 95%.
@pytest.mark.parametrize("n, text", [(6, "96.9%"), (7, "95.3%"), (12, "95.8%"), (30, "95%"),
                                     (5, "")])
def test_an_interval_of_n_rounds_names_its_exact_level(n, text):
    assert paired.coverage_text(n) == text
