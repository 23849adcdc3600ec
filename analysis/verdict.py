"""The report's verdict: per condition (in most experiments, per cache state) the fastest
strategy by median time, its paired ratio to the condition's baseline and to the runner-up
(analysis/paired.py: its time over theirs within the rounds both ran in, below 1 faster, the
Hodges–Lehmann estimate with the exact signed-rank 95% interval, in results.ratio_text's words
as every table gives it), and how sure that is; and how long the experiment took. Commands that
sent no checksum (unverified) are no candidates while a verified row exists: nothing checked
what they loaded. The fastest by median is named only where the paired rounds agree: no other
candidate surely faster than it in the rounds both ran in, and its estimate against the
runner-up not above 1 (`faster_in_rounds`); where they disagree the verdict says so, with both
strategies, both medians and the paired ratio, and names no fastest. Each condition's
`caveats` (analysis/ceiling.py's: a ceiling that a strategy's median beat) close the verdict,
in the report and in `lines`. `summarize` gives summary.json's `verdict`, `lines` the plain
text `analysis.report --brief` prints, `section_md` the report's.
"""

from __future__ import annotations

import pandas as pd

from analysis import ceiling, noise, paired
from analysis.results import CONDITION, Results, exec_label, ratio_text, spec_label

# The fewest paired rounds that give a 95% interval (6).
MIN_ROUNDS = next(n for n in range(1, 64) if paired.critical(n)[0])


def name(spec: str) -> str:
    return exec_label(spec) or spec


def figures(p) -> dict:
    """A paired row's figures (paired.paired_table's or paired.versus') as the verdict keeps
    them: the ratio, the interval (None when unbounded), the rounds paired and whether the
    interval leaves out 1."""
    bounded = bool(p["bounded"])
    return {"ratio": float(p["ratio"]), "lo": float(p["ratio_low"]) if bounded else None,
            "hi": float(p["ratio_high"]) if bounded else None, "rounds": int(p["n"]),
            "sure": bool(p["significant"])}


def comparison(pairs: pd.DataFrame, key: tuple, row: pd.Series) -> dict | None:
    """`row`'s group's paired ratio in `pairs` (paired.paired_table's) under condition `key`:
    its time over the baseline's (`figures`); None when no round paired it."""
    match = pairs[(pairs[CONDITION] == pd.Series(key, index=CONDITION)).all(axis=1)
                  & (pairs["strategy_spec"] == row["strategy_spec"])
                  & (pairs["role"] == row["role"])] if len(pairs) else pairs
    return None if match.empty else figures(match.iloc[0])


def faster_in_rounds(values: pd.DataFrame, key: tuple, candidates: pd.DataFrame,
                     base: str | None) -> dict | None:
    """The candidate the paired rounds put ahead of the fastest by median (candidates.iloc[0]):
    one surely faster in the rounds both ran in, or the runner-up (candidates.iloc[1]) where
    the fastest's estimate against it is above 1; the surest and widest such, with the
    fastest's time over its (`figures`), its median, and whether it is the baseline or the
    runner-up. None where the medians and the rounds agree."""
    fastest = candidates.iloc[0]
    found = []
    for i, (_, other) in enumerate(candidates.iloc[1:].iterrows()):
        p = paired.versus(values, key, fastest["strategy_spec"], fastest["role"],
                          other["strategy_spec"])
        if p is None or p["ratio"] <= 1 or not (p["significant"] or i == 0):
            continue
        found.append({"strategy": spec_label(other), "median_s": float(other["median_s"]),
                      "is_baseline": other["strategy_spec"] == base, "is_runner_up": i == 0,
                      **figures(p)})
    return max(found, key=lambda f: (f["sure"], f["ratio"])) if found else None


def entry(r: Results, key: tuple, rows: pd.DataFrame, pairs: pd.DataFrame,
          values: pd.DataFrame) -> dict:
    """One condition's verdict from its rows of the summary table (fastest first); `pairs` and
    `values` are paired.paired_table's and paired.run_values' of the folder."""
    candidates = rows[rows["verified"]] if rows["verified"].any() else rows
    fastest = candidates.iloc[0]
    base = paired.baselines(r).get(key, (None, ""))[0]
    against_rounds = faster_in_rounds(values, key, candidates, base)
    out = {"cache": fastest["cache"], "fastest": spec_label(fastest),
           "median_s": float(fastest["median_s"]),
           "faster_unverified": [spec_label(x.drop("verified")) for _, x in rows.iterrows()
                                 if x["median_s"] < fastest["median_s"] and not x["verified"]],
           "baseline": name(base) if base else None,
           "is_baseline": fastest["strategy_spec"] == base, "ratio": None, "lo": None, "hi": None,
           "rounds": 0, "sure": False, "runner_up": None,
           "in_rounds": not paired.no_rounds(r),
           "medians_and_rounds_disagree": against_rounds is not None,
           "faster_in_rounds": against_rounds, "caveats": ceiling.caveats(rows)}
    if base and not out["is_baseline"]:
        out.update(comparison(pairs, key, fastest) or {})
    if len(candidates) > 1:
        second = candidates.iloc[1]
        p = paired.versus(values, key, fastest["strategy_spec"], fastest["role"],
                          second["strategy_spec"])
        out["runner_up"] = {"strategy": spec_label(second), **(figures(p) if p else {
            "ratio": None, "lo": None, "hi": None, "rounds": 0, "sure": False})}
    return out


def summarize(r: Results, table: pd.DataFrame) -> dict[str, dict]:
    """summary.json's `verdict`: per condition, named as the report names it (the cache state,
    with file, readers, pattern and memory limit where they tell conditions apart); cold first,
    and fewer readers, no memory limit and smaller files first within a cache state."""
    if table.empty:
        return {}
    pairs, values = paired.paired_table(r), paired.run_values(r)
    files = table["file"].nunique()
    # A stable sort: each condition's rows stay fastest first.
    ordered = table.sort_values(["cache", "procs", "memory_limit_bytes", "file_bytes", "pattern"],
                                kind="stable")
    return {noise.condition(dict(zip(CONDITION, key)), files): entry(r, key, rows, pairs, values)
            for key, rows in ordered.groupby(CONDITION, sort=False)}


def against(c: dict, other: str, role: str) -> str:
    """A paired ratio to `other` (`role`: the baseline, the runner-up) in words, with its
    interval (ratio_text's, as the tables print it) and how sure it is."""
    if not c["rounds"]:
        return f"no round in which it and {other} ({role}) both ran ok, so no paired ratio"
    ratio = f"{ratio_text(c['ratio'], c['lo'], c['hi'])} the time of {other}, {role}"
    rounds = noise.plural(c["rounds"], "round")
    if c["lo"] is None:
        return (f"{ratio} ({rounds}: too few for a 95% interval; {MIN_ROUNDS} rounds would "
                "give one)")
    sure = "a sure difference" if c["sure"] else f"not distinguishable in {rounds}"
    return f"{ratio} ({paired.coverage_text(c['rounds'])} interval, {rounds}), {sure}"


def agreed(e: dict) -> str:
    """The verdict where the medians and the rounds agree: the fastest, against the baseline
    and the runner-up (the runner-up only where its paired ratio has a 95% interval)."""
    base, ru = e["baseline"], e["runner_up"]
    ru_shown = ru is not None and ru["lo"] is not None
    if e["is_baseline"]:
        text = f"{e['fastest']}, the baseline, is fastest (median {e['median_s']:.3f} s)"
    else:
        text = f"{e['fastest']} is fastest (median {e['median_s']:.3f} s)"
        if not e["in_rounds"]:
            text += ": no run ran in a round (grouped order), so no paired ratio"
        elif base is not None:
            both = ru_shown and ru["strategy"] == base
            text += ": " + against(e, base, "the baseline" + (" and runner-up" if both else ""))
            ru_shown = ru_shown and not both
    if ru_shown:
        text += ("; " if not e["is_baseline"] else ": ") + against(ru, ru["strategy"],
                                                                    "the runner-up")
    return text + "."


def disagreed(e: dict) -> str:
    """The verdict where the paired rounds put another candidate ahead of the one with the
    lowest median: both, both medians and the paired ratio, and no fastest; then the lowest
    median against the baseline where that is a third strategy paired with it."""
    f = e["faster_in_rounds"]
    role = {(True, True): "the baseline and runner-up", (True, False): "the baseline",
            (False, True): "the runner-up"}.get((f["is_baseline"], f["is_runner_up"]),
                                                "slower by its median")
    # Surely slower in the rounds both ran: the two disagree. Not surely: the two are not told
    # apart, the paired estimate leaning the other way.
    head = ("the medians and the paired rounds disagree" if f["sure"] else
            f"no fastest: {e['fastest']} and {f['strategy']} are not told apart")
    text = (f"{head}: {e['fastest']} has the lowest median "
            f"({e['median_s']:.3f} s; {f['strategy']} {f['median_s']:.3f} s), but in the rounds "
            f"both ran in it took {against(f, f['strategy'], role)}; neither is named fastest.")
    if e["rounds"] and not f["is_baseline"]:
        text += f" {e['fastest']} took {against(e, e['baseline'], 'the baseline')}."
    return text


def phrase(e: dict) -> str:
    """One condition's verdict in a sentence or two (without the condition's name)."""
    text = disagreed(e) if e["medians_and_rounds_disagree"] else agreed(e)
    if e["faster_unverified"]:
        text += (" Faster, but sent no checksum (unverified): "
                 + ", ".join(e["faster_unverified"]) + ".")
    return text


def caveats(verdicts) -> list[tuple[str, str]]:
    """The caveats of the (condition, verdict) pairs, each with its condition."""
    return [(cond, caveat) for cond, e in verdicts for caveat in e["caveats"]]


def lines(summary: dict, most: int = 3) -> list[str]:
    """summary.json's verdict as plain-text lines, one per condition, at most `most` (the last
    then says how many more the report has), then the caveats of the conditions shown."""
    verdicts = list((summary.get("verdict") or {}).items())
    if not verdicts:
        return ["no verdict: no ok run of a strategy"]
    shown = verdicts if len(verdicts) <= most else verdicts[:most - 1]
    out = [f"{cond}: {phrase(e)}" for cond, e in shown]
    if len(shown) < len(verdicts):
        out.append(f"... and {len(verdicts) - len(shown)} more conditions: see the report")
    return out + [f"{cond}: {caveat}" for cond, caveat in caveats(shown)]


def clock(seconds: float) -> str:
    """A duration as `1 h 02 min`, `21 min 3 s` or `45 s`."""
    s = round(seconds)
    if s >= 3600:
        return f"{s // 3600} h {s % 3600 // 60:02d} min"
    return f"{s // 60} min {s % 60} s" if s >= 60 else f"{s} s"


def stamps(records: pd.DataFrame, column: str) -> pd.Series:
    if column not in records:
        return pd.Series(pd.NaT, index=records.index, dtype="datetime64[ns, UTC]")
    return pd.to_datetime(records[column], utc=True, errors="coerce")


def took(r: Results) -> str:
    """How long the experiment took, first start to last end of its records (ceiling reads
    included), as a sentence; from records without end times (older folders), up to the last
    start plus that run's wall time."""
    records = pd.concat([r.runs, r.ceiling], ignore_index=True)
    start, end = stamps(records, "started_at"), stamps(records, "ended_at")
    about = "about " if end.isna().all() else ""
    if about:
        wall = (pd.to_numeric(records["wall_s"], errors="coerce").fillna(0)
                if "wall_s" in records else 0)
        end = start + pd.to_timedelta(wall, unit="s")
    if start.isna().all() or end.isna().all():
        return ""
    first, last = start.min(), end.max()
    day = "" if first.date() == last.date() else f"{last:%Y-%m-%d} "
    return (f"The experiment took {about}{clock((last - first).total_seconds())} "
            f"({first:%Y-%m-%d %H:%M:%S} to {day}{last:%H:%M:%S} UTC).")


def section_md(verdicts: dict) -> str:
    """The verdict (summarize's) as the report's list, one item per condition, then one per
    caveat."""
    if not verdicts:
        return "No verdict: no ok run of a strategy."
    return "\n".join([f"- **{cond}**: {phrase(e)}" for cond, e in verdicts.items()]
                     + [f"- **{cond}**: {caveat}" for cond, caveat in caveats(verdicts.items())])
