"""A herd whose readers have roles (shm's creator and attacher), from the fixture the harness is
tested on too (fixtures/shm-herd, with its expected figures computed without the project's
code): each role is paired on its own, figure for figure as harness/stats pairs it, and every
round of the many-readers table holds both readers."""
import json
import os

import pytest

from analysis.core import results
from analysis.stats import paired, readers

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "shm-herd")


def test_each_role_is_paired_as_the_harness_pairs_it():
    expected = json.load(open(os.path.join(HERE, "expected.json")))["expected"]
    table = paired.paired_table(results.load(HERE))
    got = {f"{r['strategy_spec']}[{r['role']}]": r for _, r in table.iterrows()}
    assert sorted(got) == sorted(expected)
    for name, want in expected.items():
        assert got[name]["n"] == want["n"]
        for ours, theirs in (("ratio", "ratio"), ("ratio_low", "low"), ("ratio_high", "high")):
            assert got[name][ours] == pytest.approx(want[theirs], rel=1e-9), (name, ours)


def test_a_round_holds_every_reader_whatever_its_role():
    r = results.load(HERE)
    rounds = readers.rounds(r.runs, r.env)
    shm = rounds[rounds["strategy_spec"] == "shm"]
    assert len(shm) == 6 and shm["duration_s"].notna().all(), shm
    assert (shm["readers"] == 2).all() and (shm["ok_readers"] == 2).all()
