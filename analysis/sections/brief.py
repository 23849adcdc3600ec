"""The verdict in one line per question, what `analysis.report --brief` prints after where the
report is (and `make run`, `loadbench run` and `experiment` at their end): per condition the
fastest strategy, its median, its paired ratio to the baseline with the interval (in the one
text of core/ratios.py) and how sure that is, and whether the runner-up is told apart;
then, where the strategies recorded flags, the fastest to map and the fastest to own a copy,
the owning one's paired ratio to the mapping one; then the caveats, each cut to its first
clause. The long sentences stay in the report (analysis/sections/verdict.py, whose summary
these lines are drawn from: summary.json's `verdict`).

    cold: mmap_prefetch 0.548 s, 0.53× (0.51–0.58) fread, sure; 0.92× (0.82–0.99) owned, sure
    cold, map or own: to map mmap_prefetch 0.548 s; to own owned 0.589 s, 1.09× (1.01–1.22)
    mmap_prefetch, sure                                    (one line: results/reference/quick)
    warm: mmap_prefetch 0.111 s, 0.11× (0.082–0.12) fread, sure; mmap not told apart

How sure: `sure` where the 95% interval leaves out 1; `not told apart` where it holds 1;
`N rounds: too few for an interval` under 6 paired rounds; `no round with X` where no round
paired them; `no paired ratio (no rounds)` for runs in grouped order.
"""

from __future__ import annotations

from analysis.core.ratios import ratio_text
from analysis.sections import verdict
from analysis.sections.verdict import HALVES, MIN_ROUNDS


def how_sure(c: dict, other: str) -> str:
    """A paired comparison (the verdict's figures: ratio, lo, hi, rounds, sure) with `other` in
    a few words: `0.53× (0.51–0.58) fread, sure`."""
    if not c["rounds"]:
        return f"no round with {other}"
    if c["lo"] is None:
        return (f"{ratio_text(c['ratio'])} {other}, {c['rounds']} rounds: too few for an "
                f"interval ({MIN_ROUNDS} give one)")
    text = f"{ratio_text(c['ratio'], c['lo'], c['hi'])} {other}"
    return text + (", sure" if c["sure"] else ", not told apart")


def runner_up(e: dict) -> str:
    """The runner-up in a few words: `owned not told apart`, or where the fastest is surely
    ahead the fastest's ratio to it, `0.92× (0.82–0.99) owned, sure`; "" where it has no
    interval or is the baseline, already said."""
    ru = e["runner_up"]
    if ru is None or ru["lo"] is None or (ru["strategy"] == e["baseline"]
                                          and not e["is_baseline"]):
        return ""
    if not ru["sure"]:
        return f"{ru['strategy']} not told apart"
    return how_sure(ru, ru["strategy"])


def fastest(e: dict) -> str:
    """A verdict's (summary.json's `verdict` entry, or one of its halves) fastest in a few
    words, or the two it cannot tell apart."""
    if e["medians_and_rounds_disagree"]:
        f = e["faster_in_rounds"]
        how = "the medians and the rounds disagree" if f["sure"] else "not told apart"
        return (f"no fastest: {e['fastest']} {e['median_s']:.3f} s or {f['strategy']} "
                f"{f['median_s']:.3f} s, {how}")
    head = f"{e['fastest']} {e['median_s']:.3f} s"
    if e["is_baseline"]:
        head += " (the baseline)"
    elif not e["in_rounds"]:
        head += ", no paired ratio (no rounds)"
    elif e["baseline"]:
        head += ", " + how_sure(e, e["baseline"])
    return "; ".join(p for p in (head, runner_up(e)) if p)


def question_line(cond: str, e: dict) -> str:
    text = f"{cond}: {fastest(e)}"
    if e["faster_unverified"]:
        text += "; faster unverified: " + ", ".join(e["faster_unverified"])
    return text


def map_or_own_line(cond: str, e: dict) -> str:
    """The second question in one line, "" where no half has a strategy (or no flags)."""
    parts = []
    for key, _, words, _, _ in HALVES:
        h = e.get(key)
        if h:
            parts.append(f"{words} " + (f"{h['fastest']} {h['median_s']:.3f} s"
                                        if not h["medians_and_rounds_disagree"]
                                        else fastest(h)[len("no fastest: "):]))
    c = e.get("own_vs_map")
    if c:
        parts[-1] += ", " + how_sure(c, c["map"])
    return f"{cond}, map or own: " + "; ".join(parts) if parts else ""


def lines(summary: dict, most: int = 3) -> list[str]:
    """summary.json's verdict as `--brief` prints it: per condition (at most `most`; the last
    line then says how many more the report has) its question line and its map-or-own line,
    then the caveats of the conditions shown, each to its first `;`."""
    return verdict.lines(
        summary, most,
        per_condition=lambda cond, e: [question_line(cond, e)] + [
            x for x in [map_or_own_line(cond, e)] if x],
        caveat=lambda text: text.split("; ")[0])
