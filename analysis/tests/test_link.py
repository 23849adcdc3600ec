"""The link: remote reads over a shaped link, set against the link's own ceiling (iperf3) and the
server's. On a synthetic folder written here from the remote/ fixture's records
(fixtures/remote/make_remote.py), in 6 cold rounds on three links: 1gbit (link ceiling 0.1175
GB/s, 0.118 for four readers; server 1.5), unshaped (link 2.0 / 3.0 and server 1.05 / 1.575
in alternate rounds) and 10gbit (every link ceiling failed). Its figures are chosen to be
worked out by hand: the fractions, the concurrency that reaches 90% of the link, the herd's
aggregate and spread, what limited each design; and that the ceilings are no strategies
anywhere, that a folder without links has no link content and that no figure mixes links."""

import json
import math
import os
import sys

import pytest


FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")
REMOTE = os.path.join(FIXTURES, "remote")
sys.path.insert(0, REMOTE)
import make_remote as make  # noqa: E402

from analysis.core import results
from analysis.pages import report
from analysis.sections import link, remote
from analysis.stats import link as link_stats, paired, readers, remote as remote_stats

ROUNDS = 6
GBIT = 0.1175  # the 1gbit link's ceiling, GB/s
HERD_GBIT = 0.118  # with four readers' streams
R16 = "http_ranges:chunk=16MiB:concurrency={}"
R4 = "http_ranges:chunk=4MiB:concurrency={}"
# The fractions of the 1gbit link each concurrency reaches.
SWEEP16 = {1: 0.3, 2: 0.6, 4: 0.85, 8: 0.95, 16: 0.97}
SWEEP4 = {1: 0.2, 16: 0.74}
HERD_WALLS = [36.0, 38.0, 40.0, 48.0]  # the four readers' times: spread 48 / 39
ALTERNATE = [1.0, 1.5] * 3  # the unshaped link's speed per round


def walls(link_name: str, rep: int) -> dict[str, float]:
    """Every single-reader spec's wall time on a link in a round."""
    if link_name == "1gbit":
        out = {"fread": 2.0, "http_get": 10.0}  # 1e9 bytes in 10 s: 0.1 / 0.1175 = 0.851
        out.update({R16.format(n): 1 / (f * GBIT) for n, f in SWEEP16.items()})
        out.update({R4.format(n): 1 / (f * GBIT) for n, f in SWEEP4.items()})
        return out
    if link_name == "unshaped":
        return {"fread": 2.0, "http_get": 1.0 / ALTERNATE[rep], R4.format(1): 2.0}
    return {"fread": 2.0, "http_get": 2.0}


def run(i: int, spec: str, link_name: str, rep: int, position: int, wall: float, **extra):
    """A record as make_remote writes one (a remote one for any spec but fread), on a link."""
    rec = make.record(i, spec if spec in make.TIMES else "http_get", "cold", rep, position)
    rec.update(run_id=f"l{i:04d}", strategy=spec.split(":")[0], strategy_spec=spec,
               params=make.params(spec), details=make.details(spec), wall_s=wall,
               link=link_name, tensor_bytes=make.FILE_BYTES, user_s=0.3, sys_s=0.2,
               server_cpu_s=round(0.1 * wall, 6), link_rx_bytes=1_020_000_000)
    if spec == R4.format(1) and link_name == "unshaped":
        rec.update(user_s=1.0, sys_s=0.9)  # 0.95 s of CPU per second: the client's limit
    return {**rec, **extra}


def ceiling(i: int, kind: str, link_name: str, rep: int, position: int, gb, **extra) -> dict:
    """A link_ceiling (iperf3) or server_ceiling record; `gb` None: failed."""
    rec = {"run_id": f"l{i:04d}", "experiment": "link-fixture", "strategy": kind,
           "strategy_spec": kind, "file": make.FILE, "cache": "cold", "rep": rep,
           "position": position, "link": link_name, "status": "ok", "error": None,
           "gb_per_s": gb, "wall_s": 3.0, "ceiling_bytes": int((gb or 0) * 3e9),
           "started_at": "2026-12-01T10:00:00Z"}
    if kind == "link_ceiling":
        rec["params"] = {"tool": "iperf3", "version": "3.12", "streams": 8, "seconds": 3,
                         "direction": "server to client", "rate": link_name,
                         "bits_per_s": 10**9 if link_name == "1gbit" else None}
        rec["details"] = {"receiver_bits_per_s": (gb or 0) * 8e9,
                          "sender_bits_per_s": (gb or 0) * 8e9, "retransmits": 0}
    else:
        rec.update(params={"concurrency": 16, "chunk": 8 << 20, "read_as": make.URL},
                   server_cpu_s=0.5)
    if gb is None:
        rec.update(status="failed", error="iperf3: connection refused", gb_per_s=None)
    return {**rec, **extra}


def herd(i: int, link_name: str, rep: int, position: int) -> list[dict]:
    """Four readers of R16 with concurrency 4 at once, released together: 4e9 bytes in 48 s."""
    return [run(i + p, R16.format(4), link_name, rep, position, wall, procs=4, proc=p,
                pattern="replicated", load_start_unix_s=1.8e9 + 100 * rep,
                server_cpu_s=2.0, link_rx_bytes=4_200_000_000)
            for p, wall in enumerate(HERD_WALLS)]


def round_of(out: list, link_name: str, rep: int) -> None:
    """One round of a link: its ceilings, every single-reader spec, the herd (1gbit) with its
    own link ceiling."""
    k = ALTERNATE[rep]
    gb = {"1gbit": (GBIT, 1.5), "unshaped": (2.0 * k, 1.05 * k), "10gbit": (None, 1.5)}
    link_gb, server_gb = gb[link_name]
    out.append(ceiling(len(out), "link_ceiling", link_name, rep, 0, link_gb))
    out.append(ceiling(len(out), "server_ceiling", link_name, rep, 1, server_gb))
    for position, (spec, wall) in enumerate(walls(link_name, rep).items(), 2):
        out.append(run(len(out), spec, link_name, rep, position, wall))
    if link_name == "1gbit":
        out.append(ceiling(len(out), "link_ceiling", link_name, rep, 0, HERD_GBIT, procs=4,
                           pattern="replicated"))
        out.extend(herd(len(out), link_name, rep, 1))


ENV = {**make.ENV, "experiment": "link-fixture",
       "link": {"rates": ["1gbit", "unshaped", "10gbit"], "netns": "lb-net",
                "client": {"dev": "lbc0", "address": "10.77.0.1", "mtu": 1500},
                "server": {"dev": "lbs0", "address": "10.77.0.2", "mtu": 1500},
                "rtt_ms": {"median": 0.05, "min": 0.03, "max": 0.09},
                "delay": {"asked": "10ms", "applied": False, "why": "no sch_netem module"},
                "tc": {"1gbit": {"client_egress": "qdisc tbf 1: root rate 1Gbit"}}}}


def write(folder, records: list[dict], env: dict = ENV) -> str:
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "runs.jsonl"), "w", encoding="utf-8") as f:
        f.writelines(json.dumps(r) + "\n" for r in records)
    with open(os.path.join(folder, "env.json"), "w", encoding="utf-8") as f:
        json.dump(env, f)
    return str(folder)


def records() -> list[dict]:
    out: list[dict] = []
    for rep in range(ROUNDS):
        for link_name in ENV["link"]["rates"]:
            round_of(out, link_name, rep)
    return out


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return write(tmp_path_factory.mktemp("link") / "results", records())


@pytest.fixture(scope="module")
def loaded(folder):
    return results.load(folder)


@pytest.fixture(scope="module")
def t(loaded):
    return link_stats.tables(loaded, remote_stats.summarize(loaded))


@pytest.fixture(scope="module")
def built(folder):
    report.build(folder)
    with open(os.path.join(folder, "report.md"), encoding="utf-8") as f:
        return f.read()


def row(table, spec: str, link_name: str, procs: int = 1):
    hit = table[(table["strategy_spec"] == spec) & (table["link"] == link_name)
                & (table["procs"] == procs)]
    assert len(hit) == 1, hit
    return hit.iloc[0]


def test_the_ceilings_are_kept_apart(loaded):
    assert not set(loaded.runs["strategy"]) & {"link_ceiling", "server_ceiling", "ceiling"}
    assert len(loaded.link_ceiling) == ROUNDS * 4 and len(loaded.server_ceiling) == ROUNDS * 3
    assert set(loaded.link_ceiling["status"]) == {"ok", "failed"}
    assert all(s != "link_ceiling" for spec, _ in paired.baselines(loaded).values()
               for s in [spec])


def test_fraction_of_the_link_from_known_numbers(t):
    get = row(t["through"], "http_get", "1gbit")
    assert get["gb_per_s"] == pytest.approx(0.1)
    assert get["link_gb_per_s"] == pytest.approx(GBIT)
    assert get["of_link"] == pytest.approx(0.1 / GBIT) and round(get["of_link"], 3) == 0.851
    assert (get["low_link"], get["high_link"]) == pytest.approx((0.1 / GBIT,) * 2)
    assert get["rounds_link"] == ROUNDS
    assert get["of_server"] == pytest.approx(0.1 / 1.5)
    assert get["limited_by"] == "design"


def test_paired_by_round(t):
    # The unshaped link runs at 2.0 and 3.0 GB/s in alternate rounds, and so does http_get
    # (1.0 and 1.5): 0.5 in every round, where the medians alone would give 1.2 / 2.5 = 0.48.
    get = row(t["through"], "http_get", "unshaped")
    assert get["of_link"] == pytest.approx(0.5) and get["rounds_link"] == ROUNDS
    assert get["of_server"] == pytest.approx(1 / 1.05)
    assert get["limited_by"] == "server"


def test_what_limited_each(t):
    through = t["through"]
    assert row(through, R16.format(16), "1gbit")["limited_by"] == "link"
    assert row(through, R4.format(1), "unshaped")["limited_by"] == "client CPU"
    assert row(through, "http_get", "10gbit")["limited_by"] == "unknown: no link ceiling"
    local = through[through["is_local"]]
    assert set(local["strategy_spec"]) == {"fread"}
    assert local["limited_by"].str.startswith("— (local read").all()
    assert local["of_link"].isna().all() and local["of_server"].isna().all()  # never on it


def test_no_link_ceiling_is_said_not_divided(t, built):
    get = row(t["through"], "http_get", "10gbit")
    assert math.isnan(get["of_link"]) and math.isnan(get["link_gb_per_s"])
    part = built.split("**link 10gbit, cold**", 1)[1].split("\n\n", 2)
    assert part[0].startswith(": no link ceiling (6 failed: iperf3: connection refused)")
    line = next(ln for ln in part[1].splitlines() if ln.startswith("| http_get |"))
    cells = dict(zip(link.THROUGHPUT_HEAD, [c.strip() for c in line.strip("|").split(" | ")]))
    assert cells["link GB/s"] == cells["of link (95% CI)"] == "no link ceiling"
    # A share of the server's ceiling: higher is nearer it.
    assert cells["of server (95% CI)"] == "0.33 (0.33–0.33)"
    assert cells["limited by"] == "unknown: no link ceiling"


def test_the_concurrency_that_reaches_the_link(t):
    reach = t["reach"].set_index(["design", "link"])
    r16 = reach.loc[("http_ranges:chunk=16MiB:concurrency=N", "1gbit")]
    assert r16["reached_at"] == 8 and r16["text"] == "8"
    assert r16["concurrencies"] == "1, 2, 4, 8, 16"
    r4 = reach.loc[("http_ranges:chunk=4MiB:concurrency=N", "1gbit")]
    assert link.pd.isna(r4["reached_at"]) and r4["text"] == "not reached (best: 0.74 at 16)"
    # One concurrency (the herd's, the unshaped link's): no sweep.
    assert len(t["reach"]) == 2


def test_reach_without_a_link_ceiling():
    through = link.pd.DataFrame([
        {"strategy_spec": R16.format(n), "is_local": False, "link": "10gbit", "cache": "cold",
         "file": "f", "procs": 1, "pattern": "replicated", "memory_limit_bytes": 0,
         "of_link": math.nan} for n in (1, 4)])
    assert list(link_stats.reach(through)["text"]) == ["no link ceiling"]


def test_herds(t):
    h = row(t["herds"], R16.format(4), "1gbit", procs=4)
    aggregate = 4 * make.FILE_BYTES / max(HERD_WALLS) / 1e9
    assert h["rounds"] == h["complete"] == ROUNDS
    assert h["gb_per_s"] == pytest.approx(aggregate)
    assert h["link_gb_per_s"] == pytest.approx(HERD_GBIT)  # its own condition's ceiling
    assert h["of_link"] == pytest.approx(aggregate / HERD_GBIT)
    assert h["spread"] == pytest.approx(48 / 39)
    assert h["server_cpu_s"] == pytest.approx(2.0)
    assert h["wire_over_loaded"] == pytest.approx(4.2e9 / 4e9)
    single = row(t["herds"], R16.format(4), "1gbit", procs=1)
    assert single["gb_per_s"] == pytest.approx(SWEEP16[4] * GBIT)
    assert list(t["herds"]["procs"]) == [1, 4]
    many = row(t["through"], R16.format(4), "1gbit", procs=4)
    assert many["gb_per_s"] == pytest.approx(aggregate)
    assert many["of_link"] == pytest.approx(aggregate / HERD_GBIT)


def test_a_ceiling_without_procs_falls_back_to_its_link_and_round(tmp_path):
    out = [r for r in records() if not (r["strategy"] == "link_ceiling" and r.get("procs"))]
    for r in records():
        if r["strategy"] == "link_ceiling" and r.get("procs"):
            out.append({k: v for k, v in r.items() if k not in ("procs", "pattern")})
    r = results.load(write(tmp_path / "loose", out))
    t = link_stats.tables(r, remote_stats.summarize(r))
    # Each round now has two 1gbit ceilings of one reader: the herd gets their median.
    h = row(t["herds"], R16.format(4), "1gbit", procs=4)
    assert h["link_gb_per_s"] == pytest.approx((GBIT + HERD_GBIT) / 2)


def test_two_links_are_never_mixed(loaded, t):
    rows = remote_stats.summarize(loaded)
    gets = rows[rows["strategy_spec"] == "http_get"].set_index("link")
    assert len(gets) == 3
    assert gets.loc["1gbit", "median_s"] == pytest.approx(10.0)
    assert gets.loc["10gbit", "median_s"] == pytest.approx(2.0)
    # × best local within each link's own rounds: 10 / 2, 2 / 2.
    assert gets.loc["1gbit", "ratio"] == pytest.approx(5.0)
    assert gets.loc["10gbit", "ratio"] == pytest.approx(1.0)
    pairs = paired.paired_table(loaded)
    assert len(pairs[pairs["strategy_spec"] == "http_get"]) == 3
    rounds = readers.rounds(loaded.runs, loaded.env)
    assert rounds["readers"].max() == 4  # the herd's readers, of one link
    assert set(t["through"].groupby(["strategy_spec", "link", "procs"]).size()) == {1}


def test_the_section(built, folder):
    text = built.split(f"## {remote.TITLE}", 1)[1].split("\n## ", 1)[0]
    assert ("**The link**: rates 1gbit, unshaped, 10gbit; client lbc0 10.77.0.1, MTU 1500; "
            "server lbs0 10.77.0.2, MTU 1500; server in network namespace lb-net; round trip "
            "0.05 ms median (0.03–0.09); delay 10ms asked, not applied: no sch_netem module."
            ) in text
    head = next(ln for ln in text.splitlines() if ln.startswith("| design | readers |"))
    assert [c.strip() for c in head.strip("|").split("|")] == link.THROUGHPUT_HEAD
    gbit = text.split("**link 1gbit, cold**", 1)[1]
    line = next(ln for ln in gbit.splitlines() if ln.startswith("| http_get |"))
    cells = [c.strip() for c in line.strip("|").split(" | ")]
    assert cells == ["http_get", "1", "0.1", "0.117", "0.85 (0.85–0.85)", "1.5",
                     "0.07 (0.07–0.07)", "0.05", "0.10", "design"]
    local = next(ln for ln in gbit.splitlines() if ln.startswith("| fread (best local) |"))
    assert local.count("— (local)") == 2
    assert "| http_ranges:chunk=4MiB:concurrency=N | 1gbit | cold | 1 | 1, 16 | not reached " \
           "(best: 0.74 at 16) |" in text
    herd = next(ln for ln in text.splitlines()
                if ln.startswith(f"| {R16.format(4)} | 1gbit | cold | 4 |"))
    assert "| 0.0833 | 0.118 | 0.71 (0.71–0.71) | 1.23 | 2.00 | 1.050 |" in herd
    for name in (link.FIGURE, link.HERDS_FIGURE):
        assert os.path.isfile(os.path.join(folder, "figures", f"{name}.png"))
        assert f"(figures/{name}.png)" in text
    assert "and 42 link and server ceilings (see *Remote*)" in built


def test_the_ceilings_are_no_rows_anywhere(built, folder):
    for kind in ("link_ceiling", "server_ceiling"):
        assert not any(ln.startswith(f"| {kind}") for ln in built.splitlines())
    with open(os.path.join(folder, "summary.json"), encoding="utf-8") as f:
        out = json.load(f)
    for key in ("groups", "remote", "link_throughput", "link_herds", "many_readers"):
        assert not {g["strategy_spec"] for g in out[key]} & {"link_ceiling", "server_ceiling"}
    assert not any("ceiling" in cond for cond in out["verdict"])
    assert {r["design"] for r in out["link_reach"]} == {"http_ranges:chunk=16MiB:concurrency=N",
                                                        "http_ranges:chunk=4MiB:concurrency=N"}


def test_no_link_content_without_links():
    r = results.load(REMOTE)
    assert not link_stats.shown(r) and set(r.runs["link"]) == {""}
    rows = remote_stats.summarize(r)
    assert link.section_md(r, rows) == ""
    text = remote.section_md(r)
    assert "The link" not in text and "of link" not in text and link.FIGURE not in text
    assert not {k for k in remote.summary(r) if k.startswith("link")}
