"""Many readers: runs in which several readers load one model at once (`procs` = N workers on
one machine, or N ranks of an MPI job across hosts), each its own record, each reading its part
of the model by the run's read pattern (`pattern`: replicated, tp, tp:DIM, pp, files).

A *round* of such a run is the records of one (file, cache, strategy spec, rep, procs, pattern,
memory limit, link, fabric: a cluster's [cluster] rates, storage: the one the tool made for
it): one per reader. Its figures are MLPerf
Storage's: the round lasts from its first reader's start to its last reader's end
(`duration_s`; readers are released together from a start barrier and record
`load_start_unix_s`: records without it give the largest wall_s), and `start_spread_s` says
how far apart the readers started; its throughput is every byte the readers delivered (their
tensor_bytes summed) over that time (`gb_per_s`); its `spread` is the slowest reader's wall_s
over the median reader's. A round with a reader that does not count (a status other than ok, or
bytes not verified: results.load's rule) or without a record of some reader has none of the
three, and its `reason` names the reader and why; its other readers stay in the per-reader
table (`readers`). A single reader's runs are rounds of one reader, the reference the
many-reader rounds are set against (`vs_single`, of the same link and fabric).

The bytes of a round add up when the pattern says they should (`bytes_check`): replicated
delivers the model N times, every other pattern each tensor byte once over all readers. The
model's bytes are a single reader's tensor_bytes (an ok record of the file with procs 1), else
env.json's `tensor_bytes` of the file; file_bytes is never used, since it counts the headers.
"""

from __future__ import annotations


import matplotlib.pyplot as plt
import pandas as pd

from analysis.core.labels import condition
from analysis.core.results import REPLICATED, Results, UNVERIFIED

# The records of one round: one per reader (link and fabric: results.load's, "" without one;
# a cluster experiment resumed under other rates reuses the reps).
ROUND = ["file", "cache", "strategy_spec", "rep", "procs", "pattern", "memory_limit_bytes",
         "link", "fabric", "storage"]
# The rounds one summary row pools: every round of one number of readers and one pattern.
SERIES = ["file", "cache", "strategy_spec", "pattern", "procs", "memory_limit_bytes", "link",
          "fabric", "storage"]
# What a series shares with its single-reader reference (same memory limit, link, fabric and
# storage: never pooled).
REFERENCE = ["file", "cache", "strategy_spec", "memory_limit_bytes", "link", "fabric",
             "storage"]
READER_COLUMNS = ROUND + ["proc", "host", "rank", "run_id", "status", "error", "counted",
                          "checksum_ok", "wall_s", "load_start_unix_s", "tensor_bytes"]
ROUND_COLUMNS = ROUND + ["readers", "ok_readers", "duration_s", "start_spread_s", "gb_per_s",
                         "spread", "bytes", "bytes_check", "reason"]
SUMMARY_COLUMNS = SERIES + ["rounds", "failed_rounds", "duration_s", "start_spread_s",
                             "gb_per_s", "spread",
                            "vs_single", "bytes_check"]


def _field(runs: pd.DataFrame, name: str) -> pd.Series:
    """The column, or nulls where no record has it."""
    return runs[name] if name in runs else pd.Series(None, index=runs.index, dtype=object)


def shown(results: Results) -> bool:
    """Whether a report needs the section: some run had several readers (procs above 1, or a
    record of an MPI job, `ranks`)."""
    runs = results.runs
    return bool((runs["procs"] > 1).any() or _field(runs, "ranks").notna().any())


def readers(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per reader of a load (results.load's `runs`: ceiling reads are not among them),
    every status: ROUND, proc (0 for a single reader), host and rank (null where not under
    MPI), run_id, status, error, counted (it is one of results.load's ok runs), checksum_ok,
    wall_s, load_start_unix_s and tensor_bytes (null where not recorded), in file order."""
    return runs.assign(
        proc=_field(runs, "proc").fillna(0).astype("int64"),
        **{c: _field(runs, c) for c in ("host", "rank", "checksum_ok")},
        **{c: pd.to_numeric(_field(runs, c), errors="coerce")
           for c in ("wall_s", "load_start_unix_s", "tensor_bytes")},
    )[READER_COLUMNS].reset_index(drop=True)


def model_bytes(reader_table: pd.DataFrame, env: dict | None = None) -> dict[str, int]:
    """file -> its model's tensor bytes: those of an ok single-reader record of the file
    (`readers`' table), else env.json's (`file`, `files`); a file with neither is left out."""
    out = {}
    for entry in [(env or {}).get("file")] + list((env or {}).get("files") or []):
        if isinstance(entry, dict) and isinstance(entry.get("tensor_bytes"), int):
            out[entry.get("path")] = entry["tensor_bytes"]
    t = reader_table
    single = t[t["counted"] & (t["procs"] == 1) & t["tensor_bytes"].notna()]
    for file, group in single.groupby("file", sort=False):
        out[file] = int(group["tensor_bytes"].iloc[0])
    return out


def expected_bytes(pattern: str, procs: int, model: int) -> int:
    """The bytes all readers of a round deliver together: the model once per reader when each
    loads all of it (replicated), else once."""
    return procs * model if pattern == REPLICATED else model


def bytes_check(got: float | None, pattern: str, procs: int, model: int | None) -> str:
    """"ok", "differs: GOT vs EXPECTED" (bytes), or "unknown" without the model's bytes or the
    round's."""
    if model is None or got is None or pd.isna(got):
        return "unknown"
    expected = expected_bytes(pattern, procs, model)
    return "ok" if int(got) == expected else f"differs: {int(got)} vs {expected}"


def who(reader: pd.Series) -> str:
    """A reader in words: `reader P`, with its host and rank where it ran under MPI."""
    where = [f"host {reader['host']}"] if pd.notna(reader["host"]) else []
    where += [f"rank {int(reader['rank'])}"] if pd.notna(reader["rank"]) else []
    return f"reader {reader['proc']}" + (f" ({', '.join(where)})" if where else "")


def why_not(reader: pd.Series) -> str:
    """Why a reader does not count: its status and error, or that its ok bytes were not
    verified."""
    if reader["status"] == "ok":
        return f"{who(reader)}: {UNVERIFIED} (checksum_ok {reader['checksum_ok']})"
    return f"{who(reader)}: {reader['status']}: {reader['error']}"


def duration(group: pd.DataFrame) -> tuple[float, float | None]:
    """(duration_s, start_spread_s) of readers that all counted: from the first start to the
    last end when every one recorded its start (`load_start_unix_s`), else the largest wall_s
    with no spread."""
    wall = group["wall_s"].astype(float)
    start = pd.to_numeric(_field(group, "load_start_unix_s"), errors="coerce")
    if start.isna().any():
        return float(wall.max()), None
    return float((start + wall).max() - start.min()), float(start.max() - start.min())


def problems(row: dict, group: pd.DataFrame) -> list[str]:
    """Why a round of `row["procs"]` readers has no duration: each reader that does not count
    (results.load's rule: ok, verified or an exec command's, with a time) and each reader
    without a record; empty when it is whole."""
    out = [why_not(r) for _, r in group[~group["counted"]].iterrows()]
    seen = set(_field(group, "proc").fillna(0).astype("int64"))
    return out + [f"reader {p}: no record" for p in sorted(set(range(row["procs"])) - seen)]


def _round(key: tuple, group: pd.DataFrame, model: int | None) -> dict:
    """One round's row (see the module's docstring)."""
    row = dict(zip(ROUND, key))
    ok = group[group["counted"]]
    delivered = ok["tensor_bytes"].sum(min_count=len(ok)) if len(ok) else None
    missing = problems(row, group)
    row.update(readers=len(group), ok_readers=len(ok), bytes=delivered, duration_s=None,
               start_spread_s=None, gb_per_s=None, spread=None, bytes_check=None,
               reason="; ".join(missing) or None)
    if missing:
        return row
    took, start_spread = duration(ok)
    row.update(duration_s=took, start_spread_s=start_spread,
               spread=float(ok["wall_s"].max()) / float(ok["wall_s"].median()),
               gb_per_s=None if pd.isna(delivered) else delivered / took / 1e9,
               bytes_check=bytes_check(delivered, row["pattern"], row["procs"], model))
    return row


def rounds(runs: pd.DataFrame, env: dict | None = None) -> pd.DataFrame:
    """One row per round (results.load's `runs`; `env`: env.json, for the model's bytes where
    no single reader recorded them): ROUND, readers (records), ok_readers, duration_s,
    gb_per_s, spread, bytes (the ok readers' tensor_bytes summed: a failed round's are only
    theirs), bytes_check (null for a failed round), reason (null when every reader counted).
    """
    table = readers(runs)
    model = model_bytes(table, env)
    rows = [_round(key, group, model.get(key[0]))
            for key, group in table.groupby(ROUND, sort=False, dropna=False)]
    return pd.DataFrame(rows, columns=ROUND_COLUMNS)


def _checks(values: pd.Series) -> str:
    """A series' bytes check from its complete rounds': ok when all are, else the distinct
    others; unknown without a complete round."""
    found = list(dict.fromkeys(values.dropna()))
    if not found:
        return "unknown"
    return "; ".join(c for c in found if c != "ok") or "ok"


def summarize(rounds_table: pd.DataFrame) -> pd.DataFrame:
    """One row per SERIES of the (file, cache, strategy spec, memory limit) that have rounds of
    several readers, their single-reader series included: rounds, failed_rounds (no
    duration), the medians of duration_s, gb_per_s and spread over the complete rounds, vs_single
    (that median duration over the single-reader series'; null without one) and bytes_check."""
    many = rounds_table.loc[rounds_table["procs"] > 1, REFERENCE].drop_duplicates()
    table = rounds_table.merge(many, on=REFERENCE)
    rows = []
    for key, group in table.groupby(SERIES, sort=False):
        done = group[group["duration_s"].notna()]
        rows.append({**dict(zip(SERIES, key)), "rounds": len(group),
                     "failed_rounds": len(group) - len(done),
                     **{c: float(done[c].median()) if len(done) and done[c].notna().any()
                        else None
                        for c in ("duration_s", "start_spread_s", "gb_per_s", "spread")},
                     "bytes_check": _checks(done["bytes_check"])})
    out = pd.DataFrame(rows, columns=SUMMARY_COLUMNS)
    single = out[out["procs"] == 1].set_index(REFERENCE)["duration_s"]
    reference = [single.get(tuple(r[REFERENCE])) for _, r in out.iterrows()]
    out["vs_single"] = [None if pd.isna(d) or base is None or pd.isna(base) else d / base
                        for d, base in zip(out["duration_s"], reference)]
    # The single reader first, then each pattern by its number of readers.
    order = out.assign(many=out["procs"] > 1).sort_values(REFERENCE + ["many", "pattern", "procs"],
                                                          kind="stable")
    return order.drop(columns="many").reset_index(drop=True)


def figure_title(key: dict, files: int) -> str:
    """A figure's (file, cache, strategy spec, memory limit, link or fabric) in words."""
    return condition(key, files, f"{key['strategy_spec']}, {key['cache']} cache")


def readers_axis(ax, counts: list[int]) -> None:
    """An x axis of reader counts: log 2, a tick at each count, room either side; y from 0."""
    ax.set_xscale("log", base=2)
    ax.set_xticks(counts, [str(n) for n in counts])
    ax.minorticks_off()
    ax.set_xlim(counts[0] / 1.4, counts[-1] * 1.4)
    ax.set_ylim(0, ax.get_ylim()[1] * 1.1)
    ax.set_xlabel("readers (log)")


def plot(reader_table: pd.DataFrame, summary_table: pd.DataFrame, figs) -> list[tuple[str, str]]:
    """Per (file, cache, strategy spec, memory limit, link, fabric) with rounds of several
    readers, a figure of two panels against the number of readers, one line per pattern: the
    median round duration with every ok reader's own wall_s as dots beside it, and the median
    GB/s of all readers together; each with the single reader's median as a dashed line. Saved
    by `figs` (report.Figures), shown in the section; returns their (name, caption)."""
    files = summary_table["file"].nunique()
    out = []
    for i, (key, series) in enumerate(summary_table.groupby(REFERENCE, sort=False)):
        key = dict(zip(REFERENCE, key))
        many = series[series["procs"] > 1]
        single = series[series["procs"] == 1]
        same = (reader_table[REFERENCE] == pd.Series(key)).all(axis=1)
        dots = reader_table[same & reader_table["counted"] & (reader_table["procs"] > 1)]
        fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
        for j, (pattern, s) in enumerate(many.groupby("pattern", sort=False)):
            s = s.sort_values("procs")
            line, = left.plot(s["procs"], s["duration_s"].astype(float), marker="o",
                              label=pattern)
            right.plot(s["procs"], s["gb_per_s"].astype(float), marker="o", label=pattern,
                       color=line.get_color())
            d = dots[dots["pattern"] == pattern]
            left.scatter(d["procs"] * (1 + 0.04 * (j + 1)), d["wall_s"], s=6, alpha=0.5,
                         color=line.get_color())
        counts = sorted(set(many["procs"]) | set(single["procs"]))
        for ax, column in ((left, "duration_s"), (right, "gb_per_s")):
            base = single[column].dropna()
            if len(base):
                ax.axhline(float(base.iloc[0]), linestyle="--", color="grey",
                           label="one reader")
            readers_axis(ax, counts)
            ax.legend(fontsize=7)
        left.set_ylabel("round duration, median (s)")
        right.set_ylabel("all readers' bytes / duration, median (GB/s)")
        fig.suptitle(figure_title(key, files), fontsize=10)
        name = f"readers-{i}-{key['cache']}"
        caption = (f"Many readers, {figure_title(key, files)}: per read pattern, the median "
                   "duration of a round (its slowest reader; dots: every ok reader's own time) "
                   "and its throughput (every reader's bytes over that duration), against the "
                   "number of readers; dashed: a single reader's median.")
        figs.save(fig, name, caption)
        out.append((name, caption))
    return out
