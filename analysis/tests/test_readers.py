"""Many readers (analysis/stats/readers.py) on synthetic runs.jsonl records: a round lasts as
long as its slowest reader, its throughput is all readers' bytes over that, its spread is
slowest over median; a failed or missing reader leaves the round without figures and says which
reader and why, while the other readers' records stay; the bytes add up per pattern; the
duration is set against the single reader's; and the report has the section (and summary.json
`many_readers`) only when some run had several readers, with patterns never pooled."""

import json

import pandas as pd
import pytest
from conftest import FILE

from analysis.core.results import UNVERIFIED, load
from analysis.pages import report
from analysis.sections import many_readers
from analysis.stats import aggregates as stats, compare as compare_stats, readers

MODEL = 1_200_000_000  # the model's tensor bytes
TITLE = f"## {many_readers.READERS_TITLE}"


def record(n, *, rep=0, procs=1, proc=None, pattern=None, wall=2.0, part=MODEL, status="ok",
           error=None, spec="fread", cache="cold", **extra):
    """One reader's record, as the harness writes it: procs, proc and pattern only with
    several readers."""
    r = {"run_id": f"r{n:04d}", "experiment": "many", "strategy": spec.split(":")[0],
         "strategy_spec": spec, "params": {}, "file": FILE, "format": "wlf",
         "file_bytes": MODEL + 4096, "cache": cache, "rep": rep, "status": status,
         "error": error, "checksum_ok": True if status == "ok" else None,
         "wall_s": wall if status == "ok" else None, "tensor_bytes": part,
         "peak_rss_bytes": part, "major_faults": 0, "minor_faults": 10, "read_bytes": part,
         "timeline": None, **extra}
    if procs > 1:
        r.update(procs=procs, proc=proc, pattern=pattern or "replicated")
    return r


def many_records():
    """Per rep 0-2: a single reader (2 s); 4 replicated readers (1, 2, 3, 6 s); 2 tp readers
    of one MPI job (1 and 1.5 s in rep 0; reader 1 fails in rep 1 and has no record in rep
    2); and a ceiling read, which is no reader."""
    out = []

    def add(**kw):
        out.append(record(len(out), **kw))

    for rep in range(3):
        add(rep=rep)
        for proc, wall in enumerate([1.0, 2.0, 3.0, 6.0]):
            add(rep=rep, procs=4, proc=proc, wall=wall)
        mpi = {"ranks": 2, "pattern": "tp"}
        add(rep=rep, procs=2, proc=0, wall=1.0, part=MODEL // 2, host="node-a", rank=0, **mpi)
        if rep == 0:
            add(rep=rep, procs=2, proc=1, wall=1.5, part=MODEL // 2, host="node-b", rank=1,
                **mpi)
        elif rep == 1:
            add(rep=rep, procs=2, proc=1, status="failed", error="worker killed by SIGKILL",
                part=None, host="node-b", rank=1, **mpi)
        out.append({**record(len(out), rep=rep, procs=4, proc=None), "strategy": "ceiling",
                    "strategy_spec": "ceiling", "wall_s": 0.5, "gb_per_s": 2.0,
                    "checksum_ok": None})
    return out


def write(folder, records, env=None):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (folder / "env.json").write_text(json.dumps(env or {"experiment": "many"}))
    return folder


def rounds_of(tmp_path, records, env=None):
    r = load(str(write(tmp_path / "results", records, env)))
    return readers.rounds(r.runs, r.env)


def one(table, **key):
    found = table[(table[list(key)] == list(key.values())).all(axis=1)]
    assert len(found) == 1, key
    return found.iloc[0]


@pytest.fixture(scope="module")
def many(tmp_path_factory):
    return write(tmp_path_factory.mktemp("many") / "results", many_records())


@pytest.fixture(scope="module")
def built(many):
    report.build(str(many))
    return many


def test_a_round_lasts_as_long_as_its_slowest_reader(many):
    r = load(str(many))
    table = readers.rounds(r.runs, r.env)
    four = one(table, procs=4, rep=0)
    assert four["readers"] == four["ok_readers"] == 4
    assert four["duration_s"] == 6.0  # the slowest, not the median (2.5) nor the mean (3)
    assert four["gb_per_s"] == pytest.approx(4 * MODEL / 6.0 / 1e9)  # all bytes / slowest
    assert four["spread"] == pytest.approx(6.0 / 2.5)
    assert four["bytes"] == 4 * MODEL and four["reason"] is None
    tp = one(table, procs=2, rep=0)
    assert tp["pattern"] == "tp" and tp["duration_s"] == 1.5
    assert tp["gb_per_s"] == pytest.approx(MODEL / 1.5 / 1e9)
    single = one(table, procs=1, rep=0)
    assert single["duration_s"] == 2.0 and single["spread"] == 1.0
    # The ceiling reads (procs 4 too) are no readers: 3 rounds of each kind, nothing more.
    assert len(table) == 9 and "ceiling" not in set(table["strategy_spec"])


def test_a_failed_reader_leaves_its_round_without_figures_and_names_itself(many):
    r = load(str(many))
    table = readers.rounds(r.runs, r.env)
    failed = one(table, procs=2, rep=1)
    assert failed[["duration_s", "gb_per_s", "spread"]].isna().all()
    assert failed["readers"] == 2 and failed["ok_readers"] == 1
    assert failed["reason"] == "reader 1 (host node-b, rank 1): failed: worker killed by SIGKILL"
    # The other reader's record is kept, and still counts as a run of its own.
    rows = readers.readers(r.runs)
    kept = rows[(rows["procs"] == 2) & (rows["rep"] == 1)]
    assert list(kept["proc"]) == [0, 1] and list(kept["counted"]) == [True, False]
    assert kept.iloc[0]["wall_s"] == 1.0 and kept.iloc[0]["host"] == "node-a"
    assert ((r.ok["procs"] == 2) & (r.ok["rep"] == 1)).sum() == 1


def test_a_missing_reader_leaves_its_round_without_figures(many):
    r = load(str(many))
    missing = one(readers.rounds(r.runs, r.env), procs=2, rep=2)
    assert missing["readers"] == 1 and missing["ok_readers"] == 1
    assert missing[["duration_s", "gb_per_s", "spread"]].isna().all()
    assert missing["reason"] == "reader 1: no record"


def test_an_unverified_reader_does_not_count(tmp_path):
    records = [record(0, procs=2, proc=0, wall=1.0),
               {**record(1, procs=2, proc=1, wall=1.0), "checksum_ok": False}]
    row = one(rounds_of(tmp_path, records), procs=2)
    assert pd.isna(row["duration_s"])
    assert row["reason"] == f"reader 1: {UNVERIFIED} (checksum_ok False)"


def test_the_bytes_add_up_per_pattern(many, tmp_path):
    r = load(str(many))
    table = readers.rounds(r.runs, r.env)
    assert one(table, procs=4, rep=0)["bytes_check"] == "ok"  # 4 × the model
    assert one(table, procs=2, rep=0)["bytes_check"] == "ok"  # the model once
    assert one(table, procs=2, rep=1)["bytes_check"] is None  # no complete round to check

    # A tp reader that delivered its part twice, and a replicated one that delivered half.
    records = [record(0), record(1, procs=2, proc=0, part=MODEL // 2, pattern="tp"),
               record(2, procs=2, proc=1, part=MODEL, pattern="tp"),
               record(3, procs=2, proc=0, part=MODEL), record(4, procs=2, proc=1,
                                                               part=MODEL // 2)]
    table = rounds_of(tmp_path / "wrong", records)
    assert one(table, pattern="tp")["bytes_check"] == f"differs: {MODEL * 3 // 2} vs {MODEL}"
    assert (one(table, procs=2, pattern="replicated")["bytes_check"]
            == f"differs: {MODEL * 3 // 2} vs {2 * MODEL}")

    # Without a single reader the model's bytes are env.json's, never file_bytes.
    tp_only = records[1:2] + [record(2, procs=2, proc=1, part=MODEL // 2, pattern="tp")]
    assert one(rounds_of(tmp_path / "none", tp_only), pattern="tp")["bytes_check"] == "unknown"
    env = {"file": {"path": FILE, "file_bytes": MODEL + 4096, "tensor_bytes": MODEL}}
    assert one(rounds_of(tmp_path / "env", tp_only, env), pattern="tp")["bytes_check"] == "ok"


def test_the_summary_sets_each_series_against_the_single_reader(many):
    r = load(str(many))
    summary = readers.summarize(readers.rounds(r.runs, r.env))
    assert [(s["procs"], s["pattern"]) for _, s in summary.iterrows()] == [
        (1, "replicated"), (4, "replicated"), (2, "tp")]
    single, four, tp = (summary.iloc[i] for i in range(3))
    assert single["vs_single"] == 1.0 and single["duration_s"] == 2.0
    assert four["rounds"] == 3 and four["failed_rounds"] == 0
    assert four["duration_s"] == 6.0 and four["vs_single"] == 3.0
    assert four["gb_per_s"] == pytest.approx(4 * MODEL / 6.0 / 1e9)
    assert four["spread"] == pytest.approx(2.4) and four["bytes_check"] == "ok"
    assert tp["rounds"] == 3 and tp["failed_rounds"] == 2
    assert tp["duration_s"] == 1.5 and tp["vs_single"] == pytest.approx(0.75)


def test_no_single_reader_means_no_vs_single(tmp_path):
    records = [record(0, procs=2, proc=0, wall=1.0), record(1, procs=2, proc=1, wall=3.0),
               record(2, cache="warm")]  # a single reader of the other cache state only
    summary = readers.summarize(rounds_of(tmp_path, records))
    assert len(summary) == 1 and summary.iloc[0]["vs_single"] is None
    assert summary.iloc[0]["duration_s"] == 3.0


def test_patterns_are_never_pooled(many):
    r = load(str(many))
    table = stats.summarize(r)
    assert sorted(zip(table["procs"], table["pattern"], table["n"])) == [
        (1, "replicated", 3), (2, "tp", 4), (4, "replicated", 12)]
    rows = compare_stats.compare(str(many), str(many))["rows"]
    assert sorted((x["procs"], x["pattern"]) for x in rows) == [
        (1, "replicated"), (2, "tp"), (4, "replicated")]


def test_the_report_has_the_section(built):
    md = (built / "report.md").read_text()
    section = md.split(TITLE, 1)[1].split("\n## ", 1)[0]
    assert "from its first reader's start to its last reader's end" in section
    assert "| fread | cold |  | 1 | 3 | 2.000 |  | 0.60 | 1.00 | 1 (reference) | ok |" in section
    assert "| fread | cold | replicated | 4 | 3 | 6.000 |  | 0.80 | 2.40 | 3.00 | ok |" in section
    assert ("| fread | cold | tp | 2 | 3 (2 failed) | 1.500 |  | 0.80 | 1.20 | 0.75 | ok |"
            in section)
    assert ("- fread, cold, tp ×2, round 1: reader 1 (host node-b, rank 1): failed: worker "
            "killed by SIGKILL") in section
    assert "- fread, cold, tp ×2, round 2: reader 1: no record" in section
    assert "![Many readers, fread, cold cache" in section
    assert (built / "figures" / "readers-0-cold.png").stat().st_size > 0
    assert (built / "figures" / "readers-0-cold.svg").stat().st_size > 0
    assert "fread ×2 tp" in md  # the cold table's row of the tp readers
    assert "Many readers" in (built / "report.html").read_text()


def test_summary_json_has_many_readers(built):
    rows = json.loads((built / "summary.json").read_text())["many_readers"]
    assert [(x["procs"], x["pattern"]) for x in rows] == [(1, "replicated"), (4, "replicated"),
                                                          (2, "tp")]
    tp = rows[2]
    assert tp["failed_rounds"] == 2 and tp["vs_single"] == pytest.approx(0.75)
    assert tp["bytes_check"] == "ok" and tp["memory_limit_bytes"] == 0


def test_one_reader_everywhere_has_no_section(tmp_path):
    folder = write(tmp_path / "single", [record(i, rep=i) for i in range(3)])
    report.build(str(folder))
    assert TITLE not in (folder / "report.md").read_text()
    assert "many_readers" not in json.loads((folder / "summary.json").read_text())


def test_an_mpi_job_alone_shows_the_section(tmp_path):
    r = load(str(write(tmp_path / "mpi", [record(0, ranks=1, rank=0, host="node-a")])))
    assert readers.shown(r)


def test_the_section_lists_only_its_strategies_rounds(tmp_path):
    records = [record(0, spec="mmap", status="failed", error="mmap: no memory"),
               record(1, status="failed", error="fread: short read"),
               record(2, procs=2, proc=0), record(3, procs=2, proc=1)]
    folder = write(tmp_path / "others", records)
    report.build(str(folder))
    section = (folder / "report.md").read_text().split(TITLE, 1)[1].split("\n## ", 1)[0]
    assert "- fread, cold, one reader, round 0: reader 0: failed: fread: short read" in section
    assert "mmap" not in section  # no run of several readers: none of this section's
