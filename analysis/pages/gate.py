"""`python3 -m analysis.gate BASELINE NEW` (`loadbench gate BASELINE NEW`): does NEW run some
strategy slower than BASELINE beyond a threshold? Per condition and strategy in both folders
NEW's time over BASELINE's with its 95% interval (unpaired: analysis/stats/gate.py says how),
one line each with its verdict (slower beyond the threshold, within it, faster, too few runs),
what only one folder ran (said, not compared), the machines' facts that differ, and a summary
line. Exit code 1 only where some row is surely slower beyond the threshold (its interval's
low end above 1 + threshold), 0 otherwise, 2 on bad input.

    /usr/bin/python3 -m analysis.gate BASELINE NEW [--max-slowdown 5%] [--json FILE]
    /usr/bin/python3 -m analysis.gate --aa DIR DIR... [--planted DIR...] [--json FILE]

`--aa`: the gate over folders of the same code (scripts/aa.sh's repetitions of
experiments/aa.toml): every pair, the earlier as BASELINE, and the share of comparisons it
flags, its false-alarm rate; with `--planted`, one folder per A/A folder in which one row's
strategy was made slower under the same label (scripts/gate-aa.sh), the share of those it
catches ([docs/rounds.md](../docs/rounds.md#the-gates-false-alarms)).
"""

from __future__ import annotations

import re
import sys

from analysis.core import export
from analysis.core.labels import condition, plural
from analysis.core.ratios import ratio_text
from analysis.core.results import Arguments, guard, load
from analysis.stats import gate as stats

PROG = "analysis.gate"


def threshold(text: str) -> float | None:
    """`5%` or `0.05` as 0.05; None for anything else (a bare 5, a negative, 100% and up)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*(%?)\s*", text)
    if not m:
        return None
    value = float(m.group(1)) / (100 if m.group(2) else 1)
    return value if 0 <= value < 1 else None


def pct(t: float) -> str:
    return f"{t * 100:g}%"


def where(c: dict, files: int) -> str:
    """A row's condition and name, as the reports name a row: `cold a`, `cold, xfs fread
    [m.wlf]`; where the spec changed, both specs."""
    row = {**c, "file": c["file_name"]}
    name = c["name"] + (f"[{c['role']}]" if c["role"] else "")
    if c.get("changed"):
        name += f" ({c['spec_baseline']} → {c['spec_new']})"
    return f"{condition(row, files)} {name}"


def words(c: dict, t: float) -> str:
    return {stats.SLOWER: f"SLOWER beyond {pct(t)}", stats.WITHIN: f"within {pct(t)}",
            stats.FASTER: "faster",
            stats.TOO_FEW: "too few runs (an interval needs 4 a side, or 3 and 5)"}[c["verdict"]]


def row_line(c: dict, files: int, t: float) -> str:
    return (f"{where(c, files)}: {ratio_text(c['ratio'], c['ci_low'], c['ci_high'])} "
            f"BASELINE's time (runs: BASELINE {c['n_baseline']}, NEW {c['n_new']}): "
            f"{words(c, t)}")


def gate_lines(g: dict) -> list[str]:
    """The gate's answer (stats.gate.gate's) as printed, the summary line last."""
    t, rows = g["threshold"], g["rows"]
    files = len({(c["file_name"], c["file_bytes"]) for c in
                 rows + g["only_in_baseline"] + g["only_in_new"]})
    out = [f"NEW {g['new']} against BASELINE {g['baseline']}: NEW's time over BASELINE's "
           "(Hodges–Lehmann, exact Mann–Whitney 95% interval; below 1 faster)"]
    out += [row_line(c, files, t) for c in rows]
    for side in ("baseline", "new"):
        if g[f"only_in_{side}"]:
            out.append(f"not compared, only in {side.upper()}: " + ", ".join(
                where(c, files) for c in g[f"only_in_{side}"]))
    out += [f"note: the machines differ: {k}: BASELINE {v['baseline']}; NEW {v['new']}"
            for k, v in g["machines_differ"].items()]
    counts = {v: sum(c["verdict"] == v for c in rows) for v in
              (stats.WITHIN, stats.FASTER, stats.TOO_FEW)}
    if g["fails"]:
        out.append(f"gate: FAIL: {len(g['slower'])} of {plural(len(rows), 'row')} slower "
                   f"beyond {pct(t)}: " + ", ".join(where(c, files) for c in g["slower"]))
    else:
        out.append(f"gate: pass: no row slower beyond {pct(t)} ({len(rows)} compared: "
                   f"{counts[stats.WITHIN]} within, {counts[stats.FASTER]} faster, "
                   f"{counts[stats.TOO_FEW]} too few runs to tell)")
    return out


def share_text(s: dict) -> str:
    if not s["of"]:
        return "none"
    return (f"{s['flagged']} of {s['of']} ({s['rate']:.1%}, 95% CI {s['ci_low']:.1%}–"
            f"{s['ci_high']:.1%})")


def rates_lines(r: dict) -> list[str]:
    """`--aa`'s answer (stats.gate.rates') as printed."""
    t, n = r["threshold"], len(r["folders"])
    out = [f"gate A/A at {pct(t)}: {n} folders, {plural(r['pairs_failed']['of'], 'pair')} "
           f"(each the earlier as BASELINE), {plural(len(r['comparisons']), 'comparison')}"]
    flagged = [c for c in r["comparisons"] if c["verdict"] == stats.SLOWER]
    out += [f"  flagged: {c['pair'][1]} against {c['pair'][0]}: {row_line(c, 1, t)}"
            for c in flagged]
    out += [f"false alarms: {share_text(r['all_pairs'])} comparisons flagged; "
            f"pairs failed {share_text(r['pairs_failed'])}; disjoint pairs (independent) "
            f"{share_text(r['disjoint'])}"
            + (f"; {r['too_few']} had too few runs to tell" if r["too_few"] else "")]
    if "caught" in r:
        out += [f"  planted: {c['pair'][1]} against {c['pair'][0]}: {row_line(c, 1, t)}"
                for c in r["planted"] if c["changed"]]
        out.append(f"planted slowdowns (median ratio {r['planted_median_ratio']:.2f}×): "
                   f"caught {share_text(r['caught'])}; the planted folders' unchanged rows "
                   f"flagged {share_text(r['planted_unchanged'])}")
    return out


def main(argv: list[str]) -> int:
    p = Arguments(prog=PROG, description="Is NEW slower than BASELINE beyond a threshold, for "
                  "some strategy? One line per row, NEW's time over BASELINE's with its 95% "
                  "interval; exit 1 only where a row is surely slower beyond the threshold, "
                  "2 on bad input.", epilog="With --aa: the gate over every pair of folders of "
                  "the same code, its false-alarm rate; with --planted, the slowdowns caught "
                  "(docs/rounds.md).")
    p.add_argument("folders", nargs="*", metavar="DIR",
                   help="BASELINE and NEW (results folders); with --aa, the A/A folders")
    p.add_argument("--max-slowdown", default="5%", metavar="PCT",
                   help="the threshold: a percentage (5%%) or a fraction (0.05); default 5%%")
    p.add_argument("--aa", action="store_true",
                   help="the folders are of the same code: the gate's false-alarm rate")
    p.add_argument("--planted", nargs="+", default=[], metavar="DIR",
                   help="with --aa: one folder per A/A folder with a slowed row")
    p.add_argument("--json", metavar="FILE", help="also write the answer as JSON into FILE")
    args = p.parse_args(argv)
    t = threshold(args.max_slowdown)
    if t is None:
        p.refuse(f"--max-slowdown {args.max_slowdown!r}: not a percentage like 5% or a "
                 "fraction like 0.05")
    if args.planted and not args.aa:
        p.refuse("--planted goes with --aa")
    if len(args.folders) < 2 or (len(args.folders) != 2 and not args.aa):
        p.refuse("give two folders, BASELINE and NEW" + (" (or more with --aa)" if not args.aa
                                                         else " or more"))
    why = export.check([("json", args.json)] if args.json else [])
    if why:
        p.refuse(why.replace("--export json", "--json"))
    return guard(PROG, args.folders + args.planted, lambda: run(args, t))


def run(args, t: float) -> int:
    if args.aa:
        out = stats.rates([load(f) for f in args.folders], [load(f) for f in args.planted], t)
        lines, code = rates_lines(out), 0
    else:
        out = stats.gate(load(args.folders[0]), load(args.folders[1]), t)
        lines, code = gate_lines(out), 1 if out["fails"] else 0
    if args.json:
        export.write([("json", args.json)], export.Table([], [], [], out))
    print("\n".join(lines))
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
