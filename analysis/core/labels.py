"""Names in words, one way for the whole package: `condition`, what a row's runs shared
(readers, read pattern, memory limit, link or fabric, storage, file) after its lead (its strategy's
label, or its cache state), each part only where it tells conditions apart; and `plural`."""

from __future__ import annotations

import os

import pandas as pd

from analysis.core.results import REPLICATED, network, spec_label
from analysis.core.units import is_number, size_text


def condition(row, files: int, lead: str | None = None, readers: bool = True) -> str:
    """`lead` (the row's cache state by default), then ` ×N` readers and the read pattern where
    there are several (`readers` False: left to a table's own columns), ` ≤SIZE` for a memory
    limit, ` link 1gbit` or ` nic 200mbit, uplink 400mbit` for the network (as the
    harness's console writes them), `, STORAGE` for a storage the tool made (its label: a run
    on the data folder as it is has none) and ` [FILE]` where the rows come from several
    files: `cold ×4 sharded ≤2.00 GiB link 1gbit, xfs:preset=gp3 [a.wlf]`."""
    text = str(row["cache"]) if lead is None else lead
    procs = row.get("procs")
    if readers and is_number(procs) and procs > 1:
        text += f" ×{int(procs)}"  # a float where a table's column holds a null
    pattern = row.get("pattern")
    if readers and isinstance(pattern, str) and pattern != REPLICATED:
        text += f" {pattern}"
    limit = row.get("memory_limit_bytes")
    if is_number(limit) and limit > 0:
        text += f" ≤{size_text(limit)}"
    text += network(row, " ")
    storage = row.get("storage")
    if isinstance(storage, str) and storage:
        text += f", {storage}"
    if files > 1:
        text += f" [{os.path.basename(str(row['file']))}]"
    return text


def plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def label(row: pd.Series, files: int) -> str:
    """A group's row in words: its strategy's label and the condition (core.labels)."""
    return condition(row, files, spec_label(row))


def series_name(row: pd.Series, files: int) -> str:
    """A summary row of many readers in words: as `label`, its readers and read pattern left
    to the table's own columns."""
    return condition(row, files, spec_label(row), readers=False)
