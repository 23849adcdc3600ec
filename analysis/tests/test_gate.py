"""The regression gate (`python3 -m analysis.gate BASELINE NEW --max-slowdown 5%`): exit 1 only
where some row is surely slower beyond the threshold, 0 where the rows are alike, faster or too
few to tell, 2 on bad input, one line on stderr; rows match by label across specs; what only one
folder ran is said, not compared; `--aa` counts the flags over folders of the same code and
the planted slowdowns caught."""

import json
import os
import subprocess
import sys

import pytest
from conftest import write_rounds

from analysis.pages import gate as page
from analysis.stats import gate

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
AA = {"mmap_seq:label=a": 1.0, "mmap_seq:label=b": 1.0}


def folder(path, times, *, seed, rounds=12, sigma=0.02, caches=("cold",)):
    """A synthetic results folder (conftest.write_rounds), each record with the `label` its
    spec names, as the harness writes it."""
    write_rounds(path, rounds=rounds, times=times, caches=caches, sigma=sigma, seed=seed,
                 ceiling=False, baseline=next(iter(times)))
    runs = os.path.join(path, "runs.jsonl")
    with open(runs) as f:
        records = [json.loads(line) for line in f]
    for r in records:
        labels = [o[6:] for o in r["strategy_spec"].split(":")[1:] if o.startswith("label=")]
        if labels:
            r["label"] = labels[0]
    with open(runs, "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in records)
    return str(path)


def gate_of(capsys, *argv):
    code = page.main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out.splitlines(), out.err


def test_alike_folders_pass_and_a_slower_row_fails(tmp_path, capsys):
    base = folder(tmp_path / "base", {"fread": 10.0, "mmap_seq": 1.0}, seed=1)
    same = folder(tmp_path / "same", {"fread": 10.0, "mmap_seq": 1.0}, seed=2)
    slow = folder(tmp_path / "slow", {"fread": 10.0, "mmap_seq": 1.2}, seed=3)
    code, out, err = gate_of(capsys, base, same)
    assert code == 0 and err == ""
    assert [x.split(": ")[0] for x in out[1:3]] == ["cold fread", "cold mmap_seq"]
    assert all(x.endswith("(runs: BASELINE 12, NEW 12): within 5%") for x in out[1:3]), out
    assert out[-1] == "gate: pass: no row slower beyond 5% (2 compared: 2 within, 0 faster, " \
                      "0 too few runs to tell)"
    code, out, _ = gate_of(capsys, base, slow, "--max-slowdown", "5%")
    assert code == 1
    line = next(x for x in out if x.startswith("cold mmap_seq: "))
    assert line.startswith("cold mmap_seq: 1.2") and line.endswith("SLOWER beyond 5%")
    assert out[-1] == "gate: FAIL: 1 of 2 rows slower beyond 5%: cold mmap_seq"
    # The other way round mmap_seq is faster, and the gate passes.
    code, out, _ = gate_of(capsys, slow, base)
    assert code == 0 and next(x for x in out if "mmap_seq" in x).endswith(": faster")


def test_a_slowdown_within_the_threshold_passes_it_and_fails_a_smaller_one(tmp_path, capsys):
    base = folder(tmp_path / "base", {"fread": 1.0}, seed=1, sigma=0.002)
    new = folder(tmp_path / "new", {"fread": 1.03}, seed=2, sigma=0.002)
    g = gate.gate(*(page.load(f) for f in (base, new)), 0.05)
    row = g["rows"][0]
    assert 1 < row["ci_low"] < row["ratio"] < row["ci_high"] < 1.05
    assert (row["verdict"], g["fails"]) == (gate.WITHIN, False)
    assert gate_of(capsys, base, new, "--max-slowdown", "0.05")[0] == 0
    assert gate_of(capsys, base, new, "--max-slowdown", "1%")[0] == 1
    assert gate_of(capsys, base, new, "--max-slowdown", "0%")[0] == 1


def test_too_few_runs_pass_and_say_so(tmp_path, capsys):
    base = folder(tmp_path / "base", {"fread": 1.0}, seed=1, rounds=3)
    new = folder(tmp_path / "new", {"fread": 2.0}, seed=2, rounds=3)
    code, out, _ = gate_of(capsys, base, new)
    assert code == 0
    assert out[1].startswith("cold fread: 1.9") and "× (–) BASELINE" in out[1]
    assert out[1].endswith("(runs: BASELINE 3, NEW 3): too few runs (an interval needs 4 a "
                           "side, or 3 and 5)")
    assert out[-1].endswith("(1 compared: 0 within, 0 faster, 1 too few runs to tell)")


def test_rows_match_by_label_and_what_one_folder_ran_is_said(tmp_path, capsys):
    base = folder(tmp_path / "base", {"fread:label=p": 1.0, "mmap": 0.5}, seed=1,
                  caches=("cold", "warm"))
    new = folder(tmp_path / "new", {"fread:chunk=8KiB:label=p": 1.25, "pread": 0.9}, seed=2)
    code, out, _ = gate_of(capsys, base, new, "--json", tmp_path / "g.json")
    assert code == 1
    assert out[1].startswith("cold p (fread:label=p → fread:chunk=8KiB:label=p): 1.2")
    assert out[1].endswith("(runs: BASELINE 12, NEW 12): SLOWER beyond 5%")
    assert out[2:4] == ["not compared, only in BASELINE: cold mmap, warm mmap, warm p",
                        "not compared, only in NEW: cold pread"]
    assert out[-1] == ("gate: FAIL: 1 of 1 row slower beyond 5%: cold p (fread:label=p → "
                       "fread:chunk=8KiB:label=p)")
    saved = json.loads((tmp_path / "g.json").read_text())
    assert saved["fails"] is True and [r["name"] for r in saved["rows"]] == ["p"]
    assert saved["rows"][0]["changed"] is True


@pytest.mark.parametrize("text,value", [("5%", 0.05), ("0.05", 0.05), ("12.5%", 0.125),
                                        ("0%", 0.0), (".1", 0.1), ("5", None), ("-5%", None),
                                        ("100%", None), ("five", None), ("5%%", None)])
def test_the_threshold_is_a_percentage_or_a_fraction(text, value):
    assert page.threshold(text) == (pytest.approx(value) if value is not None else None)


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    base = folder(tmp_path / "base", {"fread": 1.0}, seed=1)
    other = folder(tmp_path / "other", {"mmap": 1.0}, seed=2)
    (tmp_path / "empty").mkdir()

    def run(*args):
        p = subprocess.run([sys.executable, "-m", "analysis.gate", *map(str, args)], cwd=REPO,
                           capture_output=True, text=True)
        return p.returncode, p.stdout, p.stderr.splitlines()

    for args, says in [((base, tmp_path / "missing"), "missing/runs.jsonl: no such file"),
                       ((base, tmp_path / "empty"), "empty/runs.jsonl: no such file"),
                       ((base, base, "--max-slowdown", "5"), "not a percentage like 5%"),
                       ((base, base, "--max-slowdown=-1%"), "not a percentage like 5%"),
                       ((base, other), "no strategy in common"),
                       ((base,), "give two folders"),
                       ((base, base, "--json", tmp_path / "no" / "g.json"), "--json"),
                       ((base, base, "--planted", base), "--planted goes with --aa")]:
        code, out, err = run(*args)
        assert (code, out, len(err)) == (2, "", 1), (args, err)
        assert err[0].startswith("analysis.gate: ") and says in err[0], (args, err)


def test_the_aa_rate_counts_flags_over_pairs_and_the_planted_ones_caught(tmp_path, capsys):
    aa = [folder(tmp_path / "aa" / f"{i:02d}", AA, seed=i, sigma=0.05) for i in range(4)]
    planted = [folder(tmp_path / "planted" / f"{i:02d}",
                      {"mmap_seq:consume=forward:label=a": 1.25, "mmap_seq:label=b": 1.0},
                      seed=10 + i, sigma=0.05) for i in range(4)]
    out = gate.rates([page.load(f) for f in aa], [page.load(f) for f in planted], 0.05)
    assert out["all_pairs"]["of"] == 12 and out["pairs_failed"]["of"] == 6  # 6 pairs x 2 rows
    assert out["disjoint"]["of"] == 4  # 00-01 and 02-03, 2 rows each
    assert out["caught"] == {**out["caught"], "flagged": 4, "of": 4, "rate": 1.0}
    assert out["planted_unchanged"]["of"] == 4
    assert out["planted_median_ratio"] == pytest.approx(1.25, rel=0.05)
    code = page.main(["--aa", *aa, "--planted", *planted, "--json", str(tmp_path / "r.json")])
    lines = capsys.readouterr().out.splitlines()
    assert code == 0
    assert lines[0] == ("gate A/A at 5%: 4 folders, 6 pairs (each the earlier as BASELINE), "
                        "12 comparisons")
    assert any(x.startswith("false alarms: ") for x in lines)
    assert lines[-1].startswith("planted slowdowns (median ratio 1.2") and \
        "caught 4 of 4 (100.0%, 95% CI 39.8%–100.0%)" in lines[-1]
    assert json.loads((tmp_path / "r.json").read_text())["caught"]["flagged"] == 4
    with pytest.raises(SystemExit):
        page.main(["--aa", aa[0]])
