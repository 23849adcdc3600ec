"""The figures of the groups' table: the time figure the verdict shows, each cache state's
throughput against the probe's figures, the scaling over file sizes and the parameter sweeps."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from analysis.core.figures import Figures, panel_width
from analysis.core.labels import label
from analysis.core.results import Results, spec_label
from analysis.models import machine_figures

def plot_times(table: pd.DataFrame, figs: Figures) -> None:
    files = table["file"].nunique()
    caches = [c for c in ("cold", "warm") if c in set(table["cache"])]
    longest = max((len(label(r, files)) for _, r in table.iterrows()), default=0)
    fig, axes = plt.subplots(1, len(caches), figsize=(panel_width(longest) * len(caches),
                                                      0.35 * len(table) + 2), squeeze=False)
    for ax, cache in zip(axes[0], caches):
        t = table[table["cache"] == cache].sort_values("median_s", ascending=False)
        y = range(len(t))
        ax.barh(y, t["median_s"], color="#4c72b0")
        # Whiskers only where an interval exists (6 runs or more).
        has = t["ci_low_s"].notna().to_numpy()
        w = t[has]
        ax.errorbar(w["median_s"], np.flatnonzero(has), xerr=[w["median_s"] - w["ci_low_s"],
                                                              w["ci_high_s"] - w["median_s"]],
                    fmt="none", ecolor="black", capsize=3)
        ax.set_yticks(list(y), [label(r, files) for _, r in t.iterrows()])
        # Copies and mappings can differ by 100x here: a log axis keeps both readable.
        wide = t["median_s"].max() > 20 * t["median_s"].min()
        if wide:
            ax.set_xscale("log")
        ax.set_xlabel("load time, median (s" + (", log)" if wide else ")"))
        ax.set_title(f"{cache} cache")
    figs.save(fig, "time", "Median load time per strategy, cold and warm; whiskers are the exact "
                           "95% interval of the median (order statistics; none for fewer than "
                           "6 runs).")

# The probe's figures drawn as reference lines on the throughput plots: (model.FIGURES' name,
# label), read as the machines report reads them (machine_figures.from_env), so that the device
# is one number in both: the probe's fastest read recipe, `device_limit`.
CEILINGS = {
    "cold": [("device_gb_per_s", "device")],
    "warm": [("page_cache_gb_per_s", "page cache read"), ("memcpy_gb_per_s", "memcpy")],
}


def plot_throughput(table: pd.DataFrame, env: dict, figs: Figures, cache: str) -> None:
    """The cache state's GB/s per group, against the probe's figures (CEILINGS)."""
    files = table["file"].nunique()
    figures = machine_figures.from_env(env, "").figures
    if cache in set(table["cache"]):
        t = table[table["cache"] == cache].sort_values("gb_per_s")
        fig, ax = plt.subplots(figsize=(8, 0.35 * len(t) + 2))
        ax.barh([label(r, files) for _, r in t.iterrows()], t["gb_per_s"], color="#4c72b0")
        drawn = []
        for key, name in CEILINGS[cache]:
            gbps = figures.get(key)
            if gbps:
                ax.axvline(gbps, linestyle="--", color="grey")
                ax.text(gbps, len(t) - 0.5, f" {name}\n {gbps:.2f} GB/s", fontsize=8, va="top")
                drawn.append(f"{name} {gbps:.2f} GB/s")
        ax.set_xlabel("throughput per reader, its bytes / median time (GB/s)"
                      if (t["procs"] > 1).any() else
                      "throughput, file bytes / median time (GB/s)")
        ax.set_title(f"{cache} cache")
        ref = ("; dashed: the probe's " + ", ".join(drawn)) if drawn else \
            "; no probe ceilings in env.json"
        figs.save(fig, f"throughput-{cache}",
                  f"{cache.capitalize()} throughput per strategy{ref}.")


def plot_scaling(table: pd.DataFrame, figs: Figures) -> None:
    series = ["strategy_spec", "role", "cache"]
    sizes = table.groupby(series)["file_bytes"].nunique()
    if sizes.max() < 2:
        return
    fig, ax = plt.subplots(figsize=(8, 6))
    for _, t in table.groupby(series):
        if t["file_bytes"].nunique() < 2:
            continue
        t = t.sort_values("file_bytes")
        line, = ax.plot(t["file_bytes"] / 2**30, t["median_s"], marker="o",
                        label=f"{t['cache'].iloc[0]} {spec_label(t.iloc[0])}")
        w = t[t["ci_low_s"].notna()]  # whiskers only where an interval exists
        ax.errorbar(w["file_bytes"] / 2**30, w["median_s"],
                    yerr=[w["median_s"] - w["ci_low_s"], w["ci_high_s"] - w["median_s"]],
                    fmt="none", ecolor=line.get_color(), capsize=3)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("file size (GiB, log)")
    ax.set_ylabel("load time, median (s, log)")
    ax.legend(fontsize=7)
    figs.save(fig, "scaling", "Load time against file size, log-log: a slope of 1 is linear "
                              "scaling; whiskers are the exact 95% intervals of the median "
                              "(none for fewer than 6 runs).")


def plot_sweeps(r: Results, table: pd.DataFrame, figs: Figures) -> None:
    """Throughput against each numeric option that varies within one strategy."""
    if "params" not in r.ok:
        return
    params = r.ok[["strategy_spec", "strategy", "params"]].drop_duplicates("strategy_spec")
    spec_params = {row["strategy_spec"]: row["params"] for _, row in params.iterrows()
                   if isinstance(row["params"], dict)}
    for strategy, t in table.groupby("strategy"):
        specs = [s for s in t["strategy_spec"].unique() if s in spec_params]
        if len(specs) < 2:
            continue
        keys = {k for s in specs for k, v in spec_params[s].items()
                if isinstance(v, (int, float)) and not isinstance(v, bool)}
        for key in sorted(keys):
            values = {spec_params[s].get(key) for s in specs}
            if len(values) < 2:
                continue
            t2 = t.assign(x=t["strategy_spec"].map(lambda s: spec_params.get(s, {}).get(key)))
            others = [k for k in sorted(keys | {k for s in specs for k in spec_params[s]})
                      if k != key]
            t2 = t2.assign(series=t2["strategy_spec"].map(
                lambda s: ", ".join(f"{k}={spec_params[s].get(k)}" for k in others
                                    if len({str(spec_params[x].get(k)) for x in specs}) > 1)))
            fig, ax = plt.subplots(figsize=(8, 5))
            for (cache, role, series), g in t2.groupby(["cache", "role", "series"]):
                g = g.sort_values("x")
                ax.plot(g["x"], g["gb_per_s"], marker="o",
                        label=" ".join(p for p in (cache, role, series) if p))
            ax.set_xscale("log", base=2)
            ax.set_xlabel(f"{key} (log)")
            ax.set_ylabel("throughput (GB/s)")
            ax.legend(fontsize=7)
            figs.save(fig, f"sweep-{strategy}-{key}",
                      f"{strategy}: throughput against {key}, one line per setting of its other "
                      "options.")

