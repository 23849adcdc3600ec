"""The *Fleet* section's figures: each round's time against its bound, the store's bytes,
and the model's curves with their bands."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from analysis.core.units import rate_text, size_text
from analysis.models.fleet import NODE_COUNTS
from analysis.stats import aggregates as stats, readers
from analysis.stats.fleet_bounds import DESIGNS, ENGINES, KINDS, PIPELINED, whole

COLORS = {"every": "#4c72b0", "bcast": "#dd8452", "stripe": "#55a868", PIPELINED: "#2ca02c",
          "chain": "#c44e52", "torch_bcast": "#9467bd", "torch_stripe": "#8c564b"}
FIGURE_TIME, FIGURE_STORE, FIGURE_CURVES = "fleet-time", "fleet-store", "fleet-curves"


def seconds_text(x) -> str:
    """Seconds, three significant digits (whole ones from 1000 up); empty for none."""
    if x is None or pd.isna(x):
        return ""
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.3g}"


def _colors(summary: pd.DataFrame) -> dict[str, str]:
    """A color per spec: its kind's where the spec's label is the kind alone (a fleet spec
    with no other option, an engine's command), the cycle's for the others."""
    cycle = iter(["#8172b3", "#937860", "#da8bc3", "#8c8c8c", "#ccb974", "#64b5cd"] * 10)
    out = {}
    for spec, label in summary[["strategy_spec", "label"]].drop_duplicates().itertuples(
            index=False):
        if spec not in out:
            out[spec] = COLORS[label] if label in COLORS else next(cycle)
    return out


def _panels(summary: pd.DataFrame) -> list[tuple[str, str]]:
    """(cache, pattern) of each panel of the time figure: cold first, replicated first."""
    pairs = summary[["cache", "pattern"]].drop_duplicates()
    pairs = pairs.assign(_c=pairs["cache"] != "cold", _p=~pairs["pattern"].map(whole))
    return list(pairs.sort_values(["_c", "_p", "pattern"])[["cache", "pattern"]].itertuples(
        index=False, name=None))


def plot_time(a: dict, figs) -> None:
    """Per cache state and pattern: each spec's median round against nodes, its bound dashed,
    each ok node's wall_s as a dot."""
    s, nodes = a["summary"], a["nodes"]
    panels = _panels(s)
    color = _colors(s)
    fig, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), 4.4), squeeze=False)
    for ax, (cache, pattern) in zip(axes[0], panels):
        here = s[(s["cache"] == cache) & (s["pattern"] == pattern)]
        for j, (spec, g) in enumerate(here.groupby("strategy_spec", sort=False)):
            g = g.sort_values("nodes")
            ax.plot(g["nodes"], g["seconds"], marker="o", color=color[spec],
                    label=g["label"].iloc[0])
            ax.plot(g["nodes"], g["bound_s"], linestyle="--", color=color[spec], linewidth=1)
            d = nodes[(nodes["strategy_spec"] == spec) & (nodes["cache"] == cache)
                      & (nodes["pattern"] == pattern) & nodes["counted"]]
            ax.scatter(d["nodes"] * (1 + 0.04 * (j + 1)), d["wall_s"], s=6, alpha=0.5,
                       color=color[spec])
        ax.plot([], [], linestyle="--", color="grey", linewidth=1,
                label="the fabric's bound (its design's color)")
        _nodes_axis(ax, s["nodes"],
                    "round: the first node's start to the last one's end, median (s)")
        ax.set_title(f"{cache} cache, pattern {pattern}", fontsize=10)
        ax.legend(fontsize=7)
    figs.save(fig, FIGURE_TIME,
              "Fleet: each design's round (from its first node's start to its last one's end, "
              "the median over rounds) against the number of nodes, a panel per cache state and "
              "pattern (what each node needs); dashed, the same color: "
              "the fabric's lower bound for that design; dots: every ok node's own wall time.")


def _nodes_axis(ax, nodes: pd.Series, ylabel: str) -> None:
    """The x axis of the measured node counts (log 2), and the y axis's label."""
    readers.readers_axis(ax, sorted(set(nodes)))
    ax.set_xlabel("nodes (log)")
    ax.set_ylabel(ylabel)


def plot_store(a: dict, figs) -> None:
    """Bytes from the store per round against nodes, per spec and pattern (both caches: the
    store sends the same bytes cold or warm), with the model once as a reference line."""
    t = a["rounds"][a["rounds"]["store_total"].notna()]
    if t.empty:
        return
    color = _colors(a["summary"])
    several = t["pattern"].nunique() > 1
    fig, ax = plt.subplots(figsize=(7, 4.4))
    for j, ((spec, pattern), g) in enumerate(t.groupby(["strategy_spec", "pattern"],
                                                       sort=False)):
        line = (g["store_total"] / 1e9).groupby(g["nodes"]).median()
        label = g["label"].iloc[0] + (f" [{pattern}]" if several else "")
        # Designs that read M once lie on one line: markers of shrinking size keep each seen.
        ax.plot(line.index, line.to_numpy(), marker="osD^v<>"[j % 7], markersize=9 - j % 5,
                color=color[spec], label=label, linestyle="-" if whole(pattern) else ":")
    ax.axhline(stats.median_of(t["model_bytes"]) / 1e9, linestyle="--", color="grey",
               label="the model once (M)")
    _nodes_axis(ax, t["nodes"], "bytes from the store per round, median (GB)")
    ax.legend(fontsize=7)
    figs.save(fig, FIGURE_STORE,
              "Fleet: the bytes the store sent in a round (every node's store_bytes), the "
              "median over the complete rounds of both cache states, against the number of "
              "nodes (dotted: a pattern of parts, each node needing its slices); dashed: the "
              "model once. every reads it once per node when each needs it whole, the others "
              "once.")


def plot_curves(a: dict, figs) -> None:
    """Per model and pattern the designs' modelled durations to NODE_COUNTS[-1] nodes
    (log-log), the deadline, and on the measured fabric the measured medians."""
    names = list(a["models"])
    if not names:
        return
    patterns = a["patterns"]
    fig, axes = plt.subplots(len(patterns), len(names),
                             figsize=(6.2 * len(names), 4.6 * len(patterns)), squeeze=False)
    done = a["summary"][a["summary"]["design"].isin(DESIGNS + ENGINES)
                        & a["summary"]["seconds"].notna()]
    for row, pattern in zip(axes, patterns):
        for ax, name in zip(row, names):
            c = a[f"{name}_curve"]
            c = c[c["pattern"] == pattern]
            for kind in KINDS:
                k = c[c["design"] == kind]
                ax.plot(k["nodes"], k["seconds"], color=COLORS[kind], label=kind)
                ax.fill_between(k["nodes"], k["low_s"], k["high_s"], color=COLORS[kind],
                                alpha=0.15, linewidth=0)
                if name == "measured":
                    m = done[(done["kind"] == kind) & (done["pattern"] == pattern)]
                    ax.scatter(m["nodes"], m["seconds"], color=COLORS[kind], s=16, zorder=3)
            _curve_axes(ax, a, name, pattern)
    band = ("; shaded, each curve's band from the model's held-out errors"
            if a["held_out"] else "")
    figs.save(fig, FIGURE_CURVES,
              "Fleet, modelled: each design's round against the number of nodes up to "
              f"{NODE_COUNTS[-1]}, on the measured fabric (dots: the measured medians) and on "
              f"the described one, a row per pattern{band}; dashed grey: the deadline.")


def _curve_axes(ax, a: dict, name: str, pattern: str) -> None:
    """A curves panel's deadline, log axes, labels and title."""
    ax.axhline(a["deadline"], color="grey", linestyle="--", linewidth=1,
               label=f"deadline {seconds_text(a['deadline'])} s")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(NODE_COUNTS, [str(n) for n in NODE_COUNTS])
    ax.minorticks_off()
    ax.set_xlabel("nodes (log)")
    ax.set_ylabel("modelled round: the last node's time (s, log)")
    m = a["models"][name]
    ax.set_title(("measured fabric" if name == "measured" else
                  f"described: NIC {rate_text(m.fabric.nic_in_bps)}, uplink "
                  f"{rate_text(m.fabric.uplink_bps)}") + f", M {size_text(m.model_bytes)}, "
                 f"pattern {pattern}", fontsize=9)
    ax.legend(fontsize=7)
