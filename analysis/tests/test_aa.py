"""The A/A calibration (`make aa`): over folders of one strategy under two labels, the share of
comparisons the paired method marked; a real difference in one folder is counted, folders with
too few rounds for an interval are counted apart, and a folder that is not one is exit 2."""

from conftest import write_rounds

from analysis.core.ratios import ratio_text
from analysis.pages import aa

SAME = {"mmap_seq:label=a": 1.0, "mmap_seq:label=b": 1.0}


def folders(tmp_path, specs_per_folder, rounds=12):
    out = []
    for i, times in enumerate(specs_per_folder):
        folder = tmp_path / f"{i:02d}"
        folder.mkdir()
        write_rounds(folder, rounds=rounds, times=times, caches=("cold",), sigma=0.2, seed=i,
                     baseline="mmap_seq:label=a")
        out.append(str(folder))
    return out


def test_the_rate_counts_marked_comparisons(tmp_path, capsys):
    dirs = folders(tmp_path, [SAME, SAME, {"mmap_seq:label=a": 1.0, "mmap_seq:label=b": 3.0}])
    out = aa.calibrate(dirs)
    assert out["tested"] == 3
    assert out["marked"] >= 1  # the 3x folder
    assert [r["significant"] for r in out["comparisons"]][2] is True
    assert all(r["strategy_spec"] == "mmap_seq:label=b" for r in out["comparisons"])
    assert aa.main(dirs) == 0
    text = capsys.readouterr().out
    assert f"false positives: {out['marked']} of 3 A/A comparisons" in text
    assert "MARKED" in text
    first = out["comparisons"][0]
    assert (f"{dirs[0]}: cold mmap_seq:label=b: "
            f"{ratio_text(first['ratio'], first['low'], first['high'])} the time of "
            "mmap_seq:label=a, 12 rounds: ") in text


def test_too_few_rounds_are_counted_apart(tmp_path, capsys):
    dirs = folders(tmp_path, [SAME], rounds=4)
    out = aa.calibrate(dirs)
    assert (out["tested"], out["untested"], out["rate"]) == (0, 1, None)
    assert aa.main(dirs) == 1
    assert "6 rounds" in capsys.readouterr().out


def test_a_folder_that_is_not_one_is_exit_2(tmp_path, capsys):
    assert aa.main([str(tmp_path)]) == 2
    assert "runs.jsonl" in capsys.readouterr().err
