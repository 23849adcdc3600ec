"""What a copy's first touches of its own memory cost, and which runs got huge pages.

A strategy that copies the model into buffers of its own (its record's `strategy_flags` hold
`allocates`) touches each page of them for the first time during the load, and each first touch
is a minor page fault: the kernel takes a page, zeroes it and maps it (on a VM the host may
back it first). The probe prices one (env.json `probe.ceilings`): `anon_4k_fault`'s
`us_per_fault` for a 4 KiB page and `thp_fault`'s for a 2 MiB transparent huge page (each
the median of its repetitions). Per group (results.GROUP) of such a strategy, in host memory
(no flag `device`), `first_touches` adds to the summary table:

- `first_touches`: the load's minor faults (the table's `minor_faults`: the median of
  `load_minor_faults`, else of the whole worker's `minor_faults`), or, where the group's memory
  came in huge pages (its median `anon_huge_bytes` at least half the bytes one run delivers,
  `first_touch_huge`), its huge pages: that median over 2 MiB;
- `first_touch_us`: the probe's µs per fault of that page size; `first_touch_s`: the product;
- where the probe carries a memory fill rate (`memory_fill`'s `gb_per_s`): `fill_bytes` (the
  bytes one run delivers), `fill_gb_per_s` and `fill_s`, the time to write them at that rate;
- where the group was profiled (causes.summarize's row): `profile_first_touch_s`, the mean
  seconds of its FIRST_TOUCH causes; `profile_first_touch_se_s`, their standard error; and
  `profile_agrees`, whether first_touch_s lies within AGREE standard errors of them.

causes.py states no error for its seconds; the one here is derived. A cause's samples in a run
are a count n, whose standard error is taken as a Poisson count's, sqrt(n) / hz in seconds (the
binomial error of a share of a fixed number of samples is smaller); over the group's k profiled
runs, sampled at hz (the lowest rate among them, which errs wide), the mean s of the causes'
seconds holds N = s hz k samples, and its standard error is sqrt(max(N, 1)) / (hz k): a count of
none still has about one sample's error. Only the profile's sampling error counts: the probe's
figure carries none here, and a VM's host time that the guest does not see lands in the copy,
not in a fault (see report.where_intro), so a disagreement says the first touches cost the load
otherwise than the probe, or show elsewhere in the profile, not which.

A group of a folder without flags gets none of this: nothing says which strategies copy
(`untold` says so, once). A group whose probe figure is missing gets none either.

`split` tells runs that got huge pages from runs that did not: a strategy given
`buffer=thp` gets them only when the kernel grants them, and its time then differs by several
times. Per group whose ok runs with an `anon_huge_bytes` are of both kinds (at least half the
bytes one run delivers, or not): each part's runs (reps, run ids), count and median time, and
whether their times overlap (`huge_page_split`; `split_md` for the report).
"""

from __future__ import annotations

import math

import pandas as pd

from analysis.core.ratios import number
from analysis.core.results import ALLOCATES, DEVICE, EXEC, GROUP, Results, has_flag
from analysis.core.units import size_text
from analysis.stats import aggregates as stats, causes

# The causes of a first touch, of causes.CAUSES: the exception and the hypervisor's time where
# the guest sees it, the zeroing, the fault's own work and the page's allocation.
FIRST_TOUCH = ["hypervisor and exception entry", "page zeroing", "page-fault handling",
               "page allocation and freeing"]
AGREE = 2  # standard errors within which the probe's figure and the profile's agree
SMALL_PAGE = 4096
HUGE_PAGE = 2 << 20
COLUMNS = ["first_touches", "first_touch_huge", "first_touch_us", "first_touch_s", "fill_bytes",
           "fill_gb_per_s", "fill_s", "profile_first_touch_s", "profile_first_touch_se_s",
           "profile_agrees"]


def probe_figure(env: dict, key: str, field: str) -> float | None:
    """The probe's `field` of ceiling `key` (env.json probe.ceilings), None where it has none
    above 0."""
    value = (((env.get("probe") or {}).get("ceilings") or {}).get(key) or {}).get(field)
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0
    return float(value) if ok else None


def copies(row) -> bool:
    """Whether a summary row's strategy copies into host memory of its own."""
    flags = row.get("strategy_flags")
    return has_flag(flags, ALLOCATES) and not has_flag(flags, DEVICE)


def delivered(group: pd.DataFrame) -> float:
    """The bytes one run of the group delivers (stats.reader_bytes); NaN where unknown."""
    known = pd.to_numeric(group["file_bytes"], errors="coerce").dropna()
    return stats.reader_bytes(group, float(known.iloc[0]) if len(known) else math.nan)


def profile_check(row: pd.Series, hz: float, seconds: float) -> dict:
    """The profile's side for a group's causes.summarize `row`, sampled at `hz` (the lowest
    rate of its runs): its first-touch seconds, their standard error (the module's docstring)
    and whether `seconds` agree with them."""
    k = int(row["n"])
    mean = float(row[FIRST_TOUCH].sum())
    se = math.sqrt(max(mean * hz * k, 1.0)) / (hz * k)
    return {"profile_first_touch_s": mean, "profile_first_touch_se_s": se,
            "profile_agrees": bool(abs(seconds - mean) <= AGREE * se)}


def pages(minor_faults: float, huge_bytes: float, size: float) -> tuple[float, bool]:
    """A copy's first touches and whether they were of huge pages: its huge pages (huge_bytes /
    2 MiB) where at least half its `size` bytes came in them, else its minor faults (4 KiB
    pages). NaN compares false: without huge_bytes, 4 KiB pages."""
    huge = bool(huge_bytes >= size / 2)
    return (huge_bytes / HUGE_PAGE if huge else minor_faults), huge


def attribution(row: pd.Series, group: pd.DataFrame, env: dict) -> dict:
    """One copying group's figures (the module's docstring) without the profile's; {} where the
    probe has no figure for its page size."""
    size = delivered(group)
    huge_bytes = stats.median_of(group["anon_huge_bytes"])
    touches, huge = pages(row["minor_faults"], huge_bytes, size)
    us = probe_figure(env, "thp_fault" if huge else "anon_4k_fault", "us_per_fault")
    if us is None or pd.isna(touches):
        return {}
    out = {"first_touches": float(touches), "first_touch_huge": huge, "first_touch_us": us,
           "first_touch_s": float(touches) * us / 1e6}
    fill = probe_figure(env, "memory_fill", "gb_per_s")
    if fill is not None and size > 0:
        out.update(fill_bytes=size, fill_gb_per_s=fill, fill_s=size / fill / 1e9)
    return out


def first_touches(table: pd.DataFrame, r: Results,
                  profiled: pd.DataFrame | None = None) -> pd.DataFrame:
    """The summary table with COLUMNS (NaN where a row has none: it does not copy, or the probe
    or a profile has no figure) and `huge_page_split` (`split`'s, None for most groups);
    `profiled` is causes.summarize's table, when the caller has it."""
    table = table.assign(**{c: math.nan for c in COLUMNS}, huge_page_split=None)
    if table.empty:
        return table
    table = table.astype({c: object for c in COLUMNS + ["huge_page_split"]})
    groups = dict(iter(r.ok.groupby(GROUP, sort=False)))
    profiles = {} if profiled is None else {tuple(p[GROUP]): p for _, p in profiled.iterrows()}
    rates = ({key: float(g["hz"].min()) for key, g in causes.profiled(r).groupby(GROUP)}
             if profiles else {})
    for i, row in table.iterrows():
        key = tuple(row[GROUP])
        table.at[i, "huge_page_split"] = split(groups[key])
        figures = attribution(row, groups[key], r.env) if copies(row) else {}
        if figures and key in profiles:
            figures.update(profile_check(profiles[key], rates[key], figures["first_touch_s"]))
        for column, value in figures.items():
            table.at[i, column] = value
    return table


def part(runs: pd.DataFrame) -> dict:
    """One side of a split: its runs' count, median time, reps (None where a run has none) and
    run ids, in file order."""
    reps = pd.to_numeric(runs["rep"], errors="coerce")
    return {"n": len(runs), "median_s": float(runs["wall_s"].median()),
            "reps": [int(x) for x in reps] if reps.notna().all() else None,
            "run_ids": [str(x) for x in runs["run_id"]]}


def split(group: pd.DataFrame) -> dict | None:
    """A group's ok runs told apart by whether they got huge pages (the module's docstring):
    `huge` and `not_huge` (`part`'s), `unknown` (runs without anon_huge_bytes) and `overlap`
    (whether the two parts' times overlap); None where the runs are all of one kind."""
    got = pd.to_numeric(group["anon_huge_bytes"], errors="coerce")
    known = group[got.notna()]
    huge = (got[got.notna()] >= delivered(group) / 2).to_numpy()
    if huge.all() or not huge.any():
        return None
    fast, slow = known[huge]["wall_s"], known[~huge]["wall_s"]
    return {"huge": part(known[huge]), "not_huge": part(known[~huge]),
            "unknown": int(got.isna().sum()),
            "overlap": bool(fast.max() >= slow.min() and slow.max() >= fast.min())}


def runs_text(p: dict) -> str:
    if p["reps"] is not None:
        return ("rep " if len(p["reps"]) == 1 else "reps ") + ", ".join(map(str, p["reps"]))
    return ("run " if p["n"] == 1 else "runs ") + ", ".join(p["run_ids"])


def split_text(s: dict) -> str:
    """A split in words: how many runs of each kind, their median times and which they were."""
    h, n = s["huge"], s["not_huge"]
    text = (f"{h['n']} of {h['n'] + n['n']} runs got huge pages (median {h['median_s']:.3f} s; "
            f"{runs_text(h)}), {n['n']} did not (median {n['median_s']:.3f} s; {runs_text(n)})")
    text += f", {s['unknown']} did not record it" if s["unknown"] else ""
    return text + (": their times overlap" if s["overlap"] else
                   ": their times do not overlap, so the split, not the strategy, is the spread")


def split_md(table: pd.DataFrame, cache: str, name) -> str:
    """The note on the cache state's groups whose runs got huge pages in part (`name(row)`: the
    row's name); "" where there are none."""
    t = table[(table["cache"] == cache) & table["huge_page_split"].notna()] \
        if "huge_page_split" in table else table.iloc[0:0]
    lines = [f"- {name(r)}: {split_text(r['huge_page_split'])}." for _, r in t.iterrows()]
    return ("Huge pages in some runs and not others (a run got them when its memory in "
            "transparent huge pages at the end of the load, `anon_huge_bytes`, was at least "
            "half the bytes it loaded; the row's figures are of all its runs):\n\n"
            + "\n".join(lines)) if lines else ""


def seconds_text(x: float) -> str:
    """Seconds for the why cell: one decimal from 1 s up, else results.number's digits."""
    return f"{x:.1f}" if x >= 1 else number(x)


def us_text(x: float) -> str:
    return f"{x:.0f}" if x >= 100 else f"{x:.1f}" if x >= 10 else f"{x:.2f}"


def why(row: pd.Series) -> str:
    """A copying row's why cell from its first-touch figures: `524,636 first touches × 10.9 µs
    = 5.7 s of 5.8 s`, the fill where there is one, the profile's side where there is one; ""
    for a row without them."""
    s = row.get("first_touch_s")
    if s is None or pd.isna(s):
        return ""
    kind = "huge-page first touches" if row["first_touch_huge"] else "first touches"
    text = (f"{row['first_touches']:,.0f} {kind} × {us_text(row['first_touch_us'])} µs = "
            f"{seconds_text(s)} s of {seconds_text(row['median_s'])} s")
    if not pd.isna(row.get("fill_s")):
        text += (f", + filling {size_text(row['fill_bytes'])} at "
                 f"{row['fill_gb_per_s']:.1f} GB/s = {seconds_text(row['fill_s'])} s")
    p = row.get("profile_first_touch_s")
    if p is not None and not pd.isna(p):
        text += (f"; profile: {seconds_text(p)} ± "
                 f"{seconds_text(AGREE * row['profile_first_touch_se_s'])} s in first-touch "
                 f"causes, {'agrees' if row['profile_agrees'] else 'does not agree'}")
    return text


NOTE = ("*Why*, for a strategy that copies into memory of its own (flag `allocates`): its first "
        "touches of that memory priced by the probe, the load's minor faults (each the first "
        "touch of a fresh 4 KiB page) × the probe's µs per such fault (`anon_4k_fault`), or, "
        "where its memory came in huge pages (`anon_huge_bytes` at least half its bytes), its "
        "huge pages (`anon_huge_bytes` / 2 MiB) × the probe's µs per huge-page fault "
        "(`thp_fault`), against its median time (the faults' seconds are CPU time, which "
        "several threads share, so they can pass it); + the time to write its bytes at the "
        "probe's memory fill rate, where the probe has one; with a profile, its mean seconds "
        f"in the first-touch causes ({', '.join(FIRST_TOUCH)}) ± {AGREE} standard errors of "
        "their samples, and whether the probe's figure lies within them.")


def legend(t: pd.DataFrame) -> str:
    """NOTE where a row of the table has first-touch figures, else ""."""
    has = "first_touch_s" in t and t["first_touch_s"].notna().any()
    return NOTE if has else ""


def untold(r: Results, table: pd.DataFrame) -> str:
    """One sentence where the why cells price no first touch for want of what they need: no
    strategy recorded its flags, or the copying ones have no probe figure; "" otherwise."""
    if table.empty or "strategy_flags" not in table:
        return ""
    loadbench = table[table["strategy"] != EXEC]
    if len(loadbench) and loadbench["strategy_flags"].isna().all():
        return ("No run recorded its strategy's flags (`strategy_flags`; folders from before "
                "flags have none), so which strategies copy the model into memory of their "
                "own cannot be told, and *why* prices no first touches.")
    copying = [copies(row) for _, row in loadbench.iterrows()]
    if any(copying) and probe_figure(r.env, "anon_4k_fault", "us_per_fault") is None:
        return ("The probe priced no first touch of a 4 KiB page (env.json has no "
                "`probe.ceilings.anon_4k_fault.us_per_fault`), so *why* prices none.")
    return ""
