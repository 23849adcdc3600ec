"""loadbench analysis: results folders into tables, plots and reports (Debian's python3).

`from analysis import load; f = load(DIR)`: a results folder as pandas tables
(analysis/stats/folder.py; analysis/README.md has an example). It is imported on first use,
so that `python3 -m analysis.X` pays for nothing it does not use."""


def __getattr__(name: str):
    if name == "load":
        from analysis.stats.folder import load
        return load
    raise AttributeError(f"module 'analysis' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), "load"])
