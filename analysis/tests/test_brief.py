"""`analysis.report --brief`: the verdict one line a question (analysis/sections/brief.py), from
summary.json's verdict: the fastest, its median, its paired ratio to the baseline in the one
ratio text and how sure; the runner-up told apart or not; the fastest to map and to own; the
caveats cut to their first clause; every case the verdict has (the baseline fastest, too few
rounds, no rounds, the medians and rounds disagreeing, faster unverified commands)."""

from analysis.sections import brief


def pair(ratio, lo=None, hi=None, rounds=12, sure=False, **more):
    return {"ratio": ratio, "lo": lo, "hi": hi, "rounds": rounds, "sure": sure, **more}


def entry(**changes):
    """A verdict entry as summary.json has it: mmap_seq fastest, surely faster than fread."""
    e = {"cache": "cold", "fastest": "mmap_seq", "median_s": 0.6, "faster_unverified": [],
         "baseline": "fread", "is_baseline": False, "in_rounds": True,
         "medians_and_rounds_disagree": False, "faster_in_rounds": None, "caveats": [],
         "runner_up": {"strategy": "mmap", **pair(0.98, 0.9, 1.05)},
         **pair(0.61, 0.56, 0.66, sure=True), "flags_recorded": False, "unflagged": [],
         "to_map": None, "to_own": None, "own_vs_map": None}
    return {**e, **changes}


def test_the_fastest_against_the_baseline_and_the_runner_up():
    assert brief.question_line("cold", entry()) == (
        "cold: mmap_seq 0.600 s, 0.61× (0.56–0.66) fread, sure; mmap not told apart")
    ahead = entry(runner_up={"strategy": "mmap", **pair(0.9, 0.85, 0.95, sure=True)})
    assert brief.question_line("cold", ahead).endswith("; 0.90× (0.85–0.95) mmap, sure")
    # The runner-up that is the baseline is said once.
    same = entry(runner_up={"strategy": "fread", **pair(0.61, 0.56, 0.66, sure=True)})
    assert brief.question_line("cold", same) == \
        "cold: mmap_seq 0.600 s, 0.61× (0.56–0.66) fread, sure"
    held = entry(**pair(0.97, 0.9, 1.04), runner_up=None)
    assert brief.question_line("warm", held) == (
        "warm: mmap_seq 0.600 s, 0.97× (0.90–1.04) fread, not told apart")


def test_the_baseline_fastest_too_few_rounds_and_no_rounds():
    base = entry(fastest="fread", is_baseline=True, **pair(None, rounds=0))
    assert brief.question_line("cold", base) == \
        "cold: fread 0.600 s (the baseline); mmap not told apart"
    few = entry(**pair(0.61, rounds=3), runner_up={"strategy": "mmap", **pair(0.9, rounds=3)})
    assert brief.question_line("cold", few) == ("cold: mmap_seq 0.600 s, 0.61× (–) fread, "
                                                "3 rounds: too few for an interval (6 give one)")
    grouped = entry(in_rounds=False, **pair(None, rounds=0), runner_up=None)
    assert brief.question_line("cold", grouped) == \
        "cold: mmap_seq 0.600 s, no paired ratio (no rounds)"
    unpaired = entry(**pair(None, rounds=0), runner_up=None)
    assert brief.question_line("cold", unpaired) == "cold: mmap_seq 0.600 s, no round with fread"


def test_no_fastest_where_the_medians_and_the_rounds_disagree_and_unverified_rows():
    other = {"strategy": "mmap", "median_s": 0.61, "is_baseline": False, "is_runner_up": True,
             **pair(1.03, 0.78, 1.89)}
    e = entry(medians_and_rounds_disagree=True, faster_in_rounds=other,
              faster_unverified=["dd", "cat"])
    assert brief.question_line("cold", e) == (
        "cold: no fastest: mmap_seq 0.600 s or mmap 0.610 s, not told apart; faster "
        "unverified: dd, cat")
    sure = entry(medians_and_rounds_disagree=True, faster_in_rounds={**other, "sure": True})
    assert brief.question_line("cold", sure).endswith("the medians and the rounds disagree")


def test_map_or_own_in_one_line():
    to_map = entry(fastest="mmap_prefetch", median_s=3.017)
    to_own = entry(fastest="owned", median_s=3.255)
    e = entry(flags_recorded=True, to_map=to_map, to_own=to_own,
              own_vs_map={"own": "owned", "map": "mmap_prefetch",
                           **pair(1.09, 1.06, 1.12, rounds=6, sure=True)})
    assert brief.map_or_own_line("cold", e) == (
        "cold, map or own: to map mmap_prefetch 3.017 s; to own owned 3.255 s, 1.09× "
        "(1.06–1.12) mmap_prefetch, sure")
    other = {"strategy": "mmap", "median_s": 3.1, "is_baseline": False, "is_runner_up": True,
             **pair(1.03, 0.78, 1.89)}
    split = entry(flags_recorded=True, to_own=None,
                  to_map=entry(medians_and_rounds_disagree=True, faster_in_rounds=other))
    assert brief.map_or_own_line("cold", split) == (
        "cold, map or own: to map mmap_seq 0.600 s or mmap 3.100 s, not told apart")
    assert brief.map_or_own_line("cold", entry()) == ""


def test_lines_stay_few_and_end_with_the_caveats_cut_short():
    caveat = ("caveat: the ceiling (recipe x, fastest read 2.00 GB/s) is not the device's "
              "limit: mmap_seq's median 4.00 GB/s beat every ceiling read of its rounds; the "
              "shares of device overstate how near the strategies come to it.")
    verdicts = {f"cold [f{i}]": entry(caveats=[caveat]) for i in range(5)}
    out = brief.lines({"verdict": verdicts})
    assert len(out) == 5 and out[0].startswith("cold [f0]: mmap_seq 0.600 s")
    assert out[2] == "... and 3 more conditions: see the report"
    assert out[3] == ("cold [f0]: caveat: the ceiling (recipe x, fastest read 2.00 GB/s) is not "
                      "the device's limit: mmap_seq's median 4.00 GB/s beat every ceiling read "
                      "of its rounds")
    assert brief.lines({"verdict": {}}) == ["no verdict: no ok run of a strategy"]
