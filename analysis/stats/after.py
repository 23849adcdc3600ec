"""After the load: what the consumer did with the weights once they were there (the `use`
options every strategy takes: consume, bind, transform, place, ...), per group of comparable
runs: medians of the phases (ready, first use, transform, bind, consume, verify, all layers)
and of the memory the load left behind (peak, anonymous and private dirty RSS).

Records written before these options existed have none of the fields: a missing field is
null, and a missing `use` is the defaults, so old results fold in as the defaults they ran.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.core.results import GROUP, Results

# Every use option with its default, as the worker resolves them.
DEFAULT_USE = {"consume": "checksum", "bind": "view", "transform": "none", "place": "separate",
               "bind_buffer": "malloc", "unaligned": "read", "instances": 1, "registry": "on",
               "seed": 1}

# Seconds of each phase, as recorded; null where the phase did not happen.
PHASES = ["ready_s", "first_use_s", "wall_s", "transform_s", "bind_s", "consume_s", "verify_s"]
# Fields of a run's `memory` object.
MEMORY = ["rss_anon_bytes", "rss_file_bytes", "private_dirty_bytes"]


def resolved_use(use) -> dict:
    """The run's use options with the defaults filled in where the record has none."""
    given = use if isinstance(use, dict) else {}
    return {k: given.get(k) if given.get(k) is not None else v for k, v in DEFAULT_USE.items()}


def non_default(use: dict) -> dict:
    return {k: v for k, v in use.items() if v != DEFAULT_USE[k]}


def _numbers(frame: pd.DataFrame, column: str) -> pd.Series:
    if column not in frame:
        return pd.Series(np.nan, index=frame.index)
    return pd.to_numeric(frame[column], errors="coerce")


def _memory(frame: pd.DataFrame, key: str) -> pd.Series:
    if "memory" not in frame:
        return pd.Series(np.nan, index=frame.index)
    return pd.to_numeric(frame["memory"].map(lambda m: m.get(key) if isinstance(m, dict)
                                             else None), errors="coerce")


def _median(values: pd.Series) -> float:
    """Over the runs that recorded it: a phase counts where it happened; NaN where it never
    did."""
    values = values.dropna()
    return float(values.median()) if len(values) else float("nan")


def shown(results: Results) -> bool:
    """Whether a report needs the section: some ok run used the weights other than by the
    default checksum-over-views, or measured a first use."""
    ok = results.ok
    if ok.empty:
        return False
    uses = ok["use"] if "use" in ok else pd.Series([None] * len(ok), index=ok.index)
    return bool(uses.map(lambda u: bool(non_default(resolved_use(u)))).any() or
                _numbers(ok, "first_use_s").notna().any())


def summarize(results: Results) -> pd.DataFrame:
    """One row per group of ok runs (GROUP): the strategy, n, the median of every phase and
    memory figure (NaN where no run of the group recorded it), the verify methods seen, and
    the use options resolved. Sorted by cache state, file, then median wall time."""
    ok = results.ok
    columns = {c: _numbers(ok, c) for c in PHASES + ["peak_rss_bytes"]}
    columns.update({c: _memory(ok, c) for c in MEMORY})
    frame = ok[GROUP + ["strategy"]].assign(**columns)
    frame["verify"] = ok["verify"] if "verify" in ok else None
    frame["verified"] = ok["verified"]
    frame["use"] = (ok["use"] if "use" in ok else pd.Series(None, index=ok.index)).map(
        resolved_use)
    rows = []
    for key, group in frame.groupby(GROUP, sort=False):
        verify = sorted({v for v in group["verify"] if isinstance(v, str)})
        use = group["use"].iloc[0]
        rows.append({**dict(zip(GROUP, key)), "strategy": group["strategy"].iloc[0],
                     "n": len(group),
                     **{c: _median(group[c]) for c in columns},
                     "verify": ", ".join(verify),
                     "verified": bool(group["verified"].all()), "use": use,
                     "non_default_use": non_default(use)})
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    return table.sort_values(["cache", "file", "wall_s"], kind="stable").reset_index(drop=True)
