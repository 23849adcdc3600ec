"""The report's verdict: per condition (in most experiments, per cache state) the fastest
strategy by median time, its paired ratio to the condition's baseline and to the runner-up
(analysis/stats/paired.py: its time over theirs within the rounds both ran in, below 1 faster, the
Hodges–Lehmann estimate with the exact signed-rank 95% interval, in results.ratio_text's words
as every table gives it), and how sure that is; and how long the experiment took. Commands that
sent no checksum (unverified) are no candidates while a verified row exists: nothing checked
what they loaded. The fastest by median is named only where the paired rounds agree: no other
candidate surely faster than it in the rounds both ran in, and its estimate against the
runner-up not above 1 (`faster_in_rounds`); where they disagree the verdict says so, with both
strategies, both medians and the paired ratio, and names no fastest. Each condition's
`caveats` (analysis/stats/ceiling.py's: a ceiling that a strategy's median beat) close the verdict,
in the report and in `lines`. `summarize` gives summary.json's `verdict`, `lines` its sentences
as plain text (the reference results' README), `section_md` the report's; `analysis.report
--brief` prints it shorter, one line a question (analysis/sections/brief.py).

Each condition answers a second question too (`map_or_own`): the fastest way to map the model
(the candidates whose `strategy_flags` hold `maps-file`) and the fastest way to own a copy of
it (those whose flags hold `allocates`), GPU strategies (flag `device`, `cuda_`) in neither:
the same verdict (`entry`, with its rule for naming a fastest) over each of the two subsets,
and where both name one, the owning one's paired time over the mapping one's (`own_vs_map`).
A condition whose strategies recorded no flags (folders from before them) cannot tell, and
says so.
"""

from __future__ import annotations

import pandas as pd

from analysis.core.figures import Figures
from analysis.core.labels import condition, plural
from analysis.core.ratios import ratio_text
from analysis.core.results import (ALLOCATES, CONDITION, DEVICE, EXEC, MAPS_FILE, Results,
                                   UNVERIFIED_MARK, exec_label, has_flag, records, spec_label)
from analysis.sections import remote
from analysis.sections.base import Section
from analysis.sections.start_figures import plot_times
from analysis.stats import ceiling, paired

# The fewest paired rounds that give a 95% interval (6).
MIN_ROUNDS = next(n for n in range(1, 64) if paired.critical(n)[0])
# The figures of a comparison no round paired.
NO_PAIR = {"ratio": None, "lo": None, "hi": None, "rounds": 0, "sure": False}
# The two ways to hold the model: summary.json's key, the flag that says a strategy is one,
# the brief's words, the report's heading and its sentence where no strategy is one.
HALVES = [("to_map", MAPS_FILE, "to map", "To map the file (flag `maps-file`)",
           "No strategy of this condition maps the file (flag `maps-file`)."),
          ("to_own", ALLOCATES, "to own", "To own a copy (flag `allocates`; GPU strategies "
           "aside)", "No strategy of this condition copies it into memory of its own (flag "
           "`allocates`).")]


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
        out["runner_up"] = {"strategy": spec_label(second), **(figures(p) if p else NO_PAIR)}
    return out


def flagged(rows: pd.DataFrame, flag: str) -> pd.Series:
    """Per row of the summary table, whether its strategy_flags name `flag` and it loads into
    host memory (no flag `device`, no `cuda_` strategy)."""
    flags = rows["strategy_flags"]
    device = (flags.map(lambda f: has_flag(f, DEVICE))
              | rows["strategy"].astype(str).str.startswith("cuda_"))
    return flags.map(lambda f: has_flag(f, flag)) & ~device


def own_vs_map(values: pd.DataFrame, key: tuple, own: pd.Series, mapped: pd.Series) -> dict:
    """The owning row's paired time over the mapping row's (`figures`, NO_PAIR where no round
    paired them), with both names."""
    p = paired.versus(values, key, own["strategy_spec"], own["role"], mapped["strategy_spec"])
    return {"own": spec_label(own), "map": spec_label(mapped), **(figures(p) if p else NO_PAIR)}


def map_or_own(r: Results, key: tuple, rows: pd.DataFrame, pairs: pd.DataFrame,
               values: pd.DataFrame) -> dict:
    """One condition's second question (the module's docstring): `flags_recorded` (whether any
    candidate recorded flags), `unflagged` (loadbench candidates without flags, in neither
    half), `to_map` and `to_own` (`entry` over each half's candidates, less what belongs to the
    whole condition; None without any) and `own_vs_map` (None unless both halves name a
    fastest)."""
    candidates = rows[rows["verified"]] if rows["verified"].any() else rows
    unflagged = candidates["strategy_flags"].isna() & (candidates["strategy"] != EXEC)
    out = {"flags_recorded": bool(candidates["strategy_flags"].notna().any()),
           "unflagged": [spec_label(x) for _, x in candidates[unflagged].iterrows()],
           "to_map": None, "to_own": None, "own_vs_map": None}
    firsts = {}
    for name, flag, *_ in HALVES:
        half = candidates[flagged(candidates, flag)]
        if len(half):
            e = entry(r, key, half, pairs, values)
            out[name] = {k: v for k, v in e.items()
                         if k not in ("cache", "caveats", "faster_unverified")}
            firsts[name] = half.iloc[0]
    if len(firsts) == 2 and not any(out[n]["medians_and_rounds_disagree"] for n in firsts):
        out["own_vs_map"] = own_vs_map(values, key, firsts["to_own"], firsts["to_map"])
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
    return {condition(dict(zip(CONDITION, key)), files): {
                **entry(r, key, rows, pairs, values), **map_or_own(r, key, rows, pairs, values)}
            for key, rows in ordered.groupby(CONDITION, sort=False)}


def against(c: dict, other: str, role: str) -> str:
    """A paired ratio to `other` (`role`: the baseline, the runner-up; "" for none) in words,
    with its interval (ratio_text's, as the tables print it) and how sure it is."""
    if not c["rounds"]:
        return (f"no round in which it and {other}{f' ({role})' if role else ''} both ran ok, "
                "so no paired ratio")
    ratio = f"{ratio_text(c['ratio'], c['lo'], c['hi'])} the time of {other}"
    ratio += f", {role}" if role else ""
    rounds = plural(c["rounds"], "round")
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


def told(e: dict) -> str:
    """A verdict's sentences on its fastest (`disagreed`'s or `agreed`'s)."""
    return disagreed(e) if e["medians_and_rounds_disagree"] else agreed(e)


def phrase(e: dict) -> str:
    """One condition's verdict in a sentence or two (without the condition's name)."""
    text = told(e)
    if e["faster_unverified"]:
        text += (" Faster, but sent no checksum (unverified): "
                 + ", ".join(e["faster_unverified"]) + ".")
    return text


def map_own_md(e: dict) -> str:
    """The condition's second question (`map_or_own`'s) in the report's words: each half's
    verdict, or that the condition has none of it; the owning one against the mapping one;
    the strategies in neither for want of flags. "" for a verdict without it, or without a
    loadbench strategy (commands have no flags)."""
    if not e.get("flags_recorded") and not e.get("unflagged"):
        return ""
    if not e["flags_recorded"]:
        return ("cannot tell which strategies map the file and which copy it: none of them "
                "recorded its flags (`strategy_flags`; folders from before flags have none).")
    parts = [f"{title}: {told(e[key])}" if e[key] else none
             for key, _, _, title, none in HALVES]
    c = e["own_vs_map"]
    if c:
        parts.append(f"Owning against mapping: {c['own']} took "
                     f"{against(c, c['map'], 'the fastest to map')}.")
    elif e["to_map"] and e["to_own"]:
        parts.append("No paired ratio of owning to mapping: "
                     + " and ".join(words for key, _, words, _, _ in HALVES
                                    if e[key]["medians_and_rounds_disagree"])
                     + " names no fastest.")
    if e["unflagged"]:
        parts.append("In neither, no flags recorded: " + ", ".join(e["unflagged"]) + ".")
    return " ".join(parts)


def brief_half(h: dict) -> str:
    """A half's fastest and its median in a few words, or the two it cannot tell apart."""
    if not h["medians_and_rounds_disagree"]:
        return f"{h['fastest']} {h['median_s']:.3f} s"
    f = h["faster_in_rounds"]
    how = "the medians and the rounds disagree" if f["sure"] else "not told apart"
    return f"{h['fastest']} or {f['strategy']} ({how})"


def map_own_line(e: dict) -> str:
    """The second question in one line for `lines`: the halves there are (none: ""), then the
    owning one's paired ratio to the mapping one."""
    parts = [f"{words}: {brief_half(e[key])}" for key, _, words, _, _ in HALVES if e.get(key)]
    c = e.get("own_vs_map")
    if c:
        parts[-1] += ", " + against(c, c["map"], "")
    return "; ".join(parts)


def caveats(verdicts) -> list[tuple[str, str]]:
    """The caveats of the (condition, verdict) pairs, each with its condition."""
    return [(cond, caveat) for cond, e in verdicts for caveat in e["caveats"]]


def _sentences(cond: str, e: dict) -> list[str]:
    """A condition's sentence and its map-or-own line where it has one (`lines`' default)."""
    both = map_own_line(e)
    return [f"{cond}: {phrase(e)}"] + ([f"{cond}: {both}"] if both else [])


def lines(summary: dict, most: int = 3, per_condition=_sentences,
          caveat=lambda text: text) -> list[str]:
    """summary.json's verdict as plain-text lines: `per_condition(cond, verdict)`'s for each
    condition, at most `most` (the last then says how many more the report has; by default a
    sentence and its map-or-own line, `map_own_line`), then the caveats of the conditions shown,
    each as `caveat(text)` gives it (whole by default)."""
    verdicts = list((summary.get("verdict") or {}).items())
    if not verdicts:
        return ["no verdict: no ok run of a strategy"]
    shown = verdicts if len(verdicts) <= most else verdicts[:most - 1]
    out = [line for cond, e in shown for line in per_condition(cond, e)]
    if len(shown) < len(verdicts):
        out.append(f"... and {len(verdicts) - len(shown)} more conditions: see the report")
    return out + [f"{cond}: {caveat(text)}" for cond, text in caveats(shown)]


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
    """The verdict (summarize's) as the report's list, one item per condition, each followed
    by one on its map-or-own question (`map_own_md`), then one per caveat."""
    if not verdicts:
        return "No verdict: no ok run of a strategy."
    items = []
    for cond, e in verdicts.items():
        both = map_own_md(e)
        items += [f"- **{cond}**: {phrase(e)}"] + (
            [f"- **{cond}, to map or to own**: {both}"] if both else [])
    return "\n".join(items + [f"- **{cond}**: {caveat}"
                              for cond, caveat in caveats(verdicts.items())])


def unverified_count(r: Results) -> str:
    """How many of the ok runs count unverified, as a phrase after "N ok" ("" when none)."""
    n = int((~r.ok["verified"]).sum())
    return f" ({n} of them {UNVERIFIED_MARK}: commands that sent no checksum)" if n else ""


def opening_md(r: Results, folder: str, verdicts: dict, no_rounds: str,
               figs: Figures) -> list[str]:
    """The report's opening under *Verdict*: the verdict, how long the experiment took and
    what counted, and the time figure."""
    ceilings = f" and {len(r.ceiling)} ceiling reads (see *Noise*)" if len(r.ceiling) else ""
    link = len(r.link_ceiling) + len(r.server_ceiling)  # kept apart as the ceiling reads are
    ceilings += f" and {link} link and server ceilings (see *{remote.TITLE}*)" if link else ""
    counted = (f"{took(r)} {len(r.runs)} runs in `{folder}`{ceilings}: {len(r.ok)} ok"
               f"{unverified_count(r)}, {len(r.runs) - len(r.ok)} left out (below). Figures "
               "are medians of the ok runs with their exact 95% intervals (none for fewer than "
               "6 runs)" + ("." if no_rounds else "; the time ratios are paired, round by round, "
                            "against a baseline (below each table's heading)."))
    return [section_md(verdicts), counted.lstrip(), figs.md("time")]


class Verdict(Section):
    """The verdict first, then how long the experiment took and what counted, and the time
    figure; summary.json's `verdict`, and `groups`, the table it was drawn from."""

    title = "Verdict"

    def shown(self) -> bool:
        if not hasattr(self, "verdicts"):
            self.verdicts = summarize(self.ctx.results, self.ctx.table)
        return True

    def figures(self) -> None:
        if len(self.ctx.table):
            plot_times(self.ctx.table, self.ctx.figs)

    def markdown(self) -> str:
        c = self.ctx
        parts = opening_md(c.results, c.folder, self.verdicts, c.no_rounds, c.figs)
        return "\n\n".join(p for p in parts if p)

    def summary(self) -> dict:
        # NaN (no baseline to compare with) and the unbounded intervals' infinities as null.
        groups = self.ctx.table.drop(columns=["major_faults", "cause_shares"], errors="ignore")
        return {"verdict": self.verdicts, "groups": records(groups)}
