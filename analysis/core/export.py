"""A command's table written for other tools, `--export FMT FILE` (repeatable), in hyperfine's
spirit (its --export-csv, --export-markdown, --export-json): one writer per format behind one
signature, `WRITERS[fmt](table) -> text`, over one `Table` that the page builds.

- `csv`: one header line of `Table.csv_columns` (names carry their units: `median_s`,
  `peak_rss_bytes`), one line per row, raw numbers (a figure not measured is an empty cell);
- `md`: a GitHub table of `Table.md_columns` (each a heading and a cell function, as the report
  prints them);
- `json`: `Table.document` (`{"results": [...]}`, each row with hyperfine's keys where they mean
  the same), NaN and infinities as null.

`check` says, before any work, why an export cannot be made (an unknown format, a file whose
folder is missing or not writable, a folder given as the file); `write` writes them all.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from dataclasses import dataclass, field
from typing import Callable

from analysis.core.results import ResultsError


@dataclass
class Table:
    rows: list[dict]                      # flat values, one dict per row
    csv_columns: list[str]
    md_columns: list[tuple[str, Callable[[dict], str]]]
    document: dict = field(default_factory=dict)  # the JSON file's whole value


def _plain(value):
    """A cell's value as CSV or JSON writes it: numpy scalars as Python ones, NaN, infinities
    and None as None."""
    if hasattr(value, "item") and not isinstance(value, (dict, list)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def to_csv(t: Table) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(t.csv_columns)
    for row in t.rows:
        w.writerow(["" if (v := _plain(row.get(c))) is None else v for c in t.csv_columns])
    return out.getvalue()


def to_markdown(t: Table) -> str:
    heads = [h for h, _ in t.md_columns]
    lines = ["| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
    lines += ["| " + " | ".join(cell(row).replace("|", "\\|") for _, cell in t.md_columns)
              + " |" for row in t.rows]
    return "\n".join(lines) + "\n"


def to_json(t: Table) -> str:
    return json.dumps(_plain(t.document), indent=2, ensure_ascii=False) + "\n"


WRITERS = {"csv": to_csv, "md": to_markdown, "json": to_json}


def check(exports: list[tuple[str, str]]) -> str | None:
    """Why the exports (format, file) cannot be written, in one line; None when they can."""
    for fmt, path in exports:
        if fmt not in WRITERS:
            return f"--export: unknown format {fmt!r} (one of {', '.join(WRITERS)})"
        folder = os.path.dirname(os.path.abspath(path))
        if os.path.isdir(path):
            return f"--export {fmt} {path}: a folder, not a file"
        if not os.path.isdir(folder):
            return f"--export {fmt} {path}: no such folder {folder}"
        if not os.access(folder, os.W_OK) or (os.path.exists(path)
                                              and not os.access(path, os.W_OK)):
            return f"--export {fmt} {path}: not writable"
    return None


def write(exports: list[tuple[str, str]], table: Table) -> list[str]:
    """Writes each export; the files written. A ResultsError (one line for `guard`) where one
    cannot be written."""
    for fmt, path in exports:
        try:
            with open(path, "w", encoding="utf-8", newline="") as f:
                f.write(WRITERS[fmt](table))
        except OSError as e:
            raise ResultsError(f"--export {fmt} {path}: cannot write: {e.strerror or e}") from e
    return [path for _, path in exports]
