"""The machines report's rows (analysis/pages/machines.py's docstring says what each figure
means): folders pooled by machine and tuned state (a machine's storages, its variants), each run's value, each row's median, share
of its machine's limit and rank per shared workload, the order flips between machines with each
machine's paired interval, the model's prediction of every row and its error per family."""

from __future__ import annotations

import itertools
import math
import os
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.core.results import CONDITION, Results, load
from analysis.models import load as model, machine_figures as mf
from analysis.stats import aggregates as stats, paired, readers, remote, storage


# What the folders' rows may share (the module's docstring, Workloads), as the pages name it.
# A workload (analysis/pages/machines.py's docstring): the file by its name and size, the cache state, the
# readers, the memory limit, and the network the runs crossed (a link, a cluster's fabric).
WORKLOAD = ["file_name", "file_bytes", "cache", "procs", "pattern", "memory_limit_bytes", "link",
            "fabric"]


ROW = WORKLOAD + ["strategy_spec", "role"]


@dataclass(eq=False)
class Machine:
    label: str
    runs: list[Results]      # its folders' results, pooled
    figures: mf.Figures
    facts: dict[str, str]
    values: pd.DataFrame     # one row per counted run: ROW, round (None: in no round), wall_s
    table: pd.DataFrame      # one row per ROW: median, share, rank, the model's
    # ROW -> the status of its runs where none counted (unsupported, failed, invalid, ...).
    left_out: dict
    # A storage variant's storage ("" for the data folder as it is); None for a machine whose
    # folders have no storage axis.
    storage: str | None = None


def _with_workload(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.assign(file_name=frame["file"].map(lambda f: os.path.basename(str(f).rstrip("/"))))


def run_values(r: Results, index: int) -> pd.DataFrame:
    """One row per counted run of folder `index`: ROW, `round` ("index:rep", None for a run in
    no round) and wall_s (several readers: paired.run_values' duration)."""
    rounds = paired.run_values(r)
    rounds = rounds.assign(round=[f"{index}:{rep}" for rep in rounds["rep"]])
    ok = r.ok
    loose = ok[(ok["procs"] == 1) & ~paired.in_rounds(ok, r.env)].assign(round=None)
    columns = CONDITION + ["file_bytes", "strategy_spec", "role", "round", "wall_s"]
    frame = pd.concat([rounds[columns], loose[columns]], ignore_index=True)
    return _with_workload(frame.assign(wall_s=frame["wall_s"].astype(float)))


def counts(ok: pd.DataFrame) -> pd.DataFrame:
    """Per ROW, what the model reads of the runs: flags, consumer, remote, bytes (one reader
    delivers: the model is one reader's), the load's minor faults, huge page bytes and storage
    reads (medians), its params (which say its read requests) and the device counters it is
    checked against (medians, NaN where not recorded); and run_bytes, what a run's readers deliver together, which its share of
    the limit is of: the file's bytes, by analysis/stats/readers.py's rule for a round (once per
    reader where each loads it all, replicated, as a fleet's nodes do; once where the pattern
    splits it)."""
    rows = []
    for key, g in _with_workload(ok).groupby(ROW, sort=False, dropna=False):
        file_bytes = stats.median_of(g["file_bytes"])
        use = next((u for u in g["use"] if isinstance(u, dict)), {}) if "use" in g else {}
        params = next((u for u in g["params"] if isinstance(u, dict)), {}) \
            if "params" in g else {}
        rows.append({**dict(zip(ROW, key)), "params": params,
                     **{c: stats.median_of(g.get(c)) for c in storage.COUNTERS},
                     "strategy_flags": next(iter(g["strategy_flags"].dropna()), None),
                     "consume": use.get("consume") if isinstance(use.get("consume"), str) else None,
                     "buffer": params.get("buffer") if isinstance(params.get("buffer"), str)
                     else None,
                     "remote": bool(remote.is_remote(g).any()),
                     "timed": g["timed"].iloc[0], "verified": bool(g["verified"].all()),
                     "bytes": stats.reader_bytes(g, file_bytes),
                     "run_bytes": readers.expected_bytes(g["pattern"].iloc[0],
                                                         int(g["procs"].iloc[0]), file_bytes),
                     "minor_faults": stats.median_of(stats.load_or_process(g, "minor_faults")),
                     "anon_huge_bytes": stats.median_of(g.get("anon_huge_bytes")),
                     "read_bytes": stats.median_of(g.get("read_bytes"))})
    return pd.DataFrame(rows, columns=ROW + ["strategy_flags", "consume", "buffer", "remote",
                                             "timed",
                                             "verified", "bytes", "run_bytes",
                                             "minor_faults", "anon_huge_bytes", "read_bytes",
                                             "params", *storage.COUNTERS])


def limit(row, figures: mf.Figures) -> tuple[str, float | None]:
    """The machine's limit for the row: (what it is, GB/s or None): the link's ceiling through
    a server; the device where its bytes came from storage, as the model prices them (cold, or
    warm and read with O_DIRECT all the same: model.reads_storage); else a read() from the page
    cache."""
    if row["remote"]:
        return f"link {row['link'] or 'unshaped'}", model.positive(figures.links.get(row["link"]))
    if model.reads_storage(row):
        return "device", figures.figures.get("device_gb_per_s")
    return "page cache read", figures.figures.get("page_cache_gb_per_s")


def table_of(values: pd.DataFrame, facts: pd.DataFrame, figures: mf.Figures) -> pd.DataFrame:
    """One row per ROW of the machine: runs, median_s, limit, share, rank, and the model's
    prediction (model.predict's columns) with `error` (predicted over measured) and family."""
    if values.empty:
        return pd.DataFrame(columns=ROW + ["runs", "median_s", "rank"])
    t = (values.groupby(ROW, sort=False, dropna=False)["wall_s"]
         .agg(runs="size", median_s="median").reset_index())
    # file_bytes as a number on both sides, so that one file name of two sizes is two rows.
    t = t.assign(file_bytes=pd.to_numeric(t["file_bytes"], errors="coerce"))
    t = t.merge(facts.assign(file_bytes=pd.to_numeric(facts["file_bytes"], errors="coerce")),
                on=ROW, how="left")
    t["remote"] = t["remote"].eq(True)
    rows = []
    for _, row in t.iterrows():
        name, gb = limit(row, figures)
        run = row["run_bytes"]
        share = run / row["median_s"] / 1e9 / gb if gb and run > 0 else math.nan
        predicted = model.predict(row, figures.figures, figures.links, figures.thp)
        rows.append({"limit": name, "limit_gb_per_s": gb if gb else math.nan, "share": share,
                     **predicted, "error": predicted["predicted_s"] / row["median_s"],
                     "family": model.family(row)})
    t = pd.concat([t, pd.DataFrame(rows, index=t.index)], axis=1)
    t["rank"] = t.groupby(WORKLOAD, dropna=False)["median_s"].rank(method="min").astype(int)
    return t.sort_values(WORKLOAD + ["median_s"], kind="stable").reset_index(drop=True)


def _median_figures(label: str, each: list[mf.Figures], links: dict) -> mf.Figures:
    figures = {}
    # A storage's request figures only where some folder has them (a storage variant's).
    for key in [k for k in model.ALL_FIGURES if any(k in f.figures for f in each)]:
        known = [f.figures[key] for f in each if f.figures.get(key) is not None]
        figures[key] = float(np.median(known)) if known else None
    # What a folder lacked, unless another of the pool has it.
    lacks = next((f.lacks for f in each if f.lacks), "") \
        if figures["device_gb_per_s"] is None else ""
    return mf.Figures(label, figures, links, each[0].thp, lacks,
                      next((f.caveat for f in each if f.caveat), ""))


def links_of(runs: list[Results]) -> dict:
    """Link name to the median GB/s of its ok ceiling reads (iperf3), over the folders."""
    frames = [r.link_ceiling for r in runs if not r.link_ceiling.empty]
    if not frames:
        return {}
    c = pd.concat(frames, ignore_index=True)
    c = c[(c["status"] == "ok") & pd.to_numeric(c.get("gb_per_s"), errors="coerce").gt(0)]
    return {k: float(pd.to_numeric(g["gb_per_s"]).median()) for k, g in c.groupby("link")}


def machine(label: str, runs: list[Results], first: int,
            on: str | None = None) -> Machine:
    """The machine of the pooled folders `runs` (folder indices from `first` on); with `on`,
    the variant of the storage `on` ("" for the data folder as it is): its device's figures
    are the storage's own probe's (machine_figures.from_storage)."""
    each = [mf.from_storage(r.env, on, label) if on else mf.from_env(r.env, label)
            for r in runs]
    figures = _median_figures(label, each, links_of(runs))
    if on and not figures.lacks:
        figures.lacks = next((f.lacks for f in each if f.lacks), "")
    values = pd.concat([run_values(r, first + i) for i, r in enumerate(runs)], ignore_index=True)
    facts = counts(pd.concat([r.ok for r in runs], ignore_index=True))
    return Machine(label, runs, figures, mf.fingerprint(runs[0].env, figures), values,
                   table_of(values, facts, figures), left_out(runs), on)


def variants(label: str, runs: list[Results], first: int, alone: bool = False) -> list[Machine]:
    """The machine `label` of the pooled folders `runs`, one variant per storage their runs
    were on (analysis/stats/storage.py), each named by its storage's label (`label / LABEL`,
    or the storage's label alone where the machine is `alone`, the only one), its runs those
    of its storage, its device the storage's own probe's; one machine as before where the runs
    have no storage axis."""
    on = list(dict.fromkeys(s for r in runs for s in storage.labels(r)))
    if on == [""]:
        return [machine(label, runs, first)]
    out = []
    for s in on:
        name = storage.name(s) if alone else f"{label} / {storage.name(s)}"
        # Only the folders that hold the storage: another folder's env.json does not name it.
        held = [(i, r) for i, r in enumerate(runs) if s in storage.labels(r)]
        out.append(machine(name, [storage.on(r, s) for _, r in held], first + held[0][0], s))
    for m in out:
        m.facts.update(mf.storage_facts(m.runs[0].env, m.storage, m.figures))
    return out


def left_out(runs: list[Results]) -> dict:
    """ROW -> the most common status of its runs, for the rows of which no run counted."""
    frames = [r.runs[~r.runs["counted"]] for r in runs if not r.runs.empty]
    counted = {tuple(k) for r in runs for k in _with_workload(r.ok)[ROW].itertuples(index=False)}
    if not frames:
        return {}
    left = _with_workload(pd.concat(frames, ignore_index=True))
    return {tuple(k): g["status"].mode().iloc[0]
            for k, g in left.groupby(ROW, sort=False, dropna=False) if tuple(k) not in counted}


def labels(keys: list[tuple], envs: list[dict]) -> list[str]:
    """Each machine's name: its host name; where two share one, the settings of its state that
    set it apart (tuned or untuned, THP never), else a number."""
    base = [mf.text(mf.dig(env, "host.hostname")).replace("?", "unknown host") for env in envs]
    settings = list(mf.STATE)
    out = []
    for i, (_, state) in enumerate(keys):
        same = [j for j in range(len(keys)) if base[j] == base[i]]
        differ = [k for n, k in enumerate(settings) if len({keys[j][1][n] for j in same}) > 1]
        if "system.tuned" in differ:  # a tune sets these two: "tuned" says them
            differ = [k for k in differ if k not in ("system.page_reporting",
                                                     "system.damon_pageout")]
        parts = [_setting(k, state[settings.index(k)]) for k in differ]
        out.append(f"{base[i]} ({', '.join(parts)})" if parts else base[i])
    return [name if out.count(name) == 1 else f"{name} #{out[:i + 1].count(name)}"
            for i, name in enumerate(out)]


def _setting(key: str, value: str) -> str:
    if key == "system.tuned":
        return {"True": "tuned", "False": "untuned"}.get(value, "tuned: not recorded")
    return f"{mf.STATE[key]} {value}"


def open_machines(folders: list[str]) -> list[Machine]:
    """The folders read (ResultsError, one line, for one that cannot be) and pooled by
    machine and state, in the order first given; a machine whose runs were on several
    storages (or one the tool made) as one variant per storage (`variants`)."""
    loaded = []
    for folder in folders:
        r = load(folder)
        mf.check(folder, r.env, r.problems)
        loaded.append(r)
    groups: dict[tuple, list[Results]] = {}
    for r in loaded:
        groups.setdefault((mf.identity(r.env), mf.state(r.env)), []).append(r)
    names = labels(list(groups), [g[0].env for g in groups.values()])
    machines, first = [], 0
    for name, runs in zip(names, groups.values()):
        # One machine's storages are named by their labels alone.
        machines += variants(name, runs, first, alone=len(groups) == 1)
        first += len(runs)
    if any(m.storage is not None for m in machines):  # the same facts in every column
        for m in machines:
            if m.storage is None:
                m.facts.update(mf.storage_facts(m.runs[0].env, None, m.figures))
    return machines


def pair(values: pd.DataFrame, workload: tuple, a: tuple, b: tuple) -> paired.Interval:
    """a's time over b's (each a (spec, role)) in the machine's rounds of `workload` both ran
    in: the log ratios' signed-rank interval."""
    v = values[(values[WORKLOAD] == pd.Series(workload, index=WORKLOAD)).all(axis=1)]
    v = v[v["round"].notna()]
    t = {s: v[(v["strategy_spec"] == s[0]) & (v["role"] == s[1])].groupby("round")["wall_s"].max()
         for s in (a, b)}
    both = pd.DataFrame({"a": t[a], "b": t[b]}).dropna()
    return paired.signed_rank_interval(np.log(both["a"] / both["b"]).to_numpy())


def _interval(iv: paired.Interval) -> dict:
    """A paired interval as the flips keep it: None where there is no estimate or interval."""
    return {"pairs": iv.n, "ratio": math.exp(iv.estimate) if iv.n else None,
            "low": math.exp(iv.low) if iv.bounded else None,
            "high": math.exp(iv.high) if iv.bounded else None,
            "below": bool(iv.significant and iv.high < 0),
            "above": bool(iv.significant and iv.low > 0)}


def flips(machines: list[Machine]) -> pd.DataFrame:
    """Per workload, two machines and two strategies (ROW's spec and role) whose order by
    median differs: each machine's paired ratio of the first over the second, and `sure`."""
    rows = []
    for ma, mb in itertools.combinations(machines, 2):
        both = ma.table.merge(mb.table, on=ROW, suffixes=("_a", "_b"))
        for workload, g in both.groupby(WORKLOAD, sort=False, dropna=False):
            g = g.sort_values("median_s_a", kind="stable")
            for (_, x), (_, y) in itertools.combinations(g.iterrows(), 2):
                if not (x["median_s_a"] < y["median_s_a"] and x["median_s_b"] > y["median_s_b"]):
                    continue  # the same order, or a tie on either machine
                ends = (tuple(x[["strategy_spec", "role"]]), tuple(y[["strategy_spec", "role"]]))
                ia, ib = (_interval(pair(m.values, workload, *ends)) for m in (ma, mb))
                rows.append({**dict(zip(WORKLOAD, workload)), "machine_a": ma.label,
                             "machine_b": mb.label, "first": ends[0], "second": ends[1],
                             "a": ia, "b": ib, "sure": ia["below"] and ib["above"]})
    frame = pd.DataFrame(rows)
    return frame.sort_values("sure", ascending=False, kind="stable") if not frame.empty else frame


def families(machines: list[Machine]) -> pd.DataFrame:
    """The model's error per family of strategies: rows with a prediction, the median of
    predicted / measured and its range, over every machine."""
    t = pd.concat([m.table.assign(machine=m.label) for m in machines], ignore_index=True)
    t = t[pd.to_numeric(t.get("error"), errors="coerce").notna()] if "error" in t else t.iloc[0:0]
    if t.empty:
        return pd.DataFrame(columns=["family", "rows", "median", "low", "high"])
    return (t.groupby("family")["error"].agg(rows="size", median="median", low="min", high="max")
            .reset_index().sort_values("family"))


def predictions(machines: list[Machine], target: mf.Figures) -> pd.DataFrame:
    """Each ROW's expected time on `target`, from the counts of the first machine that ran it."""
    seen, rows = set(), []
    for m in machines:
        for _, row in m.table.iterrows():
            key = tuple(row[ROW])
            if key in seen:
                continue
            seen.add(key)
            p = model.predict(row, target.figures, target.links, target.thp)
            rows.append({**row[ROW].to_dict(), "counts_from": m.label,
                         "measured_s": row["median_s"], **p, "family": row["family"],
                         "timed": row["timed"], "verified": row["verified"]})
    return pd.DataFrame(rows)
