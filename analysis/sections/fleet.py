"""The report's *Fleet* section and summary.json's `fleet`: the fabric, the rounds against
their bound (sections/fleet_series.py's tables, one per pattern, the engines' rows beside the
project's designs, and the designs against torch_bcast), the model against the measurements
and its curves (analysis/models/fleet.py), in tables; the figures are
sections/fleet_figures.py's."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from analysis.core.results import Results, records
from analysis.core.units import mbit, size_text
from analysis.models.fleet import NODE_COUNTS, Options, TIE, analyse, largest_error
from analysis.sections.base import Section
from analysis.sections.fleet_figures import (FIGURE_CURVES, FIGURE_STORE, FIGURE_TIME, plot_curves,
                                             plot_store, plot_time, seconds_text)
from analysis.sections.fleet_series import (apart_of, beyond_md, failed_md, md_table,
                                            pattern_text, series_md, series_name, versus_md)
from analysis.stats import ceiling
from analysis.stats.fleet_bounds import KINDS
from analysis.stats.fleet_rounds import configured, fabric_of, iperf_rates, positive, shown

__all__ = ["beyond_md", "failed_md", "series_md", "versus_md"]  # the tables', re-exported

TITLE = "Fleet"


# --- tables ------------------------------------------------------------------------------------

def _words(value) -> str:
    """A value on one line (tc's own output spans several)."""
    return " ".join(str(value).split())


def _tc(tc) -> str:
    """A link's tc settings in a cell: per direction what `tc qdisc show` said (or an object's
    scalars as `key value`), on one line."""
    if not isinstance(tc, dict):
        return "" if tc is None else _words(tc)[:140]
    parts = []
    for key, value in tc.items():
        if isinstance(value, dict):
            inner = ", ".join(f"{k} {_words(v)}" for k, v in value.items()
                              if not isinstance(v, (dict, list)))
            parts.append(f"{key}: {inner}")
        elif not isinstance(value, list):
            parts.append(f"{key}: {_words(value)}")
    text = "; ".join(parts)
    return text if len(text) <= 160 else text[:159] + "…"


def _link_row(link: dict) -> list[str]:
    iperf = link.get("iperf3") if isinstance(link.get("iperf3"), dict) else {}
    rate = configured({"rate_bits_per_s": link.get("bits_per_s"), "rate": link.get("rate")},
                       "rate")
    cells = []
    for key in ("down_bits_per_s", "up_bits_per_s"):
        got = positive(iperf.get(key))
        share = f" ({got / rate:.0%})" if got and rate else ""
        cells.append(mbit(got) + share if got else "not measured")
    return [str(link.get("name", "?")), str(link.get("rate", "")), _tc(link.get("tc"))] + cells


def links_md(env: dict, most: int = 9) -> str:
    """The links' tc settings and iperf3 figures, a row each; past `most`, the nodes' in one
    row of their medians and ranges."""
    links = [x for x in ((env.get("cluster") or {}).get("links") or []) if isinstance(x, dict)]
    if not links:
        return ""
    head = ["link", "rate", "tc", "iperf3 in (down), Mbit/s (of rate)",
            "iperf3 out (up), Mbit/s (of rate)"]
    rows = [_link_row(x) for x in links]
    nodes = [x for x in links if x.get("name") != "store"]
    if len(links) > most and nodes:
        rows = [_link_row(x) for x in links if x.get("name") == "store"]
        cells = []
        for key in ("down_bits_per_s", "up_bits_per_s"):
            got = iperf_rates(nodes, key)
            cells.append(f"{mbit(np.median(got))} ({mbit(min(got))}–{mbit(max(got))})"
                         if got else "not measured")
        rows.append([f"{len(nodes)} nodes (median, range)", str(nodes[0].get("rate", "")),
                     _tc(nodes[0].get("tc"))] + cells)
    return md_table(head, rows)


def fabric_md(a: dict, env: dict) -> str:
    """The fabric the bound and the model use, and the links' table."""
    fabric = a["fabric"]
    cluster = env.get("cluster") or {}
    topology = f" Topology: {cluster['topology']}." if isinstance(cluster.get("topology"), str) \
        else ""
    if fabric is None:
        text = ("**The fabric**: env.json has no `cluster` with rates for the store's uplink "
                "and the nodes' NICs: no bound and no model of the measured fabric.")
    else:
        text = f"**The fabric** (what the bound and the model use): {fabric.source}."
    return "\n\n".join(p for p in (text + topology, sessions_md(env), links_md(env)) if p)


def sessions_md(env: dict) -> str:
    """Where the experiment ran in several sessions that each measured the cluster again: a
    line per session with its rates and links; "" where fewer than two did."""
    sessions = env.get("sessions") or []
    own = [i for i, x in enumerate(sessions) if isinstance(x.get("cluster"), dict)]
    if len(own) < 2:
        return ""
    lines = []
    for i in own:
        cluster, fabric = sessions[i]["cluster"], fabric_of(env, i)
        lines.append(f"- session {i} ({sessions[i].get('started_at', '?')}), nic "
                     f"{cluster.get('nic', '?')}, uplink {cluster.get('uplink', '?')}: "
                     + (fabric.source if fabric else "no rates for the uplink and the NICs"))
    return ("The experiment ran in several sessions, each of which made and measured the "
            "cluster again: each round's bound, and each series' model, use the links of the "
            "session its rounds ran in (the fabric above is the latest session's, the curves' "
            "measured fabric; the links below are its too).\n\n" + "\n".join(lines))


TARGET = 0.15  # the model's aim: every series within 15% of its measured median, held out
MODEL_HEAD = ["design", "cache", "nodes", "measured s", "fitted s", "fit error (in sample)",
              "held out s", "held-out error", "from smaller N, error",
              "limited by (the last flow)"]


def cpu_text(cpu: dict) -> str:
    """The fitted CPU per GB moved, by kind of byte."""
    if not cpu:
        return "No record has its CPU seconds and bytes: CPU is left out of the model"
    return ("CPU seconds per GB a node moves, fitted by least squares over the counted "
            "records of every series below (each record's CPU seconds on its bytes): "
            f"{cpu['store'] * 1e9:.3g} per GB from the "
            f"store (HTTP), {cpu['peer'] * 1e9:.3g} per GB to or from another node (TCP)")


def error_text(x: float) -> str:
    """A relative error, signed (+: the model is slower than measured), `0%` when it rounds
    to none; "" for none."""
    if pd.isna(x):
        return ""
    text = f"{x:+.0%}"
    return "0%" if text in ("+0%", "-0%") else text


def _worst(p: pd.DataFrame, column: str, apart: tuple[int, ...]) -> str:
    """The largest error of a column, with its series; "none" where it has none."""
    known = p[p[column].notna()]
    if known.empty:
        return "none"
    w = known.loc[known[column].abs().idxmax()]
    return f"{error_text(w[column])} ({series_name(w, apart)}, {w['cache']}, {w['nodes']} nodes)"


MODEL_NOTE = (
    "*Fitted s* and its error are a fit, in sample: the CPU per byte and the start cost were "
    "fitted on these same series, so the error says how well the model can be made to agree, "
    "not how well it predicts. *Held out*: each series predicted by the same fit made without "
    "it (its records and its time left out). *From smaller N*: each series at the largest N "
    "predicted by the fit on the smaller Ns alone, as the curves below extrapolate.")


def model_md(a: dict) -> str:
    """The model's fitted and held-out times against the measured, with what it assumed and
    its largest errors."""
    if a["fabric"] is None:
        return ""
    p = a["predictions"]
    intro = ("**The model against the measurements.** A flow-level model: each design's "
             "transfers as flows sharing the store's uplink, each node's NIC in and out and the "
             "CPU by max-min fairness (progressive filling), plus the pipeline's fill; "
             "torch_bcast as gloo's binomial tree, torch_stripe as a pipelined all-gather "
             "(analysis/models/fleet.py's docstring says exactly how); under a pattern of parts "
             "each node pulls its own, or node 0 scatters them (bcast, torch_bcast), or chain "
             "relays the whole model as under replicated; each "
             "series on the links of the sessions its rounds ran in. "
             + cpu_text(a["cpu"]) + ". "
             + a["start_note"])
    if p.empty:
        return intro + "\n\nNo complete round to set it against."
    apart = apart_of(p)
    lines = [[series_name(r, apart), r["cache"], str(r["nodes"]), seconds_text(r["measured_s"]),
              seconds_text(r["modelled_s"]), error_text(r["error"]), seconds_text(r["held_out_s"]),
              error_text(r["held_out_error"]), error_text(r["from_smaller_error"]),
              r["limited_by"]] for _, r in p.iterrows()]
    held = largest_error(p["measured_s"], p["held_out_s"])
    verdict = "within" if held <= TARGET else "beyond"
    end = (f"Largest error of the fit (in sample): {_worst(p, 'error', apart)}. Held out: "
           f"{_worst(p, 'held_out_error', apart)}, {verdict} the {TARGET:.0%} the model aims "
           f"at; the largest N from the smaller ones: {_worst(p, 'from_smaller_error', apart)}.")
    return "\n\n".join([intro, MODEL_NOTE, md_table(MODEL_HEAD, lines), end])


def _banded(r) -> str:
    """A modelled time with its band from the held-out errors: `12.3 (10.1–15.2)`."""
    band = f" ({seconds_text(r['low_s'])}–{seconds_text(r['high_s'])})" \
        if pd.notna(r["low_s"]) else ""
    return seconds_text(r["seconds"]) + band


def curve_md(table: pd.DataFrame) -> str:
    """A model's curves as tables, one per pattern (titled where there are several): a row per
    N, a column per design (with its band), the fastest and what held it back."""
    patterns = list(dict.fromkeys(table["pattern"]))
    banded = table["low_s"].notna().any()
    parts = [("Each time with its band: the times the held-out errors (lowest to highest) "
              "would have measured where the model gives this one.") if banded else ""]
    for pattern in patterns:
        lines = []
        for n, g in table[table["pattern"] == pattern].groupby("nodes", sort=True):
            g = g.set_index("design")
            best = g.index[g["seconds"] <= g["seconds"].min() * (1 + TIE)]
            lines.append([str(n)] + [_banded(g.loc[k]) for k in KINDS]
                         + [" = ".join(best), g.loc[best[0], "limited_by"]])
        body = md_table(["nodes"] + [f"{k} s" for k in KINDS] + ["fastest", "its limit"], lines)
        parts.append(f"{pattern_text(pattern)}\n\n{body}" if len(patterns) > 1 else body)
    return "\n\n".join(p for p in parts if p)


def band_text(errors: tuple[float, float] | None) -> str:
    """What the curves' band is, in a sentence."""
    if errors is None:
        return "No series was held out (one series alone): the curves carry no band."
    return ("The band about each curve spans the held-out errors, from "
            f"{error_text(errors[0])} to {error_text(errors[1])}: the times the measurements "
            "would have been, had the model erred there as it did on a series it did not see.")


def _fastest_text(found: list[tuple[int, tuple]]) -> str:
    return "; ".join(f"{' = '.join(k)} from {n}" for n, k in found)


def outlook_md(a: dict) -> str:
    """Per model and pattern where the fastest design changes and the first N past the
    deadline."""
    if not a["models"]:
        return ""
    head = ["fabric", "pattern", "M", "fastest design (from N nodes)"] + \
        [f"{k}: first N past {seconds_text(a['deadline'])} s" for k in KINDS]
    lines = []
    for name, m in a["models"].items():
        for pattern in a["patterns"]:
            past = a[f"{name}_first_past"][pattern]
            lines.append([m.fabric.source if name == "described" else "measured", pattern,
                          size_text(m.model_bytes), _fastest_text(a[f"{name}_changes"][pattern])]
                         + [str(past[k]) if past[k] else f"none to {NODE_COUNTS[-1]}"
                            for k in KINDS])
    return ("**Scaling, modelled.** The model (with its start cost) for N nodes up to "
            f"{NODE_COUNTS[-1]}, on the measured fabric (every node sharing this machine's "
            "cores) and on a described one (each node with a CPU of its own), per pattern the "
            "records hold: the fastest design and the first N at which it changes (designs "
            f"within {TIE:.1%} tie), and the first N at which the last node would pass the "
            f"deadline ({seconds_text(a['deadline'])} s: NCCL's watchdog kills a collective "
            "that waits 10 minutes), each found between powers of 2 by bisection, on the "
            "model's own times. "
            + band_text(a["held_out"]) + "\n\n" + md_table(head, lines))


# --- figures -----------------------------------------------------------------------------------


# --- the section and the command ---------------------------------------------------------------

INTRO = (
    "N nodes, each a network namespace with a shaped NIC of its own, load one model of M bytes "
    "from one store (nginx behind its own shaped uplink), all on this machine. The designs: "
    "*every* node pulls what it needs from the store; *bcast*, node 0 pulls M and hands each "
    "chunk to an owner node that forwards it to the others; *stripe*, node k pulls every N-th "
    "chunk and sends it to every other node, once its whole stripe is in (phased: `stripe`) or "
    "each chunk as it lands (`stripe (pipelined)`); *chain*, node 0 pulls and each node relays "
    "each chunk to the next. The engines' designs, beside them: *torch_bcast*, node 0 pulls M "
    "and broadcasts each chunk with torch.distributed (gloo: a binomial tree), *torch_stripe*, "
    "each node pulls 1/N of each round of N chunks and all_gathers it (gloo: a ring); one "
    "command per node, timed over its own region. What each node needs is the run's pattern: "
    "the whole model (replicated), or its 1/N slice of every tensor (tp), one table each; "
    "under tp bcast and torch_bcast scatter, chain relays the whole model down the line as "
    "under replicated (each node keeping its slices: it receives N times what it needs), and "
    "every other design's node pulls its own slices. A "
    "round (one rep of one design at N nodes) counts only whole, every node ok; it lasts from "
    "its first node's start to its last node's end, as every round of several readers does "
    "in *Many readers* (the nodes are released together from a start barrier; each node's "
    "wall time runs until it holds every byte and has done its forwarding); the median round "
    "with its 95% interval from 6 rounds up. Bound: the fabric's lower bound for the design "
    "from the links measured in the round's session (the store's uplink, each node's NIC; the "
    "pipeline's fill); of bound: bound / the round's duration (1: at the fabric's limit; "
    f"{ceiling.BEYOND}: above 1, faster than the bound); of best design's bound: the lowest "
    "bound of every design at that N under the pattern over the duration, how far this "
    "design is from the best the fabric allows any of them. Store bytes / needed: the read "
    "amplification, what the store sent over the bytes the nodes need together (1 at best; "
    "every node needing the whole model, a design that reads it once: 1/N). Received / "
    "needed: each node's bytes in (from the store and its peers) over what it needs, the "
    "median and the largest over the nodes. NIC wire: each node's interface counters over "
    "the run, bytes in and out (none outside a cluster); wire in / counted in: what the wire "
    "carried into a node over the bytes it counted in (headers and retransmits above 1). "
    "Spread: the last node's time over the first's, the node most often last named. Medians "
    "over the complete rounds.")


def section(results: Results, figs=None, options: Options | None = None) -> dict:
    """The report's section: its Markdown ("md"; the figures drawn and shown where `figs`,
    report.Figures, is given) and summary.json's `fleet` ("summary")."""
    a = analyse(results, options)
    if figs is not None:
        plot_time(a, figs)
        plot_store(a, figs)
        plot_curves(a, figs)
    shown_figures = (lambda *names: figs.md(*names)) if figs is not None else (lambda *n: "")
    parts = [INTRO, fabric_md(a, results.env), series_md(a["summary"]), failed_md(a["rounds"]),
             versus_md(a["versus"]), shown_figures(FIGURE_TIME, FIGURE_STORE), model_md(a),
             outlook_md(a), shown_figures(FIGURE_CURVES)]
    return {"md": "\n\n".join(p for p in parts if p), "summary": summary_of(a)}


def summary_of(a: dict) -> dict:
    """summary.json's `fleet`: the series, each against torch_bcast paired by round at the
    largest N (`versus`), the model's points, its start cost, its largest errors (of the fit,
    in sample; held out; the largest N from the smaller), the band's errors, and per model its
    curve (each point with its pattern) and per pattern where the fastest design changes and
    the deadline's N."""
    p = a["predictions"]

    def largest(column: str) -> float | None:
        found = largest_error(p["measured_s"], p[column]) if len(p) else math.nan
        return None if math.isnan(found) else found

    return {"series": records(a["summary"]), "versus": records(a["versus"]),
            "model": records(p), "start_s": a["start_s"],
            "largest_error": largest("modelled_s"),
            "held_out_largest_error": largest("held_out_s"),
            "from_smaller_largest_error": largest("from_smaller_s"),
            "band_errors": list(a["held_out"]) if a["held_out"] else None,
            "deadline_s": a["deadline"],
            "curves": {name: {"fabric": m.fabric.source, "model_bytes": m.model_bytes,
                              "points": records(a[f"{name}_curve"]),
                              "fastest_from": {
                                  pattern: [{"nodes": n, "designs": list(k)}
                                            for n, k in found]
                                  for pattern, found in a[f"{name}_changes"].items()},
                              "first_past_deadline": a[f"{name}_first_past"]}
                       for name, m in a["models"].items()}}


class Fleet(Section):
    """A cluster's nodes (records with `nodes`): its own rounds, bound and model."""

    title = TITLE

    def shown(self) -> bool:
        return shown(self.ctx.results)

    def markdown(self) -> str:
        # Its figures are drawn as its Markdown is written (`section`).
        self.made = section(self.ctx.results, self.ctx.figs)
        return self.made["md"]

    def summary(self) -> dict:
        return {"fleet": self.made["summary"]}


# --- the command's page (analysis/pages/fleet.py): its context is (analyse's dict, the results)

class FleetFabric(Section):
    """The fabric the bound and the model use (no heading of its own)."""

    def markdown(self) -> str:
        a, results = self.ctx
        return fabric_md(a, results.env)


class FleetRounds(Section):
    title = "Rounds"

    def markdown(self) -> str:
        a, _ = self.ctx
        return "\n\n".join(p for p in (series_md(a["summary"]), failed_md(a["rounds"]),
                                        versus_md(a["versus"])) if p)


class FleetModel(Section):
    title = "The model against the measurements"

    def shown(self) -> bool:
        return self.ctx[0]["fabric"] is not None

    def markdown(self) -> str:
        return model_md(self.ctx[0])


class FleetCurves(Section):
    """One model's curve (`name`: measured or described), its fabric and M in the title."""

    def __init__(self, ctx, name: str):
        super().__init__(ctx)
        self.name = name
        m = ctx[0]["models"][name]
        where = "the measured fabric" if name == "measured" else m.fabric.source
        self.title = f"Curves: {where}, M {size_text(m.model_bytes)}"

    def markdown(self) -> str:
        return curve_md(self.ctx[0][f"{self.name}_curve"])


class FleetOutlook(Section):
    def markdown(self) -> str:
        return outlook_md(self.ctx[0])
